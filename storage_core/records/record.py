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
# What :func:`frame_record` finds: (end, timestamp delta, offset delta, key position, key length,
# value position, value length, headers); a length below 0 is a null.
RecordFrame = tuple[int, int, int, int, int, int, int, tuple[Header, ...]]

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


def frame_record(data: bytes, pos: int) -> RecordFrame:
    """`DefaultRecord.readFrom` without building the record: frame and check the record at `pos`.

    Key and value are located, not copied; headers (rare) are decoded. :func:`record_of_frame`
    builds the record from the frame; the cleaner frames whole batches with :func:`frame_records`
    to decide on their records without building them.

    Args:
        data: the (decompressed) records section.
        pos: where the record's length varint starts.

    Returns:
        (position after the record, timestamp delta, offset delta, key position, key length (< 0:
        null), value position, value length (< 0: null), headers).

    Raises:
        CorruptRecordError: the record runs past `data` or its fields do not consume exactly its
            declared length (also IndexError when a field runs past `data`: callers wrap both).
    """
    # The cleaner's hot path: the one-byte case of every varint is inlined, and so is the two-byte
    # case of those that often take two bytes (record length, deltas, value length).
    size = len(data)
    first = data[pos]
    if first < 0x80:
        length, pos = (first >> 1) ^ -(first & 1), pos + 1
    elif data[pos + 1] < 0x80:
        z = (first & 0x7F) | data[pos + 1] << 7
        length, pos = (z >> 1) ^ -(z & 1), pos + 2
    else:
        length, pos = decode_varint(data, pos)
    end = pos + length
    if length < 0 or end > size:
        raise CorruptRecordError(f"record of {length} bytes runs past the records section")
    pos += 1  # attributes, unused
    first = data[pos]
    if first < 0x80:
        timestamp_delta, pos = (first >> 1) ^ -(first & 1), pos + 1
    elif data[pos + 1] < 0x80:
        z = (first & 0x7F) | data[pos + 1] << 7
        timestamp_delta, pos = (z >> 1) ^ -(z & 1), pos + 2
    else:
        timestamp_delta, pos = decode_varlong(data, pos)
    first = data[pos]
    if first < 0x80:
        offset_delta, pos = (first >> 1) ^ -(first & 1), pos + 1
    elif data[pos + 1] < 0x80:
        z = (first & 0x7F) | data[pos + 1] << 7
        offset_delta, pos = (z >> 1) ^ -(z & 1), pos + 2
    else:
        offset_delta, pos = decode_varint(data, pos)
    first = data[pos]
    if first < 0x80:
        key_length, pos = (first >> 1) ^ -(first & 1), pos + 1
    else:
        key_length, pos = _varint(data, pos)
    key_position = pos
    if key_length > 0:
        pos += key_length
    first = data[pos]
    if first < 0x80:
        value_length, pos = (first >> 1) ^ -(first & 1), pos + 1
    elif data[pos + 1] < 0x80:
        z = (first & 0x7F) | data[pos + 1] << 7
        value_length, pos = (z >> 1) ^ -(z & 1), pos + 2
    else:
        value_length, pos = decode_varint(data, pos)
    value_position = pos
    if value_length > 0:
        pos += value_length
    first = data[pos]
    if first < 0x80:
        header_count, pos = (first >> 1) ^ -(first & 1), pos + 1
    else:
        header_count, pos = _varint(data, pos)
    if header_count < 0 or header_count > end - pos:
        raise CorruptRecordError(f"invalid number of record headers {header_count}")
    headers: tuple[Header, ...] = ()
    if header_count:
        headers, pos = _decode_headers(data, pos, header_count)
    if pos != end:
        raise CorruptRecordError(f"record declares {length} bytes but its fields take {length + pos - end}")
    return end, timestamp_delta, offset_delta, key_position, key_length, value_position, value_length, headers


def frame_records(data: bytes, count: int) -> list[RecordFrame]:
    """:func:`frame_record` for each of the `count` records of a records section, which they must fill.

    Raises:
        CorruptRecordError: a record is malformed, or bytes remain after the last one (also
            IndexError, as :func:`frame_record`).
    """
    frames = []
    end = 0
    for _ in range(count):
        frame = frame_record(data, end)
        frames.append(frame)
        end = frame[0]
    if end != len(data):
        raise CorruptRecordError(f"incorrect declared batch size: {len(data) - end} bytes left after {count} records")
    return frames


def _decode_headers(data: bytes, pos: int, count: int) -> tuple[tuple[Header, ...], int]:
    headers: list[Header] = []
    for _ in range(count):
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
    return tuple(headers), pos


def record_of_frame(
    data: bytes,
    frame: RecordFrame,
    *,
    base_offset: int,
    base_timestamp: int,
    base_sequence: int,
    log_append_time: int | None,
) -> Record:
    """The record a :func:`frame_record` frame of `data` describes.

    Args:
        data: the records section the frame was read from.
        frame: the record's frame.
        base_offset: the batch's BaseOffset.
        base_timestamp: the batch's BaseTimestamp.
        base_sequence: the batch's BaseSequence (-1: records have no sequence).
        log_append_time: the batch's MaxTimestamp for a LogAppendTime batch (every record's
            timestamp), else None.
    """
    _, timestamp_delta, offset_delta, key_position, key_length, value_position, value_length, headers = frame
    key = data[key_position : key_position + key_length] if key_length >= 0 else None
    value = data[value_position : value_position + value_length] if value_length >= 0 else None
    sequence = -1 if base_sequence < 0 else increment_sequence(base_sequence, offset_delta)
    timestamp = base_timestamp + timestamp_delta if log_append_time is None else log_append_time
    return Record(base_offset + offset_delta, timestamp, key, value, headers, sequence)


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
