"""`leader-epoch-checkpoint` and the leader-epoch cache (kafka-format.md §10.1, kafka-maintenance.md §2.8).

Mirrors `storage/.../checkpoint/LeaderEpochCheckpointFile.java` (the file) and
`storage/.../epoch/LeaderEpochFileCache.java` (the cache the log loader keeps in memory).

```
LeaderEpochCheckpoint => Checkpoint (storage_core.checkpoint), version 0
Entry => Epoch StartOffset                Int32 Int64 as decimal text, one space
```

Meaning: leader epoch `Epoch` started at offset `StartOffset`. Invariants kept by the cache (and so
by every file Kafka writes): entries are in ascending epoch order and both columns strictly increase.
The reader does not check them: like Kafka, the cache re-establishes them by replaying the file's
entries through :meth:`LeaderEpochCache.assign`. A negative epoch or start offset is refused when
reading (Kafka's cache throws `IllegalArgumentException` for it while loading the log).

Cache rules, exactly `LeaderEpochFileCache`:

* `assign(epoch, start)`: nothing happens when `epoch` equals the latest epoch and `start` is not
  before the latest start. Otherwise every entry with `epoch >= new epoch` or `start >= new start`
  is removed from the tail, then the new entry is appended (so a lower epoch, or an earlier start,
  truncates the conflicting history).
* `truncate_from_end(end)`: when `end >= 0` and the latest entry starts at or after `end`, remove
  from the tail every entry starting at or after `end`.
* `truncate_from_start(start)`: remove from the head every entry starting at or before `start`; if
  any was removed, the last removed epoch comes back starting at `start` (an epoch that began
  before the new log start still covers it).

Crash story: the file is written atomically (`.tmp`, fsync, rename, fsync the directory). Kafka
flushes truncations asynchronously and re-applies them at the next load, so a stale file is
harmless as long as the loader truncates the cache to the log's range again, which ours does.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from storage_core.checkpoint import FIRST_ENTRY_LINE, entry_int, format_checkpoint, read_checkpoint_lines
from storage_core.errors import CorruptCheckpointError
from storage_core.fs import FileSystem, default_fs

LEADER_EPOCH_CHECKPOINT_FIELDS = 2


class EpochEntry(NamedTuple):
    """Leader epoch `epoch` started at offset `start_offset`."""

    epoch: int
    start_offset: int


def read_leader_epoch_checkpoint(path: Path, *, fs: FileSystem | None = None) -> list[EpochEntry]:
    """The entries of a leader-epoch-checkpoint, in file order; none if the file is missing or empty.

    Raises:
        CorruptCheckpointError: the file does not parse, or an entry is negative (carries the line).
    """
    entries = []
    for number, (epoch, start) in enumerate(
        read_checkpoint_lines(path, fields=LEADER_EPOCH_CHECKPOINT_FIELDS, fs=fs), start=FIRST_ENTRY_LINE
    ):
        entry = EpochEntry(
            entry_int(epoch, bits=32, line=number, path=path), entry_int(start, bits=64, line=number, path=path)
        )
        if entry.epoch < 0 or entry.start_offset < 0:
            raise CorruptCheckpointError(f"invalid leader epoch entry {epoch} {start}", path=path, line=number)
        entries.append(entry)
    return entries


def format_leader_epoch_checkpoint(entries: Iterable[EpochEntry]) -> bytes:
    """A leader-epoch-checkpoint's bytes, entries in the given (the cache's ascending) order."""
    return format_checkpoint(entries)


def write_leader_epoch_checkpoint(path: Path, entries: Iterable[EpochEntry], *, fs: FileSystem | None = None) -> None:
    """Replace a leader-epoch-checkpoint atomically (`.tmp`, fsync, rename, fsync the directory)."""
    (fs or default_fs()).write_atomic(Path(path), format_leader_epoch_checkpoint(entries))


class LeaderEpochCache:
    """The leader-epoch cache of one partition: epochs and their start offsets, both ascending.

    Args:
        entries: initial entries (typically a checkpoint's), replayed through :meth:`assign` as
            Kafka's constructor does, which drops any that break monotonicity.
    """

    def __init__(self, entries: Iterable[EpochEntry] = ()) -> None:
        self._entries: list[EpochEntry] = []
        for entry in entries:
            self.assign(entry.epoch, entry.start_offset)

    @property
    def entries(self) -> list[EpochEntry]:
        """A copy of the entries, ascending."""
        return list(self._entries)

    @property
    def latest_entry(self) -> EpochEntry | None:
        """The newest entry, None if the cache is empty."""
        return self._entries[-1] if self._entries else None

    @property
    def latest_epoch(self) -> int | None:
        """The newest epoch, None if the cache is empty."""
        return self._entries[-1].epoch if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset` (`LeaderEpochFileCache.assign`).

        Returns:
            True if the cache changed (Kafka then rewrites the checkpoint).

        Raises:
            ValueError: a negative epoch or start offset (Kafka's IllegalArgumentException).
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry: epoch {epoch}, start offset {start_offset}")
        latest = self.latest_entry
        if latest is not None and epoch == latest.epoch and start_offset >= latest.start_offset:
            return False
        while self._entries and (self._entries[-1].epoch >= epoch or self._entries[-1].start_offset >= start_offset):
            self._entries.pop()
        self._entries.append(EpochEntry(epoch, start_offset))
        return True

    def truncate_from_end(self, end_offset: int) -> list[EpochEntry]:
        """Remove the entries starting at or after `end_offset` (`truncateFromEnd`).

        Returns:
            The removed entries, newest first (empty if nothing changed).
        """
        removed: list[EpochEntry] = []
        if end_offset < 0:
            return removed
        while self._entries and self._entries[-1].start_offset >= end_offset:
            removed.append(self._entries.pop())
        return removed

    def truncate_from_start(self, start_offset: int) -> list[EpochEntry]:
        """Drop the entries starting at or before `start_offset`; the last of them restarts there.

        This is `truncateFromStart`: it is exclusive, so `truncate_from_start(6)` keeps an entry for
        offset 6.

        Returns:
            The removed entries, oldest first (empty if nothing changed).
        """
        count = 0
        while count < len(self._entries) and self._entries[count].start_offset <= start_offset:
            count += 1
        removed = self._entries[:count]
        if removed:
            self._entries[:count] = [EpochEntry(removed[-1].epoch, start_offset)]
        return removed

    def clear(self) -> None:
        """Remove every entry."""
        self._entries.clear()
