"""A record as readers return it and builders take it (every magic), and the magic-2 record codec.

The codec mirrors `clients/.../common/record/DefaultRecord.java` (kafka-format.md §4.4):

```
Record =>
  Length => Varint                 bytes of everything below
  Attributes => Int8               0, unused
  TimestampDelta => Varlong        timestamp - batch BaseTimestamp
  OffsetDelta => Varint            offset - batch BaseOffset
  KeyLength => Varint (<0: null)  Key
  ValueLength => Varint (<0: null)  Value
  HeadersCount => Varint (>= 0)
  Headers => [HeaderKeyLength => Varint (>= 0)  HeaderKey (UTF-8)  HeaderValueLength => Varint (<0: null)  Value]
```

Invariant (Kafka's InvalidRecordException otherwise): the fields consume exactly `Length` bytes.
Records carry no checksum of their own: the batch CRC covers them (batch.py).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from storage_core.errors import CorruptRecordError
from storage_core.records.varint import decode_varint, decode_varlong, encode_varint, encode_varlong

Header = tuple[str, bytes | None]

_INT32_MAX = 2**31 - 1
_NULL = encode_varint(-1)


class TimestampType(enum.IntEnum):
    """How a batch's timestamps were assigned (attribute bit 3; v0 has none)."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def kafka_name(self) -> str:
        """The name Kafka prints: `NoTimestampType`, `CreateTime`, `LogAppendTime`."""
        return _TIMESTAMP_TYPE_NAMES[self]


_TIMESTAMP_TYPE_NAMES = {
    TimestampType.NO_TIMESTAMP_TYPE: "NoTimestampType",
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}


@dataclass(frozen=True, slots=True)
class Record:
    """One record.

    Attributes:
        offset: its absolute offset.
        timestamp: its timestamp (ms), -1 when it has none.
        key: the key, None for a null key.
        value: the value, None for a null value (a tombstone when the key is set).
        headers: (key, value) pairs, magic 2 only.
        sequence: its producer sequence, -1 without an idempotent producer (magic 2 only).
        crc: legacy (v0/v1) messages only: the message's stored CRC-32.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    sequence: int = -1
    crc: int | None = None


def increment_sequence(sequence: int, increment: int) -> int:
    """`DefaultRecordBatch.incrementSequence`: add, wrapping past 2^31-1 to 0."""
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A varint; one- and two-byte values (most lengths and deltas) skip the general decoder."""
    first = data[pos]
    if first < 0x80:
        return (first >> 1) ^ -(first & 1), pos + 1
    second = data[pos + 1]
    if second < 0x80:
        z = (first & 0x7F) | (second << 7)
        return (z >> 1) ^ -(z & 1), pos + 2
    return decode_varint(data, pos)


def _varlong(data: bytes, pos: int) -> tuple[int, int]:
    """A varlong, with the one-byte fast path."""
    first = data[pos]
    if first < 0x80:
        return (first >> 1) ^ -(first & 1), pos + 1
    return decode_varlong(data, pos)


def decode_record(
    data: bytes,
    pos: int,
    *,
    base_offset: int,
    base_timestamp: int,
    base_sequence: int,
    log_append_time: int | None,
) -> tuple[Record, int]:
    """`DefaultRecord.readFrom`: the record at `pos` of a (decompressed) records section.

    Args:
        data: the records section.
        pos: where the record's length varint starts.
        base_offset: the batch's BaseOffset.
        base_timestamp: the batch's BaseTimestamp.
        base_sequence: the batch's BaseSequence (-1: records have no sequence).
        log_append_time: the batch's MaxTimestamp for a LogAppendTime batch (every record's
            timestamp), else None.

    Returns:
        (the record, the position after it).

    Raises:
        CorruptRecordError: the record runs past `data` or its fields do not consume exactly its
            declared length (also IndexError when a field runs past `data`: callers wrap both).
    """
    length, pos = _varint(data, pos)
    end = pos + length
    if length < 0 or end > len(data):
        raise CorruptRecordError(f"record of {length} bytes runs past the records section")
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
        raise CorruptRecordError(f"invalid number of record headers {header_count}")
    headers: list[Header] = []
    for _ in range(header_count):
        key_size, pos = _varint(data, pos)
        if key_size < 0:
            raise CorruptRecordError(f"invalid negative header key size {key_size}")
        # Java decodes header keys leniently; surrogateescape keeps invalid UTF-8 byte for byte.
        header_key = data[pos : pos + key_size].decode("utf-8", "surrogateescape")
        pos += key_size
        value_size, pos = _varint(data, pos)
        header_value = None
        if value_size >= 0:
            header_value = data[pos : pos + value_size]
            pos += value_size
        headers.append((header_key, header_value))
    if pos != end:
        raise CorruptRecordError(f"record declares {length} bytes but its fields take {length + pos - end}")
    sequence = -1 if base_sequence < 0 else increment_sequence(base_sequence, offset_delta)
    timestamp = base_timestamp + timestamp_delta if log_append_time is None else log_append_time
    return Record(base_offset + offset_delta, timestamp, key, value, tuple(headers), sequence), end


def decode_key(data: bytes, pos: int) -> tuple[int, bytes | None, int]:
    """Only the offset delta and key of the record at `pos` (the cleaner's map phase).

    Returns:
        (offset delta, key, position after the record). Framing is not checked beyond what is read
        (IndexError when a field runs past `data`).
    """
    length, pos = _varint(data, pos)
    end = pos + length
    _, field = _varlong(data, pos + 1)  # skip attributes, then the timestamp delta
    offset_delta, field = _varint(data, field)
    key_length, field = _varint(data, field)
    return offset_delta, data[field : field + key_length] if key_length >= 0 else None, end


def encode_record(out: bytearray, record: Record, *, offset_delta: int, timestamp_delta: int) -> None:
    """`DefaultRecord.writeTo`: append one record (its length varint, then its body) to `out`."""
    body = bytearray(b"\x00")  # attributes
    body += encode_varlong(timestamp_delta)
    body += encode_varint(offset_delta)
    for part in (record.key, record.value):
        if part is None:
            body += _NULL
        else:
            body += encode_varint(len(part))
            body += part
    body += encode_varint(len(record.headers))
    for header_key, header_value in record.headers:
        encoded_key = header_key.encode("utf-8", "surrogateescape")
        body += encode_varint(len(encoded_key))
        body += encoded_key
        if header_value is None:
            body += _NULL
        else:
            body += encode_varint(len(header_value))
            body += header_value
    out += encode_varint(len(body))
    out += body
