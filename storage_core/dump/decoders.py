"""The record parsers of `kafka-dump-log.sh`: what `key:` and `payload:` print with `--print-data-log`
and with each decoder flag (`DumpLogSegments`' `MessageParser`s, Kafka 4.x).

| decoder                      | key                                    | payload                                     |
|------------------------------|----------------------------------------|---------------------------------------------|
| none (`StringDecoder`)       | the key bytes as UTF-8                 | the value bytes as UTF-8                    |
| `--offsets-decoder`          | `{"type":"<record type>","data":{..}}` | `{"version":"<v>","data":{..}}`, `<DELETE>` |
| `--transaction-log-decoder`  | the same, for `__transaction_state`    | the same                                    |
| `--cluster-metadata-decoder` | (none)                                 | `{"type":"TOPIC_RECORD","version":0,..}`    |
| `--remote-log-metadata-decoder` | (none)                              | `RemoteLogSegmentMetadata{...}` (toString)   |

Coordinator records (`CoordinatorRecordMessageParser`): a record type no declaration covers prints
the key `Unknown record type T at offset O, skipping.` and no payload; any other failure the key
`Error at offset O, skipping. <why>`. A `consumer` group's member subscriptions and assignments
are printed decoded (`ConsumerProtocolSubscription`/`Assignment` JSON) when they parse, as base64
otherwise. Metadata records (`ClusterMetadataLogMessageParser`) that fail print the payload
`Error at O, skipping. <why>`, and `__remote_log_metadata` records (`RemoteMetadataLogMessageParser`:
the `toString()` of the Java object, :func:`storage_core.tiered.events.event_text`) that fail
`Error at offset O, skipping. <why>`. A coordinator record without a key makes Kafka's tool die; we print
it as an error key and go on. JSON values are :class:`JsonText`: Jackson's text, a nested object
in `--json` output.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from storage_core.dump.render import JsonText, Value
from storage_core.errors import StorageError, UnknownMessageTypeError
from storage_core.messages import (
    GROUP_COORDINATOR,
    TRANSACTION_COORDINATOR,
    CoordinatorFamily,
    MessageSpec,
    StructValue,
    read_coordinator_record,
    read_message,
    read_metadata_record,
    to_json,
    type_name,
)
from storage_core.messages.schemas import group_classic, transaction_log
from storage_core.messages.wire import INT16
from storage_core.records.record import Record
from storage_core.tiered.events import event_text, read_event

TOMBSTONE = "<DELETE>"


class RecordDecoder(enum.Enum):
    """How record keys and values print (the decoder flags of `kafka-dump-log.sh`)."""

    NONE = "none"
    OFFSETS = "offsets"
    TRANSACTION_LOG = "transaction-log"
    CLUSTER_METADATA = "cluster-metadata"
    REMOTE_LOG_METADATA = "remote-log-metadata"


def _consumer_protocol_json(raw: object, spec: MessageSpec) -> dict[str, object] | None:
    """`replaceField`: the member's bytes as the consumer protocol message they hold, or None."""
    if not isinstance(raw, bytes) or len(raw) < INT16.size:
        return None
    version: int = INT16.unpack_from(raw, 0)[0]
    try:
        value, _ = read_message(spec, raw, version, position=INT16.size, lenient_version=True)
    except StorageError:
        return None  # Kafka swallows the failure and keeps the bytes
    return to_json(spec, value, version)


def _group_metadata_json(value: StructValue, version: int) -> dict[str, object]:
    json = to_json(group_classic.GROUP_METADATA_VALUE, value, version)
    if value["protocolType"] != group_classic.CONSUMER_PROTOCOL_TYPE:
        return json
    members = json.get("members")
    if not isinstance(members, list):
        return json
    for member, member_json in zip(value["members"], members, strict=True):  # type: ignore[call-overload]
        for name, spec in (
            ("subscription", group_classic.CONSUMER_PROTOCOL_SUBSCRIPTION),
            ("assignment", group_classic.CONSUMER_PROTOCOL_ASSIGNMENT),
        ):
            decoded = _consumer_protocol_json(member[name], spec)
            if decoded is not None:
                member_json[name] = decoded
    return json


# TransactionState of Kafka's transaction coordinator: id -> the name its log formatter prints.
TRANSACTION_STATES = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}


def _coordinator(family: CoordinatorFamily, record: Record) -> tuple[Value, Value]:
    offset = record.offset
    if record.key is None:
        return (
            f"Error at offset {offset}, skipping. Failed to decode message at offset {offset} using the "
            "specified decoder (message had a missing key)",
            None,
        )
    try:
        decoded = read_coordinator_record(family, record.key, record.value)
    except UnknownMessageTypeError as exc:
        return f"Unknown record type {exc.type_id} at offset {offset}, skipping.", None
    except StorageError as exc:
        return f"Error at offset {offset}, skipping. {exc}", None
    key = JsonText(
        {"type": str(decoded.record_type), "data": to_json(decoded.key_spec, decoded.key, decoded.record_type)}
    )
    if decoded.value is None or decoded.value_version is None:
        return key, TOMBSTONE
    if decoded.value_spec is group_classic.GROUP_METADATA_VALUE:
        data: dict[str, object] = _group_metadata_json(decoded.value, decoded.value_version)
    else:
        data = to_json(decoded.value_spec, decoded.value, decoded.value_version)
    if decoded.value_spec is transaction_log.TRANSACTION_LOG_VALUE:
        # Kafka 4.4's TransactionLogMessageFormatter prints the state's name (TransactionState).
        status = data["transactionStatus"]
        data["transactionStatus"] = TRANSACTION_STATES.get(status, status)  # type: ignore[call-overload]
    return key, JsonText({"version": str(decoded.value_version), "data": data})


def _cluster_metadata(record: Record) -> tuple[Value, Value]:
    try:
        decoded = read_metadata_record(record.value or b"")
    except StorageError as exc:
        return None, f"Error at {record.offset}, skipping. {exc}"
    return None, JsonText(
        {
            "type": type_name(decoded.spec),
            "version": decoded.version,
            "data": to_json(decoded.spec, decoded.data, decoded.version),
        }
    )


def _remote_log_metadata(record: Record) -> tuple[Value, Value]:
    try:
        return None, event_text(read_event(record.value or b""))
    except StorageError as exc:
        return None, f"Error at offset {record.offset}, skipping. {exc}"


def _string(record: Record) -> tuple[Value, Value]:
    return record.key, record.value


_PARSERS: dict[RecordDecoder, Callable[[Record], tuple[Value, Value]]] = {
    RecordDecoder.NONE: _string,
    RecordDecoder.OFFSETS: lambda record: _coordinator(GROUP_COORDINATOR, record),
    RecordDecoder.TRANSACTION_LOG: lambda record: _coordinator(TRANSACTION_COORDINATOR, record),
    RecordDecoder.CLUSTER_METADATA: _cluster_metadata,
    RecordDecoder.REMOTE_LOG_METADATA: _remote_log_metadata,
}


def parse_record(decoder: RecordDecoder, record: Record) -> tuple[Value, Value]:
    """The key and payload `kafka-dump-log.sh` prints for a data record (None: not printed)."""
    return _PARSERS[decoder](record)
