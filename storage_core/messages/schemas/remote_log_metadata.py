"""Records of `__remote_log_metadata`, the topic of Kafka's `TopicBasedRemoteLogMetadataManager` (KIP-405).

Transcribed from `storage/src/main/resources/message/RemoteLog*Record.json` and
`RemotePartitionDeleteMetadataRecord.json` of apache/kafka (every record flexible in all versions;
version 1 and the tagged fields are Kafka 4.x's). Each record value is framed like a KRaft metadata
record (`BytesApiMessageSerde`: frame version 1, api key, version; :mod:`~storage_core.messages.metadata_serde`);
keys are null.

```
RemoteLogSegmentMetadataRecord          0  v0-1  RemoteLogSegmentId{TopicIdPartition{Name Id Partition} Id}
                                                 StartOffset EndOffset BrokerId MaxTimestampMs EventTimestampMs
                                                 SegmentLeaderEpochs[LeaderEpoch Offset] SegmentSizeInBytes
                                                 CustomMetadata (nullable) RemoteLogSegmentState
                                                 [TxnIndexEmpty tag 0] [BrokerLeaderEpoch tag 1 (v1+)]
RemoteLogSegmentMetadataUpdateRecord    1  v0-1  RemoteLogSegmentId BrokerId EventTimestampMs CustomMetadata
                                                 RemoteLogSegmentState [BrokerLeaderEpoch tag 0 (v1+)]
                                                 [EndOffset tag 1 (v1+)]
RemotePartitionDeleteMetadataRecord     2  v0-1  TopicIdPartition BrokerId EventTimestampMs
                                                 RemotePartitionDeleteState [BrokerLeaderEpoch tag 0 (v1+)]
                                                 [EndOffset tag 1 (v1+)]
RemoteLogSegmentMetadataSnapshotRecord  3  v0-1  SegmentId StartOffset EndOffset BrokerId MaxTimestampMs
                                                 EventTimestampMs SegmentLeaderEpochs SegmentSizeInBytes
                                                 CustomMetadata RemoteLogSegmentState [TxnIndexEmpty tag 0]
                                                 [BrokerLeaderEpoch tag 1 (v1+)]
```

RemoteLogSegmentState: 0 COPY_SEGMENT_STARTED, 1 COPY_SEGMENT_FINISHED, 2 DELETE_SEGMENT_STARTED,
3 DELETE_SEGMENT_FINISHED. RemotePartitionDeleteState: 0 DELETE_PARTITION_MARKED,
1 DELETE_PARTITION_STARTED, 2 DELETE_PARTITION_FINISHED.
"""

from __future__ import annotations

import enum

from storage_core.messages.schema import BOOL, BYTES, INT8, INT32, INT64, STRING, UUID, array, field, message, struct


class RemoteLogSegmentState(enum.IntEnum):
    """`RemoteLogSegmentState` ids."""

    COPY_SEGMENT_STARTED = 0
    COPY_SEGMENT_FINISHED = 1
    DELETE_SEGMENT_STARTED = 2
    DELETE_SEGMENT_FINISHED = 3


class RemotePartitionDeleteState(enum.IntEnum):
    """`RemotePartitionDeleteState` ids."""

    DELETE_PARTITION_MARKED = 0
    DELETE_PARTITION_STARTED = 1
    DELETE_PARTITION_FINISHED = 2


TOPIC_ID_PARTITION = struct(
    "TopicIdPartitionEntry",
    field("Name", STRING, "0+"),
    field("Id", UUID, "0+"),
    field("Partition", INT32, "0+"),
)
REMOTE_LOG_SEGMENT_ID = struct(
    "RemoteLogSegmentIdEntry",
    field("TopicIdPartition", TOPIC_ID_PARTITION, "0+"),
    field("Id", UUID, "0+"),
)
SEGMENT_LEADER_EPOCH = struct(
    "SegmentLeaderEpochEntry",
    field("LeaderEpoch", INT32, "0+"),
    field("Offset", INT64, "0+"),
)

REMOTE_LOG_SEGMENT_METADATA_RECORD = message(
    "RemoteLogSegmentMetadataRecord",
    field("RemoteLogSegmentId", REMOTE_LOG_SEGMENT_ID, "0+"),
    field("StartOffset", INT64, "0+"),
    field("EndOffset", INT64, "0+"),
    field("BrokerId", INT32, "0+"),
    field("MaxTimestampMs", INT64, "0+"),
    field("EventTimestampMs", INT64, "0+"),
    field("SegmentLeaderEpochs", array(SEGMENT_LEADER_EPOCH), "0+"),
    field("SegmentSizeInBytes", INT32, "0+"),
    field("CustomMetadata", BYTES, "0+", nullable="0+", default=None),
    field("RemoteLogSegmentState", INT8, "0+"),
    field("TxnIndexEmpty", BOOL, "0+", tagged="0+", tag=0),
    field("BrokerLeaderEpoch", INT32, "1+", tagged="1+", tag=1),
    api_key=0,
    valid="0-1",
    flexible="0+",
)

REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD = message(
    "RemoteLogSegmentMetadataUpdateRecord",
    field("RemoteLogSegmentId", REMOTE_LOG_SEGMENT_ID, "0+"),
    field("BrokerId", INT32, "0+"),
    field("EventTimestampMs", INT64, "0+"),
    field("CustomMetadata", BYTES, "0+", nullable="0+", default=None),
    field("RemoteLogSegmentState", INT8, "0+"),
    field("BrokerLeaderEpoch", INT32, "1+", tagged="1+", tag=0, default=-1),
    field("EndOffset", INT64, "1+", tagged="1+", tag=1, default=-1),
    api_key=1,
    valid="0-1",
    flexible="0+",
)

REMOTE_PARTITION_DELETE_METADATA_RECORD = message(
    "RemotePartitionDeleteMetadataRecord",
    field("TopicIdPartition", TOPIC_ID_PARTITION, "0+"),
    field("BrokerId", INT32, "0+"),
    field("EventTimestampMs", INT64, "0+"),
    field("RemotePartitionDeleteState", INT8, "0+"),
    field("BrokerLeaderEpoch", INT32, "1+", tagged="1+", tag=0),
    field("EndOffset", INT64, "1+", tagged="1+", tag=1),
    api_key=2,
    valid="0-1",
    flexible="0+",
)

REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD = message(
    "RemoteLogSegmentMetadataSnapshotRecord",
    field("SegmentId", UUID, "0+"),
    field("StartOffset", INT64, "0+"),
    field("EndOffset", INT64, "0+"),
    field("BrokerId", INT32, "0+"),
    field("MaxTimestampMs", INT64, "0+"),
    field("EventTimestampMs", INT64, "0+"),
    field("SegmentLeaderEpochs", array(SEGMENT_LEADER_EPOCH), "0+"),
    field("SegmentSizeInBytes", INT32, "0+"),
    field("CustomMetadata", BYTES, "0+", nullable="0+", default=None),
    field("RemoteLogSegmentState", INT8, "0+"),
    field("TxnIndexEmpty", BOOL, "0+", tagged="0+", tag=0),
    field("BrokerLeaderEpoch", INT32, "1+", tagged="1+", tag=1),
    api_key=3,
    valid="0-1",
    flexible="0+",
)

RECORDS = (
    REMOTE_LOG_SEGMENT_METADATA_RECORD,
    REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD,
    REMOTE_PARTITION_DELETE_METADATA_RECORD,
    REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD,
)
