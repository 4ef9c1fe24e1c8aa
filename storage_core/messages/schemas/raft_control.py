"""Values of KRaft control records (`clients/src/main/resources/common/message/*.json`).

A control batch's record key is `ControlKey => Version:int16 Type:int16`
(:mod:`storage_core.records.control`); its value is one of these messages, all flexible:

```
LeaderChangeMessage   type 2  v0-1  Version LeaderId Voters[VoterId VoterDirectoryId(v1+)] GrantingVoters[..]
SnapshotHeaderRecord  type 3  v0    Version LastContainedLogTimestamp
SnapshotFooterRecord  type 4  v0    Version
KRaftVersionRecord    type 5  v0    Version KRaftVersion
VotersRecord          type 6  v0    Version Voters[VoterId VoterDirectoryId Endpoints[Name Host Port]
                                    KRaftVersionFeature{MinSupportedVersion MaxSupportedVersion}]
```

Kafka reads every one of them as version 0 (`ControlRecordUtils`: the `*_CURRENT_VERSION`s are 0)
and prints it with the version its own `Version` field names (`DumpLogSegments`).
"""

from __future__ import annotations

from storage_core.messages.schema import INT16, INT32, INT64, STRING, UINT16, UUID, array, field, message, struct
from storage_core.records.control import ControlRecordType

LEADER_CHANGE_VOTER = struct(
    "Voter",
    field("VoterId", INT32, "0+"),
    field("VoterDirectoryId", UUID, "1+"),
)

LEADER_CHANGE_MESSAGE = message(
    "LeaderChangeMessage",
    field("Version", INT16, "0+"),
    field("LeaderId", INT32, "0+"),
    field("Voters", array(LEADER_CHANGE_VOTER), "0+"),
    field("GrantingVoters", array(LEADER_CHANGE_VOTER), "0+"),
    valid="0-1",
    flexible="0+",
)

SNAPSHOT_HEADER_RECORD = message(
    "SnapshotHeaderRecord",
    field("Version", INT16, "0+"),
    field("LastContainedLogTimestamp", INT64, "0+"),
    valid="0",
    flexible="0+",
)

SNAPSHOT_FOOTER_RECORD = message(
    "SnapshotFooterRecord",
    field("Version", INT16, "0+"),
    valid="0",
    flexible="0+",
)

KRAFT_VERSION_RECORD = message(
    "KRaftVersionRecord",
    field("Version", INT16, "0+"),
    field("KRaftVersion", INT16, "0+"),
    valid="0",
    flexible="0+",
)

VOTERS_RECORD = message(
    "VotersRecord",
    field("Version", INT16, "0+"),
    field(
        "Voters",
        array(
            struct(
                "Voter",
                field("VoterId", INT32, "0+"),
                field("VoterDirectoryId", UUID, "0+"),
                field(
                    "Endpoints",
                    array(
                        struct(
                            "Endpoint",
                            field("Name", STRING, "0+"),
                            field("Host", STRING, "0+"),
                            field("Port", UINT16, "0+"),
                        )
                    ),
                    "0+",
                ),
                field(
                    "KRaftVersionFeature",
                    struct(
                        "KRaftVersionFeature",
                        field("MinSupportedVersion", INT16, "0+"),
                        field("MaxSupportedVersion", INT16, "0+"),
                    ),
                    "0+",
                ),
            )
        ),
        "0+",
    ),
    valid="0",
    flexible="0+",
)

CONTROL_RECORD_VERSION = 0  # ControlRecordUtils.*_CURRENT_VERSION: the version every value is read in

BY_CONTROL_TYPE = {  # the value declaration of each KRaft control record type
    ControlRecordType.LEADER_CHANGE: LEADER_CHANGE_MESSAGE,
    ControlRecordType.SNAPSHOT_HEADER: SNAPSHOT_HEADER_RECORD,
    ControlRecordType.SNAPSHOT_FOOTER: SNAPSHOT_FOOTER_RECORD,
    ControlRecordType.KRAFT_VERSION: KRAFT_VERSION_RECORD,
    ControlRecordType.KRAFT_VOTERS: VOTERS_RECORD,
}
