"""Legacy messages, magic 0 and 1: reader and builder (kafka-format.md §5).

Mirrors `clients/.../common/record/LegacyRecord.java` and `AbstractLegacyRecordBatch.java`. Big-endian:

```
LogEntry => Offset => Int64  Size => Int32  Message
Message  => CRC => Uint32  Magic => Int8  Attributes => Int8  [Timestamp => Int64 (v1 only)]
            KeyLength => Int32 (<0: null)  Key  ValueLength => Int32 (<0: null)  Value
```

The CRC is CRC-32 (IEEE, zlib) over the message from the magic byte to its end. Attributes: bits
0-2 codec (none, gzip, snappy, lz4; zstd is invalid before magic 2), bit 3 (v1) LogAppendTime.
Validity (`LegacyRecord.isValid`): Size >= 14 and a matching CRC.

A compressed "wrapper" message has a null key and, as value, the compressed inner entries (same
framing, uncompressed messages). The wrapper's offset is the last inner offset. v0 inner offsets
are absolute; v1 inner offsets are relative: absolute = wrapper - last inner + inner, or the inner
offset itself when the wrapper offset is 0 (some librdkafka producers); a v1 wrapper offset below
the last inner offset is invalid. Under a LogAppendTime wrapper every v1 inner message reads the
wrapper's timestamp. As in Kafka's `DeepRecordsIterator`, a partial inner entry at the end of the
decompressed stream ends it silently. Crash story: like batches, a torn entry at the end of a
`.log` fails the size or CRC check and is truncated by recovery.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple

from storage_core.errors import CorruptRecordError
from storage_core.records.compression import CODECS, CompressionType
from storage_core.records.crc import crc32
from storage_core.records.entry import LogEntry
from storage_core.records.record import Record, TimestampType

_FIELDS = (
    ("offset", "q"),
    ("size", "i"),
    ("crc", "I"),
    ("magic", "b"),
    ("attributes", "b"),
)
ENTRY_HEADER = struct.Struct(">" + "".join(code for _, code in _FIELDS))  # v0 header; v1 adds Timestamp
_FIELD_POSITION = {
    name: struct.calcsize(">" + "".join(c for _, c in _FIELDS[:i])) for i, (name, _) in enumerate(_FIELDS)
}
_MESSAGE_POSITION = _FIELD_POSITION["crc"]  # 12: the message starts after offset and size
_CRC_START = _FIELD_POSITION["magic"]  # 16: the CRC covers the message from its magic byte
_TIMESTAMP = struct.Struct(">q")
_LENGTH = struct.Struct(">i")
_CRC = struct.Struct(">" + dict(_FIELDS)["crc"])
RECORD_OVERHEAD_V0 = ENTRY_HEADER.size - _MESSAGE_POSITION + 2 * _LENGTH.size  # 14
RECORD_OVERHEAD_V1 = RECORD_OVERHEAD_V0 + _TIMESTAMP.size  # 22
TIMESTAMP_TYPE_MASK = 0x08


class LegacyHeader(NamedTuple):
    """The fixed start of a legacy log entry, field by field (same order as `ENTRY_HEADER`)."""

    offset: int
    size: int
    crc: int
    magic: int
    attributes: int


class LegacyBatch(LogEntry):
    """One legacy log entry (a message, or a compressed wrapper of messages) inside a buffer.

    Offers the same properties as a magic-2 `RecordBatch`, with Kafka's "none" values for the
    fields legacy messages do not have (producer, sequence, leader epoch, control, horizon). Raw
    bytes, codec and CRC validity (`LegacyRecord.isValid`: Size >= 14, guaranteed by construction,
    and a matching CRC) come from :class:`LogEntry`.

    Raises (on construction):
        CorruptRecordError: Size below 14, or the entry runs past the buffer.
    """

    __slots__ = ("_records",)
    KIND = "record"
    header: LegacyHeader

    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    last_sequence = -1
    partition_leader_epoch = -1
    is_transactional = False
    is_control = False
    has_delete_horizon = False
    delete_horizon_ms = None

    def __init__(self, buffer: bytes | bytearray | memoryview, position: int = 0) -> None:
        if len(buffer) - position < ENTRY_HEADER.size:
            raise CorruptRecordError(f"a legacy entry needs {ENTRY_HEADER.size} bytes", position=position)
        self.header = LegacyHeader._make(ENTRY_HEADER.unpack_from(buffer, position))
        if self.header.size < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(
                f"record size {self.header.size} is less than the minimum record overhead {RECORD_OVERHEAD_V0}",
                position=position,
            )
        if position + self.size_in_bytes > len(buffer):
            raise CorruptRecordError("legacy entry runs past the end of the buffer", position=position)
        self._buffer = buffer
        self.position = position
        self._records: list[Record] | None = None

    @property
    def offset(self) -> int:
        """The entry's offset: the message's, or a wrapper's last inner offset."""
        return self.header.offset

    @property
    def size_in_bytes(self) -> int:
        return self.header.size + _MESSAGE_POSITION

    @property
    def timestamp_type(self) -> TimestampType:
        if self.header.magic == 0:
            return TimestampType.NO_TIMESTAMP_TYPE
        if self.header.attributes & TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def max_timestamp(self) -> int:
        """The message's timestamp (a wrapper's: the max inner or the append time); -1 for v0."""
        if self.header.magic == 0:
            return -1
        return _TIMESTAMP.unpack_from(self._buffer, self.position + ENTRY_HEADER.size)[0]

    @property
    def base_offset(self) -> int:
        """The first inner offset of a wrapper (Kafka decompresses for it), else the offset."""
        if self.compression is CompressionType.NONE:
            return self.header.offset
        return self.records()[0].offset

    @property
    def last_offset(self) -> int:
        return self.header.offset

    @property
    def next_offset(self) -> int:
        return self.header.offset + 1

    @property
    def records_count(self) -> int:
        return 1 if self.compression is CompressionType.NONE else len(self.records())

    def compute_crc(self) -> int:
        """CRC-32 of the message from its magic byte to its end."""
        return crc32(self.raw[_CRC_START:])

    def _key_value(self) -> tuple[bytes | None, bytes | None]:
        pos = self.position + ENTRY_HEADER.size + (_TIMESTAMP.size if self.header.magic > 0 else 0)
        end = self.position + self.size_in_bytes
        parts: list[bytes | None] = []
        for _ in range(2):
            if pos + _LENGTH.size > end:
                raise CorruptRecordError("legacy message is shorter than its fields")
            (length,) = _LENGTH.unpack_from(self._buffer, pos)
            pos += _LENGTH.size
            if length < 0:
                parts.append(None)
                continue
            if pos + length > end:
                raise CorruptRecordError("legacy message field runs past the message")
            parts.append(bytes(self._buffer[pos : pos + length]))
            pos += length
        return parts[0], parts[1]

    def records(self) -> list[Record]:
        """The message itself, or a wrapper's inner messages with absolute offsets and resolved timestamps.

        Raises:
            CorruptRecordError: fields run past the message, or a wrapper does not decompress, holds
                no message, holds a compressed or non-legacy message, uses zstd, or has a v1 offset
                below its last inner offset; `position` is the entry's.
            UnsupportedFormatError: an unknown codec id.
        """
        if self._records is None:
            try:
                key, value = self._key_value()
                if self.compression is CompressionType.NONE:
                    self._records = [Record(self.header.offset, self.max_timestamp, key, value, crc=self.header.crc)]
                else:
                    self._records = self._inner_records(value)
            except CorruptRecordError as exc:
                raise CorruptRecordError(str(exc), position=self.position) from None
        return self._records

    def _inner_records(self, value: bytes | None) -> list[Record]:
        codec = self.compression
        if codec is CompressionType.ZSTD or value is None:
            raise CorruptRecordError("invalid legacy wrapper: zstd or a null value")
        data = CODECS[codec].decompress(value, magic=self.header.magic)
        inner: list[LegacyBatch] = []
        pos = 0
        while len(data) - pos >= _MESSAGE_POSITION:  # as Kafka's DataLogInputStream: a partial entry ends it
            (size,) = _LENGTH.unpack_from(data, pos + _FIELD_POSITION["size"])
            if size >= RECORD_OVERHEAD_V0 and pos + _MESSAGE_POSITION + size > len(data):
                break
            entry = LegacyBatch(data, pos)  # raises for a size below 14
            if entry.magic not in (0, 1) or entry.compression is not CompressionType.NONE:
                raise CorruptRecordError("inner messages must be uncompressed v0/v1 messages")
            inner.append(entry)
            pos += entry.size_in_bytes
        if not inner:
            raise CorruptRecordError("compressed legacy wrapper with no inner message")
        delta = 0
        if self.header.magic == 1 and self.header.offset != 0:
            delta = self.header.offset - inner[-1].offset
            if delta < 0:
                raise CorruptRecordError("v1 wrapper offset is below its last inner offset")
        log_append_time = self.max_timestamp if self.timestamp_type is TimestampType.LOG_APPEND_TIME else None
        records = []
        for entry in inner:
            key, value = entry._key_value()
            timestamp = log_append_time if log_append_time is not None and entry.magic == 1 else entry.max_timestamp
            records.append(Record(entry.offset + delta, timestamp, key, value, crc=entry.crc))
        return records

    def __repr__(self) -> str:
        return f"LegacyBatch(position={self.position}, {self.header})"


def _entry(
    *, offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    """One log entry: offset, size, and the message with its CRC filled in."""
    out = bytearray(ENTRY_HEADER.size)
    if magic == 1:
        out += _TIMESTAMP.pack(timestamp)
    for part in (key, value):
        out += _LENGTH.pack(-1) if part is None else _LENGTH.pack(len(part)) + part
    header = LegacyHeader(offset=offset, size=len(out) - _MESSAGE_POSITION, crc=0, magic=magic, attributes=attributes)
    ENTRY_HEADER.pack_into(out, 0, *header)
    with memoryview(out) as view:
        _CRC.pack_into(out, _FIELD_POSITION["crc"], crc32(view[_CRC_START:]))
    return bytes(out)


def build_legacy_messages(
    records: Iterable[Record],
    *,
    magic: int,
    compression: CompressionType = CompressionType.NONE,
    log_append_time_ms: int | None = None,
    first_offset: int | None = None,
) -> bytes:
    """Legacy log entries as Kafka's `MemoryRecordsBuilder` writes them.

    Uncompressed: one entry per record at its offset. Compressed: one wrapper at the last record's
    offset whose inner offsets are absolute (v0) or relative to `first_offset` (v1).

    Args:
        records: the records (absolute offsets, increasing; gaps allowed). v0 ignores timestamps.
        magic: 0 or 1.
        compression: none, gzip, snappy or lz4.
        log_append_time_ms: v1 LogAppendTime: bit 3 is set and every message (and the wrapper)
            carries this timestamp, as the broker writes it.
        first_offset: the builder's base offset that v1 inner offsets are relative to; default: the
            first record's offset (what Kafka's cleaner uses). A producer's is 0.

    Raises:
        ValueError: magic not 0/1, zstd, LogAppendTime with magic 0, or a compressed wrapper
            without records.
    """
    if magic not in (0, 1) or compression is CompressionType.ZSTD:
        raise ValueError(f"magic {magic} with {compression.kafka_name} is not a legacy format")
    if magic == 0 and log_append_time_ms is not None:
        raise ValueError("magic 0 has no timestamps, so no LogAppendTime")
    records = list(records)
    attributes = 0 if log_append_time_ms is None else TIMESTAMP_TYPE_MASK
    timestamps = [r.timestamp if log_append_time_ms is None else log_append_time_ms for r in records]
    if compression is CompressionType.NONE:
        return b"".join(
            _entry(offset=r.offset, magic=magic, attributes=attributes, timestamp=t, key=r.key, value=r.value)
            for r, t in zip(records, timestamps, strict=True)
        )
    if not records:
        raise ValueError("a compressed legacy wrapper needs at least one record")
    base = records[0].offset if first_offset is None else first_offset
    inner = b"".join(
        _entry(
            offset=r.offset if magic == 0 else r.offset - base,
            magic=magic,
            attributes=attributes,
            timestamp=t,
            key=r.key,
            value=r.value,
        )
        for r, t in zip(records, timestamps, strict=True)
    )
    return _entry(
        offset=records[-1].offset,
        magic=magic,
        attributes=attributes | compression,
        timestamp=max(timestamps),
        key=None,
        value=CODECS[compression].compress(inner, magic=magic),
    )
