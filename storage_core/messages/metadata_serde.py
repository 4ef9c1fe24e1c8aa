"""The frame of a KRaft metadata record (`MetadataRecordSerde`, `AbstractApiMessageSerde`).

Every record value of `__cluster_metadata` (and of its `.checkpoint` snapshots), and of
`__remote_log_metadata` (`RemoteLogMetadataSerde`'s `BytesApiMessageSerde`, the same frame over its
own records, :data:`REMOTE_LOG_METADATA`), is:

```
MetadataRecord => FrameVersion:uvarint (1)  ApiKey:uvarint  Version:uvarint  Message
```

`FrameVersion` 0 is the KRaft preview of Kafka 2.8, which later Kafkas refuse; any other value but
1 is unknown. The api key names the record type (:data:`METADATA_RECORDS`), the version its layout;
an api key or version not declared here is an error naming them, never a skipped record. Bytes
after the message are an error ("garbage after"), as in Kafka.

`MetadataRecordType`'s names (`TOPIC_RECORD`, `PARTITION_CHANGE_RECORD`, ...) are the message
names in upper snake case (`MessageGenerator.toSnakeCase`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from storage_core.errors import CorruptRecordError, UnknownMessageTypeError, UnsupportedMessageVersionError
from storage_core.messages.reader import read_message
from storage_core.messages.schema import MessageSpec, StructValue
from storage_core.messages.schemas import metadata_cluster, metadata_security, metadata_topics, remote_log_metadata
from storage_core.messages.wire import Buffer, encode_unsigned_varint, read_unsigned_varint
from storage_core.messages.writer import write_message

FRAME_VERSION: Final = 1
_MAX_SHORT = 2**15 - 1
_FAMILY = "metadata record"


@dataclass(frozen=True, slots=True)
class ApiMessageFamily:
    """The records one `AbstractApiMessageSerde` reads: what they are (for messages), declarations by api key."""

    name: str
    records: Mapping[int, MessageSpec]


def _by_api_key(*specs: MessageSpec) -> Mapping[int, MessageSpec]:
    return MappingProxyType({spec.api_key: spec for spec in specs if spec.api_key is not None})


METADATA_RECORDS: Final[Mapping[int, MessageSpec]] = _by_api_key(
    *metadata_topics.RECORDS, *metadata_cluster.RECORDS, *metadata_security.RECORDS
)
CLUSTER_METADATA: Final = ApiMessageFamily(_FAMILY, METADATA_RECORDS)
REMOTE_LOG_METADATA: Final = ApiMessageFamily("remote log metadata record", _by_api_key(*remote_log_metadata.RECORDS))


def type_name(spec: MessageSpec) -> str:
    """`MetadataRecordType.toString()`: `TopicRecord` -> `TOPIC_RECORD`, `KRaftVersion` -> `KRAFT_VERSION`."""
    out: list[str] = []
    previous_upper = True
    for char in spec.name:
        if char.isupper():
            if not previous_upper:
                out.append("_")
            out.append(char)
            previous_upper = True
        else:
            out.append(char.upper())
            previous_upper = False
    return "".join(out)


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """One decoded metadata record: its declaration, version and value."""

    spec: MessageSpec
    version: int
    data: StructValue

    @property
    def api_key(self) -> int:
        return self.spec.api_key or 0


def _short(buf: Buffer, pos: int, what: str) -> tuple[int, int]:
    value, pos = read_unsigned_varint(buf, pos)
    if value > _MAX_SHORT:
        raise CorruptRecordError(f"metadata record {what} {value} is too large")
    return value, pos


def read_metadata_record(value: Buffer, family: ApiMessageFamily = CLUSTER_METADATA) -> MetadataRecord:
    """Decode one metadata record value (of `family`: the cluster's, or `__remote_log_metadata`'s).

    Raises:
        CorruptRecordError: a frame version other than 1, a value that does not parse, or bytes
            left after the message.
        UnknownMessageTypeError: an api key not declared here.
        UnsupportedMessageVersionError: a version its declaration does not cover.
    """
    frame_version, pos = _short(value, 0, "frame version")
    if frame_version == 0:
        raise CorruptRecordError(
            "metadata record with frame version 0: the KRaft preview of Kafka 2.8, which no later Kafka reads"
        )
    if frame_version != FRAME_VERSION:
        raise CorruptRecordError(f"unknown metadata record frame version {frame_version} (only 1 is defined)")
    api_key, pos = _short(value, pos, "type")
    version, pos = _short(value, pos, "version")
    spec = family.records.get(api_key)
    if spec is None:
        raise UnknownMessageTypeError(family=family.name, type_id=api_key, version=version)
    if version not in spec.valid_versions:
        raise UnsupportedMessageVersionError(message=spec.name, version=version, type_id=api_key)
    data, end = read_message(spec, value, version, position=pos)
    if end != len(value):
        raise CorruptRecordError(f"found {len(value) - end} byte(s) of garbage after {spec.name} (type {api_key})")
    return MetadataRecord(spec, version, data)


def write_metadata_record(
    spec: MessageSpec, data: StructValue, version: int, family: ApiMessageFamily = CLUSTER_METADATA
) -> bytes:
    """The value bytes of one record of `family` (`AbstractApiMessageSerde.write`).

    Raises:
        ValueError: `spec` is not a record of `family`, or `data` does not fit `version`.
    """
    if spec.api_key is None or family.records.get(spec.api_key) is not spec:
        raise ValueError(f"{spec.name} is not a {family.name}")
    return (
        encode_unsigned_varint(FRAME_VERSION)
        + encode_unsigned_varint(spec.api_key)
        + encode_unsigned_varint(version)
        + write_message(spec, data, version)
    )
