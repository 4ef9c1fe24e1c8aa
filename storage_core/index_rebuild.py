"""Verify or rebuild a partition's `.index`, `.timeindex` and `.txnindex` from its `.log` files.

Like `kafka-dump-log.sh --verify-index-only`, but exact: every segment's indexes are rebuilt in
memory with Kafka's recovery rules (:func:`storage_core.segment.build_segment_indexes`) and compared
byte for byte with the files on disk. The txn index is rebuilt by replaying producer state over
the partition's segments in order (as Kafka's recovery would from the log start).

An existing index is **valid** when every entry can serve lookups: offset-index entries increase
and each points at the start of a valid batch whose last offset is at most the entry's offset;
time-index entries increase and each names a batch holding its offset whose running maximum
timestamp is the entry's timestamp. Kafka's append path indexes per produced chunk, so a valid index
may be sparser than a rebuild; it is kept. A missing, corrupt or invalid index:

* verify only: is reported (`index_mismatch`), nothing changes;
* rebuild: is replaced by the recovery rebuild, atomically (`.tmp`, fsync, rename, fsync directory).

The `.log` files are never modified: bytes after a segment's valid prefix are reported (they are
`recover`'s business), and the indexes cover the valid prefix, as recovery would leave them.

Beside a live broker (verify only, `live`): the active segment is being appended to and its indexes
are preallocated and zero-filled past their last entry, so it is reported `in_flight` and not
checked; a closed segment deleted or replaced while it is read (retention, the cleaner) is reported
`changed_during_read` (:mod:`storage_core.live.reader`), not failed. The rebuild never runs live.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from storage_core import names
from storage_core.fs import FileSystem, default_fs
from storage_core.index.offset_index import OffsetIndex, OffsetPosition
from storage_core.index.time_index import TimeIndex, TimestampOffset
from storage_core.index.txn_index import TransactionIndex
from storage_core.live.reader import list_segments
from storage_core.load_actions import ActionKind, LoadAction, written
from storage_core.partition_segments import SegmentSettings
from storage_core.producer_rebuild import replay_producer_batch
from storage_core.producer_state import ProducerStateManager
from storage_core.records.file_records import Batch
from storage_core.segment import build_segment_indexes

E = TypeVar("E", OffsetPosition, TimestampOffset)


@dataclass(frozen=True, slots=True)
class IndexCheckResult:
    """What verifying (or rebuilding) a partition's indexes found.

    Attributes:
        segments_checked: segments whose indexes were compared.
        actions: one `index_mismatch` (verify) or `rebuild_index` (rebuild) per differing file, and
            a `corruption_detected` per segment with invalid bytes after its valid prefix.
    """

    segments_checked: int
    actions: tuple[LoadAction, ...]

    @property
    def mismatches(self) -> int:
        return sum(1 for a in self.actions if a.kind in (ActionKind.INDEX_MISMATCH, ActionKind.REBUILD_INDEX))


def rebuild_indexes(
    dir_path: Path,
    *,
    settings: SegmentSettings = SegmentSettings(),  # noqa: B008 - frozen value object
    verify_only: bool,
    live: bool = False,
    fs: FileSystem | None = None,
) -> IndexCheckResult:
    """Verify, or rebuild where they differ, every index of one partition directory.

    Args:
        dir_path: the partition directory.
        settings: index interval and size.
        verify_only: report, change nothing.
        live: a broker may be writing the directory (verify only; see the module docstring).
        fs: the file system.

    Raises:
        ValueError: `live` without `verify_only`.
    """
    if live and not verify_only:
        raise ValueError("indexes are rebuilt only in a directory no broker is writing")
    fs = fs or default_fs()
    dir_path = Path(dir_path)
    bases = list_segments(dir_path, fs=fs)
    psm = ProducerStateManager(dir_path, fs=fs)
    actions: list[LoadAction] = []
    checked = 0
    for base_offset in bases:
        log_name = names.log_file(dir_path, base_offset).name
        if live and base_offset == bases[-1]:
            reason = "active segment of a live broker: being written, not verified"
            actions.append(LoadAction(ActionKind.IN_FLIGHT, log_name, base_offset, 0, reason))
            continue
        identity = fs.identity(names.log_file(dir_path, base_offset))
        try:
            found = _check_segment(
                dir_path, base_offset, psm, settings=settings, verify_only=verify_only, live=live, fs=fs
            )
        except FileNotFoundError:
            if not live:
                raise
            found = None
        if live and (found is None or fs.identity(names.log_file(dir_path, base_offset)) != identity):
            reason = "deleted or replaced while read (retention or the cleaner ran): not verified"
            actions.append(LoadAction(ActionKind.CHANGED_DURING_READ, log_name, base_offset, 0, reason))
            continue
        checked += 1
        actions += found or []
    if live and list_segments(dir_path, fs=fs) != bases:
        reason = "segments were added or removed while the partition was read"
        actions.append(LoadAction(ActionKind.CHANGED_DURING_READ, "", -1, 0, reason))
    return IndexCheckResult(checked, tuple(actions))


def _check_segment(
    dir_path: Path,
    base_offset: int,
    psm: ProducerStateManager,
    *,
    settings: SegmentSettings,
    verify_only: bool,
    live: bool,
    fs: FileSystem,
) -> list[LoadAction]:
    """Rebuild one segment's indexes in memory (producer state carried in `psm`) and fix or report the files.

    Beside a live broker (`live`) the segment is read into memory with positional reads, as a consumer
    reads, never mapped: a broker that truncates the file meanwhile (a replica truncating to its
    leader) would make a read of a mapped page past the new end a SIGBUS; a read just ends short.
    """
    actions: list[LoadAction] = []
    log_path = names.log_file(dir_path, base_offset)
    offset_index_path = names.offset_index_file(dir_path, base_offset)
    time_index_path = names.time_index_file(dir_path, base_offset)
    txn_index = TransactionIndex.build_in_memory(names.txn_index_file(dir_path, base_offset), base_offset, fs=fs)
    offset_check = OffsetEntriesCheck(offset_index_path, base_offset, fs)
    time_check = TimeEntriesCheck(time_index_path, base_offset, fs)

    def observe(batch: Batch) -> None:
        offset_check.feed(batch)
        time_check.feed(batch)
        if batch.magic >= 2:
            replay_producer_batch(psm, batch, txn_index)

    buffer = fs.read_bytes(log_path) if live else fs.mmap(log_path)
    rebuilt = build_segment_indexes(
        buffer,
        offset_index=OffsetIndex.build_in_memory(
            offset_index_path, base_offset, max_index_size=settings.segment_index_bytes, fs=fs
        ),
        time_index=TimeIndex.build_in_memory(
            time_index_path, base_offset, max_index_size=settings.segment_index_bytes, fs=fs
        ),
        index_interval_bytes=settings.index_interval_bytes,
        on_batch=observe,
    )
    if rebuilt.valid_bytes < len(buffer):
        actions.append(
            LoadAction(
                ActionKind.CORRUPTION_DETECTED,
                log_path.name,
                base_offset,
                len(buffer) - rebuilt.valid_bytes,
                "invalid bytes after the valid prefix (run recover to truncate them)",
            )
        )
    for index, problem in (
        (rebuilt.offset_index, offset_check.finish()),
        (rebuilt.time_index, time_check.finish()),
    ):
        if problem is not None:
            actions.append(_fix(index.path, index.encoded(), base_offset, problem, verify_only=verify_only, fs=fs))
    entries = txn_index.all_entries()
    on_disk = txn_index.path
    content = b"".join(e.encode() for e in entries)
    if (entries or (fs.exists(on_disk) and fs.size(on_disk))) and (
        not fs.exists(on_disk) or fs.read_bytes(on_disk) != content
    ):
        problem = "missing" if not fs.exists(on_disk) else "differs from the aborted transactions in the log"
        actions.append(_fix(on_disk, content, base_offset, problem, verify_only=verify_only, fs=fs))
    return actions


def _fix(
    path: Path, content: bytes, base_offset: int, problem: str, *, verify_only: bool, fs: FileSystem
) -> LoadAction:
    if verify_only:
        return LoadAction(ActionKind.INDEX_MISMATCH, path.name, base_offset, 0, problem)
    existed = fs.exists(path)
    fs.write_atomic(path, content)
    return written(
        ActionKind.REBUILD_INDEX, path.name, content, existed=existed, base_offset=base_offset, reason=problem
    )


class _EntriesCheck(Generic[E]):
    """What both index checks share: the entries on disk (or "missing"), Kafka's sanity check and
    the increase rule checked up front, a cursor that batches fed in file order move along, and
    the first problem found."""

    def __init__(self, index_type: type[OffsetIndex | TimeIndex], path: Path, base_offset: int, fs: FileSystem) -> None:
        self.problem: str | None = "missing"
        self._entries: list[E] = []
        if fs.exists(path):
            index = index_type.open(path, base_offset, fs=fs)
            self._entries = index.entries()
            self.problem = index.find_problem() or _not_increasing(self._entries, self._goes_back)
        self._next = 0

    @staticmethod
    def _goes_back(previous: E, entry: E) -> bool:
        raise NotImplementedError

    def _describe(self, entry: E) -> str:
        raise NotImplementedError

    def _fail(self, entry: E) -> None:
        self.problem = self.problem or self._describe(entry)

    def finish(self) -> str | None:
        """The first problem found, or None (an entry no batch reached is one)."""
        if self._next < len(self._entries):
            self._fail(self._entries[self._next])
        return self.problem


class OffsetEntriesCheck(_EntriesCheck[OffsetPosition]):
    """Is the offset index on disk valid for the batches fed to it, in file order?

    Each entry (O, P) must start a batch at P whose last offset is <= O (Kafka's append path
    indexes a chunk of batches by its last offset), with O <= the log's last offset; entries
    increase. One pass beside the rebuild, no list of batches: memory is the index's entries.
    """

    def __init__(self, path: Path, base_offset: int, fs: FileSystem) -> None:
        super().__init__(OffsetIndex, path, base_offset, fs)
        self._last_offset: int | None = None

    @staticmethod
    def _goes_back(previous: OffsetPosition, entry: OffsetPosition) -> bool:
        return entry.offset <= previous.offset or entry.position <= previous.position

    def _describe(self, entry: OffsetPosition) -> str:
        return f"entry ({entry.offset}, {entry.position}) does not point at a batch holding it"

    def feed(self, batch: Batch) -> None:
        entries, n = self._entries, self._next
        while n < len(entries) and entries[n].position <= batch.position:
            entry = entries[n]
            if entry.position < batch.position or batch.last_offset > entry.offset:
                self._fail(entry)
            n += 1
        self._next = n
        self._last_offset = batch.last_offset

    def finish(self) -> str | None:
        every_entry_met = self._entries and self._next == len(self._entries)
        if every_entry_met and (self._last_offset is None or self._entries[-1].offset > self._last_offset):
            self._fail(self._entries[-1])  # an entry past the log's last offset
        return super().finish()


class TimeEntriesCheck(_EntriesCheck[TimestampOffset]):
    """Is the time index on disk valid for the batches fed to it, in file order?

    Each entry (T, O) must name an offset O held by a batch (base <= O <= last) whose running
    maximum timestamp (over the log up to and including it) is >= T; entries increase in timestamp
    and do not decrease in offset.
    """

    def __init__(self, path: Path, base_offset: int, fs: FileSystem) -> None:
        super().__init__(TimeIndex, path, base_offset, fs)
        self._running_max = -1

    @staticmethod
    def _goes_back(previous: TimestampOffset, entry: TimestampOffset) -> bool:
        return entry.timestamp <= previous.timestamp or entry.offset < previous.offset

    def _describe(self, entry: TimestampOffset) -> str:
        return f"entry ({entry.timestamp}, {entry.offset}) is not a timestamp of the log up to its offset"

    def feed(self, batch: Batch) -> None:
        self._running_max = max(self._running_max, batch.max_timestamp)
        entries, n = self._entries, self._next
        while n < len(entries) and entries[n].offset <= batch.last_offset:
            entry = entries[n]
            if entry.offset < batch.base_offset or self._running_max < entry.timestamp:
                self._fail(entry)
            n += 1
        self._next = n


def _not_increasing(entries: Sequence[E], goes_back: Callable[[E, E], bool]) -> str | None:
    for previous, entry in itertools.pairwise(entries):
        if goes_back(previous, entry):
            return f"entries do not increase after {previous}"
    return None
