"""Kafka's versioned messages: one declaration language, one reader, one writer, one JSON form.

Declarations (:mod:`storage_core.messages.schemas`) are written by us from Kafka's message JSONs;
:func:`read_message`/:func:`write_message` handle any of them in any version, flexible encodings
and tagged fields included; :func:`to_json` and :func:`jackson_text` print a value as Kafka's
generated JsonConverters and Jackson do. The frames around them: KRaft metadata records
(:mod:`~storage_core.messages.metadata_serde`) and coordinator records of `__consumer_offsets` and
`__transaction_state` (:mod:`~storage_core.messages.coordinator_serde`).
"""

from storage_core.messages.coordinator_serde import (
    GROUP_COORDINATOR,
    TRANSACTION_COORDINATOR,
    CoordinatorFamily,
    CoordinatorRecord,
    read_coordinator_record,
    write_coordinator_record,
)
from storage_core.messages.json_form import jackson_text, java_double_text, to_json
from storage_core.messages.metadata_serde import (
    CLUSTER_METADATA,
    METADATA_RECORDS,
    REMOTE_LOG_METADATA,
    ApiMessageFamily,
    MetadataRecord,
    read_metadata_record,
    type_name,
    write_metadata_record,
)
from storage_core.messages.reader import read_message
from storage_core.messages.schema import Field, MessageSpec, StructSpec, StructValue
from storage_core.messages.versions import Versions
from storage_core.messages.writer import write_message

__all__ = [
    "CLUSTER_METADATA",
    "GROUP_COORDINATOR",
    "METADATA_RECORDS",
    "REMOTE_LOG_METADATA",
    "TRANSACTION_COORDINATOR",
    "ApiMessageFamily",
    "CoordinatorFamily",
    "CoordinatorRecord",
    "Field",
    "MessageSpec",
    "MetadataRecord",
    "StructSpec",
    "StructValue",
    "Versions",
    "jackson_text",
    "java_double_text",
    "read_coordinator_record",
    "read_message",
    "read_metadata_record",
    "to_json",
    "type_name",
    "write_coordinator_record",
    "write_message",
    "write_metadata_record",
]
