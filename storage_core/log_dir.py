"""Per-log-dir bookkeeping around a maintenance run, in LogManager's order.

A Kafka log dir holds, besides the partition directories, the recovery-point and log-start-offset
checkpoints and the `.kafka_cleanshutdown` marker. A run over a log dir follows the broker's
discipline (LogManager.loadLogs / shutdown, kafka-maintenance.md §2.1, §2.9):

1. take `.lock` (the caller does, see :mod:`storage_core.lock`);
2. :func:`open_log_dir`: read the marker and both checkpoints, then delete the marker before any
   partition is touched, so that a crash during the run makes the next load unclean (KAFKA-10471);
3. load / maintain each partition;
4. :func:`close_log_dir`: fsync the directory, write the recovery-point checkpoint (each log's end
   offset: everything is flushed), then the log-start-offset checkpoint (only logs whose start is
   above their first segment, as LogManager writes it), both atomically; finally re-create the
   marker, but only if every partition of the dir succeeded, with the broker epoch the old marker
   recorded (-1 only where there was none).

As in LogManager, the checkpoints list the partitions of the dir (entries of partitions no longer
on disk are dropped); a failed partition keeps its previous entries. Unchanged checkpoint content is
not rewritten, so a second run over a maintained dir changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from storage_core import names
from storage_core.checkpoint import format_offset_checkpoint, read_offset_checkpoint, write_offset_checkpoint
from storage_core.clean_shutdown import (
    UNKNOWN_BROKER_EPOCH,
    delete_clean_shutdown,
    read_clean_shutdown,
    write_clean_shutdown,
)
from storage_core.errors import CorruptCheckpointError, InvalidNameError
from storage_core.fs import FileSystem, default_fs
from storage_core.load_actions import ActionKind, FileChange, LoadAction, written
from storage_core.names import DirKind, TopicPartition


@dataclass(frozen=True, slots=True)
class LogDirState:
    """What a log dir said about itself when the run began.

    Attributes:
        path: the log dir.
        had_clean_shutdown: `.kafka_cleanshutdown` was present.
        recovery_points: the recovery-point checkpoint ({} if missing or unreadable, as Kafka).
        log_start_offsets: the log-start-offset checkpoint ({} if missing or unreadable).
        high_watermarks: the replication-offset checkpoint ({} if missing or unreadable).
        cleaner_offsets: the cleaner-offset checkpoint ({} if missing or unreadable).
        warnings: checkpoint files that could not be read.
        actions: what opening changed (the marker's deletion).
        broker_epoch: the broker epoch the marker recorded (KIP-966), kept when the marker is
            re-created; None if there was no marker or it carried no epoch.
    """

    path: Path
    had_clean_shutdown: bool
    recovery_points: dict[TopicPartition, int]
    log_start_offsets: dict[TopicPartition, int]
    high_watermarks: dict[TopicPartition, int] = field(default_factory=dict)
    cleaner_offsets: dict[TopicPartition, int] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    actions: tuple[LoadAction, ...] = ()
    broker_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class PartitionOutcome:
    """What a partition's maintenance left behind, for the log dir's checkpoints.

    Attributes:
        topic_partition: the partition.
        succeeded: False if the partition failed (its checkpoint entries are kept as they were).
        log_start_offset: the log start offset.
        log_end_offset: the log end offset (the recovery point, since everything was flushed).
        first_segment_base_offset: base offset of the first segment.
        offsets_unchanged: the maintenance did not move the log's start or end (compaction):
            its checkpoint entries are kept as they are.
    """

    topic_partition: TopicPartition
    succeeded: bool
    log_start_offset: int = 0
    log_end_offset: int = 0
    first_segment_base_offset: int = 0
    offsets_unchanged: bool = False


@dataclass(frozen=True, slots=True)
class LogDirClose:
    """What closing a log dir wrote.

    Attributes:
        written: names of the files written (checkpoints, marker).
        clean_shutdown_written: the marker was written.
        actions: one per file written.
    """

    written: tuple[str, ...] = field(default=())
    clean_shutdown_written: bool = False
    actions: tuple[LoadAction, ...] = ()


def open_log_dir(log_dir: Path, *, fs: FileSystem | None = None) -> LogDirState:
    """Read the marker and checkpoints of a log dir, then delete the marker (a dry run passes an overlay fs)."""
    fs = fs or default_fs()
    log_dir = Path(log_dir)
    warnings: list[str] = []
    recovery_points = _read_or_empty(log_dir / names.RECOVERY_POINT_CHECKPOINT, warnings, fs)
    log_start_offsets = _read_or_empty(log_dir / names.LOG_START_OFFSET_CHECKPOINT, warnings, fs)
    high_watermarks = _read_or_empty(log_dir / names.REPLICATION_OFFSET_CHECKPOINT, warnings, fs)
    cleaner_offsets = _read_or_empty(log_dir / names.CLEANER_OFFSET_CHECKPOINT, warnings, fs)
    marker = read_clean_shutdown(log_dir, fs=fs)
    had_clean_shutdown = marker is not None
    actions = []
    if had_clean_shutdown:
        size = fs.size(log_dir / names.CLEAN_SHUTDOWN_FILE)
        delete_clean_shutdown(log_dir, fs=fs)
        fs.fsync_dir(log_dir)
        actions.append(
            LoadAction(
                ActionKind.DELETE_CLEAN_SHUTDOWN,
                names.CLEAN_SHUTDOWN_FILE,
                -1,
                size,
                "removed before any partition is touched: a crash makes the next load unclean",
                FileChange.DELETE,
            )
        )
    return LogDirState(
        log_dir,
        had_clean_shutdown,
        recovery_points,
        log_start_offsets,
        high_watermarks,
        cleaner_offsets,
        tuple(warnings),
        tuple(actions),
        None if marker is None else marker.broker_epoch,
    )


def close_log_dir(
    state: LogDirState,
    outcomes: Iterable[PartitionOutcome],
    *,
    other_failures: int = 0,
    fs: FileSystem | None = None,
) -> LogDirClose:
    """Write the checkpoints and, if every partition succeeded, the clean-shutdown marker.

    Args:
        state: what :func:`open_log_dir` read.
        outcomes: one per partition that was maintained.
        other_failures: directories of the log dir that could not even be loaded (e.g. a name
            that is not a partition dir): Kafka would not start on them, so no marker.
        fs: the file system.
    """
    fs = fs or default_fs()
    outcomes = list(outcomes)
    present = {o.topic_partition for o in outcomes}
    # Like LogManager, checkpoint the logs of this dir only; a failed one keeps its old entries.
    recovery_points = {tp: o for tp, o in state.recovery_points.items() if tp in present}
    log_start_offsets = {tp: o for tp, o in state.log_start_offsets.items() if tp in present}
    for outcome in outcomes:
        if not outcome.succeeded or outcome.offsets_unchanged:
            continue
        recovery_points[outcome.topic_partition] = outcome.log_end_offset
        if outcome.log_start_offset > outcome.first_segment_base_offset:
            log_start_offsets[outcome.topic_partition] = outcome.log_start_offset
        else:
            log_start_offsets.pop(outcome.topic_partition, None)
    fs.fsync_dir(state.path)
    actions = []
    for name, entries in (
        (names.RECOVERY_POINT_CHECKPOINT, recovery_points),
        (names.LOG_START_OFFSET_CHECKPOINT, log_start_offsets),
    ):
        action = _write_checkpoint(state.path / name, entries, fs)
        if action is not None:
            actions.append(action)
    clean = other_failures == 0 and all(o.succeeded for o in outcomes)
    if clean:
        path = state.path / names.CLEAN_SHUTDOWN_FILE
        existed = fs.exists(path)
        # The epoch the broker wrote stays (Kafka 3.7+ reads it at startup, KIP-966); -1 where none was.
        epoch = UNKNOWN_BROKER_EPOCH if state.broker_epoch is None else state.broker_epoch
        write_clean_shutdown(state.path, broker_epoch=epoch, fs=fs)
        actions.append(
            written(
                ActionKind.WRITE_CLEAN_SHUTDOWN,
                path.name,
                fs.read_bytes(path),
                existed=existed,
                reason="every partition of the log dir is done",
            )
        )
    return LogDirClose(tuple(a.file for a in actions), clean, tuple(actions))


def _write_checkpoint(path: Path, entries: dict[TopicPartition, int], fs: FileSystem) -> LoadAction | None:
    """Rewrite an offset checkpoint atomically unless it already holds `entries`; its action, or None."""
    content = format_offset_checkpoint(entries)
    existed = fs.exists(path)
    if existed and fs.read_bytes(path) == content:
        return None
    write_offset_checkpoint(path, entries, fs=fs)
    return written(
        ActionKind.WRITE_CHECKPOINT, path.name, content, existed=existed, reason=f"{len(entries)} partitions"
    )


def write_cleaner_offsets(
    state: LogDirState,
    updates: dict[TopicPartition, int],
    present: set[TopicPartition],
    *,
    fs: FileSystem | None = None,
) -> LoadAction | None:
    """Rewrite cleaner-offset-checkpoint atomically (as `LogCleanerManager.updateCheckpoints`: entries of
    partitions no longer in the dir are dropped). Returns its action, None when the content did not change."""
    fs = fs or default_fs()
    entries = {tp: offset for tp, offset in state.cleaner_offsets.items() if tp in present}
    entries.update(updates)
    return _write_checkpoint(state.path / names.CLEANER_OFFSET_CHECKPOINT, entries, fs)


def _read_or_empty(path: Path, warnings: list[str], fs: FileSystem) -> dict[TopicPartition, int]:
    try:
        return read_offset_checkpoint(path, fs=fs)
    except CorruptCheckpointError as exc:
        warnings.append(f"{path.name} unreadable, treated as empty (as Kafka does): {exc}")
        return {}


def checkpoint_owners(dir_names: Iterable[str]) -> dict[str, TopicPartition]:
    """The partition dirs of one log dir that own their topic-partition's checkpoint entries, by name.

    A log dir's checkpoints are keyed by topic-partition only, so at most one dir may read and write
    each entry: the live `<topic>-<partition>` dir; else a `-future` dir (a replica being moved in
    from another log dir: Kafka checkpoints a future log in its own dir). A `-stray` or `-delete` dir
    never owns one: Kafka loads it with the live partition's entries, so a stray's older segments
    could be cut at the live log's start offset; here it reads none (recovery point 0, log start 0:
    all of it is recovered and kept) and writes none, so the live partition's entries stay its own.

    Args:
        dir_names: the names of the log dir's partition dirs (names that do not parse are left out).
    """
    parsed = []
    for name in dir_names:
        try:
            parsed.append((name, names.parse_partition_dir_name(name)))
        except InvalidNameError:
            continue
    live = {p.topic_partition for _, p in parsed if p.kind is DirKind.LIVE}
    return {
        name: p.topic_partition
        for name, p in parsed
        if p.kind is DirKind.LIVE or (p.kind is DirKind.FUTURE and p.topic_partition not in live)
    }


STALE_TEMP_FILES = tuple(
    name + names.TMP_SUFFIX
    for name in (
        names.RECOVERY_POINT_CHECKPOINT,
        names.LOG_START_OFFSET_CHECKPOINT,
        names.REPLICATION_OFFSET_CHECKPOINT,
        names.CLEANER_OFFSET_CHECKPOINT,
        names.CLEAN_SHUTDOWN_FILE,
    )
)
"""Temporary files an atomic write of a log dir's checkpoint or marker leaves when interrupted before its rename."""
PARTITION_STALE_TEMP_FILES = tuple(
    name + names.TMP_SUFFIX for name in (names.LEADER_EPOCH_CHECKPOINT, names.PARTITION_METADATA)
)
"""The same, of a partition dir's own checkpoint and metadata file."""


def partition_stale_temp_files(file_names: Iterable[str]) -> tuple[str, ...]:
    """The temp files among a partition dir's `file_names` that an interrupted atomic write left: those of
    :data:`PARTITION_STALE_TEMP_FILES` and `<offset>.<index or snapshot suffix>.tmp`, sorted."""
    return tuple(sorted(n for n in file_names if n in PARTITION_STALE_TEMP_FILES or names.is_segment_temp_file_name(n)))


def remove_stale_temp_files(
    log_dir: Path,
    *,
    temp_names: tuple[str, ...] = STALE_TEMP_FILES,
    fs: FileSystem | None = None,
) -> list[LoadAction]:
    """Delete the temp files an interrupted write left in a directory (:data:`STALE_TEMP_FILES` of a
    log dir, after :func:`open_log_dir`, or :func:`partition_stale_temp_files` of a partition dir, before
    its load); one action per file. Nothing reads them (the write they belonged to never happened:
    the file they were to replace is whole), so deleting them loses nothing. A dry run passes an
    overlay fs.

    Crash story: each is unlinked, then the directory fsynced once; a crash leaves some of them, which
    the next recover removes.
    """
    fs = fs or default_fs()
    log_dir = Path(log_dir)
    actions = []
    for name in temp_names:
        path = log_dir / name
        if not fs.exists(path) or fs.is_dir(path):
            continue
        size = fs.size(path)
        fs.delete(path)
        reason = f"left by an interrupted write of {name.removesuffix(names.TMP_SUFFIX)} (never read)"
        actions.append(LoadAction(ActionKind.DELETE_STALE_TEMP, name, -1, size, reason, FileChange.DELETE))
    if actions:
        fs.fsync_dir(log_dir)
    return actions
