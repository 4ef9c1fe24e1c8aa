"""KRaft metadata records of ACLs, SCRAM credentials, delegation tokens and client quotas.

Transcribed from `metadata/src/main/resources/common/metadata/*.json` of apache/kafka; every record
is flexible in all versions.

```
DelegationTokenRecord            10  v0  Owner Requester Renewers[] IssueTimestamp MaxTimestamp
                                         ExpirationTimestamp TokenId
UserScramCredentialRecord        11  v0  Name Mechanism Salt StoredKey ServerKey Iterations
ClientQuotaRecord                14  v0  Entity[EntityType EntityName(null: default)] Key Value(float64)
                                         Remove
AccessControlEntryRecord         18  v0  Id ResourceType ResourceName PatternType Principal Host
                                         Operation PermissionType
RemoveAccessControlEntryRecord   19  v0  Id
RemoveUserScramCredentialRecord  22  v0  Name Mechanism
RemoveDelegationTokenRecord      26  v0  TokenId
```
"""

from __future__ import annotations

from storage_core.messages.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT32,
    INT64,
    STRING,
    UUID,
    array,
    field,
    message,
    struct,
)

DELEGATION_TOKEN_RECORD = message(
    "DelegationTokenRecord",
    field("Owner", STRING, "0+"),
    field("Requester", STRING, "0+"),
    field("Renewers", array(STRING), "0+"),
    field("IssueTimestamp", INT64, "0+"),
    field("MaxTimestamp", INT64, "0+"),
    field("ExpirationTimestamp", INT64, "0+"),
    field("TokenId", STRING, "0+"),
    api_key=10,
    valid="0",
    flexible="0+",
)

USER_SCRAM_CREDENTIAL_RECORD = message(
    "UserScramCredentialRecord",
    field("Name", STRING, "0+"),
    field("Mechanism", INT8, "0+"),
    field("Salt", BYTES, "0+"),
    field("StoredKey", BYTES, "0+"),
    field("ServerKey", BYTES, "0+"),
    field("Iterations", INT32, "0+"),
    api_key=11,
    valid="0",
    flexible="0+",
)

ENTITY_DATA = struct(
    "EntityData",
    field("EntityType", STRING, "0+"),
    field("EntityName", STRING, "0+", nullable="0+"),
)

CLIENT_QUOTA_RECORD = message(
    "ClientQuotaRecord",
    field("Entity", array(ENTITY_DATA), "0+"),
    field("Key", STRING, "0+"),
    field("Value", FLOAT64, "0+"),
    field("Remove", BOOL, "0+"),
    api_key=14,
    valid="0",
    flexible="0+",
)

ACCESS_CONTROL_ENTRY_RECORD = message(
    "AccessControlEntryRecord",
    field("Id", UUID, "0+"),
    field("ResourceType", INT8, "0+"),
    field("ResourceName", STRING, "0+"),
    field("PatternType", INT8, "0+"),
    field("Principal", STRING, "0+"),
    field("Host", STRING, "0+"),
    field("Operation", INT8, "0+"),
    field("PermissionType", INT8, "0+"),
    api_key=18,
    valid="0",
    flexible="0+",
)

REMOVE_ACCESS_CONTROL_ENTRY_RECORD = message(
    "RemoveAccessControlEntryRecord",
    field("Id", UUID, "0+"),
    api_key=19,
    valid="0",
    flexible="0+",
)

REMOVE_USER_SCRAM_CREDENTIAL_RECORD = message(
    "RemoveUserScramCredentialRecord",
    field("Name", STRING, "0+"),
    field("Mechanism", INT8, "0+"),
    api_key=22,
    valid="0",
    flexible="0+",
)

REMOVE_DELEGATION_TOKEN_RECORD = message(
    "RemoveDelegationTokenRecord",
    field("TokenId", STRING, "0+"),
    api_key=26,
    valid="0",
    flexible="0+",
)

RECORDS = (
    DELEGATION_TOKEN_RECORD,
    USER_SCRAM_CREDENTIAL_RECORD,
    CLIENT_QUOTA_RECORD,
    ACCESS_CONTROL_ENTRY_RECORD,
    REMOVE_ACCESS_CONTROL_ENTRY_RECORD,
    REMOVE_USER_SCRAM_CREDENTIAL_RECORD,
    REMOVE_DELEGATION_TOKEN_RECORD,
)
