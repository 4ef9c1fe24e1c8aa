"""KRaft metadata records of brokers, controllers, features, producer ids and metadata transactions.

Transcribed from `metadata/src/main/resources/common/metadata/*.json` of apache/kafka; every record
is flexible in all versions.

```
RegisterBrokerRecord             0  v0-4  BrokerId IsMigratingZkBroker(v2+) IncarnationId BrokerEpoch
                                          EndPoints[Name Host Port SecurityProtocol]
                                          Features[Name MinSupportedVersion MaxSupportedVersion]
                                          Rack Fenced(default true) InControlledShutdown(v1+)
                                          [LogDirs tag 0 (v3+)] [CordonedLogDirs tag 1 (v4+)]
UnregisterBrokerRecord           1  v0    BrokerId BrokerEpoch
FenceBrokerRecord                7  v0    Id Epoch
UnfenceBrokerRecord              8  v0    Id Epoch
FeatureLevelRecord              12  v0    Name FeatureLevel (0: the feature is removed)
ProducerIdsRecord               15  v0    BrokerId BrokerEpoch NextProducerId
BrokerRegistrationChangeRecord  17  v0-3  BrokerId BrokerEpoch, tagged: Fenced 0 (-1 unfenced,
                                          0 unchanged, 1 fenced), InControlledShutdown 1 (v1+),
                                          LogDirs 2 (v2+), CordonedLogDirs 3 (v3+)
NoOpRecord                      20  v0    (nothing)
ZkMigrationStateRecord          21  v0    ZkMigrationState
BeginTransactionRecord          23  v0    [Name tag 0]           (KIP-868 metadata transactions)
EndTransactionRecord            24  v0    (nothing)
AbortTransactionRecord          25  v0    [Reason tag 0]
RegisterControllerRecord        27  v0    ControllerId IncarnationId ZkMigrationReady
                                          EndPoints[...] Features[...]
UnregisterControllerRecord      29  v0    ControllerId
```

The cordoned log dirs (RegisterBrokerRecord v4, BrokerRegistrationChangeRecord v3) and
UnregisterControllerRecord are those of Kafka 4.4.0's jars (its generated message classes; the
broker tests start a 4.4.0 broker, whose own registration is a v4 record). CordonedLogDirs is
nullable, null by default: a broker writes an empty list explicitly, which its JSON prints.
"""

from __future__ import annotations

from storage_core.messages.schema import (
    BOOL,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UUID,
    MessageSpec,
    array,
    field,
    message,
    struct,
)

BROKER_ENDPOINT = struct(
    "BrokerEndpoint",
    field("Name", STRING, "0+"),
    field("Host", STRING, "0+"),
    field("Port", UINT16, "0+"),
    field("SecurityProtocol", INT16, "0+"),
)
BROKER_FEATURE = struct(
    "BrokerFeature",
    field("Name", STRING, "0+"),
    field("MinSupportedVersion", INT16, "0+"),
    field("MaxSupportedVersion", INT16, "0+"),
)

REGISTER_BROKER_RECORD = message(
    "RegisterBrokerRecord",
    field("BrokerId", INT32, "0+"),
    field("IsMigratingZkBroker", BOOL, "2+", default=False),
    field("IncarnationId", UUID, "0+"),
    field("BrokerEpoch", INT64, "0+"),
    field("EndPoints", array(BROKER_ENDPOINT), "0+"),
    field("Features", array(BROKER_FEATURE), "0+"),
    field("Rack", STRING, "0+", nullable="0+"),
    field("Fenced", BOOL, "0+", default=True),
    field("InControlledShutdown", BOOL, "1+", default=False),
    field("LogDirs", array(UUID), "3+", tagged="3+", tag=0),
    field("CordonedLogDirs", array(UUID), "4+", tagged="4+", tag=1, nullable="4+", default=None),
    api_key=0,
    valid="0-4",
    flexible="0+",
)

UNREGISTER_BROKER_RECORD = message(
    "UnregisterBrokerRecord",
    field("BrokerId", INT32, "0+"),
    field("BrokerEpoch", INT64, "0+"),
    api_key=1,
    valid="0",
    flexible="0+",
)


def _broker_epoch_record(name: str, api_key: int) -> MessageSpec:
    """Fence/UnfenceBrokerRecord: a broker id and the epoch of the registration they apply to."""
    return message(
        name, field("Id", INT32, "0+"), field("Epoch", INT64, "0+"), api_key=api_key, valid="0", flexible="0+"
    )


FENCE_BROKER_RECORD = _broker_epoch_record("FenceBrokerRecord", 7)
UNFENCE_BROKER_RECORD = _broker_epoch_record("UnfenceBrokerRecord", 8)

FEATURE_LEVEL_RECORD = message(
    "FeatureLevelRecord",
    field("Name", STRING, "0+"),
    field("FeatureLevel", INT16, "0+"),
    api_key=12,
    valid="0",
    flexible="0+",
)

PRODUCER_IDS_RECORD = message(
    "ProducerIdsRecord",
    field("BrokerId", INT32, "0+"),
    field("BrokerEpoch", INT64, "0+", default=-1),
    field("NextProducerId", INT64, "0+"),
    api_key=15,
    valid="0",
    flexible="0+",
)

BROKER_REGISTRATION_CHANGE_RECORD = message(
    "BrokerRegistrationChangeRecord",
    field("BrokerId", INT32, "0+"),
    field("BrokerEpoch", INT64, "0+"),
    field("Fenced", INT8, "0+", tagged="0+", tag=0),
    field("InControlledShutdown", INT8, "1+", tagged="1+", tag=1),
    field("LogDirs", array(UUID), "2+", tagged="2+", tag=2),
    field("CordonedLogDirs", array(UUID), "3+", tagged="3+", tag=3, nullable="3+", default=None),
    api_key=17,
    valid="0-3",
    flexible="0+",
)

NO_OP_RECORD = message("NoOpRecord", api_key=20, valid="0", flexible="0+")

ZK_MIGRATION_STATE_RECORD = message(
    "ZkMigrationStateRecord",
    field("ZkMigrationState", INT8, "0+"),
    api_key=21,
    valid="0",
    flexible="0+",
)

BEGIN_TRANSACTION_RECORD = message(
    "BeginTransactionRecord",
    field("Name", STRING, "0+", nullable="0+", tagged="0+", tag=0, default=None),
    api_key=23,
    valid="0",
    flexible="0+",
)

END_TRANSACTION_RECORD = message("EndTransactionRecord", api_key=24, valid="0", flexible="0+")

ABORT_TRANSACTION_RECORD = message(
    "AbortTransactionRecord",
    field("Reason", STRING, "0+", nullable="0+", tagged="0+", tag=0, default=None),
    api_key=25,
    valid="0",
    flexible="0+",
)

# RegisterControllerRecord's ControllerEndpoint and ControllerFeature have the broker's fields.
CONTROLLER_ENDPOINT = BROKER_ENDPOINT
CONTROLLER_FEATURE = BROKER_FEATURE

REGISTER_CONTROLLER_RECORD = message(
    "RegisterControllerRecord",
    field("ControllerId", INT32, "0+"),
    field("IncarnationId", UUID, "0+"),
    field("ZkMigrationReady", BOOL, "0+"),
    field("EndPoints", array(CONTROLLER_ENDPOINT), "0+"),
    field("Features", array(CONTROLLER_FEATURE), "0+"),
    api_key=27,
    valid="0",
    flexible="0+",
)

UNREGISTER_CONTROLLER_RECORD = message(
    "UnregisterControllerRecord",
    field("ControllerId", INT32, "0+"),
    api_key=29,
    valid="0",
    flexible="0+",
)

RECORDS = (
    REGISTER_BROKER_RECORD,
    UNREGISTER_BROKER_RECORD,
    FENCE_BROKER_RECORD,
    UNFENCE_BROKER_RECORD,
    FEATURE_LEVEL_RECORD,
    PRODUCER_IDS_RECORD,
    BROKER_REGISTRATION_CHANGE_RECORD,
    NO_OP_RECORD,
    ZK_MIGRATION_STATE_RECORD,
    BEGIN_TRANSACTION_RECORD,
    END_TRANSACTION_RECORD,
    ABORT_TRANSACTION_RECORD,
    REGISTER_CONTROLLER_RECORD,
    UNREGISTER_CONTROLLER_RECORD,
)
