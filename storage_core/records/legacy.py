"""Legacy messages, magic 0 and 1 (kafka-format.md §5; `LegacyRecord.java`, `AbstractLegacyRecordBatch.java`).

```
LogEntry => Offset => Int64  Size => Int32  Message
Message (v0) => CRC => Uint32  Magic => Int8  Attributes => Int8  Key => Bytes  Value => Bytes
Message (v1) => CRC => Uint32  Magic => Int8  Attributes => Int8  Timestamp => Int64  Key => Bytes  Value => Bytes
Bytes => Length => Int32 (<0: null)  Data
```

The CRC is CRC-32 (IEEE) over the message from the magic byte on. Attributes bits 0-2 are the
codec, bit 3 (v1) LogAppendTime. A compressed "wrapper" message has a null key and, as its value,
the compressed inner entries; its offset is the last inner offset. v0 inner offsets are absolute,
v1 inner offsets relative (`absolute = wrapper - last_inner + inner`, or as-is when the wrapper
offset is 0). A LogAppendTime wrapper's timestamp applies to every inner message.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from storage_core.errors import CorruptRecordError, UnsupportedFormatError
from storage_core.records.compression import CODECS, CompressionType, decompress
from storage_core.records.crc import crc32
from storage_core.records.record import Record, TimestampType

_ENTRY = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_TIMESTAMP = struct.Struct(">q")
_LENGTH = struct.Struct(">i")
LOG_OVERHEAD = 12
RECORD_OVERHEAD_V0 = 14
_TIMESTAMP_TYPE_MASK = 0x08


class LegacyBatch:
    """One legacy log entry (a message, or a compressed wrapper of messages) inside a buffer."""

    __slots__ = ("_buffer", "_inner", "attributes", "crc", "magic", "offset", "position", "size")

    def __init__(self, buffer: bytes | bytearray | memoryview, position: int = 0) -> None:
        self._buffer = buffer
        self.position = position
        self.offset, self.size, self.crc, self.magic, self.attributes = _ENTRY.unpack_from(buffer, position)
        self._inner: list[Record] | None = None

    @property
    def size_in_bytes(self) -> int:
        return self.size + LOG_OVERHEAD

    @property
    def raw(self) -> memoryview:
        return memoryview(self._buffer)[self.position : self.position + self.size_in_bytes]

    @property
    def compression(self) -> CompressionType:
        return CompressionType.of(self.attributes)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == 0:
            return TimestampType.NO_TIMESTAMP_TYPE
        return TimestampType.LOG_APPEND_TIME if self.attributes & _TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME

    @property
    def max_timestamp(self) -> int:
        if self.magic == 0:
            return -1
        return _TIMESTAMP.unpack_from(self._buffer, self.position + LOG_OVERHEAD + 6)[0]

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def next_offset(self) -> int:
        return self.offset + 1

    @property
    def base_offset(self) -> int:
        """The first inner offset of a wrapper (Kafka decompresses for it), else the offset."""
        if self.compression is CompressionType.NONE:
            return self.offset
        records = self.records()
        return records[0].offset if records else self.offset

    @property
    def records_count(self) -> int:
        return 1 if self.compression is CompressionType.NONE else len(self.records())

    # Fields that only magic 2 has, with Kafka's "none" values.
    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    last_sequence = -1
    partition_leader_epoch = -1
    is_transactional = False
    is_control = False
    delete_horizon_ms = None

    def compute_crc(self) -> int:
        start = self.position + LOG_OVERHEAD + 4
        return crc32(memoryview(self._buffer)[start : self.position + self.size_in_bytes])

    def is_valid(self) -> bool:
        if self.size < RECORD_OVERHEAD_V0 or self.position + self.size_in_bytes > len(self._buffer):
            return False
        return self.compute_crc() == self.crc

    def ensure_valid(self) -> None:
        if not self.is_valid():
            raise CorruptRecordError(f"legacy message CRC {self.crc} does not match", position=self.position)

    def _key_value(self) -> tuple[bytes | None, bytes | None]:
        pos = self.position + LOG_OVERHEAD + 6 + (8 if self.magic == 1 else 0)
        end = self.position + self.size_in_bytes
        parts: list[bytes | None] = []
        for _ in range(2):
            if pos + 4 > end:
                raise CorruptRecordError("legacy message shorter than its fields", position=self.position)
            (length,) = _LENGTH.unpack_from(self._buffer, pos)
            pos += 4
            if length < 0:
                parts.append(None)
                continue
            if pos + length > end:
                raise CorruptRecordError("legacy message field runs past the message", position=self.position)
            parts.append(bytes(self._buffer[pos : pos + length]))
            pos += length
        return parts[0], parts[1]

    def records(self) -> list[Record]:
        """The message itself, or a wrapper's inner messages with absolute offsets."""
        if self._inner is not None:
            return self._inner
        key, value = self._key_value()
        if self.compression is CompressionType.NONE:
            self._inner = [Record(self.offset, self.max_timestamp, key, value, crc=self.crc)]
            return self._inner
        if value is None:
            raise CorruptRecordError("compressed legacy wrapper without a value", position=self.position)
        inner_bytes = decompress(self.compression, value, magic=self.magic, position=self.position)
        inner = []
        pos = 0
        while pos + LOG_OVERHEAD <= len(inner_bytes):
            entry = LegacyBatch(inner_bytes, pos)
            if entry.size < RECORD_OVERHEAD_V0 or pos + entry.size_in_bytes > len(inner_bytes):
                raise CorruptRecordError("truncated inner legacy message", position=self.position)
            inner.append(entry)
            pos += entry.size_in_bytes
        if not inner:
            raise CorruptRecordError("compressed legacy wrapper with no inner message", position=self.position)
        last_inner = inner[-1].offset
        if self.magic == 1 and self.offset != 0 and self.offset < last_inner:
            raise CorruptRecordError("wrapper offset below its last inner offset", position=self.position)
        log_append = self.magic == 1 and bool(self.attributes & _TIMESTAMP_TYPE_MASK)
        records = []
        for entry in inner:
            inner_key, inner_value = entry._key_value()
            offset = entry.offset
            if self.magic == 1 and self.offset != 0:
                offset = self.offset - last_inner + entry.offset
            timestamp = self.max_timestamp if log_append else entry.max_timestamp
            records.append(Record(offset, timestamp, inner_key, inner_value, crc=entry.crc))
        self._inner = records
        return records


def _message(*, magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None) -> bytes:
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic == 1:
        body += _TIMESTAMP.pack(timestamp)
    for part in (key, value):
        body += _LENGTH.pack(-1) if part is None else _LENGTH.pack(len(part)) + part
    return struct.pack(">I", crc32(body)) + bytes(body)


def _entry(offset: int, message: bytes) -> bytes:
    return struct.pack(">qi", offset, len(message)) + message


def build_legacy_messages(
    records: Iterable[Record],
    *,
    magic: int,
    compression: CompressionType = CompressionType.NONE,
    log_append_time_ms: int | None = None,
) -> bytes:
    """Legacy log entries: one per record, or one compressed wrapper holding them all.

    Raises:
        UnsupportedFormatError: magic not 0/1, or zstd (not allowed before magic 2).
    """
    if magic not in (0, 1) or compression is CompressionType.ZSTD:
        raise UnsupportedFormatError(f"magic {magic} with {compression.kafka_name} is not a legacy format")
    records = list(records)
    if compression is CompressionType.NONE:
        return b"".join(
            _entry(r.offset, _message(magic=magic, attributes=0, timestamp=r.timestamp, key=r.key, value=r.value))
            for r in records
        )
    inner = b"".join(
        _entry(
            r.offset if magic == 0 else i,
            _message(magic=magic, attributes=0, timestamp=r.timestamp, key=r.key, value=r.value),
        )
        for i, r in enumerate(records)
    )
    attributes = int(compression) | (_TIMESTAMP_TYPE_MASK if log_append_time_ms is not None else 0)
    timestamp = log_append_time_ms if log_append_time_ms is not None else max(r.timestamp for r in records)
    wrapper = _message(
        magic=magic,
        attributes=attributes,
        timestamp=timestamp,
        key=None,
        value=CODECS[compression].compress(inner, magic=magic),
    )
    return _entry(records[-1].offset, wrapper)
