"""Test-only writer of `__remote_log_metadata` partitions, as `TopicBasedRemoteLogMetadataManager` writes them.

Each event is a record with a null key whose value is storage_core's message writer's frame of a
declaration of :mod:`storage_core.messages.schemas.remote_log_metadata` (the bytes Kafka 4.4's
`RemoteLogMetadataSerde` writes: tests/storage_core/tiered/test_events.py checks them against its
output), one record per batch, in the metadata partition the broker's partitioner picks.

```python
rlmm = RemoteLogMetadataWriter(log_dir, partitions=3, topic_id=metadata_topic_id)
rlmm.copy(orders, 0, 9)                   # COPY_SEGMENT_STARTED then COPY_SEGMENT_FINISHED
rlmm.copy(orders, 10, 19, finish=False)   # a half-uploaded segment
rlmm.write()                              # segments + the high watermarks in replication-offset-checkpoint
```
"""

from __future__ import annotations

import secrets
from pathlib import Path

from storage_core import names
from storage_core.checkpoint import read_offset_checkpoint, write_offset_checkpoint
from storage_core.messages import REMOTE_LOG_METADATA, MessageSpec, write_metadata_record
from storage_core.messages.schemas import remote_log_metadata as schema
from storage_core.messages.schemas.remote_log_metadata import RemoteLogSegmentState, RemotePartitionDeleteState
from storage_core.names import TopicPartition
from storage_core.partition_metadata import PartitionMetadata, encode_uuid, write_partition_metadata
from storage_core.records.batch import Record, build_batch
from storage_core.tiered.events import TopicIdPartition
from storage_core.tiered.partitioner import metadata_partition
from storage_core.tiered.uploads import REMOTE_LOG_METADATA_TOPIC

T0 = 1_700_000_000_000


def _tp(tp: TopicIdPartition) -> object:
    return schema.TOPIC_ID_PARTITION.new(Name=tp.topic, Id=tp.topic_id, Partition=tp.partition)


class RemoteLogMetadataWriter:
    """Collects events per metadata partition and writes them as `__remote_log_metadata-<n>` dirs."""

    def __init__(self, log_dir: Path, *, partitions: int, broker_id: int = 1, topic_id: str | None = None) -> None:
        self.log_dir = log_dir
        self.topic_id = topic_id  # the metadata topic's id, for each dir's partition.metadata
        log_dir.mkdir(parents=True, exist_ok=True)
        self.partitions = partitions
        self.broker_id = broker_id
        self.events: dict[int, list[bytes]] = {n: [] for n in range(partitions)}

    def _add(self, tp: TopicIdPartition, spec: MessageSpec, **fields: object) -> None:
        value = write_metadata_record(spec, spec.new(fields), 0, REMOTE_LOG_METADATA)
        self.events[metadata_partition(tp.topic_id, tp.partition, self.partitions)].append(value)

    def started(self, tp: TopicIdPartition, start: int, end: int, *, size: int = 1000) -> str:
        """A RemoteLogSegmentMetadata (COPY_SEGMENT_STARTED) of [start, end]; the segment id."""
        segment_id = encode_uuid(secrets.token_bytes(16))
        self._add(
            tp,
            schema.REMOTE_LOG_SEGMENT_METADATA_RECORD,
            RemoteLogSegmentId=schema.REMOTE_LOG_SEGMENT_ID.new(TopicIdPartition=_tp(tp), Id=segment_id),
            StartOffset=start,
            EndOffset=end,
            BrokerId=self.broker_id,
            MaxTimestampMs=T0 + end,
            EventTimestampMs=T0,
            SegmentLeaderEpochs=(schema.SEGMENT_LEADER_EPOCH.new(LeaderEpoch=0, Offset=start),),
            SegmentSizeInBytes=size,
            RemoteLogSegmentState=int(RemoteLogSegmentState.COPY_SEGMENT_STARTED),
        )
        return segment_id

    def update(self, tp: TopicIdPartition, segment_id: str, state: RemoteLogSegmentState) -> None:
        self._add(
            tp,
            schema.REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD,
            RemoteLogSegmentId=schema.REMOTE_LOG_SEGMENT_ID.new(TopicIdPartition=_tp(tp), Id=segment_id),
            BrokerId=self.broker_id,
            EventTimestampMs=T0,
            RemoteLogSegmentState=int(state),
        )

    def copy(self, tp: TopicIdPartition, start: int, end: int, *, finish: bool = True) -> str:
        """An upload of [start, end]: started, and (`finish`) finished."""
        segment_id = self.started(tp, start, end)
        if finish:
            self.update(tp, segment_id, RemoteLogSegmentState.COPY_SEGMENT_FINISHED)
        return segment_id

    def partition_deleted(self, tp: TopicIdPartition) -> None:
        self._add(
            tp,
            schema.REMOTE_PARTITION_DELETE_METADATA_RECORD,
            TopicIdPartition=_tp(tp),
            BrokerId=self.broker_id,
            EventTimestampMs=T0,
            RemotePartitionDeleteState=int(RemotePartitionDeleteState.DELETE_PARTITION_MARKED),
        )

    def write(self, *, only: set[int] | None = None, committed: bool = True) -> list[Path]:
        """Every metadata partition (or those in `only`) as a dir of one segment, and its high watermark
        in the log dir's replication-offset-checkpoint (the log end if `committed`, else 0)."""
        written = []
        checkpoint = self.log_dir / names.REPLICATION_OFFSET_CHECKPOINT
        high_watermarks = read_offset_checkpoint(checkpoint) if checkpoint.exists() else {}
        for number, values in self.events.items():
            if only is not None and number not in only:
                continue
            dir_path = self.log_dir / f"{REMOTE_LOG_METADATA_TOPIC}-{number}"
            dir_path.mkdir(exist_ok=True)
            batches = [
                build_batch([Record(offset, T0 + offset, None, value)], base_offset=offset, partition_leader_epoch=0)
                for offset, value in enumerate(values)
            ]
            names.log_file(dir_path, 0).write_bytes(b"".join(batches))
            if self.topic_id is not None:
                write_partition_metadata(dir_path / names.PARTITION_METADATA, PartitionMetadata(0, self.topic_id))
            high_watermarks[TopicPartition(REMOTE_LOG_METADATA_TOPIC, number)] = len(values) if committed else 0
            written.append(dir_path)
        write_offset_checkpoint(checkpoint, high_watermarks)
        return written
