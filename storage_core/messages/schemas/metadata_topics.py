"""KRaft metadata records of topics, partitions and configs (Kafka 3.3 to 4.x).

Transcribed from `metadata/src/main/resources/common/metadata/*.json` of apache/kafka; every record
is flexible in all versions. The api key is the record type of `MetadataRecordSerde`'s frame.

```
TopicRecord            2  v0    Name TopicId
PartitionRecord        3  v0-2  PartitionId TopicId Replicas Isr RemovingReplicas AddingReplicas Leader
                                [LeaderRecoveryState tag 0] LeaderEpoch PartitionEpoch Directories(v1+)
                                [EligibleLeaderReplicas tag 1, LastKnownElr tag 2 (v2+)]
ConfigRecord           4  v0    ResourceType(2 topic, 4 broker, 8 broker logger, 16 client metrics,
                                32 group) ResourceName Name Value (null: delete the key)
PartitionChangeRecord  5  v0-2  PartitionId TopicId, tagged: Isr 0, Leader 1 (-2 unchanged),
                                Replicas 2, RemovingReplicas 3, AddingReplicas 4,
                                LeaderRecoveryState 5 (-1 unchanged), Directories 8 (v1+),
                                EligibleLeaderReplicas 6, LastKnownElr 7 (v2+)
RemoveTopicRecord      9  v0    TopicId
ClearElrRecord        28  v0    TopicName (empty: every topic)            (Kafka 4.0+)
```
"""

from __future__ import annotations

from storage_core.messages.schema import INT8, INT32, STRING, UUID, array, field, message

TOPIC_RECORD = message(
    "TopicRecord",
    field("Name", STRING, "0+"),
    field("TopicId", UUID, "0+"),
    api_key=2,
    valid="0",
    flexible="0+",
)

PARTITION_RECORD = message(
    "PartitionRecord",
    field("PartitionId", INT32, "0+", default=-1),
    field("TopicId", UUID, "0+"),
    field("Replicas", array(INT32), "0+"),
    field("Isr", array(INT32), "0+"),
    field("RemovingReplicas", array(INT32), "0+"),
    field("AddingReplicas", array(INT32), "0+"),
    field("Leader", INT32, "0+", default=-1),
    field("LeaderRecoveryState", INT8, "0+", tagged="0+", tag=0, default=0),
    field("LeaderEpoch", INT32, "0+", default=-1),
    field("PartitionEpoch", INT32, "0+", default=-1),
    field("Directories", array(UUID), "1+"),
    field("EligibleLeaderReplicas", array(INT32), "2+", nullable="2+", tagged="2+", tag=1, default=None),
    field("LastKnownElr", array(INT32), "2+", nullable="2+", tagged="2+", tag=2, default=None),
    api_key=3,
    valid="0-2",
    flexible="0+",
)

CONFIG_RECORD = message(
    "ConfigRecord",
    field("ResourceType", INT8, "0+"),
    field("ResourceName", STRING, "0+"),
    field("Name", STRING, "0+"),
    field("Value", STRING, "0+", nullable="0+"),
    api_key=4,
    valid="0",
    flexible="0+",
)

NO_LEADER_CHANGE = -2  # PartitionChangeRecord.Leader: the leader did not change
NO_LEADER_RECOVERY_CHANGE = -1  # PartitionChangeRecord.LeaderRecoveryState: unchanged

PARTITION_CHANGE_RECORD = message(
    "PartitionChangeRecord",
    field("PartitionId", INT32, "0+", default=-1),
    field("TopicId", UUID, "0+"),
    field("Isr", array(INT32), "0+", nullable="0+", tagged="0+", tag=0, default=None),
    field("Leader", INT32, "0+", tagged="0+", tag=1, default=NO_LEADER_CHANGE),
    field("Replicas", array(INT32), "0+", nullable="0+", tagged="0+", tag=2, default=None),
    field("RemovingReplicas", array(INT32), "0+", nullable="0+", tagged="0+", tag=3, default=None),
    field("AddingReplicas", array(INT32), "0+", nullable="0+", tagged="0+", tag=4, default=None),
    field("LeaderRecoveryState", INT8, "0+", tagged="0+", tag=5, default=NO_LEADER_RECOVERY_CHANGE),
    field("Directories", array(UUID), "1+", nullable="1+", tagged="1+", tag=8, default=None),
    field("EligibleLeaderReplicas", array(INT32), "2+", nullable="2+", tagged="2+", tag=6, default=None),
    field("LastKnownElr", array(INT32), "2+", nullable="2+", tagged="2+", tag=7, default=None),
    api_key=5,
    valid="0-2",
    flexible="0+",
)

REMOVE_TOPIC_RECORD = message(
    "RemoveTopicRecord",
    field("TopicId", UUID, "0+"),
    api_key=9,
    valid="0",
    flexible="0+",
)

CLEAR_ELR_RECORD = message(
    "ClearElrRecord",
    field("TopicName", STRING, "0+"),
    api_key=28,
    valid="0",
    flexible="0+",
)

RECORDS = (
    TOPIC_RECORD,
    PARTITION_RECORD,
    CONFIG_RECORD,
    PARTITION_CHANGE_RECORD,
    REMOVE_TOPIC_RECORD,
    CLEAR_ELR_RECORD,
)
