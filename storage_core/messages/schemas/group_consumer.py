"""Consumer group (KIP-848) records of `__consumer_offsets`, key and value per record type.

Transcribed from `group-coordinator/src/main/resources/common/message/ConsumerGroup*.json` of
apache/kafka. Keys are non-flexible and exist in one version, the record type; values are
flexible, version 0.

```
type 3   ConsumerGroupMetadata               key GroupId            value Epoch
type 4   ConsumerGroupPartitionMetadata      key GroupId            value Topics[TopicId TopicName
                                                                    NumPartitions PartitionMetadata[Partition Racks[]]]
type 5   ConsumerGroupMemberMetadata         key GroupId MemberId   value InstanceId RackId ClientId ClientHost
                                                                    SubscribedTopicNames[] SubscribedTopicRegex
                                                                    RebalanceTimeoutMs ServerAssignor
                                                                    [ClassicMemberMetadata tag 0]
type 6   ConsumerGroupTargetAssignmentMetadata key GroupId          value AssignmentEpoch
type 7   ConsumerGroupTargetAssignmentMember key GroupId MemberId   value TopicPartitions[TopicId Partitions[]]
type 8   ConsumerGroupCurrentMemberAssignment key GroupId MemberId  value MemberEpoch PreviousMemberEpoch State
                                                                    AssignedPartitions[..]
                                                                    PartitionsPendingRevocation[..]
type 16  ConsumerGroupRegularExpression      key GroupId RegularExpression  value Topics[] Version Timestamp
```
"""

from __future__ import annotations

from storage_core.messages.schema import (
    BYTES,
    INT8,
    INT32,
    INT64,
    STRING,
    UUID,
    MessageSpec,
    array,
    field,
    message,
    struct,
)


def group_key(name: str, record_type: int, *, member: bool = False, extra: str | None = None) -> MessageSpec:
    """A coordinator key: `GroupId` (and `MemberId`, or another string) in version `record_type`."""
    version = str(record_type)
    fields = [field("GroupId", STRING, version)]
    if member:
        fields.append(field("MemberId", STRING, version))
    if extra is not None:
        fields.append(field(extra, STRING, version))
    return message(name, *fields, valid=version, flexible="none")


TOPIC_PARTITIONS = struct(
    "TopicPartitions",
    field("TopicId", UUID, "0+"),
    field("Partitions", array(INT32), "0+"),
)

CONSUMER_GROUP_METADATA_KEY = group_key("ConsumerGroupMetadataKey", 3)
CONSUMER_GROUP_METADATA_VALUE = message(
    "ConsumerGroupMetadataValue",
    field("Epoch", INT32, "0+"),
    valid="0",
    flexible="0+",
)

CONSUMER_GROUP_PARTITION_METADATA_KEY = group_key("ConsumerGroupPartitionMetadataKey", 4)
TOPIC_METADATA = struct(  # a subscribed topic's partitions and their racks
    "TopicMetadata",
    field("TopicId", UUID, "0+"),
    field("TopicName", STRING, "0+"),
    field("NumPartitions", INT32, "0+"),
    field(
        "PartitionMetadata",
        array(struct("PartitionMetadata", field("Partition", INT32, "0+"), field("Racks", array(STRING), "0+"))),
        "0+",
    ),
)

CONSUMER_GROUP_PARTITION_METADATA_VALUE = message(
    "ConsumerGroupPartitionMetadataValue",
    field("Topics", array(TOPIC_METADATA), "0+"),
    valid="0",
    flexible="0+",
)

CONSUMER_GROUP_MEMBER_METADATA_KEY = group_key("ConsumerGroupMemberMetadataKey", 5, member=True)
CONSUMER_GROUP_MEMBER_METADATA_VALUE = message(
    "ConsumerGroupMemberMetadataValue",
    field("InstanceId", STRING, "0+", nullable="0+"),
    field("RackId", STRING, "0+", nullable="0+"),
    field("ClientId", STRING, "0+"),
    field("ClientHost", STRING, "0+"),
    field("SubscribedTopicNames", array(STRING), "0+"),
    field("SubscribedTopicRegex", STRING, "0+", nullable="0+"),
    field("RebalanceTimeoutMs", INT32, "0+", default=-1),
    field("ServerAssignor", STRING, "0+", nullable="0+"),
    field(
        "ClassicMemberMetadata",
        struct(
            "ClassicMemberMetadata",
            field("SessionTimeoutMs", INT32, "0+"),
            field(
                "SupportedProtocols",
                array(struct("ClassicProtocol", field("Name", STRING, "0+"), field("Metadata", BYTES, "0+"))),
                "0+",
            ),
        ),
        "0+",
        nullable="0+",
        tagged="0+",
        tag=0,
        default=None,
    ),
    valid="0",
    flexible="0+",
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = group_key("ConsumerGroupTargetAssignmentMetadataKey", 6)
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = message(
    "ConsumerGroupTargetAssignmentMetadataValue",
    field("AssignmentEpoch", INT32, "0+"),
    valid="0",
    flexible="0+",
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = group_key("ConsumerGroupTargetAssignmentMemberKey", 7, member=True)
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = message(
    "ConsumerGroupTargetAssignmentMemberValue",
    field(
        "TopicPartitions",
        array(struct("TopicPartition", field("TopicId", UUID, "0+"), field("Partitions", array(INT32), "0+"))),
        "0+",
    ),
    valid="0",
    flexible="0+",
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = group_key("ConsumerGroupCurrentMemberAssignmentKey", 8, member=True)
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = message(
    "ConsumerGroupCurrentMemberAssignmentValue",
    field("MemberEpoch", INT32, "0+"),
    field("PreviousMemberEpoch", INT32, "0+"),
    field("State", INT8, "0+"),
    field("AssignedPartitions", array(TOPIC_PARTITIONS), "0+"),
    field("PartitionsPendingRevocation", array(TOPIC_PARTITIONS), "0+"),
    valid="0",
    flexible="0+",
)

CONSUMER_GROUP_REGULAR_EXPRESSION_KEY = group_key("ConsumerGroupRegularExpressionKey", 16, extra="RegularExpression")
CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = message(
    "ConsumerGroupRegularExpressionValue",
    field("Topics", array(STRING), "0+"),
    field("Version", INT64, "0+"),
    field("Timestamp", INT64, "0+"),
    valid="0",
    flexible="0+",
)

RECORD_TYPES = {  # record type -> (key, value)
    3: (CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE),
    4: (CONSUMER_GROUP_PARTITION_METADATA_KEY, CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    5: (CONSUMER_GROUP_MEMBER_METADATA_KEY, CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    6: (CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    7: (CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    8: (CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    16: (CONSUMER_GROUP_REGULAR_EXPRESSION_KEY, CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE),
}
