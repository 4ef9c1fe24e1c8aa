"""`leader-epoch-checkpoint` and the leader-epoch cache (kafka-format.md §10.1; `LeaderEpochFileCache.java`).

The file is a checkpoint (§1.4) of `<epoch> <start offset>` lines in ascending epoch order: leader
epoch E started at offset S. Both columns strictly increase. The cache rules used at load:

* `assign(epoch, start)`: ignored if the epoch equals the latest and the start is not earlier;
  otherwise every entry with epoch >= the new one or start >= the new start is removed from the
  tail and the new entry appended.
* `truncate_from_end(end)`: drop entries starting at or after `end`.
* `truncate_from_start(start)`: drop entries starting at or before `start`; if any were dropped, the
  last of them comes back starting at `start`.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from storage_core.checkpoint import format_checkpoint, parse_checkpoint
from storage_core.errors import CorruptCheckpointError
from storage_core.fs import FileSystem, default_fs


class EpochEntry(NamedTuple):
    """Leader epoch `epoch` started at `start_offset`."""

    epoch: int
    start_offset: int


def read_leader_epoch_checkpoint(path: Path, *, fs: FileSystem | None = None) -> list[EpochEntry]:
    """Entries of a leader-epoch-checkpoint (none if missing).

    Raises:
        CorruptCheckpointError: the file does not parse.
    """
    fs = fs or default_fs()
    if not fs.exists(path):
        return []
    entries = []
    for epoch, start in parse_checkpoint(fs.read_bytes(path), fields=2, path=path):
        try:
            entries.append(EpochEntry(int(epoch), int(start)))
        except ValueError:
            raise CorruptCheckpointError(f"malformed entry {epoch} {start}", path=path) from None
    return entries


def format_leader_epoch_checkpoint(entries: list[EpochEntry]) -> bytes:
    return format_checkpoint([f"{e.epoch} {e.start_offset}" for e in entries])


def write_leader_epoch_checkpoint(path: Path, entries: list[EpochEntry], *, fs: FileSystem | None = None) -> None:
    """Replace a leader-epoch-checkpoint atomically."""
    (fs or default_fs()).write_atomic(Path(path), format_leader_epoch_checkpoint(entries))


class LeaderEpochCache:
    """The in-memory leader-epoch cache of one partition."""

    def __init__(self, entries: list[EpochEntry] | None = None) -> None:
        self._entries: list[EpochEntry] = []
        for entry in entries or []:
            self.assign(entry.epoch, entry.start_offset)

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> None:
        if epoch < 0 or start_offset < 0:
            return
        if self._entries:
            latest = self._entries[-1]
            if latest.epoch == epoch and start_offset >= latest.start_offset:
                return
        while self._entries and (self._entries[-1].epoch >= epoch or self._entries[-1].start_offset >= start_offset):
            self._entries.pop()
        self._entries.append(EpochEntry(epoch, start_offset))

    def truncate_from_end(self, end_offset: int) -> None:
        while self._entries and self._entries[-1].start_offset >= end_offset:
            self._entries.pop()

    def truncate_from_start(self, start_offset: int) -> None:
        removed = None
        while self._entries and self._entries[0].start_offset <= start_offset:
            removed = self._entries.pop(0)
        if removed is not None:
            self._entries.insert(0, EpochEntry(removed.epoch, start_offset))

    def clear(self) -> None:
        self._entries.clear()
