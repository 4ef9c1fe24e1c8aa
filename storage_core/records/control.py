"""Control records: transaction markers and KRaft control records (kafka-format.md §4.7).

A control batch (attribute bit 5) holds one control record whose key is
`ControlKey => Version:int16 Type:int16` and, for COMMIT/ABORT markers, whose value is
`EndTxnMarker => Version:int16 CoordinatorEpoch:int32`. Readers accept higher versions and parse
them as version 0. Mirrors `ControlRecordType.java` and `EndTransactionMarker.java`.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from storage_core.errors import CorruptRecordError

_KEY = struct.Struct(">hh")  # version, type
_MARKER = struct.Struct(">hi")  # version, coordinator epoch


class ControlRecordType(enum.IntEnum):
    """The type field of a control record key."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


def parse_control_key(key: bytes) -> int:
    """The type code of a control record key (unknown codes are returned as they are).

    Raises:
        CorruptRecordError: fewer than 4 bytes or a negative version.
    """
    if len(key) < _KEY.size:
        raise CorruptRecordError(f"control record key has {len(key)} bytes, needs {_KEY.size}")
    version, code = _KEY.unpack_from(key)
    if version < 0:
        raise CorruptRecordError(f"control record key version {version} is negative")
    return code


def control_type_name(code: int) -> str:
    """`COMMIT`, `LEADER_CHANGE`, ... or `UNKNOWN` for codes Kafka does not define."""
    try:
        return ControlRecordType(code).name
    except ValueError:
        return "UNKNOWN"


def encode_control_key(control_type: ControlRecordType, *, version: int = 0) -> bytes:
    """The 4-byte key of a control record."""
    return _KEY.pack(version, control_type)


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    """The value of a COMMIT or ABORT control record."""

    coordinator_epoch: int
    version: int = 0

    def encode(self) -> bytes:
        return _MARKER.pack(self.version, self.coordinator_epoch)

    @classmethod
    def decode(cls, value: bytes) -> EndTxnMarker:
        """Raises CorruptRecordError for a value under 6 bytes or a negative version."""
        if len(value) < _MARKER.size:
            raise CorruptRecordError(f"end transaction marker value has {len(value)} bytes, needs {_MARKER.size}")
        version, coordinator_epoch = _MARKER.unpack_from(value)
        if version < 0:
            raise CorruptRecordError(f"end transaction marker version {version} is negative")
        return cls(coordinator_epoch=coordinator_epoch, version=version)
