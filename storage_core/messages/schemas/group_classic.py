"""Classic group coordinator records of `__consumer_offsets`, and the consumer protocol inside them.

Transcribed from `group-coordinator/src/main/resources/common/message/*.json` and
`clients/src/main/resources/common/message/ConsumerProtocol*.json` of apache/kafka. A record's key
is `Version:int16` (the record type) then the key struct in that version; its value is
`Version:int16` then the value struct (`CoordinatorRecordSerde`); a null value is a tombstone.

```
type 0, 1  OffsetCommitKey      group topic partition
           OffsetCommitValue    v0-4 (flexible 4+): offset leaderEpoch(v3+) metadata commitTimestamp
                                expireTimestamp(v1 only) [topicId tag 0 (v4+), Kafka 4.4]
type 2     GroupMetadataKey     group
           GroupMetadataValue   v0-4 (flexible 4+): protocolType generation protocol leader
                                currentStateTimestamp(v2+) members[memberId groupInstanceId(v3+)
                                clientId clientHost rebalanceTimeout(v1+) sessionTimeout
                                subscription(bytes) assignment(bytes)]
ConsumerProtocolSubscription   v0-3: topics userData ownedPartitions(v1+) generationId(v2+) rackId(v3+)
ConsumerProtocolAssignment     v0-3: assignedPartitions[topic partitions] userData
```

The subscription and assignment bytes of a `consumer` group's members are themselves
`Version:int16` + a consumer protocol message; clients newer than the declaration write higher
versions, read as the highest one declared (the protocol only ever adds fields at the end).
"""

from __future__ import annotations

from storage_core.messages.schema import BYTES, INT32, INT64, STRING, UUID, array, field, message, struct

OFFSET_COMMIT_KEY = message(
    "OffsetCommitKey",
    field("group", STRING, "0-1"),
    field("topic", STRING, "0-1"),
    field("partition", INT32, "0-1"),
    valid="0-1",
    flexible="none",
)

OFFSET_COMMIT_VALUE = message(
    "OffsetCommitValue",
    field("offset", INT64, "0+"),
    field("leaderEpoch", INT32, "3+", default=-1, ignorable=True),
    field("metadata", STRING, "0+"),
    field("commitTimestamp", INT64, "0+"),
    field("expireTimestamp", INT64, "1", default=-1, ignorable=True),
    field("topicId", UUID, "4+", tagged="4+", tag=0),
    valid="0-4",
    flexible="4+",
)

GROUP_METADATA_KEY = message(
    "GroupMetadataKey",
    field("group", STRING, "2"),
    valid="2",
    flexible="none",
)

MEMBER_METADATA = struct(
    "MemberMetadata",
    field("memberId", STRING, "0+"),
    field("groupInstanceId", STRING, "3+", nullable="3+", default=None, ignorable=True),
    field("clientId", STRING, "0+"),
    field("clientHost", STRING, "0+"),
    field("rebalanceTimeout", INT32, "1+", default=-1, ignorable=True),
    field("sessionTimeout", INT32, "0+"),
    field("subscription", BYTES, "0+"),
    field("assignment", BYTES, "0+"),
)

GROUP_METADATA_VALUE = message(
    "GroupMetadataValue",
    field("protocolType", STRING, "0+"),
    field("generation", INT32, "0+"),
    field("protocol", STRING, "0+", nullable="0+"),
    field("leader", STRING, "0+", nullable="0+"),
    field("currentStateTimestamp", INT64, "2+", default=-1, ignorable=True),
    field("members", array(MEMBER_METADATA), "0+"),
    valid="0-4",
    flexible="4+",
)

CONSUMER_PROTOCOL_TYPE = "consumer"  # ConsumerProtocol.PROTOCOL_TYPE

CONSUMER_PROTOCOL_SUBSCRIPTION = message(
    "ConsumerProtocolSubscription",
    field("Topics", array(STRING), "0+"),
    field("UserData", BYTES, "0+", nullable="0+", default=None),
    field(
        "OwnedPartitions",
        array(struct("TopicPartition", field("Topic", STRING, "1+"), field("Partitions", array(INT32), "1+"))),
        "1+",
        ignorable=True,
    ),
    field("GenerationId", INT32, "2+", default=-1, ignorable=True),
    field("RackId", STRING, "3+", nullable="3+", default=None, ignorable=True),
    valid="0-3",
    flexible="none",
)

CONSUMER_PROTOCOL_ASSIGNMENT = message(
    "ConsumerProtocolAssignment",
    field(
        "AssignedPartitions",
        array(struct("TopicPartition", field("Topic", STRING, "0+"), field("Partitions", array(INT32), "0+"))),
        "0+",
    ),
    field("UserData", BYTES, "0+", nullable="0+", default=None),
    valid="0-3",
    flexible="none",
)
