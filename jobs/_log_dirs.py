"""Log dirs on the driver: their `.lock`s, the partition dirs in them, and their checkpoints at the end.

A job first checks every log dir as a broker would before loading it (a name that is not a partition
dir, two dirs of one partition, no `meta.properties`, a symlink leading out: refused, exit 2,
:mod:`storage_core.log_dir_check`), then takes every log dir's `.lock` (as a broker does at startup,
`LogManager.lockLogDirs`), so a running broker and a job never share a directory: if one lock is
held, the job is refused before anything is read or written. Discovery then lists each log dir the
way `LogManager.loadLogs` does: directories only, skipping the KRaft metadata log
(`__cluster_metadata-0`) and the remote index cache.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from jobs._results import LogDirRow, PartitionRow, action_rows, failed_log_dir_row, skipped_row
from storage_core import names
from storage_core.errors import InvalidNameError, LogDirLockedError
from storage_core.fs import FileSystem, default_fs
from storage_core.load_actions import ActionKind, FileChange, LoadAction, written
from storage_core.lock import LogDirLock, acquire_log_dir_lock, is_log_dir_locked
from storage_core.log_dir import LogDirState, PartitionOutcome, checkpoint_owners, close_log_dir
from storage_core.log_dir_check import check_log_dirs
from storage_core.names import TopicPartition


@dataclass(slots=True)
class _RunHold:
    """A log dir held for a whole run (`maintain`): its lock (None in a dry run where the dir has no
    `.lock`), and what taking it did to `.lock`, reported by the run's first step only."""

    lock: LogDirLock | None
    existed: bool
    not_created: bool
    reported: bool = False


_RUN_HOLDS: dict[Path, _RunHold] = {}
"""Log dirs held for a whole run by :func:`holding_log_dirs`, by resolved log dir."""


class HeldLocks(list[LogDirLock]):
    """The locks of :func:`locked_log_dirs`; after the block, what taking them did to each `.lock` file."""

    def __init__(self) -> None:
        super().__init__()
        self.existed: dict[Path, bool] = {}
        self.not_created: set[Path] = set()  # a dry run's dirs without `.lock`: the real run creates one

    def lock_file_actions(self, log_dir: Path, *, fs: FileSystem | None = None) -> list[LoadAction]:
        """The `.lock` file's net change (created, or deleted when the lock protocol removes it)."""
        fs = fs or default_fs()
        path = Path(log_dir) / names.LOCK_FILE
        before, after = self.existed.get(Path(log_dir)), fs.exists(path)
        # The `.lock` we create is empty, and is never opened here: closing any descriptor of a file
        # drops this process's lockf locks on it (POSIX), and `maintain` still holds it.
        created = written(ActionKind.CREATE_LOCK_FILE, path.name, b"", existed=False, reason="to take the lock")
        if Path(log_dir) in self.not_created:
            return [created]
        if Path(log_dir) not in self.existed:
            return []  # held for the whole run: reported by the run's first step
        if before == after:
            return []
        if after:
            return [created]
        return [
            LoadAction(ActionKind.CREATE_LOCK_FILE, path.name, change=FileChange.DELETE, reason="released the lock")
        ]


@contextmanager
def locked_log_dirs(
    log_dirs: Sequence[Path],
    *,
    allow_missing_meta_properties: bool = False,
    dry_run: bool = False,
    read_only: bool = False,
    allow_duplicates: Collection[TopicPartition] = (),
    fs: FileSystem | None = None,
) -> Iterator[HeldLocks]:
    """Check every log dir, then hold every log dir's `.lock` for the block (`allow_duplicates`:
    see :func:`storage_core.log_dir_check.check_log_dirs`).

    A run that changes nothing in a log dir takes no lock and refuses none, so it runs beside a live
    broker (issue 17): a `read_only` job (stats, `rebuild-indexes --verify-only`) and the plan of a
    `dry_run`, which reports the `.lock` its real run would create (never removed again, by the lock
    protocol) and creates none. Both still get the log-dir checks.

    First :func:`storage_core.log_dir_check.check_log_dirs` (a dir a broker would refuse, or that
    leads outside itself), then a probe of every lock, so that a refusal changes nothing, not even a
    `.lock` file; then the locks are taken. Dirs already held for the whole run
    (:func:`holding_log_dirs`) are not taken again, nor released after the block.

    Raises:
        InvalidLogDirError: a log dir must not be maintained as it is; nothing was touched.
        LogDirLockedError: a live process holds one of the locks; the ones taken are released and
            nothing else was touched.
    """
    check_log_dirs(
        log_dirs, allow_missing_meta_properties=allow_missing_meta_properties, allow_duplicates=allow_duplicates, fs=fs
    )
    held = [_RUN_HOLDS.get(Path(log_dir).resolve()) for log_dir in log_dirs]
    if read_only or dry_run:
        locks = HeldLocks()
        for log_dir, run in zip(log_dirs, held, strict=True):
            if read_only:
                continue  # its real run creates no `.lock` either
            if run is not None:  # a dry `maintain`: its first step reports the `.lock` the run would create
                if not run.reported and run.not_created:
                    locks.not_created.add(Path(log_dir))
                run.reported = True
            elif not (fs or default_fs()).exists(Path(log_dir) / names.LOCK_FILE):
                locks.not_created.add(Path(log_dir))
        yield locks
        return
    for log_dir, run in zip(log_dirs, held, strict=True):
        if run is None and is_log_dir_locked(log_dir, fs=fs):
            raise LogDirLockedError(log_dir)
    locks = HeldLocks()
    probe = fs or default_fs()
    with ExitStack() as releases:  # every lock taken is released, even if releasing another one fails
        for log_dir, run in zip(log_dirs, held, strict=True):
            if run is not None:  # held for the whole run (`maintain`): taken once, reported by one step
                if run.lock is not None:
                    locks.append(run.lock)
                if not run.reported:
                    locks.existed[Path(log_dir)] = run.existed
                    if run.not_created:
                        locks.not_created.add(Path(log_dir))
                    run.reported = True
                continue
            locks.existed[Path(log_dir)] = probe.exists(Path(log_dir) / names.LOCK_FILE)
            locks.append(acquire_log_dir_lock(log_dir, fs=fs))
            releases.callback(locks[-1].release)
        yield locks


@contextmanager
def holding_log_dirs(
    log_dirs: Sequence[Path],
    *,
    allow_missing_meta_properties: bool = False,
    dry_run: bool = False,
    fs: FileSystem | None = None,
) -> Iterator[HeldLocks]:
    """:func:`locked_log_dirs` for a run of several jobs (`maintain`): the jobs' own
    `locked_log_dirs` inside the block reuse these locks, so no other process can take a log dir
    between two steps."""
    with locked_log_dirs(
        log_dirs, allow_missing_meta_properties=allow_missing_meta_properties, dry_run=dry_run, fs=fs
    ) as locks:
        by_dir = {Path(lock.log_dir).resolve(): lock for lock in locks}
        for log_dir in map(Path, log_dirs):
            resolved = log_dir.resolve()
            existed = locks.existed.get(log_dir, True)
            _RUN_HOLDS[resolved] = _RunHold(by_dir.get(resolved), existed, log_dir in locks.not_created)
        try:
            yield locks
        finally:
            for log_dir in log_dirs:
                _RUN_HOLDS.pop(Path(log_dir).resolve(), None)


@dataclass(frozen=True, slots=True)
class PartitionTask:
    """A partition directory found in a log dir: the plain, picklable unit of work of a job.

    `kind` is live, delete, future or stray (`-delete`/`-future`/`-stray` replicas); `size_bytes`
    is the total size of its files (the largest partitions are scheduled first).
    """

    log_dir: str
    dir_name: str
    topic: str
    partition: int
    kind: str
    size_bytes: int


# The name the jobs written before the brief's rename use.
PartitionDir = PartitionTask


def _name_error_row(log_dir: Path, name: str, exc: Exception) -> PartitionRow:
    return PartitionRow(
        str(log_dir), name, "", -1, "failed", 0, 0, error_type=type(exc).__name__, error_message=str(exc)
    )


def _dir_size(path: Path, fs: FileSystem) -> int:
    total = 0
    for name in fs.list_dir(path):
        try:
            total += 0 if fs.is_dir(path / name) else fs.size(path / name)
        except FileNotFoundError:  # a live broker deleted it since the listing
            continue
    return total


def discover_partitions(
    log_dirs: Sequence[Path], *, fs: FileSystem | None = None
) -> tuple[list[PartitionTask], list[PartitionRow]]:
    """Every partition dir of the log dirs, largest first, and failed rows for what cannot be one.

    Args:
        log_dirs: the log dirs (already locked).
        fs: the file system.

    Returns:
        The partition dirs (all kinds, largest first), and one failed row per directory whose
        name is not a partition dir name (`InvalidNameError`) or that cannot be listed (`OSError`).
    """
    fs = fs or default_fs()
    found: list[PartitionTask] = []
    problems: list[PartitionRow] = []
    for log_dir in map(Path, log_dirs):
        try:
            entries = fs.list_dir(log_dir)
        except OSError as exc:
            problems.append(_name_error_row(log_dir, "", exc))
            continue
        for name in entries:
            path = log_dir / name
            if not names.is_partition_dir_candidate(name) or not fs.is_dir(path):
                continue
            try:
                parsed = names.parse_partition_dir_name(name)
                size = _dir_size(path, fs)
            except (InvalidNameError, OSError) as exc:
                problems.append(_name_error_row(log_dir, name, exc))
                continue
            tp = parsed.topic_partition
            found.append(PartitionTask(str(log_dir), name, tp.topic, tp.partition, parsed.kind.name.lower(), size))
    found.sort(key=lambda p: -p.size_bytes)
    return found, problems


def discover_log_dirs(
    log_dirs: Sequence[Path], *, fs: FileSystem | None = None
) -> tuple[list[PartitionTask], list[PartitionRow]]:
    """The partition dirs jobs maintain (live, future and stray; largest first), plus rows for the rest:
    names that are not partition dirs (failed, as a broker refuses them) and replicas pending deletion
    (`-delete`, skipped)."""
    found, rows = discover_partitions(log_dirs, fs=fs)
    for part in (p for p in found if p.kind == "delete"):
        rows.append(skipped_row(part, "replica pending deletion (-delete): not maintained"))
    return [p for p in found if p.kind != "delete"], rows


_NO_LIMIT = 2**63 - 1


def high_watermark(state: LogDirState, tp: TopicPartition | None, source: str) -> int | None:
    """A partition's high watermark for retention and compact, by `--high-watermark-source`.

    `checkpoint`: the replication-offset-checkpoint's entry, as a starting broker reads it (None if
    it has none: storage_core then takes the log start offset, `clamp_high_watermark`); `log-end`:
    no limit, so the log end offset (for a log dir whose checkpoint is lost or not kept).
    """
    return _NO_LIMIT if source == "log-end" else state.high_watermarks.get(tp)


def checkpoint_keys(parts: Sequence[PartitionTask]) -> dict[tuple[str, str], TopicPartition]:
    """(log dir, dir name) -> the checkpoint entry key of each partition dir that owns one
    (:func:`storage_core.log_dir.checkpoint_owners`: the live dir, else a `-future` one; never a
    `-stray` or `-delete` dir). Look a part up with `.get((part.log_dir, part.dir_name))`: None for
    a dir that reads no entry (so recovery point 0 and log start 0) and writes none."""
    by_dir: dict[str, list[str]] = {}
    for part in parts:
        by_dir.setdefault(part.log_dir, []).append(part.dir_name)
    keys = {}
    for log_dir, dir_names in by_dir.items():
        keys.update({(log_dir, name): tp for name, tp in checkpoint_owners(dir_names).items()})
    return keys


def close_log_dirs(
    states: Mapping[Path, LogDirState],
    rows: Sequence[PartitionRow],
    *,
    require_clean: bool,
    offsets_unchanged: bool,
    fs: FileSystem | None = None,
) -> ClosedLogDirs:
    """Checkpoint every maintained log dir, and mark it clean if nothing in it failed.

    A log dir whose checkpoints or marker cannot be written (a full disk, an I/O error) gets a
    failed row naming the file, and the others are still closed: each write is atomic, so that dir
    keeps its old checkpoints and stays without a marker (the next load recovers it).

    Only the rows of dirs that own their checkpoint entries (:func:`checkpoint_keys`) write them: a
    `-stray` or `-future` dir beside a live one never overwrites the live partition's entries. Any
    failed row, owner or not, keeps the dir from being marked clean.

    Args:
        states: what `open_log_dir` read, per log dir.
        rows: every row of the run (partitions, skipped ones, and names that are not partitions).
        require_clean: only dirs that had a clean shutdown were maintained (retention, compact).
        offsets_unchanged: the job moved no log start or end offset (compact): keep those entries.
        fs: the file system (an overlay in a dry run).

    Returns:
        The files written per log dir, and one failed row per log dir that could not be closed.
    """
    closed = ClosedLogDirs({}, [])
    for log_dir, state in states.items():
        if require_clean and not state.had_clean_shutdown:
            continue
        mine = [r for r in rows if r.log_dir == str(log_dir)]
        # A dir renamed aside during the run (`rename_stray`) is no longer the live one: no entries.
        renamed = {r.dir_name for r in mine if any(a.kind == "rename_stray" for a in r.actions)}
        owners = checkpoint_owners(r.dir_name for r in mine if r.partition >= 0 and r.dir_name not in renamed)
        outcomes = [
            PartitionOutcome(
                owners[r.dir_name],
                r.status != "failed",
                r.log_start_offset,
                r.log_end_offset,
                r.first_segment_base_offset,
                offsets_unchanged=offsets_unchanged and r.status != "truncated",  # its load cut the log
            )
            for r in mine
            if r.dir_name in owners and r.partition >= 0 and (offsets_unchanged or r.status != "skipped")
        ]
        others = sum(1 for r in mine if r.status == "failed" and (r.partition < 0 or r.dir_name not in owners))
        try:
            closed.written[log_dir] = list(close_log_dir(state, outcomes, other_failures=others, fs=fs).actions)
        except OSError as exc:
            closed.failures.append(failed_log_dir_row(log_dir, exc))
    return closed


@dataclass(frozen=True, slots=True)
class ClosedLogDirs:
    """What :func:`close_log_dirs` did: the files written per log dir (their action rows go to the
    dir's :class:`jobs._results.LogDirRow`), and a failed row per dir whose files could not be written."""

    written: dict[Path, list[LoadAction]]
    failures: list[PartitionRow]


def log_dir_rows(
    log_dirs: Sequence[Path],
    locks: HeldLocks,
    *,
    opened: Mapping[Path, LogDirState] | None = None,
    closed: Mapping[Path, list[LoadAction]] | None = None,
    more: Mapping[Path, list[LoadAction]] | None = None,
) -> tuple[LogDirRow, ...]:
    """Each log dir's own actions, in order: its `.lock`, the marker's removal, then what closing
    (and `more`, e.g. the cleaner checkpoint) wrote. Call after the locks are released."""
    rows = []
    for log_dir in map(Path, log_dirs):
        actions = locks.lock_file_actions(log_dir)
        if opened is not None and log_dir in opened:
            actions += opened[log_dir].actions
        actions += (more or {}).get(log_dir, [])
        actions += (closed or {}).get(log_dir, [])
        rows.append(LogDirRow(str(log_dir), action_rows(actions)))
    return tuple(rows)
