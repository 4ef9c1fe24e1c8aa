"""Values of KRaft control records, decoded into the JSON Kafka's generated `*JsonConverter`s write.

`DumpLogSegments` prints a KRaft control record as ` SnapshotHeader {json}` (and `SnapshotFooter`,
`KRaftVersion`, `KRaftVoters`, and since KAFKA-19069 / Kafka 4.1 ` LeaderChange: {json}`). The
values are Kafka protocol messages (clients/src/main/resources/common/message/*.json), all
`"validVersions": "0"`, `"flexibleVersions": "0+"`, so every struct uses the compact encoding and
ends with a tagged-field section. Byte order is big-endian.

```
LeaderChangeMessage  => Version:int16 LeaderId:int32 Voters:[Voter] GrantingVoters:[Voter] TAG_BUFFER
  Voter              => VoterId:int32 TAG_BUFFER
SnapshotHeaderRecord => Version:int16 LastContainedLogTimestamp:int64 TAG_BUFFER
SnapshotFooterRecord => Version:int16 TAG_BUFFER
KRaftVersionRecord   => Version:int16 KRaftVersion:int16 TAG_BUFFER
VotersRecord         => Version:int16 Voters:[Voter] TAG_BUFFER
  Voter              => VoterId:int32 VoterDirectoryId:uuid Endpoints:[Endpoint]
                        KRaftVersionFeature TAG_BUFFER
  Endpoint           => Name:string Host:string Port:uint16 TAG_BUFFER
  KRaftVersionFeature=> MinSupportedVersion:int16 MaxSupportedVersion:int16 TAG_BUFFER

[T]        compact array: unsigned varint N+1 (0 = null, not allowed here), then N elements
string     compact string: unsigned varint length+1, then UTF-8 bytes
uuid       16 bytes; JSON prints Kafka's `Uuid.toString()`: URL-safe base64 without padding
TAG_BUFFER unsigned varint count, then per field: tag, size (unsigned varints) and size bytes;
           none are declared, so all are skipped (the JsonConverters do not print unknown tags)
```

JSON names are the schema names with the first letter lower-cased (`KRaftVersion` -> `kRaftVersion`),
in schema order, as the generated converters write them. Kafka reads these values with version 0
whatever their Version field says (`ControlRecordUtils`); so do we.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable

from storage_core.errors import CorruptRecordError

_INT16 = struct.Struct(">h")
_UINT16 = struct.Struct(">H")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_UUID_SIZE = 16
_MAX_VARINT_BYTES = 5

Json = dict[str, object]


class _Reader:
    """A cursor over one message value; every read raises CorruptRecordError past the end."""

    def __init__(self, data: bytes, message: str) -> None:
        self._data = data
        self._message = message
        self._pos = 0

    def _take(self, size: int) -> bytes:
        if size < 0 or self._pos + size > len(self._data):
            raise CorruptRecordError(f"{self._message} ends inside a field (needs {size} bytes at {self._pos})")
        chunk = self._data[self._pos : self._pos + size]
        self._pos += size
        return chunk

    def int16(self) -> int:
        return _INT16.unpack(self._take(_INT16.size))[0]

    def uint16(self) -> int:
        return _UINT16.unpack(self._take(_UINT16.size))[0]

    def int32(self) -> int:
        return _INT32.unpack(self._take(_INT32.size))[0]

    def int64(self) -> int:
        return _INT64.unpack(self._take(_INT64.size))[0]

    def unsigned_varint(self) -> int:
        value = 0
        for shift in range(0, 7 * _MAX_VARINT_BYTES, 7):
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
        raise CorruptRecordError(f"{self._message} has an unsigned varint longer than {_MAX_VARINT_BYTES} bytes")

    def uuid(self) -> str:
        return base64.urlsafe_b64encode(self._take(_UUID_SIZE)).decode("ascii").rstrip("=")

    def string(self) -> str:
        length = self.unsigned_varint() - 1
        if length < 0:
            raise CorruptRecordError(f"{self._message} has a null string in a non-nullable field")
        return self._take(length).decode("utf-8", "replace")

    def array(self, element: Callable[[_Reader], Json]) -> list[Json]:
        count = self.unsigned_varint() - 1
        if count < 0:
            raise CorruptRecordError(f"{self._message} has a null array in a non-nullable field")
        return [element(self) for _ in range(count)]

    def tagged_fields(self) -> None:
        for _ in range(self.unsigned_varint()):
            self.unsigned_varint()  # tag
            self._take(self.unsigned_varint())


def _struct(reader: _Reader, fields: Json) -> Json:
    """Finish a struct: its tagged fields follow its declared ones."""
    reader.tagged_fields()
    return fields


def _leader_change_voter(reader: _Reader) -> Json:
    return _struct(reader, {"voterId": reader.int32()})


def _endpoint(reader: _Reader) -> Json:
    return _struct(reader, {"name": reader.string(), "host": reader.string(), "port": reader.uint16()})


def _kraft_version_feature(reader: _Reader) -> Json:
    return _struct(reader, {"minSupportedVersion": reader.int16(), "maxSupportedVersion": reader.int16()})


def _voter(reader: _Reader) -> Json:
    return _struct(
        reader,
        {
            "voterId": reader.int32(),
            "voterDirectoryId": reader.uuid(),
            "endpoints": reader.array(_endpoint),
            "kRaftVersionFeature": _kraft_version_feature(reader),
        },
    )


def decode_leader_change(value: bytes) -> Json:
    """`LeaderChangeMessageJsonConverter.write`: version, leaderId, voters, grantingVoters.

    Raises:
        CorruptRecordError: the value does not parse.
    """
    reader = _Reader(value, "LeaderChangeMessage")
    return _struct(
        reader,
        {
            "version": reader.int16(),
            "leaderId": reader.int32(),
            "voters": reader.array(_leader_change_voter),
            "grantingVoters": reader.array(_leader_change_voter),
        },
    )


def decode_snapshot_header(value: bytes) -> Json:
    """`SnapshotHeaderRecordJsonConverter.write`: version, lastContainedLogTimestamp.

    Raises:
        CorruptRecordError: the value does not parse.
    """
    reader = _Reader(value, "SnapshotHeaderRecord")
    return _struct(reader, {"version": reader.int16(), "lastContainedLogTimestamp": reader.int64()})


def decode_snapshot_footer(value: bytes) -> Json:
    """`SnapshotFooterRecordJsonConverter.write`: version.

    Raises:
        CorruptRecordError: the value does not parse.
    """
    reader = _Reader(value, "SnapshotFooterRecord")
    return _struct(reader, {"version": reader.int16()})


def decode_kraft_version(value: bytes) -> Json:
    """`KRaftVersionRecordJsonConverter.write`: version, kRaftVersion.

    Raises:
        CorruptRecordError: the value does not parse.
    """
    reader = _Reader(value, "KRaftVersionRecord")
    return _struct(reader, {"version": reader.int16(), "kRaftVersion": reader.int16()})


def decode_voters(value: bytes) -> Json:
    """`VotersRecordJsonConverter.write`: version, voters (id, directory id, endpoints, version range).

    Raises:
        CorruptRecordError: the value does not parse.
    """
    reader = _Reader(value, "VotersRecord")
    return _struct(reader, {"version": reader.int16(), "voters": reader.array(_voter)})
