"""The events of `__remote_log_metadata`: its records decoded into what they say about remote segments.

`TopicBasedRemoteLogMetadataManager` (KIP-405) publishes, for every topic partition with tiered
storage, one event per step of a remote segment's life to `__remote_log_metadata` (an ordinary topic
with null keys, on the brokers' own disks); the record layouts are
:mod:`storage_core.messages.schemas.remote_log_metadata`:

```
RemoteLogSegmentMetadata        a segment's copy starts (state COPY_SEGMENT_STARTED): its offsets
                                [start, end], size, max timestamp, leader epochs
RemoteLogSegmentMetadataUpdate  the same segment id moves on: COPY_SEGMENT_FINISHED (uploaded),
                                DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED
RemotePartitionDeleteMetadata   the whole partition's remote data is being deleted
RemoteLogSegmentMetadataSnapshot a segment's state in a metadata snapshot (Kafka writes these only to
                                its local snapshot files, never to the topic; read for completeness)
```

:func:`event_text` is `toString()` of the Java object `RemoteLogMetadataSerde.deserialize` returns,
which `kafka-dump-log.sh --remote-log-metadata-decoder` prints as the payload; it checks what that
object's constructor checks (a negative start offset, an end before the start, no leader epochs),
so a record Kafka's tool cannot print is an error here too.
"""

from __future__ import annotations

from dataclasses import dataclass

from storage_core.errors import CorruptRecordError
from storage_core.messages import REMOTE_LOG_METADATA, MetadataRecord, StructValue, read_metadata_record
from storage_core.messages.schemas import remote_log_metadata as schema
from storage_core.messages.schemas.remote_log_metadata import RemoteLogSegmentState, RemotePartitionDeleteState
from storage_core.messages.wire import Buffer


@dataclass(frozen=True, slots=True)
class TopicIdPartition:
    """A topic partition with its topic id (Kafka Uuid text), as the events name it."""

    topic_id: str
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic_id}:{self.topic}-{self.partition}"  # TopicIdPartition.toString


@dataclass(frozen=True, slots=True)
class SegmentMetadata:
    """A RemoteLogSegmentMetadataRecord (or snapshot record): a remote segment's offsets and state."""

    partition: TopicIdPartition
    segment_id: str
    start_offset: int
    end_offset: int
    broker_id: int
    max_timestamp_ms: int
    event_timestamp_ms: int
    leader_epochs: tuple[tuple[int, int], ...]  # (epoch, start offset), ascending by epoch
    size_bytes: int
    custom_metadata_bytes: int | None
    state: RemoteLogSegmentState
    txn_index_empty: bool
    snapshot: bool = False


@dataclass(frozen=True, slots=True)
class SegmentUpdate:
    """A RemoteLogSegmentMetadataUpdateRecord: segment `segment_id` is now in `state`."""

    partition: TopicIdPartition
    segment_id: str
    broker_id: int
    event_timestamp_ms: int
    custom_metadata_bytes: int | None
    state: RemoteLogSegmentState


@dataclass(frozen=True, slots=True)
class PartitionDelete:
    """A RemotePartitionDeleteMetadataRecord: the partition's remote data is (being) deleted."""

    partition: TopicIdPartition
    broker_id: int
    event_timestamp_ms: int
    state: RemotePartitionDeleteState


RemoteLogEvent = SegmentMetadata | SegmentUpdate | PartitionDelete


def _struct(data: StructValue, name: str) -> StructValue:
    value = data[name]
    if not isinstance(value, StructValue):
        raise CorruptRecordError(f"{data.spec.name} without a {name}")
    return value


def _partition(value: StructValue) -> TopicIdPartition:
    return TopicIdPartition(value.text("Id"), value.text("Name"), value.integer("Partition"))


def _custom(data: StructValue) -> int | None:
    value = data["CustomMetadata"]
    return None if value is None else len(value)  # type: ignore[arg-type]


def _segment_state(value: int) -> RemoteLogSegmentState:
    try:
        return RemoteLogSegmentState(value)
    except ValueError:
        raise CorruptRecordError(f"unknown RemoteLogSegmentState id {value}") from None


def _epochs(data: StructValue) -> tuple[tuple[int, int], ...]:
    entries = {e.integer("LeaderEpoch"): e.integer("Offset") for e in data.structs("SegmentLeaderEpochs")}
    return tuple(sorted(entries.items()))


def _check_segment(start: int, end: int, epochs: tuple[tuple[int, int], ...]) -> None:
    """What `RemoteLogSegmentMetadata`'s constructor refuses."""
    if start < 0:
        raise CorruptRecordError(
            f"Unexpected start offset = {start}. StartOffset for a remote segment cannot be negative"
        )
    if end < start:
        raise CorruptRecordError(
            f"Unexpected end offset = {end}. EndOffset for a remote segment cannot be less than startOffset = {start}"
        )
    if not epochs:
        raise CorruptRecordError("segmentLeaderEpochs can not be null or empty")


def decode_event(record: MetadataRecord) -> RemoteLogEvent:
    """The event of one decoded `__remote_log_metadata` record.

    Raises:
        CorruptRecordError: a state id Kafka does not define, or a segment its constructor refuses.
    """
    data = record.data
    if record.spec is schema.REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD:
        segment_id = _struct(data, "RemoteLogSegmentId")
        return SegmentUpdate(
            _partition(_struct(segment_id, "TopicIdPartition")),
            segment_id.text("Id"),
            data.integer("BrokerId"),
            data.integer("EventTimestampMs"),
            _custom(data),
            _segment_state(data.integer("RemoteLogSegmentState")),
        )
    if record.spec is schema.REMOTE_PARTITION_DELETE_METADATA_RECORD:
        state = data.integer("RemotePartitionDeleteState")
        try:
            delete_state = RemotePartitionDeleteState(state)
        except ValueError:
            raise CorruptRecordError(f"unknown RemotePartitionDeleteState id {state}") from None
        partition = _partition(_struct(data, "TopicIdPartition"))
        return PartitionDelete(partition, data.integer("BrokerId"), data.integer("EventTimestampMs"), delete_state)
    snapshot = record.spec is schema.REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD
    if snapshot:
        partition, segment = TopicIdPartition("", "", -1), data.text("SegmentId")
    else:
        segment_id = _struct(data, "RemoteLogSegmentId")
        partition, segment = _partition(_struct(segment_id, "TopicIdPartition")), segment_id.text("Id")
    epochs = _epochs(data)
    start, end = data.integer("StartOffset"), data.integer("EndOffset")
    _check_segment(start, end, epochs)
    return SegmentMetadata(
        partition,
        segment,
        start,
        end,
        data.integer("BrokerId"),
        data.integer("MaxTimestampMs"),
        data.integer("EventTimestampMs"),
        epochs,
        data.integer("SegmentSizeInBytes"),
        _custom(data),
        _segment_state(data.integer("RemoteLogSegmentState")),
        bool(data["TxnIndexEmpty"]),
        snapshot,
    )


def read_event(value: Buffer) -> RemoteLogEvent:
    """Decode one `__remote_log_metadata` record value (`RemoteLogMetadataSerde.deserialize`).

    Raises:
        CorruptRecordError, UnknownMessageTypeError, UnsupportedMessageVersionError: a value that
            does not parse, or that Kafka's deserializer refuses.
    """
    return decode_event(read_metadata_record(value, REMOTE_LOG_METADATA))


def _optional(custom: int | None) -> str:
    return "Optional.empty" if custom is None else f"Optional[CustomMetadata{{{custom} bytes}}]"


def _segment_id(event: SegmentMetadata | SegmentUpdate) -> str:
    return f"RemoteLogSegmentId{{topicIdPartition={event.partition}, id={event.segment_id}}}"


def event_text(event: RemoteLogEvent) -> str:
    """`toString()` of the Java object Kafka's serde returns for the event (what its dump tool prints)."""
    if isinstance(event, SegmentUpdate):
        return (
            f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={_segment_id(event)}, "
            f"customMetadata={_optional(event.custom_metadata_bytes)}, state={event.state.name}, "
            f"eventTimestampMs={event.event_timestamp_ms}, brokerId={event.broker_id}}}"
        )
    if isinstance(event, PartitionDelete):
        return (
            f"RemotePartitionDeleteMetadata{{topicPartition={event.partition}, state={event.state.name}, "
            f"eventTimestampMs={event.event_timestamp_ms}, brokerId={event.broker_id}}}"
        )
    epochs = "{" + ", ".join(f"{epoch}={offset}" for epoch, offset in event.leader_epochs) + "}"
    if event.snapshot:
        return (
            f"RemoteLogSegmentMetadataSnapshot{{segmentId={event.segment_id}, startOffset={event.start_offset}, "
            f"endOffset={event.end_offset}, maxTimestampMs={event.max_timestamp_ms}, segmentLeaderEpochs={epochs}, "
            f"segmentSizeInBytes={event.size_bytes}, customMetadata={_optional(event.custom_metadata_bytes)}, "
            f"state={event.state.name}}}"
        )
    return (
        f"RemoteLogSegmentMetadata{{remoteLogSegmentId={_segment_id(event)}, startOffset={event.start_offset}, "
        f"endOffset={event.end_offset}, "
        f"brokerId={event.broker_id}, maxTimestampMs={event.max_timestamp_ms}, "
        f"eventTimestampMs={event.event_timestamp_ms}, segmentLeaderEpochs={epochs}, "
        f"segmentSizeInBytes={event.size_bytes}, customMetadata={_optional(event.custom_metadata_bytes)}, "
        f"state={event.state.name}, txnIdxEmpty={str(event.txn_index_empty).lower()}}}"
    )
