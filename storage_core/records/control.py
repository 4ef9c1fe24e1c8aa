"""Control records: transaction markers and KRaft control records (kafka-format.md §4.7).

Mirrors `clients/.../common/record/ControlRecordType.java` and `EndTransactionMarker.java`.
A control batch (attribute bit 5) holds one control record in the ordinary record layout; its key
and, for COMMIT/ABORT, its value are (big-endian):

```
ControlKey    => Version => Int16 (0)  Type => Int16
EndTxnMarker  => Version => Int16 (0)  CoordinatorEpoch => Int32
```

Readers need at least 4 (6) bytes and a version >= 0; higher versions are read as version 0 and
extra bytes are ignored. Type codes Kafka does not know are kept as plain ints ("UNKNOWN").
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


def parse_control_key(key: bytes | bytearray | memoryview) -> int:
    """The type code of a control record key; codes Kafka does not define are returned as they are.

    Raises:
        CorruptRecordError: fewer than 4 bytes, or a negative version.
    """
    if len(key) < _KEY.size:
        raise CorruptRecordError(f"control record key has {len(key)} bytes, needs {_KEY.size}")
    version, code = _KEY.unpack_from(key)
    if version < 0:
        raise CorruptRecordError(f"control record key version {version} is negative")
    return code


def control_type_name(code: int) -> str:
    """`ABORT`, `COMMIT`, `LEADER_CHANGE`, ... or `UNKNOWN` for a code Kafka does not define."""
    try:
        return ControlRecordType(code).name
    except ValueError:
        return "UNKNOWN"


def encode_control_key(control_type: int, *, version: int = 0) -> bytes:
    """The 4-byte key of a control record of type `control_type` (a ControlRecordType or any code)."""
    return _KEY.pack(version, control_type)


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTxnMarker:
    """The value of a COMMIT or ABORT control record.

    Attributes:
        version: the value's version (0).
        coordinator_epoch: the epoch of the transaction coordinator that wrote the marker.
    """

    version: int = 0
    coordinator_epoch: int

    def encode(self) -> bytes:
        """The 6-byte value."""
        return _MARKER.pack(self.version, self.coordinator_epoch)

    @classmethod
    def decode(cls, value: bytes | bytearray | memoryview) -> EndTxnMarker:
        """Parse a marker value.

        Raises:
            CorruptRecordError: fewer than 6 bytes, or a negative version.
        """
        if len(value) < _MARKER.size:
            raise CorruptRecordError(f"end transaction marker value has {len(value)} bytes, needs {_MARKER.size}")
        version, coordinator_epoch = _MARKER.unpack_from(value)
        if version < 0:
            raise CorruptRecordError(f"end transaction marker version {version} is negative")
        return cls(version=version, coordinator_epoch=coordinator_epoch)
