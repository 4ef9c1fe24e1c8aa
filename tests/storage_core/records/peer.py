"""kafka-python (an independent implementation) as a batch builder and reader for interop tests.

Its builders are producer-side: they write BaseOffset 0 and PartitionLeaderEpoch 0 and never set
the control or LogAppendTime bits. As /work/shared/tools/peer_build.py does, the helpers here place
a batch at an offset (neither field is under the CRC) and patch those bits with kafka-python's own
header struct and CRC function, which is exactly what a broker writes.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kafka.record.util import calc_crc32, calc_crc32c

# (offset delta, timestamp, key, value, headers)
PeerRecord = tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]

_HEADER = DefaultRecordBatch.HEADER_STRUCT
# kafka-format.md §5.1: positions inside a legacy entry.
_LEGACY_CRC, _LEGACY_MAGIC, _LEGACY_ATTRIBUTES, _LEGACY_TIMESTAMP = 12, 16, 17, 18


class _PeerHeader(NamedTuple):
    """kafka-python's HEADER_STRUCT fields, named from the spec (kafka-format.md §4.1)."""

    base_offset: int
    length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int


def peer_batch(
    records: list[PeerRecord],
    *,
    codec: int,
    base_offset: int,
    leader_epoch: int = 0,
    producer: tuple[int, int, int] = (-1, -1, -1),
    transactional: bool = False,
    control: bool = False,
    log_append_time: int | None = None,
) -> bytes:
    """A magic-2 batch built by kafka-python, then placed and stamped like a broker would."""
    producer_id, producer_epoch, base_sequence = producer
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=int(transactional),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 30,
    )
    for delta, timestamp, key, value, headers in records:
        if builder.append(delta, timestamp=timestamp, key=key, value=value, headers=headers) is None:
            raise RuntimeError("kafka-python refused the record")
    data = bytearray(builder.build())
    header = _PeerHeader._make(_HEADER.unpack_from(data))._replace(
        base_offset=base_offset, partition_leader_epoch=leader_epoch
    )
    if control:
        header = header._replace(attributes=header.attributes | DefaultRecordBatch.CONTROL_MASK)
    if log_append_time is not None:
        header = header._replace(
            attributes=header.attributes | DefaultRecordBatch.TIMESTAMP_TYPE_MASK, max_timestamp=log_append_time
        )
    _HEADER.pack_into(data, 0, *header)
    struct.pack_into(
        ">I", data, DefaultRecordBatch.CRC_OFFSET, calc_crc32c(data[DefaultRecordBatch.ATTRIBUTES_OFFSET :])
    )
    return bytes(data)


def peer_marker(*, offset: int, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int) -> bytes:
    """A COMMIT/ABORT marker: a one-record transactional batch whose key and value are a control
    key and an end-transaction marker, with the control bit set."""
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return peer_batch(
        [(0, 1_700_000_000_000, key, value, [])],
        codec=0,
        base_offset=offset,
        producer=(producer_id, producer_epoch, -1),
        transactional=True,
        control=True,
    )


def peer_legacy(
    records: list[tuple[int, int, bytes | None, bytes | None]],
    *,
    magic: int,
    codec: int,
    wrapper_offset: int | None = None,
    log_append_time: int | None = None,
) -> bytes:
    """v0/v1 messages by kafka-python: (offset, timestamp, key, value) each, offsets as given
    (absolute, or a v1 wrapper's relative ones); a compressed set is one wrapper, placed at
    `wrapper_offset` and optionally stamped LogAppendTime (bit 3, timestamp, CRC-32 again)."""
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 30)
    for offset, timestamp, key, value in records:
        builder.append(offset, timestamp=timestamp, key=key, value=value)
    data = bytearray(builder.build())
    if wrapper_offset is not None:
        struct.pack_into(">q", data, 0, wrapper_offset)
    if log_append_time is not None:
        data[_LEGACY_ATTRIBUTES] |= 0x08  # of the first (the wrapper) message
        struct.pack_into(">q", data, _LEGACY_TIMESTAMP, log_append_time)
        struct.pack_into(">I", data, _LEGACY_CRC, calc_crc32(memoryview(data)[_LEGACY_MAGIC:]))
    return bytes(data)


def peer_read(data: bytes) -> list:
    """Every batch kafka-python frames in `data`, after asserting its CRC."""
    memory = MemoryRecords(data)
    batches = []
    while (batch := memory.next_batch()) is not None:
        assert batch.validate_crc()
        batches.append(batch)
    return batches
