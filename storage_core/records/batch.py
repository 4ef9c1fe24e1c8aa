"""Record batch, magic 2: one layout declaration shared by the reader and the builder.

Mirrors `DefaultRecordBatch.java` and `DefaultRecord.java` (kafka-format.md §4). Big-endian:

```
RecordBatch =>
  BaseOffset => Int64            absolute offset of the first record
  Length => Int32                bytes after this field (batch size - 12)
  PartitionLeaderEpoch => Int32  not covered by the CRC
  Magic => Int8                  2
  CRC => Uint32                  CRC-32C of bytes [21, end)
  Attributes => Int16            bits 0-2 codec, 3 LogAppendTime, 4 transactional, 5 control,
                                 6 delete horizon in BaseTimestamp
  LastOffsetDelta => Int32
  BaseTimestamp => Int64         first timestamp, or the delete horizon (bit 6), or -1
  MaxTimestamp => Int64
  ProducerId => Int64            -1 = none
  ProducerEpoch => Int16
  BaseSequence => Int32
  RecordsCount => Int32
  Records => [Record]            compressed as one stream when the codec is not none

Record =>
  Length => Varint  Attributes => Int8  TimestampDelta => Varlong  OffsetDelta => Varint
  KeyLength => Varint (<0: null)  Key  ValueLength => Varint (<0: null)  Value
  HeadersCount => Varint  Headers => [KeyLength => Varint (>=0)  Key (UTF-8)  ValueLength => Varint  Value]
```

Invariants: offsets in a batch increase; after compaction `RecordsCount` can be below
`LastOffsetDelta + 1` (records removed, base offset, last offset delta and base sequence kept) and a
batch can hold no record at all (61 bytes, codec none, BaseTimestamp -1). Validity = size >= 61 and
the CRC matches; records are not checked by the CRC test (Kafka does not decompress to validate).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from storage_core.errors import CorruptRecordError
from storage_core.records.compression import CODECS, CompressionType, decompress
from storage_core.records.control import ControlRecordType, EndTxnMarker, encode_control_key, parse_control_key
from storage_core.records.crc import crc32c
from storage_core.records.record import Header, Record, TimestampType
from storage_core.records.varint import decode_varint, decode_varlong, encode_varint, encode_varlong

_FIELDS = (
    ("base_offset", "q"),
    ("batch_length", "i"),
    ("partition_leader_epoch", "i"),
    ("magic", "b"),
    ("crc", "I"),
    ("attributes", "h"),
    ("last_offset_delta", "i"),
    ("base_timestamp", "q"),
    ("max_timestamp", "q"),
    ("producer_id", "q"),
    ("producer_epoch", "h"),
    ("base_sequence", "i"),
    ("records_count", "i"),
)
HEADER = struct.Struct(">" + "".join(code for _, code in _FIELDS))
FIELD_POSITION = {
    name: struct.calcsize(">" + "".join(c for _, c in _FIELDS[:i])) for i, (name, _) in enumerate(_FIELDS)
}
RECORD_BATCH_OVERHEAD = HEADER.size  # 61
LOG_OVERHEAD = FIELD_POSITION["partition_leader_epoch"]  # 12: offset + length
CRC_POSITION = FIELD_POSITION["crc"]  # 17
ATTRIBUTES_POSITION = FIELD_POSITION["attributes"]  # 21: the CRC covers from here on

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

_INT32_MAX = 2**31 - 1


class BatchHeader(NamedTuple):
    """The 61-byte header of a magic-2 batch, field by field."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int


def increment_sequence(sequence: int, increment: int) -> int:
    """`DefaultRecordBatch.incrementSequence`: add, wrapping past int32 max to 0."""
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


class RecordBatch:
    """A zero-copy view of one magic-2 batch inside a buffer (bytes, mmap, memoryview)."""

    __slots__ = ("_buffer", "header", "position")

    def __init__(self, buffer: bytes | bytearray | memoryview, position: int = 0) -> None:
        self._buffer = buffer
        self.position = position
        self.header = BatchHeader._make(HEADER.unpack_from(buffer, position))

    # -- header fields ---------------------------------------------------------------------------
    @property
    def size_in_bytes(self) -> int:
        return self.header.batch_length + LOG_OVERHEAD

    @property
    def raw(self) -> memoryview:
        """The whole batch's bytes."""
        return memoryview(self._buffer)[self.position : self.position + self.size_in_bytes]

    @property
    def base_offset(self) -> int:
        return self.header.base_offset

    @property
    def last_offset(self) -> int:
        return self.header.base_offset + self.header.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def magic(self) -> int:
        return self.header.magic

    @property
    def crc(self) -> int:
        return self.header.crc

    @property
    def attributes(self) -> int:
        return self.header.attributes

    @property
    def compression(self) -> CompressionType:
        return CompressionType.of(self.header.attributes)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.header.attributes & TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.header.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.header.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.header.attributes & DELETE_HORIZON_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.header.base_timestamp if self.has_delete_horizon else None

    @property
    def base_timestamp(self) -> int:
        return self.header.base_timestamp

    @property
    def max_timestamp(self) -> int:
        return self.header.max_timestamp

    @property
    def producer_id(self) -> int:
        return self.header.producer_id

    @property
    def producer_epoch(self) -> int:
        return self.header.producer_epoch

    @property
    def base_sequence(self) -> int:
        return self.header.base_sequence

    @property
    def last_sequence(self) -> int:
        if self.header.base_sequence < 0:
            return -1
        return increment_sequence(self.header.base_sequence, self.header.last_offset_delta)

    @property
    def partition_leader_epoch(self) -> int:
        return self.header.partition_leader_epoch

    @property
    def records_count(self) -> int:
        return self.header.records_count

    # -- validity --------------------------------------------------------------------------------
    def compute_crc(self) -> int:
        """CRC-32C of bytes [21, end) of the batch."""
        start = self.position + ATTRIBUTES_POSITION
        return crc32c(memoryview(self._buffer)[start : self.position + self.size_in_bytes])

    def is_valid(self) -> bool:
        """Kafka's `isValid`: at least 61 bytes, inside the buffer, and the CRC matches."""
        size = self.size_in_bytes
        if size < RECORD_BATCH_OVERHEAD or self.position + size > len(self._buffer):
            return False
        return self.compute_crc() == self.header.crc

    def ensure_valid(self) -> None:
        """Raises CorruptRecordError (with the batch's position) unless :meth:`is_valid`."""
        if self.size_in_bytes < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"batch is {self.size_in_bytes} bytes, smaller than the {RECORD_BATCH_OVERHEAD}-byte header",
                position=self.position,
            )
        if not self.is_valid():
            raise CorruptRecordError(
                f"batch CRC {self.header.crc} does not match the computed {self.compute_crc()}",
                position=self.position,
            )

    # -- records ---------------------------------------------------------------------------------
    def records(self) -> list[Record]:
        """Decompress and decode every record.

        Raises:
            CorruptRecordError: a record does not parse, or the declared count or sizes disagree
                with the bytes (Kafka's InvalidRecordException).
        """
        header = self.header
        body = memoryview(self._buffer)[self.position + RECORD_BATCH_OVERHEAD : self.position + self.size_in_bytes]
        codec = self.compression
        data = bytes(body) if codec is CompressionType.NONE else decompress(codec, body, position=self.position)
        if header.records_count < 0:
            raise CorruptRecordError(f"negative record count {header.records_count}", position=self.position)
        log_append_time = bool(header.attributes & TIMESTAMP_TYPE_MASK)
        records = []
        pos = 0
        try:
            for _ in range(header.records_count):
                record, pos = _decode_record(data, pos, header, log_append_time)
                records.append(record)
        except (CorruptRecordError, IndexError, UnicodeDecodeError) as exc:
            raise CorruptRecordError(f"invalid record in batch: {exc}", position=self.position) from None
        if pos != len(data):
            raise CorruptRecordError(
                f"incorrect declared batch size: {len(data) - pos} bytes after {header.records_count} records",
                position=self.position,
            )
        return records

    def keys(self) -> Iterator[tuple[int, bytes | None]]:
        """(offset, key) of every record, decoding nothing else: what the cleaner's map phase reads.

        Framing is not fully checked here (`records()` does that when the batch is cleaned).
        """
        header = self.header
        body = memoryview(self._buffer)[self.position + RECORD_BATCH_OVERHEAD : self.position + self.size_in_bytes]
        codec = self.compression
        data = bytes(body) if codec is CompressionType.NONE else decompress(codec, body, position=self.position)
        pos = 0
        try:
            for _ in range(max(header.records_count, 0)):
                length, pos = _varint(data, pos)
                end = pos + length
                _, field = _varlong(data, pos + 1)  # attributes, then timestamp delta
                offset_delta, field = _varint(data, field)
                key_length, field = _varint(data, field)
                yield header.base_offset + offset_delta, data[field : field + key_length] if key_length >= 0 else None
                pos = end
        except IndexError:
            raise CorruptRecordError("record runs past the batch", position=self.position) from None

    def control_type(self) -> int | None:
        """The control type code of a control batch's record, None for data or empty batches."""
        if not self.is_control:
            return None
        records = self.records()
        if not records or records[0].key is None:
            return None
        return parse_control_key(records[0].key)

    def __repr__(self) -> str:
        return f"RecordBatch(position={self.position}, {self.header})"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint; one- and two-byte values (most lengths and deltas) skip the general decoder."""
    first = data[pos]
    if first < 0x80:
        return (first >> 1) ^ -(first & 1), pos + 1
    second = data[pos + 1]
    if second < 0x80:
        z = (first & 0x7F) | (second << 7)
        return (z >> 1) ^ -(z & 1), pos + 2
    return decode_varint(data, pos)


def _varlong(data: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varlong, with the same one-byte fast path."""
    first = data[pos]
    if first < 0x80:
        return (first >> 1) ^ -(first & 1), pos + 1
    return decode_varlong(data, pos)


def _decode_record(data: bytes, pos: int, header: BatchHeader, log_append_time: bool) -> tuple[Record, int]:
    length, pos = _varint(data, pos)
    end = pos + length
    if length < 0 or end > len(data):
        raise CorruptRecordError(f"record of {length} bytes runs past the batch")
    pos += 1  # attributes, unused
    timestamp_delta, pos = _varlong(data, pos)
    offset_delta, pos = _varint(data, pos)
    key_length, pos = _varint(data, pos)
    key = None
    if key_length >= 0:
        key = data[pos : pos + key_length]
        pos += key_length
    value_length, pos = _varint(data, pos)
    value = None
    if value_length >= 0:
        value = data[pos : pos + value_length]
        pos += value_length
    header_count, pos = _varint(data, pos)
    if header_count < 0 or header_count > end - pos:
        raise CorruptRecordError(f"invalid header count {header_count}")
    headers: list[Header] = []
    for _ in range(header_count):
        key_size, pos = _varint(data, pos)
        if key_size < 0:
            raise CorruptRecordError(f"negative header key length {key_size}")
        header_key = data[pos : pos + key_size].decode("utf-8")
        pos += key_size
        value_size, pos = _varint(data, pos)
        header_value = None
        if value_size >= 0:
            header_value = data[pos : pos + value_size]
            pos += value_size
        headers.append((header_key, header_value))
    if pos != end or (key is not None and len(key) != key_length) or (value is not None and len(value) != value_length):
        raise CorruptRecordError("record fields do not fill its declared length")
    sequence = -1 if header.base_sequence < 0 else increment_sequence(header.base_sequence, offset_delta)
    timestamp = header.max_timestamp if log_append_time else header.base_timestamp + timestamp_delta
    return Record(header.base_offset + offset_delta, timestamp, key, value, tuple(headers), sequence), end


# -- builder ---------------------------------------------------------------------------------------


def _encode_record(record: Record, *, base_offset: int, base_timestamp: int) -> bytes:
    body = bytearray(b"\x00")
    body += encode_varlong(record.timestamp - base_timestamp)
    body += encode_varint(record.offset - base_offset)
    for part in (record.key, record.value):
        if part is None:
            body += b"\x01"  # varint(-1)
        else:
            body += encode_varint(len(part)) + part
    body += encode_varint(len(record.headers))
    for header_key, header_value in record.headers:
        encoded_key = header_key.encode("utf-8")
        body += encode_varint(len(encoded_key)) + encoded_key
        body += b"\x01" if header_value is None else encode_varint(len(header_value)) + header_value
    return encode_varint(len(body)) + bytes(body)


def build_batch(
    records: Iterable[Record],
    *,
    base_offset: int,
    compression: CompressionType = CompressionType.NONE,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = -1,
    delete_horizon_ms: int | None = None,
    log_append_time_ms: int | None = None,
    last_offset_delta: int | None = None,
    max_timestamp: int | None = None,
) -> bytes:
    """Build one magic-2 batch from records that carry absolute offsets.

    Args:
        records: the records, offsets increasing (gaps allowed, as after compaction).
        base_offset: the batch's base offset (<= the first record's offset).
        compression: the codec of the records section (an empty batch is always uncompressed).
        producer_id: the producer id, -1 for none; with `producer_epoch` and `base_sequence`.
        is_transactional: attribute bit 4.
        is_control: attribute bit 5.
        partition_leader_epoch: stamped leader epoch (-1 none).
        delete_horizon_ms: sets attribute bit 6 and stores the horizon as the base timestamp.
        log_append_time_ms: LogAppendTime batch: every record reads this timestamp.
        last_offset_delta: keep a larger last offset delta than the records span (compaction).
        max_timestamp: max timestamp for a batch without records (default -1).

    Returns:
        The batch's bytes, CRC filled in.
    """
    records = list(records)
    if not records:
        compression = CompressionType.NONE
    first_timestamp = records[0].timestamp if records else -1
    base_timestamp = first_timestamp if delete_horizon_ms is None else delete_horizon_ms
    body = b"".join(_encode_record(r, base_offset=base_offset, base_timestamp=base_timestamp) for r in records)
    if compression is not CompressionType.NONE:
        body = CODECS[compression].compress(body)
    attributes = int(compression)
    if log_append_time_ms is not None:
        attributes |= TIMESTAMP_TYPE_MASK
        batch_max_timestamp = log_append_time_ms
    elif records:
        batch_max_timestamp = max(r.timestamp for r in records)
    else:
        batch_max_timestamp = -1 if max_timestamp is None else max_timestamp
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    if is_control:
        attributes |= CONTROL_MASK
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_MASK
    if last_offset_delta is None:
        last_offset_delta = records[-1].offset - base_offset if records else 0
    buffer = bytearray(RECORD_BATCH_OVERHEAD + len(body))
    HEADER.pack_into(
        buffer,
        0,
        base_offset,
        len(buffer) - LOG_OVERHEAD,
        partition_leader_epoch,
        2,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        batch_max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    buffer[RECORD_BATCH_OVERHEAD:] = body
    struct.pack_into(">I", buffer, CRC_POSITION, crc32c(memoryview(buffer)[ATTRIBUTES_POSITION:]))
    return bytes(buffer)


def build_end_txn_marker(
    *,
    offset: int,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    timestamp: int,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A COMMIT or ABORT marker batch as the broker writes it (78 bytes, attributes 0x30)."""
    control_type = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    record = Record(offset, timestamp, encode_control_key(control_type), EndTxnMarker(coordinator_epoch).encode())
    return build_batch(
        [record],
        base_offset=offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )
