"""Legacy v0/v1 messages: Kafka's worked examples (kafka-format.md §5.5), wrapper rules (§5.3), and
interop with kafka-python's legacy records in both directions."""

from __future__ import annotations

import struct
import zlib

import pytest

from storage_core.errors import CorruptRecordError
from storage_core.records.compression import CODECS, CompressionType
from storage_core.records.file_records import iterate_batches
from storage_core.records.legacy import (
    ENTRY_HEADER,
    RECORD_OVERHEAD_V0,
    RECORD_OVERHEAD_V1,
    LegacyBatch,
    LegacyHeader,
    build_legacy_messages,
)
from storage_core.records.record import Record, TimestampType
from tests.storage_core.records.peer import peer_legacy, peer_read

pytestmark = pytest.mark.both_cores  # CI runs it again on the pure-Python core (./dev test)

T = 1_700_000_000_000
EXAMPLE_V1 = "0000000000000000 00000020 3052e670 01 00 0000018bcfe56800 00000004 6b657931 00000006 76616c756531"
EXAMPLE_V0 = "0000000000000000 00000018 75f0f41d 00 00 00000004 6b657931 00000006 76616c756531"
LEGACY_CODECS = [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4]
LEGACY_IDS = [c.kafka_name for c in LEGACY_CODECS]


def _entry(offset: int, message: bytes) -> bytes:
    """A log entry around `message` (from its magic byte on), CRC-32 in front (kafka-format.md §5.1)."""
    return struct.pack(">qiI", offset, 4 + len(message), zlib.crc32(message)) + message


def _message(
    *, offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    """A log entry written by hand from kafka-format.md §5.1."""
    body = struct.pack(">bb", magic, attributes) + (struct.pack(">q", timestamp) if magic else b"")
    for part in (key, value):
        body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part
    return _entry(offset, body)


def _wrapper(inner: bytes, *, offset: int, magic: int = 1, codec: CompressionType = CompressionType.GZIP) -> bytes:
    value = CODECS[codec].compress(inner, magic=magic)
    return _message(offset=offset, magic=magic, attributes=int(codec), timestamp=T, key=None, value=value)


def _inner(offsets: list[int], *, magic: int = 1) -> bytes:
    return b"".join(
        _message(offset=o, magic=magic, attributes=0, timestamp=T + o, key=b"k%d" % o, value=b"v") for o in offsets
    )


def test_layout() -> None:
    assert (ENTRY_HEADER.size, RECORD_OVERHEAD_V0, RECORD_OVERHEAD_V1) == (18, 14, 22)


def test_worked_examples_5_5() -> None:
    v1 = build_legacy_messages([Record(0, T, b"key1", b"value1")], magic=1)
    v0 = build_legacy_messages([Record(0, T, b"key1", b"value1")], magic=0)
    assert v1.hex() == EXAMPLE_V1.replace(" ", "")
    assert v0.hex() == EXAMPLE_V0.replace(" ", "")
    assert LegacyBatch(v1).header == LegacyHeader(offset=0, size=32, crc=810739312, magic=1, attributes=0)
    assert LegacyBatch(v0).header == LegacyHeader(offset=0, size=24, crc=1978725405, magic=0, attributes=0)
    assert LegacyBatch(v1).records() == [Record(0, T, b"key1", b"value1", crc=810739312)]
    assert LegacyBatch(v0).records() == [Record(0, -1, b"key1", b"value1", crc=1978725405)]
    assert (LegacyBatch(v1).timestamp_type, LegacyBatch(v0).timestamp_type) == (
        TimestampType.CREATE_TIME,
        TimestampType.NO_TIMESTAMP_TYPE,
    )


def test_batch_properties_of_a_wrapper() -> None:
    records = [Record(10, T, b"a", b"1"), Record(11, T + 4, None, b"2"), Record(14, T + 2, b"c", None)]
    data = b"pad" + build_legacy_messages(records, magic=1, compression=CompressionType.SNAPPY)
    batch = LegacyBatch(data, 3)
    assert (batch.position, batch.size_in_bytes, bytes(batch.raw)) == (3, len(data) - 3, data[3:])
    assert (batch.magic, batch.compression, batch.timestamp_type, batch.max_timestamp) == (
        1,
        CompressionType.SNAPPY,
        TimestampType.CREATE_TIME,
        T + 4,
    )
    assert (batch.offset, batch.base_offset, batch.last_offset, batch.next_offset, batch.records_count) == (
        14,
        10,
        14,
        15,
        3,
    )
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.last_sequence) == (-1, -1, -1, -1)
    assert (batch.partition_leader_epoch, batch.is_transactional, batch.is_control) == (-1, False, False)
    assert (batch.has_delete_horizon, batch.delete_horizon_ms) == (False, None)
    assert batch.crc == batch.compute_crc() == zlib.crc32(data[3 + 16 :])
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch.records()] == [
        (r.offset, r.timestamp, r.key, r.value) for r in records
    ]


def test_crc_mismatch() -> None:
    data = bytearray(bytes.fromhex(EXAMPLE_V1.replace(" ", "")))
    data[-1] ^= 1
    batch = LegacyBatch(bytes(8) + bytes(data), 8)
    assert not batch.is_valid()
    with pytest.raises(CorruptRecordError) as error:
        batch.ensure_valid()
    assert error.value.position == 8


@pytest.mark.parametrize(
    "data",
    [bytes(17), struct.pack(">qi", 0, 13) + bytes(20), bytes.fromhex(EXAMPLE_V0.replace(" ", ""))[:-1]],
    ids=["short", "size-13", "torn"],
)
def test_an_entry_view_needs_a_whole_entry(data: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        LegacyBatch(data)


# -- wrappers (kafka-format.md §5.3) ------------------------------------------------------------------


def _inner_offsets(wrapper: bytes) -> list[int]:
    """The stored offsets of a v1 gzip wrapper's inner messages (value after a 34-byte prefix, §5.1)."""
    inner = CODECS[CompressionType.GZIP].decompress(wrapper[34:])
    return [batch.offset for batch in iterate_batches(inner)]


def test_v1_relative_offsets_with_gaps_as_the_cleaner_writes_them() -> None:
    kept = [Record(10, T, b"a", b"1"), Record(13, T + 1, b"b", b"2"), Record(15, T + 2, b"c", b"3")]
    data = build_legacy_messages(kept, magic=1, compression=CompressionType.GZIP)
    assert (LegacyBatch(data).offset, _inner_offsets(data)) == (15, [0, 3, 5])
    assert [r.offset for r in LegacyBatch(data).records()] == [10, 13, 15]
    assert [r.offset for r in peer_read(data)[0]] == [10, 13, 15]


def test_v1_relative_offsets_from_another_base() -> None:
    records = [Record(100, T, b"a", b"1"), Record(101, T, b"b", b"2")]
    data = build_legacy_messages(records, magic=1, compression=CompressionType.GZIP, first_offset=90)
    assert _inner_offsets(data) == [10, 11]
    assert [r.offset for r in LegacyBatch(data).records()] == [100, 101]


def test_v1_wrapper_offset_0_uses_inner_offsets_as_they_are() -> None:
    batch = LegacyBatch(_wrapper(_inner([0, 1, 2]), offset=0))
    assert [r.offset for r in batch.records()] == [0, 1, 2]
    shifted = LegacyBatch(_wrapper(_inner([0, 1, 2]), offset=52))
    assert [r.offset for r in shifted.records()] == [50, 51, 52]


def test_v0_inner_offsets_are_absolute() -> None:
    batch = LegacyBatch(_wrapper(_inner([7, 8, 9], magic=0), offset=9, magic=0, codec=CompressionType.LZ4))
    assert [(r.offset, r.timestamp) for r in batch.records()] == [(7, -1), (8, -1), (9, -1)]


def test_log_append_time_wrapper_applies_to_its_v1_inner_messages() -> None:
    records = [Record(0, T, b"a", b"1"), Record(1, T + 5, b"b", b"2")]
    data = build_legacy_messages(records, magic=1, compression=CompressionType.GZIP, log_append_time_ms=T + 99)
    batch = LegacyBatch(data)
    assert (batch.timestamp_type, batch.max_timestamp) == (TimestampType.LOG_APPEND_TIME, T + 99)
    assert [r.timestamp for r in batch.records()] == [T + 99, T + 99]
    plain = build_legacy_messages(records, magic=1, log_append_time_ms=T + 99)
    assert [(b.timestamp_type, b.records()[0].timestamp) for b in iterate_batches(plain)] == [
        (TimestampType.LOG_APPEND_TIME, T + 99)
    ] * 2


def test_a_partial_last_inner_entry_ends_the_inner_stream() -> None:
    batch = LegacyBatch(_wrapper(_inner([0, 1]) + _inner([2])[:-3], offset=5))
    assert [r.offset for r in batch.records()] == [4, 5]


@pytest.mark.parametrize(
    "data",
    [
        _wrapper(_inner([0, 1, 2]), offset=1),  # v1 wrapper below its last inner offset
        _wrapper(b"", offset=3),  # no inner message
        _wrapper(_wrapper(_inner([0]), offset=0), offset=3),  # an inner message is compressed
        _message(offset=3, magic=1, attributes=1, timestamp=T, key=None, value=None),  # null value
        _message(offset=3, magic=1, attributes=4, timestamp=T, key=None, value=CODECS[4].compress(_inner([0]))),
        _message(offset=3, magic=1, attributes=1, timestamp=T, key=None, value=b"not gzip"),
        _wrapper(_inner([0])[:-3], offset=0),  # only a partial inner message
        _wrapper(_inner([0]) + struct.pack(">qi", 1, 13) + bytes(20), offset=0),  # inner size below 14
        _entry(3, struct.pack(">bbqii", 1, 0, T, -1, 9)),  # a 9-byte value that is not there
    ],
    ids=[
        "wrapper-below-inner",
        "empty",
        "nested",
        "null-value",
        "zstd",
        "bad-gzip",
        "partial-inner",
        "inner-size-13",
        "value-past-the-message",
    ],
)
def test_invalid_wrappers_are_corrupt(data: bytes) -> None:
    batch = LegacyBatch(bytes(5) + data, 5)
    assert batch.is_valid()
    with pytest.raises(CorruptRecordError) as error:
        batch.records()
    assert error.value.position == 5


@pytest.mark.parametrize(
    "options",
    [
        {"magic": 2},
        {"magic": 1, "compression": CompressionType.ZSTD},
        {"magic": 0, "log_append_time_ms": T},
        {"magic": 1, "compression": CompressionType.GZIP, "records": []},
    ],
    ids=["magic-2", "zstd", "v0-log-append", "empty-wrapper"],
)
def test_builder_refuses_what_kafka_would_not_write(options: dict) -> None:
    records = options.pop("records", [Record(0, T, b"k", b"v")])
    with pytest.raises(ValueError):  # noqa: PT011 - programmer misuse of the builder
        build_legacy_messages(records, **options)


# -- interop with kafka-python ----------------------------------------------------------------------


def _peer_value(value: int | None) -> int:
    """kafka-python says None where Kafka says -1 (v0 timestamps and timestamp type)."""
    return -1 if value is None else value


def _peer_records(magic: int, compressed: bool) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """Six messages at absolute offsets 40-45 (a v1 wrapper's inner offsets are relative: 0-5)."""
    return [
        (i if magic == 1 and compressed else 40 + i, T + i, None if i == 2 else b"k%d" % i, b"value %d " % i * 10)
        for i in range(6)
    ]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=LEGACY_IDS)
def test_kafka_python_messages_read_identically(magic: int, codec: CompressionType) -> None:
    compressed = codec is not CompressionType.NONE
    data = peer_legacy(
        _peer_records(magic, compressed), magic=magic, codec=int(codec), wrapper_offset=45 if compressed else None
    )
    peers = peer_read(data)
    ours = list(iterate_batches(data))
    assert len(ours) == len(peers) == (1 if compressed else 6)
    for batch, peer in zip(ours, peers, strict=True):
        assert isinstance(batch, LegacyBatch)
        assert batch.is_valid()
        assert (batch.magic, batch.compression) == (peer.magic, peer.compression_type)
        assert batch.timestamp_type == _peer_value(peer.timestamp_type)
        assert [(r.offset, r.timestamp, r.key, r.value, r.crc) for r in batch.records()] == [
            (r.offset, _peer_value(r.timestamp), r.key, r.value, r.checksum) for r in peer
        ]
    assert [r.offset for b in ours for r in b.records()] == list(range(40, 46))


@pytest.mark.parametrize("codec", LEGACY_CODECS[1:], ids=LEGACY_IDS[1:])
def test_kafka_python_log_append_time_wrapper(codec: CompressionType) -> None:
    data = peer_legacy(_peer_records(1, True), magic=1, codec=int(codec), wrapper_offset=45, log_append_time=T + 77)
    peer = peer_read(data)[0]
    batch = LegacyBatch(data)
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in batch.records()] == [r.timestamp for r in peer] == [T + 77] * 6


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=LEGACY_IDS)
def test_our_messages_are_read_by_kafka_python(magic: int, codec: CompressionType) -> None:
    records = [Record(40 + 2 * i, T + i if magic else -1, b"k%d" % i if i else None, b"v" * (20 + i)) for i in range(5)]
    data = build_legacy_messages(records, magic=magic, compression=codec)
    peers = peer_read(data)  # asserts every CRC
    assert [(r.offset, _peer_value(r.timestamp), r.key, r.value) for p in peers for r in p] == [
        (r.offset, r.timestamp, r.key, r.value) for r in records
    ]
    ours = [r for batch in iterate_batches(data) for r in batch.records()]
    assert [(r.offset, r.timestamp, r.key, r.value) for r in ours] == [
        (r.offset, r.timestamp, r.key, r.value) for r in records
    ]
