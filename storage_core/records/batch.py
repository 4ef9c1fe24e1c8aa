"""Record batch, magic 2: one layout declaration shared by the reader and the builder.

Mirrors `clients/.../common/record/DefaultRecordBatch.java` and `DefaultRecord.java`
(kafka-format.md §4). Big-endian, signed, except the CRC (unsigned):

```
RecordBatch =>
  BaseOffset => Int64            absolute offset of the first record (offset delta 0)
  Length => Int32                bytes after this field (batch size - 12)
  PartitionLeaderEpoch => Int32  -1 = none; NOT covered by the CRC
  Magic => Int8                  2
  CRC => Uint32                  CRC-32C of bytes [21, end)
  Attributes => Int16            bits 0-2 codec, 3 LogAppendTime, 4 transactional, 5 control,
                                 6 delete horizon in BaseTimestamp
  LastOffsetDelta => Int32       last offset - base offset (also the last sequence delta)
  BaseTimestamp => Int64         first record's timestamp, or the delete horizon (bit 6), or -1
  MaxTimestamp => Int64          max record timestamp (CreateTime) or the append time (LogAppendTime)
  ProducerId => Int64            -1 = none
  ProducerEpoch => Int16         -1 = none
  BaseSequence => Int32          -1 = none; record sequence = BaseSequence + OffsetDelta, wrapping at 2^31-1
  RecordsCount => Int32
  Records => [Record]            one compressed stream when the codec is not none

Record =>
  Length => Varint  Attributes => Int8  TimestampDelta => Varlong  OffsetDelta => Varint
  KeyLength => Varint (<0: null)  Key  ValueLength => Varint (<0: null)  Value
  HeadersCount => Varint  [HeaderKeyLength => Varint (>=0)  HeaderKey (UTF-8)  HeaderValueLength => Varint  Value]
```

Invariants: offsets increase inside a batch. After compaction `RecordsCount` may be below
`LastOffsetDelta + 1` (BaseOffset, LastOffsetDelta and BaseSequence are kept), and a batch may hold
no record at all (61 bytes, codec none, BaseTimestamp -1, MaxTimestamp kept). A LogAppendTime batch
reports MaxTimestamp as every record's timestamp. Validity (Kafka's `isValid`) is size >= 61 and a
matching CRC; the records are not decoded for it. Crash story: a torn batch at the end of a `.log`
fails the size or CRC check and recovery truncates it (file_records.py).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import NamedTuple, TypeVar

from storage_core import native
from storage_core.errors import CorruptRecordError
from storage_core.records.compression import CODECS, CompressionType
from storage_core.records.control import ControlRecordType, EndTxnMarker, encode_control_key, parse_control_key
from storage_core.records.crc import crc32c
from storage_core.records.entry import LogEntry
from storage_core.records.record import (
    Header,
    Record,
    RecordFrame,
    TimestampType,
    encode_record,
    increment_sequence,
    record_of_frame,
)

__all__ = [  # Header, Record and TimestampType live in record.py and are part of this module's API too
    "ATTRIBUTES_POSITION",
    "CONTROL_MASK",
    "CRC_POSITION",
    "DELETE_HORIZON_MASK",
    "FIELDS",
    "FIELD_CODE",
    "FIELD_POSITION",
    "HEADER",
    "LOG_OVERHEAD",
    "MAGIC_POSITION",
    "MAGIC_VALUE",
    "RECORD_BATCH_OVERHEAD",
    "TIMESTAMP_TYPE_MASK",
    "TRANSACTIONAL_MASK",
    "BatchHeader",
    "Header",
    "Record",
    "RecordBatch",
    "TimestampType",
    "build_batch",
    "build_end_txn_marker",
    "increment_sequence",
]

FIELDS = (  # the header, field by field: (name, struct code); everything below derives from it
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
FIELD_CODE = dict(FIELDS)
HEADER = struct.Struct(">" + "".join(FIELD_CODE.values()))
FIELD_POSITION = {name: struct.calcsize(">" + "".join(c for _, c in FIELDS[:i])) for i, (name, _) in enumerate(FIELDS)}
RECORD_BATCH_OVERHEAD = HEADER.size  # 61
LOG_OVERHEAD = FIELD_POSITION["partition_leader_epoch"]  # 12: base offset + length, common to every magic
MAGIC_POSITION = FIELD_POSITION["magic"]  # 16, common to every magic
CRC_POSITION = FIELD_POSITION["crc"]  # 17
ATTRIBUTES_POSITION = FIELD_POSITION["attributes"]  # 21: the CRC covers from here to the end
_CRC = struct.Struct(">" + FIELD_CODE["crc"])
MAGIC_VALUE = 2

TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

_INT32_MAX = 2**31 - 1
T = TypeVar("T")


class BatchHeader(NamedTuple):
    """The 61-byte header of a magic-2 batch, field by field (same order as `HEADER`)."""

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


class RecordBatch(LogEntry):
    """A zero-copy view of one whole magic-2 batch inside a buffer (bytes, mmap, memoryview).

    Raw bytes, codec and CRC validity (at least 61 bytes, guaranteed by construction, and a
    matching CRC) come from :class:`LogEntry`.

    Raises (on construction):
        CorruptRecordError: the batch is shorter than its 61-byte header, or runs past the buffer.
    """

    __slots__ = ()
    KIND = "record batch"
    header: BatchHeader

    def __init__(self, buffer: bytes | bytearray | memoryview, position: int = 0) -> None:
        if len(buffer) - position < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"a batch needs {RECORD_BATCH_OVERHEAD} bytes, {len(buffer) - position} are left", position=position
            )
        self.header = BatchHeader._make(HEADER.unpack_from(buffer, position))
        size = self.header.batch_length + LOG_OVERHEAD
        if size < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"batch size {size} is smaller than the minimum overhead {RECORD_BATCH_OVERHEAD}", position=position
            )
        if position + size > len(buffer):
            raise CorruptRecordError(f"batch of {size} bytes runs past the end of the buffer", position=position)
        self._buffer = buffer
        self.position = position

    @property
    def size_in_bytes(self) -> int:
        return self.header.batch_length + LOG_OVERHEAD

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

    def compute_crc(self) -> int:
        """CRC-32C of bytes [21, end) of the batch."""
        return crc32c(self.raw[ATTRIBUTES_POSITION:])

    def _records_section(self) -> bytes:
        body = self.raw[RECORD_BATCH_OVERHEAD:]
        codec = self.compression
        return bytes(body) if codec is CompressionType.NONE else CODECS[codec].decompress(body)

    def frame_with(self, frame: Callable[[bytes, int], T]) -> T:
        """`frame(records section, records count)` over the decompressed records section, its
        framing errors raised as :meth:`record_frames` raises them.

        Raises:
            CorruptRecordError: the records do not decompress, `frame` finds them malformed
                (CorruptRecordError or IndexError), or the count is negative; `position` is the batch's.
            UnsupportedFormatError: an unknown codec id.
        """
        count = self.header.records_count
        if count < 0:
            raise CorruptRecordError(f"invalid record count {count}", position=self.position)
        try:
            return frame(self._records_section(), count)
        except (CorruptRecordError, IndexError) as exc:
            raise CorruptRecordError(f"invalid record in batch: {exc}", position=self.position) from None

    def record_frames(self) -> tuple[bytes, list[RecordFrame]]:
        """The decompressed records section and the frame of each of its records
        (`storage_core.native.frame_records`, record.py's :func:`frame_records`: fields located and
        checked, no `Record` built).

        Raises:
            CorruptRecordError: the records do not decompress or parse, a record does not consume
                exactly its declared length, or bytes remain after `records_count` records
                (Kafka's InvalidRecordException); `position` is the batch's.
            UnsupportedFormatError: an unknown codec id.
        """
        return self.frame_with(lambda data, count: (data, native.frame_records(data, count)))

    def records_at(self, data: bytes, frames: Iterable[RecordFrame]) -> list[Record]:
        """The records of `frames` (from :meth:`record_frames`), offsets absolute, sequences and
        timestamps resolved from the batch header."""
        header = self.header
        log_append_time = header.max_timestamp if header.attributes & TIMESTAMP_TYPE_MASK else None
        return [
            record_of_frame(
                data,
                frame,
                base_offset=header.base_offset,
                base_timestamp=header.base_timestamp,
                base_sequence=header.base_sequence,
                log_append_time=log_append_time,
            )
            for frame in frames
        ]

    def records(self) -> list[Record]:
        """Decompress and decode every record (offsets absolute, sequences and timestamps resolved).

        Raises:
            CorruptRecordError, UnsupportedFormatError: as :meth:`record_frames`.
        """
        return self.records_at(*self.record_frames())

    def _control_record(self) -> tuple[int, Record] | None:
        """(type code, record) of a control batch; None for a data batch or a control batch without a record."""
        if not self.is_control:
            return None
        records = self.records()
        if not records or records[0].key is None:
            return None
        return parse_control_key(records[0].key), records[0]

    def control_type(self) -> int | None:
        """The control type code of a control batch (a ControlRecordType value or an unknown code).

        Returns None for a data batch and for a control batch whose record was compacted away.
        """
        control = self._control_record()
        return None if control is None else control[0]

    def end_txn_marker(self) -> EndTxnMarker | None:
        """The marker of a COMMIT or ABORT batch, None for any other batch.

        Raises:
            CorruptRecordError: the marker record has no value or a malformed one.
        """
        control = self._control_record()
        if control is None:
            return None
        code, record = control
        if code not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            return None
        if record.value is None:
            raise CorruptRecordError("transaction marker without a value", position=self.position)
        return EndTxnMarker.decode(record.value)

    def __repr__(self) -> str:
        return f"RecordBatch(position={self.position}, {self.header})"


def build_batch(
    records: Iterable[Record],
    *,
    base_offset: int,
    compression: CompressionType = CompressionType.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = -1,
    delete_horizon_ms: int | None = None,
    log_append_time_ms: int | None = None,
    last_offset_delta: int | None = None,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
) -> bytes:
    """Build one magic-2 batch from records that carry absolute offsets (`MemoryRecordsBuilder`).

    Args:
        records: the records, offsets strictly increasing from `base_offset` (gaps allowed, as after
            compaction). Their `sequence` is not written: it follows from `base_sequence`.
        base_offset: the batch's BaseOffset.
        compression: the codec of the records section (a batch without records is always uncompressed).
        timestamp_type: CREATE_TIME, or LOG_APPEND_TIME (then `log_append_time_ms` is required).
        producer_id: -1 for none; with `producer_epoch` and `base_sequence` (-1 for none).
        is_transactional: attribute bit 4.
        is_control: attribute bit 5.
        partition_leader_epoch: the stamped leader epoch (-1 for none).
        delete_horizon_ms: sets attribute bit 6 and stores the horizon as BaseTimestamp (record
            timestamp deltas are then relative to it).
        log_append_time_ms: the broker's append time: MaxTimestamp, and every record's timestamp on
            read. Giving it implies LOG_APPEND_TIME.
        last_offset_delta: keep a larger LastOffsetDelta than the records span (compaction keeps the
            original batch's); default: the last record's offset delta (0 without records).
        base_timestamp: BaseTimestamp; default: the delete horizon, else the first record's
            timestamp, else -1.
        max_timestamp: MaxTimestamp of a batch without records (an empty batch keeps its source's,
            §4.6); ignored when there are records (their largest timestamp, or the append time).

    Returns:
        The batch's bytes, CRC filled in.

    Raises:
        ValueError: offsets not increasing or beyond int32 of `base_offset`, a `last_offset_delta`
            below the records' span, LOG_APPEND_TIME without its time, NO_TIMESTAMP_TYPE, or a
            delete horizon on a batch without records.
    """
    records = list(records)
    if timestamp_type is TimestampType.NO_TIMESTAMP_TYPE:
        raise ValueError("a magic-2 batch is CREATE_TIME or LOG_APPEND_TIME")
    log_append = timestamp_type is TimestampType.LOG_APPEND_TIME or log_append_time_ms is not None
    if log_append and log_append_time_ms is None:
        raise ValueError("LOG_APPEND_TIME needs log_append_time_ms")
    if delete_horizon_ms is not None and base_timestamp not in (None, delete_horizon_ms):
        raise ValueError("with a delete horizon, BaseTimestamp is the horizon")
    if records:
        if base_timestamp is None:
            base_timestamp = records[0].timestamp if delete_horizon_ms is None else delete_horizon_ms
    else:
        if delete_horizon_ms is not None:
            raise ValueError("a batch without records carries no delete horizon (Kafka's writeEmptyHeader)")
        compression = CompressionType.NONE
        base_timestamp = -1 if base_timestamp is None else base_timestamp
    out = bytearray(RECORD_BATCH_OVERHEAD)
    records_max_timestamp = -1
    previous = base_offset - 1
    for record in records:
        if record.offset <= previous or record.offset - base_offset > _INT32_MAX:
            raise ValueError(f"offset {record.offset} does not follow {previous} in a batch based at {base_offset}")
        previous = record.offset
        records_max_timestamp = max(records_max_timestamp, record.timestamp)
        encode_record(
            out, record, offset_delta=record.offset - base_offset, timestamp_delta=record.timestamp - base_timestamp
        )
    if compression is not CompressionType.NONE:
        with memoryview(out) as view:
            compressed = CODECS[compression].compress(view[RECORD_BATCH_OVERHEAD:])
        del out[RECORD_BATCH_OVERHEAD:]
        out += compressed
    span = previous - base_offset if records else 0
    if last_offset_delta is None:
        last_offset_delta = span
    elif last_offset_delta < span:
        raise ValueError(f"last_offset_delta {last_offset_delta} is below the records' span {span}")
    if log_append_time_ms is not None:
        batch_max_timestamp = log_append_time_ms
    elif records:
        batch_max_timestamp = records_max_timestamp
    else:
        batch_max_timestamp = -1 if max_timestamp is None else max_timestamp
    attributes = (
        int(compression)
        | (TIMESTAMP_TYPE_MASK if log_append else 0)
        | (TRANSACTIONAL_MASK if is_transactional else 0)
        | (CONTROL_MASK if is_control else 0)
        | (DELETE_HORIZON_MASK if delete_horizon_ms is not None else 0)
    )
    header = BatchHeader(
        base_offset=base_offset,
        batch_length=len(out) - LOG_OVERHEAD,
        partition_leader_epoch=partition_leader_epoch,
        magic=MAGIC_VALUE,
        crc=0,
        attributes=attributes,
        last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=batch_max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        records_count=len(records),
    )
    HEADER.pack_into(out, 0, *header)
    with memoryview(out) as view:
        _CRC.pack_into(out, CRC_POSITION, crc32c(view[ATTRIBUTES_POSITION:]))
    return bytes(out)


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
    """A COMMIT or ABORT marker batch as the broker writes it (78 bytes, attributes 0x30, §4.7)."""
    control_type = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    marker = EndTxnMarker(coordinator_epoch=coordinator_epoch)
    return build_batch(
        [Record(offset, timestamp, encode_control_key(control_type), marker.encode())],
        base_offset=offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )
