"""Records of the coordinators' internal topics: `__consumer_offsets` and `__transaction_state`
(`CoordinatorRecordSerde`, `GroupCoordinatorRecordSerde`, `TransactionCoordinatorRecordSerde`).

```
key   => RecordType:int16  Key      (the key struct, read in the version RecordType)
value => Version:int16     Value    (the record type's value struct, read in Version), or null: a tombstone
```

The record type picks the key and value declarations (:data:`GROUP_COORDINATOR`,
:data:`TRANSACTION_COORDINATOR`); offset commits use types 0 and 1 (key v0/v1), classic groups 2,
consumer groups 3-8 and 16, share groups 9-15. An unknown record type or value version is an error
naming it. As in Kafka, bytes after a key or value are not checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from storage_core.errors import CorruptRecordError, UnknownMessageTypeError
from storage_core.messages.reader import read_message
from storage_core.messages.schema import MessageSpec, StructValue
from storage_core.messages.schemas import group_classic, group_consumer, group_share, transaction_log
from storage_core.messages.wire import INT16, Buffer
from storage_core.messages.writer import write_message


@dataclass(frozen=True, slots=True)
class CoordinatorFamily:
    """The records of one coordinator's topic.

    Attributes:
        name: what the records are, for messages (`group coordinator record`).
        record_types: record type -> (key declaration, value declaration).
    """

    name: str
    record_types: Mapping[int, tuple[MessageSpec, MessageSpec]]


GROUP_COORDINATOR: Final = CoordinatorFamily(
    "group coordinator record",
    MappingProxyType(
        {
            0: (group_classic.OFFSET_COMMIT_KEY, group_classic.OFFSET_COMMIT_VALUE),
            1: (group_classic.OFFSET_COMMIT_KEY, group_classic.OFFSET_COMMIT_VALUE),
            2: (group_classic.GROUP_METADATA_KEY, group_classic.GROUP_METADATA_VALUE),
            **group_consumer.RECORD_TYPES,
            **group_share.RECORD_TYPES,
        }
    ),
)
TRANSACTION_COORDINATOR: Final = CoordinatorFamily(
    "transaction log record", MappingProxyType(dict(transaction_log.RECORD_TYPES))
)


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    """One decoded coordinator record.

    Attributes:
        record_type: the key's version, which names the record type.
        key_spec: the key declaration.
        key: the key.
        value_spec: the value declaration.
        value_version: the value's version, None for a tombstone.
        value: the value, None for a tombstone.
    """

    record_type: int
    key_spec: MessageSpec
    key: StructValue
    value_spec: MessageSpec
    value_version: int | None
    value: StructValue | None


def _version(buf: Buffer, what: str) -> int:
    if len(buf) < INT16.size:
        raise CorruptRecordError(f"could not read the version from the {what} ({len(buf)} bytes)")
    version: int = INT16.unpack_from(buf, 0)[0]
    return version


def read_coordinator_record(family: CoordinatorFamily, key: Buffer, value: Buffer | None) -> CoordinatorRecord:
    """Decode one record of `family`'s topic.

    Raises:
        UnknownMessageTypeError: a record type the family does not declare.
        UnsupportedMessageVersionError: a value version its declaration does not cover.
        CorruptRecordError: a key or value too short for its version, or that does not parse.
    """
    record_type = _version(key, "key")
    specs = family.record_types.get(record_type)
    if specs is None:
        raise UnknownMessageTypeError(family=family.name, type_id=record_type)
    key_spec, value_spec = specs
    key_data, _ = read_message(key_spec, key, record_type, position=INT16.size)
    if value is None:
        return CoordinatorRecord(record_type, key_spec, key_data, value_spec, None, None)
    value_version = _version(value, "value")
    value_data, _ = read_message(value_spec, value, value_version, position=INT16.size)
    return CoordinatorRecord(record_type, key_spec, key_data, value_spec, value_version, value_data)


def write_coordinator_record(
    family: CoordinatorFamily, record_type: int, key: StructValue, value: tuple[int, StructValue] | None
) -> tuple[bytes, bytes | None]:
    """The key and value bytes of one record (`value`: (version, value), or None for a tombstone).

    Raises:
        ValueError: a record type the family does not declare, or values that do not fit.
    """
    specs = family.record_types.get(record_type)
    if specs is None:
        raise ValueError(f"{family.name} type {record_type} is not declared")
    key_spec, value_spec = specs
    key_bytes = INT16.pack(record_type) + write_message(key_spec, key, record_type)
    if value is None:
        return key_bytes, None
    version, data = value
    return key_bytes, INT16.pack(version) + write_message(value_spec, data, version)
