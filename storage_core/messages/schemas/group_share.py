"""Share group (KIP-932, early access) records of `__consumer_offsets`, key and value per record type.

Transcribed from `group-coordinator/src/main/resources/common/message/ShareGroup*.json` of
apache/kafka (as of Kafka 4.0). Keys are non-flexible, in the version that is the record type;
values are flexible, version 0.

```
type 9   ShareGroupPartitionMetadata        key GroupId           value Topics[TopicId TopicName NumPartitions
                                                                  PartitionMetadata[Partition Racks[]]]
type 10  ShareGroupMemberMetadata           key GroupId MemberId  value RackId ClientId ClientHost
                                                                  SubscribedTopicNames[]
type 11  ShareGroupMetadata                 key GroupId           value Epoch
type 12  ShareGroupTargetAssignmentMetadata key GroupId           value AssignmentEpoch
type 13  ShareGroupTargetAssignmentMember   key GroupId MemberId  value TopicPartitions[TopicId Partitions[]]
type 14  ShareGroupCurrentMemberAssignment  key GroupId MemberId  value MemberEpoch PreviousMemberEpoch State
                                                                  AssignedPartitions[TopicId Partitions[]]
type 15  ShareGroupStatePartitionMetadata   key GroupId           value InitializedTopics[TopicId TopicName
                                                                  Partitions[]]
                                                                  DeletingTopics[TopicId TopicName]
```
"""

from __future__ import annotations

from storage_core.messages.schema import INT8, INT32, STRING, UUID, array, field, message, struct
from storage_core.messages.schemas.group_consumer import TOPIC_METADATA, TOPIC_PARTITIONS, group_key

SHARE_GROUP_PARTITION_METADATA_KEY = group_key("ShareGroupPartitionMetadataKey", 9)
SHARE_GROUP_PARTITION_METADATA_VALUE = message(
    "ShareGroupPartitionMetadataValue",
    field("Topics", array(TOPIC_METADATA), "0+"),
    valid="0",
    flexible="0+",
)

SHARE_GROUP_MEMBER_METADATA_KEY = group_key("ShareGroupMemberMetadataKey", 10, member=True)
SHARE_GROUP_MEMBER_METADATA_VALUE = message(
    "ShareGroupMemberMetadataValue",
    field("RackId", STRING, "0+", nullable="0+"),
    field("ClientId", STRING, "0+"),
    field("ClientHost", STRING, "0+"),
    field("SubscribedTopicNames", array(STRING), "0+"),
    valid="0",
    flexible="0+",
)

SHARE_GROUP_METADATA_KEY = group_key("ShareGroupMetadataKey", 11)
SHARE_GROUP_METADATA_VALUE = message("ShareGroupMetadataValue", field("Epoch", INT32, "0+"), valid="0", flexible="0+")

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = group_key("ShareGroupTargetAssignmentMetadataKey", 12)
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = message(
    "ShareGroupTargetAssignmentMetadataValue", field("AssignmentEpoch", INT32, "0+"), valid="0", flexible="0+"
)

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = group_key("ShareGroupTargetAssignmentMemberKey", 13, member=True)
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = message(
    "ShareGroupTargetAssignmentMemberValue",
    field(
        "TopicPartitions",
        array(struct("TopicPartition", field("TopicId", UUID, "0+"), field("Partitions", array(INT32), "0+"))),
        "0+",
    ),
    valid="0",
    flexible="0+",
)

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = group_key("ShareGroupCurrentMemberAssignmentKey", 14, member=True)
SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = message(
    "ShareGroupCurrentMemberAssignmentValue",
    field("MemberEpoch", INT32, "0+"),
    field("PreviousMemberEpoch", INT32, "0+"),
    field("State", INT8, "0+"),
    field("AssignedPartitions", array(TOPIC_PARTITIONS), "0+"),
    valid="0",
    flexible="0+",
)

SHARE_GROUP_STATE_PARTITION_METADATA_KEY = group_key("ShareGroupStatePartitionMetadataKey", 15)
SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = message(
    "ShareGroupStatePartitionMetadataValue",
    field(
        "InitializedTopics",
        array(
            struct(
                "TopicPartitionsInfo",
                field("TopicId", UUID, "0+"),
                field("TopicName", STRING, "0+"),
                field("Partitions", array(INT32), "0+"),
            )
        ),
        "0+",
    ),
    field(
        "DeletingTopics",
        array(struct("TopicInfo", field("TopicId", UUID, "0+"), field("TopicName", STRING, "0+"))),
        "0+",
    ),
    valid="0",
    flexible="0+",
)

RECORD_TYPES = {  # record type -> (key, value)
    9: (SHARE_GROUP_PARTITION_METADATA_KEY, SHARE_GROUP_PARTITION_METADATA_VALUE),
    10: (SHARE_GROUP_MEMBER_METADATA_KEY, SHARE_GROUP_MEMBER_METADATA_VALUE),
    11: (SHARE_GROUP_METADATA_KEY, SHARE_GROUP_METADATA_VALUE),
    12: (SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    13: (SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    14: (SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    15: (SHARE_GROUP_STATE_PARTITION_METADATA_KEY, SHARE_GROUP_STATE_PARTITION_METADATA_VALUE),
}
