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
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.fs import FileSystem, default_fs
from storage_core.index.offset_index import OffsetIndex
from storage_core.index.time_index import TimeIndex
from storage_core.index.txn_index import TransactionIndex
from storage_core.load_actions import ActionKind, LoadAction
from storage_core.partition_segments import SegmentSettings
from storage_core.producer_rebuild import replay_producer_batch
from storage_core.producer_state import ProducerStateManager
from storage_core.records.file_records import Buffer, iterate_batches
from storage_core.segment import build_segment_indexes


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
    fs: FileSystem | None = None,
) -> IndexCheckResult:
    """Verify, or rebuild where they differ, every index of one partition directory."""
    fs = fs or default_fs()
    dir_path = Path(dir_path)
    bases = sorted(
        names.offset_from_file_name(n)
        for n in fs.list_dir(dir_path)
        if n.endswith(names.LOG_SUFFIX) and names.is_segment_file_name(n)
    )
    psm = ProducerStateManager(dir_path, fs=fs)
    actions: list[LoadAction] = []
    for base_offset in bases:
        log_path = names.log_file(dir_path, base_offset)
        txn_index = TransactionIndex.build_in_memory(names.txn_index_file(dir_path, base_offset), base_offset, fs=fs)
        buffer = fs.mmap(log_path)
        rebuilt = build_segment_indexes(
            buffer,
            offset_index=OffsetIndex.build_in_memory(
                names.offset_index_file(dir_path, base_offset),
                base_offset,
                max_index_size=settings.segment_index_bytes,
                fs=fs,
            ),
            time_index=TimeIndex.build_in_memory(
                names.time_index_file(dir_path, base_offset),
                base_offset,
                max_index_size=settings.segment_index_bytes,
                fs=fs,
            ),
            index_interval_bytes=settings.index_interval_bytes,
            on_batch=lambda batch, txn_index=txn_index: (
                replay_producer_batch(psm, batch, txn_index) if batch.magic >= 2 else None
            ),
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
        batches = _valid_batches(buffer, rebuilt.valid_bytes)
        for index, problem in (
            (rebuilt.offset_index, _offset_index_problem(rebuilt.offset_index.path, base_offset, batches, fs)),
            (rebuilt.time_index, _time_index_problem(rebuilt.time_index.path, base_offset, batches, fs)),
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
    return IndexCheckResult(len(bases), tuple(actions))


def _fix(
    path: Path, content: bytes, base_offset: int, problem: str, *, verify_only: bool, fs: FileSystem
) -> LoadAction:
    if verify_only:
        return LoadAction(ActionKind.INDEX_MISMATCH, path.name, base_offset, 0, problem)
    fs.write_atomic(path, content)
    return LoadAction(ActionKind.REBUILD_INDEX, path.name, base_offset, 0, problem)


def _valid_batches(buffer: Buffer, valid_bytes: int) -> list[tuple[int, int, int, int]]:
    """(position, base offset, last offset, running max timestamp) of each batch of the valid prefix."""
    rows = []
    running = -1
    for batch in iterate_batches(buffer, end=valid_bytes):
        running = max(running, batch.max_timestamp)
        rows.append((batch.position, batch.base_offset, batch.last_offset, running))
    return rows


def _offset_index_problem(path: Path, base_offset: int, batches: list, fs: FileSystem) -> str | None:
    if not fs.exists(path):
        return "missing"
    index = OffsetIndex.open(path, base_offset, fs=fs)
    problem = index.find_problem()
    if problem is not None:
        return problem
    by_position = {position: last for position, _, last, _ in batches}
    log_last = batches[-1][2] if batches else base_offset - 1
    previous = None
    for entry in index.entries():
        if previous is not None and (entry.offset <= previous.offset or entry.position <= previous.position):
            return f"entries do not increase at offset {entry.offset}"
        last = by_position.get(entry.position)
        if last is None or last > entry.offset or entry.offset > log_last:
            return f"entry ({entry.offset}, {entry.position}) does not point at a batch holding it"
        previous = entry
    return None


def _time_index_problem(path: Path, base_offset: int, batches: list, fs: FileSystem) -> str | None:
    if not fs.exists(path):
        return "missing"
    index = TimeIndex.open(path, base_offset, fs=fs)
    problem = index.find_problem()
    if problem is not None:
        return problem
    previous = None
    for entry in index.entries():
        if previous is not None and (entry.timestamp <= previous.timestamp or entry.offset < previous.offset):
            return f"entries do not increase at timestamp {entry.timestamp}"
        holder = next((b for b in batches if b[1] <= entry.offset <= b[2]), None)
        if holder is None or holder[3] < entry.timestamp:
            return f"entry ({entry.timestamp}, {entry.offset}) is not a timestamp of the log up to its offset"
        previous = entry
    return None
