"""Producer-state snapshot files `<offset>.snapshot` (kafka-format.md §9, kafka-maintenance.md §1.6, §2.7).

Mirrors `ProducerStateManager.writeSnapshot` / `readSnapshot` and the generated message
`storage/src/main/resources/message/ProducerSnapshot.json` (version 1, not flexible).

```
ProducerSnapshot => Version => Int16                   always 1
                    Crc => Uint32                      CRC-32C of every byte after this field
                    ProducerEntries => Int32 count, then [ProducerEntry]
ProducerEntry (46 bytes) => ProducerId => Int64
                            Epoch => Int16
                            LastSequence => Int32         -1 if none
                            LastOffset => Int64           -1 if no batch metadata
                            OffsetDelta => Int32          LastSequence - first sequence of the last batch
                            Timestamp => Int64            max timestamp of the last batch
                            CoordinatorEpoch => Int32     -1 if no marker yet
                            CurrentTxnFirstOffset => Int64   -1 if no ongoing transaction
```

Big-endian. The file name's offset is the producer map's end offset (exclusive): the snapshot holds
the state after every batch below it. Entry order is Kafka's hash-map order, i.e. unspecified.
How an entry becomes producer state (batch metadata iff `LastOffset >= 0`, ongoing transaction iff
`CurrentTxnFirstOffset >= 0`) is :mod:`storage_core.producer_state`'s business.

A snapshot whose version is not 1, whose CRC does not match, or whose length is not exactly
header + count × 46 bytes is corrupt: :class:`CorruptSnapshotError`. Kafka then deletes it and
loads the next older snapshot (`loadFromSnapshot`); recovery rebuilds the rest from the log.

Crash story: Kafka writes a snapshot in place (CREATE+WRITE) and fsyncs it, so a crash can leave a
torn file that the CRC check later rejects. We write atomically instead (`<name>.tmp`, fsync, rename,
fsync the directory): a crash leaves either no snapshot or a complete one, never a torn one. A crash
before the rename leaves `<name>.tmp`, which neither Kafka nor :func:`list_snapshot_offsets` looks
at (only names ending in `.snapshot` count) and the next write of that offset replaces.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import astuple, dataclass
from pathlib import Path

from storage_core import names
from storage_core.errors import CorruptSnapshotError
from storage_core.fs import FileSystem, default_fs
from storage_core.records.crc import crc32c

SNAPSHOT_VERSION = 1

_VERSION = struct.Struct(">h")  # Version => Int16
_CRC = struct.Struct(">I")  # Crc => Uint32
_COUNT = struct.Struct(">i")  # ProducerEntries => Int32 count
_ENTRY = struct.Struct(
    ">"
    "q"  # ProducerId => Int64
    "h"  # Epoch => Int16
    "i"  # LastSequence => Int32
    "q"  # LastOffset => Int64
    "i"  # OffsetDelta => Int32
    "q"  # Timestamp => Int64
    "i"  # CoordinatorEpoch => Int32
    "q"  # CurrentTxnFirstOffset => Int64
)
CRC_POSITION = _VERSION.size
CRC_START = CRC_POSITION + _CRC.size
"""The CRC covers the file from here (the entry count) to its end."""
ENTRIES_START = CRC_START + _COUNT.size
ENTRY_SIZE = _ENTRY.size


@dataclass(frozen=True, slots=True)
class ProducerSnapshotEntry:
    """One producer's state in a snapshot; fields in `_ENTRY`'s (the file's) order."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


def encode_snapshot(entries: Iterable[ProducerSnapshotEntry]) -> bytes:
    """The bytes of a snapshot holding `entries`, in the given order.

    Raises:
        ValueError: a field does not fit its on-disk width.
    """
    packed = []
    for entry in entries:
        try:
            packed.append(_ENTRY.pack(*astuple(entry)))
        except struct.error as exc:
            raise ValueError(f"{entry} does not fit a snapshot entry: {exc}") from None
    body = _COUNT.pack(len(packed)) + b"".join(packed)
    return _VERSION.pack(SNAPSHOT_VERSION) + _CRC.pack(crc32c(body)) + body


def decode_snapshot(data: bytes, *, path: Path | None = None) -> list[ProducerSnapshotEntry]:
    """The entries of a snapshot's bytes, in file order.

    Args:
        data: the whole file.
        path: the file, for error messages.

    Raises:
        CorruptSnapshotError: shorter than its header, a version other than 1, a CRC mismatch, or a
            length that is not exactly header + count × 46 bytes.
    """
    if len(data) < ENTRIES_START:
        raise CorruptSnapshotError(f"snapshot of {len(data)} bytes is shorter than its header", path=path)
    (version,) = _VERSION.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"snapshot contained an unknown file version {version}", path=path, position=0)
    (stored,) = _CRC.unpack_from(data, CRC_POSITION)
    computed = crc32c(memoryview(data)[CRC_START:])
    if computed != stored:
        raise CorruptSnapshotError(
            f"snapshot is corrupt (CRC is no longer valid): stored crc {stored}, computed crc {computed}",
            path=path,
            position=CRC_POSITION,
        )
    (count,) = _COUNT.unpack_from(data, CRC_START)
    if count < 0 or len(data) != ENTRIES_START + count * ENTRY_SIZE:
        raise CorruptSnapshotError(
            f"snapshot of {len(data)} bytes does not hold exactly {count} entries", path=path, position=CRC_START
        )
    return [ProducerSnapshotEntry(*fields) for fields in _ENTRY.iter_unpack(memoryview(data)[ENTRIES_START:])]


def read_snapshot(path: Path, *, fs: FileSystem | None = None) -> list[ProducerSnapshotEntry]:
    """The entries of a snapshot file.

    Raises:
        CorruptSnapshotError: the file is corrupt (see :func:`decode_snapshot`).
        FileNotFoundError: there is no such file.
    """
    return decode_snapshot((fs or default_fs()).read_bytes(path), path=Path(path))


def write_snapshot(
    path: Path, entries: Iterable[ProducerSnapshotEntry], *, fs: FileSystem | None = None, sync_dir: bool = True
) -> None:
    """Write a snapshot file atomically (`.tmp`, fsync, rename, fsync the directory unless
    `sync_dir=False`: then the caller fsyncs it later, see `FileSystem.write_atomic`).

    Raises:
        ValueError: an entry does not fit (see :func:`encode_snapshot`).
    """
    (fs or default_fs()).write_atomic(Path(path), encode_snapshot(entries), sync_dir=sync_dir)


def list_snapshot_offsets(dir_path: Path, *, fs: FileSystem | None = None) -> list[int]:
    """The offsets of the `<20 digits>.snapshot` files of a partition dir, ascending.

    Files renamed `.snapshot.deleted` (and leftover `.snapshot.tmp`) do not count, as in Kafka's
    `listSnapshotFiles`; a missing directory has none.
    """
    fs = fs or default_fs()
    if not fs.is_dir(dir_path):
        return []
    return sorted(
        names.offset_from_file_name(name)
        for name in fs.list_dir(dir_path)
        if name.endswith(names.SNAPSHOT_SUFFIX) and names.is_segment_file_name(name)
    )
