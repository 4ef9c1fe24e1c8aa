"""Producer-state snapshot files `<offset>.snapshot` (kafka-format.md §9; `ProducerStateManager.java`).

```
ProducerSnapshot => Version => Int16            1
                    Crc => Uint32               CRC-32C of bytes [6, end)
                    ProducerEntries => [Entry]  Int32 count, then 46-byte entries
Entry => ProducerId => Int64  Epoch => Int16  LastSequence => Int32  LastOffset => Int64
         OffsetDelta => Int32  Timestamp => Int64  CoordinatorEpoch => Int32
         CurrentTxnFirstOffset => Int64 (-1 = none)
```

The file name's offset is the producer map's end offset (exclusive). A snapshot with another
version, a bad CRC or a length that does not match its count is corrupt; Kafka deletes it and loads
the next older one. Kafka writes snapshots in place and fsyncs; we write them atomically (`.tmp` +
rename) so a crash never leaves a torn snapshot.
"""

from __future__ import annotations

import struct
from dataclasses import astuple, dataclass
from pathlib import Path

from storage_core.errors import CorruptSnapshotError
from storage_core.fs import FileSystem, default_fs
from storage_core.records.crc import crc32c

SNAPSHOT_VERSION = 1
_HEADER = struct.Struct(">hIi")  # version, crc, entry count
_CRC_START = 6
_ENTRY = struct.Struct(">qhiqiqiq")


@dataclass(frozen=True, slots=True)
class ProducerSnapshotEntry:
    """One producer's state in a snapshot."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


def encode_snapshot(entries: list[ProducerSnapshotEntry]) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(_ENTRY.pack(*astuple(e)) for e in entries)
    return struct.pack(">hI", SNAPSHOT_VERSION, crc32c(body)) + body


def decode_snapshot(data: bytes, *, path: Path | None = None) -> list[ProducerSnapshotEntry]:
    """Parse a snapshot.

    Raises:
        CorruptSnapshotError: unknown version, CRC mismatch, or a length that disagrees with the count.
    """
    if len(data) < _HEADER.size:
        raise CorruptSnapshotError(f"snapshot of {len(data)} bytes is shorter than its header", path=path)
    version, stored_crc, count = _HEADER.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"snapshot contained an unknown file version {version}", path=path)
    computed = crc32c(memoryview(data)[_CRC_START:])
    if computed != stored_crc:
        raise CorruptSnapshotError(f"snapshot CRC {stored_crc} does not match the computed {computed}", path=path)
    if count < 0 or len(data) != _HEADER.size + count * _ENTRY.size:
        raise CorruptSnapshotError(f"snapshot length {len(data)} does not hold {count} entries", path=path)
    return [ProducerSnapshotEntry(*_ENTRY.unpack_from(data, _HEADER.size + i * _ENTRY.size)) for i in range(count)]


def read_snapshot(path: Path, *, fs: FileSystem | None = None) -> list[ProducerSnapshotEntry]:
    return decode_snapshot((fs or default_fs()).read_bytes(path), path=path)


def write_snapshot(path: Path, entries: list[ProducerSnapshotEntry], *, fs: FileSystem | None = None) -> None:
    (fs or default_fs()).write_atomic(Path(path), encode_snapshot(entries))
