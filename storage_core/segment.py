"""A log segment: one `.log` with its `.index`, `.timeindex` and `.txnindex` (Kafka `LogSegment.java`).

Invariants: every offset in the segment is >= its base offset and within int32 of it (the indexes
store 4-byte relative offsets). The offset index maps last offsets to batch positions, the time
index holds the running maximum timestamp (kafka-maintenance.md §4).

* Append path (:meth:`LogSegment.append`): before adding a chunk, if more than
  `index.interval.bytes` were appended since the last index entry, index (chunk's last offset ->
  chunk position) and offer (max timestamp so far, its offset) to the time index.
* Recovery (:meth:`LogSegment.recover`): reset the indexes, validate every batch (size, CRC, offset
  range), index per batch with the same interval rule, stop at the first invalid batch, truncate
  the `.log` there, trim the offset index, add the final time-index entry and trim it. The rebuilt
  indexes are byte-identical to the ones Kafka's recovery writes.

Crash story: a crash during recovery leaves a preallocated (zero-tailed) index or a longer `.log`;
the next load recovers the segment again and reaches the same state.
"""

from __future__ import annotations

import contextlib
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from storage_core import names, native
from storage_core.errors import CorruptRecordError, OffsetOverflowError
from storage_core.fs import FileSystem, default_fs
from storage_core.index.offset_index import OffsetIndex, OffsetPosition
from storage_core.index.sparse_index import DEFAULT_MAX_INDEX_SIZE
from storage_core.index.time_index import TimeIndex
from storage_core.index.txn_index import TransactionIndex
from storage_core.load_actions import FileChange
from storage_core.native.layout import (
    REPLAY_EVERY,
    REPLAY_NONE,
    REPLAY_PRODUCER_OR_EPOCH,
    STOP_LEGACY,
    STOP_REPLAY,
    STOP_SLOW,
    W_BATCH_POSITION,
    W_EPOCH_FLOOR,
    W_HAVE_SKIPPED,
    W_LAST_INDEX_ENTRY,
    W_MAX_TIMESTAMP,
    W_OFFSET_OF_MAX,
    W_OI_CAPACITY,
    W_OI_COUNT,
    W_OI_LAST,
    W_POSITION,
    W_SKIPPED_LAST,
    W_TI_CAPACITY,
    W_TI_COUNT,
    W_TI_LAST_OFFSET,
    W_TI_LAST_TIMESTAMP,
    WF_INDEX,
    WF_VERIFY_CRC,
    walk_state,
)
from storage_core.records.batch import RecordBatch
from storage_core.records.file_records import (
    HEADER_SIZE_UP_TO_MAGIC,
    Batch,
    Buffer,
    FileRecords,
    iterate_batches,
)

_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class RebuiltIndexes:
    """Indexes rebuilt in memory from a `.log`, and where its valid prefix ends."""

    offset_index: OffsetIndex
    time_index: TimeIndex
    valid_bytes: int


@runtime_checkable
class SelectiveBatchObserver(Protocol):
    """An `on_batch` that needs to see only some batches (recovery's producer-state replay).

    It is called with every legacy batch and every v2 batch that has a producer id or a leader
    epoch above :attr:`epoch_floor`; of the v2 batches in between it is told only the last one's
    last offset (:meth:`skipped_to`), before the next call and at the end. For such an observer
    the walk runs in the native core without a Python object per batch.
    """

    def __call__(self, batch: Batch) -> None: ...

    @property
    def epoch_floor(self) -> int:
        """Batches whose leader epoch is above this are wanted (2^31-1: none for its epoch)."""
        ...

    def skipped_to(self, last_offset: int) -> None:
        """The v2 batches walked past since the last call end at `last_offset`."""
        ...


def build_segment_indexes(
    buffer: Buffer,
    *,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    index_interval_bytes: int,
    on_batch: Callable[[Batch], None] | SelectiveBatchObserver | None = None,
) -> RebuiltIndexes:
    """Kafka's `LogSegment.recover` loop into empty in-memory indexes (kafka-format.md §6.2).

    For each batch: validate it (size, CRC, offset within int32 of the base), track the max
    timestamp, and if more than `index_interval_bytes` were read since the last entry, index
    (batch last offset -> batch position) and offer (max timestamp, its offset) to the time index.
    Stops at the first invalid batch; ends with the time index's final entry (full check skipped).

    The well-formed v2 batches are walked by `storage_core.native.walk` (the C core, or its twin),
    which also writes their index entries; a legacy entry, an offset out of range or an index entry
    the index would refuse is handled here, one batch at a time (:func:`_index_one_batch`), so the
    errors are raised by the indexes themselves. `on_batch` gets every valid batch in order after
    it is indexed, or, if it is a :class:`SelectiveBatchObserver`, only the batches it wants.
    """
    view = memoryview(buffer)
    end = len(view)
    base_offset = offset_index.base_offset
    replay = REPLAY_NONE
    if isinstance(on_batch, SelectiveBatchObserver):
        replay = REPLAY_PRODUCER_OR_EPOCH
    elif on_batch is not None:
        replay = REPLAY_EVERY
    try:
        flags = WF_VERIFY_CRC | WF_INDEX
        state = walk_state(end=end, flags=flags, segment_base=base_offset, interval=index_interval_bytes, replay=replay)
    except OverflowError:  # a base offset or interval beyond int64: every batch goes the one-by-one way
        state = None
    offset_entries, time_entries = bytearray(), bytearray()
    position, last_index_entry, max_timestamp, offset_of_max_timestamp = 0, 0, -1, -1
    while True:
        if state is not None:
            state[W_POSITION], state[W_LAST_INDEX_ENTRY] = position, last_index_entry
            state[W_MAX_TIMESTAMP], state[W_OFFSET_OF_MAX] = max_timestamp, offset_of_max_timestamp
            _sync_index_state(state, offset_index, time_index)
            if replay == REPLAY_PRODUCER_OR_EPOCH:
                state[W_EPOCH_FLOOR] = on_batch.epoch_floor  # type: ignore[union-attr]
            stop = native.walk(view, state, offset_entries, time_entries)
            offset_index.append_encoded(offset_entries, _entries_since(state[W_OI_COUNT], offset_index))
            time_index.append_encoded(time_entries, _entries_since(state[W_TI_COUNT], time_index))
            del offset_entries[:], time_entries[:]
            position, last_index_entry = state[W_POSITION], state[W_LAST_INDEX_ENTRY]
            max_timestamp, offset_of_max_timestamp = state[W_MAX_TIMESTAMP], state[W_OFFSET_OF_MAX]
            if state[W_HAVE_SKIPPED]:
                on_batch.skipped_to(state[W_SKIPPED_LAST])  # type: ignore[union-attr]
                state[W_HAVE_SKIPPED] = 0
            if stop == STOP_REPLAY:
                batch_position = state[W_BATCH_POSITION]
                try:
                    on_batch(RecordBatch(view, batch_position))  # type: ignore[misc]
                except CorruptRecordError:
                    position = batch_position  # as below: the valid prefix ends at this batch
                    break
                continue
            if stop not in (STOP_LEGACY, STOP_SLOW):
                break  # the valid prefix ends at `position`
        if position + HEADER_SIZE_UP_TO_MAGIC >= end:
            break
        step = _index_one_batch(
            view,
            position,
            offset_index=offset_index,
            time_index=time_index,
            index_interval_bytes=index_interval_bytes,
            last_index_entry=last_index_entry,
            max_timestamp=max_timestamp,
            offset_of_max_timestamp=offset_of_max_timestamp,
            on_batch=on_batch,
        )
        next_position, last_index_entry, max_timestamp, offset_of_max_timestamp = step
        if next_position is None:
            break
        position = next_position
    time_index.maybe_append(max_timestamp, offset_of_max_timestamp, skip_full_check=True)
    return RebuiltIndexes(offset_index, time_index, position)


def _sync_index_state(state: array, offset_index: OffsetIndex, time_index: TimeIndex) -> None:
    """The walk state's view of the two indexes: counts, capacities, last entries (relative)."""
    state[W_OI_COUNT], state[W_OI_CAPACITY] = offset_index.entry_count, offset_index.max_entries
    state[W_OI_LAST] = offset_index.raw_entry(offset_index.entry_count - 1)[0] if offset_index.entry_count else 0
    state[W_TI_COUNT], state[W_TI_CAPACITY] = time_index.entry_count, time_index.max_entries
    state[W_TI_LAST_TIMESTAMP], state[W_TI_LAST_OFFSET] = (
        time_index.raw_entry(time_index.entry_count - 1) if time_index.entry_count else (-1, 0)
    )


def _entries_since(count: int, index: OffsetIndex | TimeIndex) -> int:
    return count - index.entry_count


def _index_one_batch(
    view: memoryview,
    position: int,
    *,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    index_interval_bytes: int,
    last_index_entry: int,
    max_timestamp: int,
    offset_of_max_timestamp: int,
    on_batch: Callable[[Batch], None] | None,
) -> tuple[int | None, int, int, int]:
    """`LogSegment.recover`'s loop body for the entry at `position`, whatever its magic, through
    the batch objects and the indexes' own checks.

    Returns:
        (next position, last index entry, max timestamp, its offset); the next position is None
        where the valid prefix ends (a torn or corrupt entry, a CRC mismatch, `on_batch` finding a
        corrupt record: then the batch's index entries and timestamp stay, as in Kafka's loop).

    Raises:
        OffsetOverflowError, InvalidOffsetError, ValueError (a full index), as the indexes raise them.
    """
    base_offset = offset_index.base_offset
    try:
        batch = next(iterate_batches(view, start=position), None)
        if batch is None:
            return None, last_index_entry, max_timestamp, offset_of_max_timestamp  # a torn tail
        batch.ensure_valid()  # Kafka: "Found invalid messages in log segment ... at byte offset <validBytes>"
        last, batch_max = batch.last_offset, batch.max_timestamp
        if not 0 <= last - base_offset <= _INT32_MAX:
            raise OffsetOverflowError(
                "offset cannot be stored relative to the segment's base offset",
                segment=offset_index.path,
                offset=last,
            )
        if batch_max > max_timestamp:
            max_timestamp, offset_of_max_timestamp = batch_max, last
        if position - last_index_entry > index_interval_bytes:
            offset_index.append(last, position)
            time_index.maybe_append(max_timestamp, offset_of_max_timestamp)
            last_index_entry = position
        if on_batch is not None:
            on_batch(batch)
    except CorruptRecordError:
        return None, last_index_entry, max_timestamp, offset_of_max_timestamp  # as above: the prefix ends here
    return position + batch.size_in_bytes, last_index_entry, max_timestamp, offset_of_max_timestamp


def read_next_offset(
    log_path: Path, *, base_offset: int, index_path: Path | None, fs: FileSystem, end: int | None = None
) -> int:
    """The next offset after a segment's last whole batch, its base offset if it has none.

    Like Kafka's `LogSegment.readNextOffset`, the walk starts at the offset index's last entry
    (O, P) when the batch at P starts at or below O (the index describes this `.log`), otherwise
    at the start of the file; so a sound index makes this cost one index read and a short walk.

    Args:
        log_path: the segment's `.log`.
        base_offset: the segment's base offset.
        index_path: its offset index, None (or a missing file) to walk the whole `.log`.
        fs: the file system.
        end: read the `.log` only up to here (a dry run's predicted truncation; the index is then
            not used, it may describe bytes past `end`).

    Raises:
        CorruptRecordError: the `.log`'s framing is corrupt before `end`.
    """
    buffer = fs.mmap(log_path)
    start = 0
    if end is None and index_path is not None:
        start = _last_indexed_position(index_path, base_offset, buffer, fs)
    last = None
    if start:
        with contextlib.suppress(CorruptRecordError):  # then the walk from 0 meets it too, and raises
            last = _last_offset(buffer, start, end)
    if last is None:
        last = _last_offset(buffer, 0, end)
    return base_offset if last is None else last + 1


def _last_indexed_position(index_path: Path, base_offset: int, buffer: Buffer, fs: FileSystem) -> int:
    """P of the offset index's last entry (O, P) if the batch at P starts at or below O, else 0."""
    if not fs.exists(index_path):
        return 0
    index = OffsetIndex.open(index_path, base_offset, fs=fs)
    if index.entry_count == 0:
        return 0
    offset, position = index.entry(index.entry_count - 1)
    try:
        first = next(iterate_batches(buffer, start=position), None)
    except CorruptRecordError:
        return 0
    return position if first is not None and first.base_offset <= offset else 0


def _last_offset(buffer: Buffer, start: int, end: int | None) -> int | None:
    """The last offset of the last whole batch in `buffer[start:end]`, None if there is none."""
    last = None
    for batch in iterate_batches(buffer, start=start, end=end):
        last = batch.last_offset
    return last


class LogSegment:
    """A segment's files, opened for appends, recovery or truncation. Use :meth:`open`."""

    def __init__(
        self,
        dir_path: Path,
        base_offset: int,
        *,
        log: FileRecords,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
        txn_index: TransactionIndex,
        index_interval_bytes: int,
        suffix: str,
        fs: FileSystem,
    ) -> None:
        self.dir = dir_path
        self.base_offset = base_offset
        self.log = log
        self.offset_index = offset_index
        self.time_index = time_index
        self.txn_index = txn_index
        self.index_interval_bytes = index_interval_bytes
        self.suffix = suffix
        self._fs = fs
        self.index_writes: list[tuple[Path, FileChange, bytes]] = []  # by recovery: (path, how, content)
        self._bytes_since_last_index_entry = 0
        last = time_index.last_entry
        self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far = last.timestamp, last.offset

    @classmethod
    def open(
        cls,
        dir_path: Path,
        base_offset: int,
        *,
        index_interval_bytes: int = 4096,
        segment_index_bytes: int = DEFAULT_MAX_INDEX_SIZE,
        file_suffix: str = "",
        create: bool = False,
        fs: FileSystem | None = None,
    ) -> LogSegment:
        """Open a segment's files; with `create`, create the missing ones (indexes preallocated)."""
        fs = fs or default_fs()
        dir_path = Path(dir_path)
        log = FileRecords.open(names.log_file(dir_path, base_offset, file_suffix), fs=fs, writable=True, create=create)
        return cls(
            dir_path,
            base_offset,
            log=log,
            offset_index=OffsetIndex.open(
                names.offset_index_file(dir_path, base_offset, file_suffix),
                base_offset,
                max_index_size=segment_index_bytes,
                writable=create or fs.exists(names.offset_index_file(dir_path, base_offset, file_suffix)),
                fs=fs,
            ),
            time_index=TimeIndex.open(
                names.time_index_file(dir_path, base_offset, file_suffix),
                base_offset,
                max_index_size=segment_index_bytes,
                writable=create or fs.exists(names.time_index_file(dir_path, base_offset, file_suffix)),
                fs=fs,
            ),
            txn_index=TransactionIndex.open(
                names.txn_index_file(dir_path, base_offset, file_suffix), base_offset, fs=fs
            ),
            index_interval_bytes=index_interval_bytes,
            suffix=file_suffix,
            fs=fs,
        )

    @property
    def size(self) -> int:
        return self.log.size_in_bytes

    def _ensure_offset_in_range(self, offset: int) -> None:
        if not 0 <= offset - self.base_offset <= _INT32_MAX:
            raise OffsetOverflowError(
                "offset cannot be stored relative to the segment's base offset", segment=self.log.path, offset=offset
            )

    def append(self, *, largest_offset: int, records: bytes) -> None:
        """Append a chunk of whole batches: Kafka 4.4's `LogSegment.append(largestOffset, records)`.

        The index-interval rule runs batch by batch, as recovery's does: an entry (the batch's last
        offset at its position; the time index offered the max timestamp so far) for the first batch
        after more than `index.interval.bytes` since the last entry. Kafka 4.0 indexed at most one
        entry per append (per cleaner read-buffer chunk); 4.4 per batch (docs/kafka-differences.md).
        """
        if not records:
            return
        self._ensure_offset_in_range(largest_offset)
        position = self.log.append(records)
        for batch in iterate_batches(records):
            if batch.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = batch.max_timestamp
                self.offset_of_max_timestamp_so_far = batch.last_offset
            if self._bytes_since_last_index_entry > self.index_interval_bytes:
                self.offset_index.append(batch.last_offset, position)
                self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
                self._bytes_since_last_index_entry = 0
            position += batch.size_in_bytes
            self._bytes_since_last_index_entry += batch.size_in_bytes

    def recover(
        self,
        *,
        on_batch: Callable[[Batch], None] | None = None,
        end: int | None = None,
        before_truncate: Callable[[int, int], None] | None = None,
    ) -> int:
        """Rebuild the indexes from the `.log` and cut it at the first invalid batch.

        The indexes are built in memory with Kafka's rules (:func:`build_segment_indexes`) and then
        written atomically (txn index, time index, offset index last), after the `.log` is truncated
        and fsynced: a crash or power loss leaves each index file either old or complete and new.
        The renames are durable once the caller fsyncs the directory (the loader does, once, before
        anything records the partition as recovered); until then a power loss brings back the old
        index files, and the next load recovers the segment again. The index files written (not
        those that already held the rebuilt bytes) are added to :attr:`index_writes`.

        Args:
            on_batch: called with every valid batch in order, after it is indexed (producer state,
                leader epochs and the txn index are rebuilt there).
            end: keep nothing at or after this position even if valid (offsets out of order there).
            before_truncate: called with (valid bytes, file size) before bytes are cut (the
                loader quarantines them); an exception it raises leaves the `.log` untouched.

        Returns:
            The number of bytes truncated from the `.log`.

        Raises:
            OffsetOverflowError: a batch's last offset is not within int32 of the base offset.
            InvalidOffsetError: offsets go backwards where an index entry is written.
        """
        self.txn_index = TransactionIndex.build_in_memory(self.txn_index.path, self.base_offset, fs=self._fs)
        buffer = self.log.buffer()
        rebuilt = build_segment_indexes(
            buffer if end is None else memoryview(buffer)[:end],
            offset_index=OffsetIndex.build_in_memory(
                self.offset_index.path, self.base_offset, max_index_size=self.offset_index.max_index_size, fs=self._fs
            ),
            time_index=TimeIndex.build_in_memory(
                self.time_index.path, self.base_offset, max_index_size=self.time_index.max_index_size, fs=self._fs
            ),
            index_interval_bytes=self.index_interval_bytes,
            on_batch=on_batch,
        )
        self.offset_index, self.time_index = rebuilt.offset_index, rebuilt.time_index
        if rebuilt.valid_bytes < self.log.size_in_bytes and before_truncate is not None:
            before_truncate(rebuilt.valid_bytes, self.log.size_in_bytes)
        truncated = self.log.truncate_to(rebuilt.valid_bytes)
        self.log.flush()
        self._persist_indexes(sync_dir=False)
        self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far = self.time_index.last_entry
        return truncated

    def _persist_indexes(self, *, sync_dir: bool) -> None:
        """Write the indexes built in memory (txn, time, offset), recording each file written."""
        for index in (self.txn_index, self.time_index, self.offset_index):
            if index.in_memory:
                change = index.persist(sync_dir=sync_dir)
                if change is not None:
                    self.index_writes.append((index.path, change, index.encoded()))

    def translate_offset(self, offset: int, start_position: int = 0) -> OffsetPosition | None:
        """Position of the first batch whose last offset is >= `offset`, or None."""
        position = max(self.offset_index.lookup(offset).position, start_position)
        for batch in self.log.batches(position):
            if batch.last_offset >= offset:
                return OffsetPosition(batch.last_offset, batch.position)
        return None

    def truncate_to(self, offset: int) -> int:
        """Remove everything at and above `offset` (`LogSegment.truncateTo`); returns bytes removed."""
        mapping = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        removed = 0 if mapping is None else self.log.truncate_to(mapping.position)
        self._persist_indexes(sync_dir=True)  # an interrupted recovery's indexes
        if mapping is None:
            return 0
        last = self.time_index.last_entry
        self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far = last.timestamp, last.offset
        for batch in self.log.batches(self.offset_index.lookup(last.offset).position):
            if batch.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far = batch.max_timestamp, batch.last_offset
        return removed

    def largest_timestamp(self) -> int:
        """The last time-index timestamp, else the `.log` file's mtime (retention's view)."""
        last = self.time_index.last_entry.timestamp
        return last if last >= 0 else self._fs.mtime_ms(self.log.path)

    def on_become_inactive(self) -> None:
        """At roll: final time-index entry, trim both indexes and the `.log`."""
        self.time_index.maybe_append(
            self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far, skip_full_check=True
        )
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.log.trim()

    def flush(self) -> None:
        self.log.flush()
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        """Trim the indexes (as Kafka's close does) and release the files."""
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        for part in (self.log, self.offset_index, self.time_index, self.txn_index):
            part.close()

    def files(self) -> list[Path]:
        """The segment's files that exist."""
        paths = [
            names.log_file(self.dir, self.base_offset, self.suffix),
            names.offset_index_file(self.dir, self.base_offset, self.suffix),
            names.time_index_file(self.dir, self.base_offset, self.suffix),
            names.txn_index_file(self.dir, self.base_offset, self.suffix),
        ]
        return [p for p in paths if self._fs.exists(p)]

    def change_file_suffixes(self, new_suffix: str) -> None:
        """Rename every file of the segment from its current suffix to `new_suffix`."""
        for path in self.files():
            stem = path.name[: len(path.name) - len(self.suffix)] if self.suffix else path.name
            self._fs.rename_atomic(path, path.with_name(stem + new_suffix))
        self.suffix = new_suffix
