"""Move a partition to another log dir of the same (stopped) broker, through Kafka's own `-future` protocol.

A broker moves a replica between its disks (`kafka-reassign-partitions --reassignment-json-file` with
`log_dirs`, KIP-113) by copying it into `<topic>-<partition>.<uuid>-future` in the destination, then
renaming the future dir to the partition's name and the source to `<topic>-<partition>.<uuid>-delete`
(`LogManager.replaceCurrentWithFutureLog`). Offline, with the broker stopped, :func:`apply_move` does
the same, byte for byte, in numbered steps; each says what a crash there leaves and what the next
run (the same command again, :func:`plan_move` finds where it stopped) does:

1. copy every file of the source dir into the destination's `-future` dir (created, and its log dir
   fsynced, first), chunk by chunk (throttled), each file fsynced, then the future dir: a file
   already there with the source's bytes is kept, one holding a prefix of them is continued, any
   other is rewritten, one the source does not have is deleted. Crash: a partial `-future` dir. The
   next run resumes it; a broker started instead loads the future log and, as after any interrupted
   move, either finishes the copy itself (ReplicaAlterLogDirsThread) or, if the metadata assigns the
   partition to the destination, promotes it (`recoverAbandonedFutureLogs`); the source is intact;
2. verify: the same names, and every file's sha256 equal to the source's. A mismatch stops the move
   with nothing else changed;
3. add the partition's entries of the source's checkpoints (recovery point, log start offset, high
   watermark, cleaner offset) to the destination's, each atomically. Crash: extra entries for a log
   the destination only holds as a future log (the future log reads them, which is right: same data);
4. rename the future dir to `<topic>-<partition>` (atomic, the log dir fsynced). Crash: the partition
   is live in both dirs, identical; a broker refuses to start ("Duplicate log directories"), nothing
   is lost; the next run verifies they are equal and goes on at 5;
5. rename the source to `<topic>-<partition>.<uuid>-delete`. Crash: the broker serves the
   destination and deletes the `-delete` dir after `file.delete.delay.ms`; the next run goes on at 6;
6. remove the partition's entries from the source's checkpoints (as LogManager checkpoints only the
   logs of a dir);
7. delete the `-delete` dir's files, then the dir, its log dir fsynced. Crash: part of a `-delete`
   dir, which the next run (or the broker) removes.

Nothing of the partition is ever held only in a dir Kafka would delete or ignore: until step 4 the
source is the live log, from step 4 on the destination is, and only after it (step 5) is the source
renamed for deletion. The clean-shutdown markers are the caller's (:mod:`jobs.move`).
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.checkpoint import format_offset_checkpoint, read_offset_checkpoint
from storage_core.errors import StorageError
from storage_core.fs import FileSystem, default_fs
from storage_core.load_actions import ActionKind, FileChange, LoadAction, actions_on_failure, written
from storage_core.names import DirKind, TopicPartition

CHUNK_BYTES = 1 << 20
CHECKPOINTS = (
    names.RECOVERY_POINT_CHECKPOINT,
    names.LOG_START_OFFSET_CHECKPOINT,
    names.REPLICATION_OFFSET_CHECKPOINT,
    names.CLEANER_OFFSET_CHECKPOINT,
)


class MoveError(StorageError):
    """A move that cannot be done safely as the dirs are (nothing was changed by it)."""


class MoveStep(enum.IntEnum):
    """Where a move starts (or resumes): the step numbers of the module docstring."""

    COPY = 1
    RETIRE_SOURCE = 5
    CLEAN_SOURCE = 6
    DONE = 8


@dataclass(frozen=True, slots=True)
class MovePlan:
    """A move of one partition and the step it starts at.

    Attributes:
        topic_partition: the partition.
        source: the log dir it is live in (or was, once switched).
        destination: the log dir it goes to.
        future_name: the destination's `-future` dir (an existing one is resumed).
        delete_name: the name the source gets in step 5 (or the `-delete` dirs left to remove).
        step: where the move starts.
        leftovers: `-delete` dirs of the partition in the source to remove (a resumed step 7).
        size_bytes: the bytes to copy.
    """

    topic_partition: TopicPartition
    source: Path
    destination: Path
    future_name: str
    delete_name: str
    step: MoveStep
    leftovers: tuple[str, ...]
    size_bytes: int


def _suffixed(log_dir: Path, tp: TopicPartition, kind: DirKind, fs: FileSystem) -> list[str]:
    """The `<tp>.<id>-future` / `-delete` dirs of `tp` in `log_dir`."""
    out = []
    for name in fs.list_dir(log_dir):
        if name.endswith(kind.value) and name.startswith(f"{tp}."):
            parsed = names.parse_partition_dir_name(name)
            if parsed.kind is kind and parsed.topic_partition == tp:
                out.append(name)
    return out


def _files(dir_path: Path, fs: FileSystem) -> list[str]:
    """The files of a partition dir (a subdirectory in it is refused: Kafka writes none)."""
    found = fs.list_dir(dir_path)
    for name in found:
        if fs.is_dir(dir_path / name):
            raise MoveError(f"{dir_path / name} is a directory inside a partition dir: not a Kafka layout")
    return found


def _digest(path: Path, fs: FileSystem) -> str:
    digest = hashlib.sha256()
    with fs.open(path) as handle:
        position, size = 0, handle.size()
        while position < size:
            chunk = handle.read_at(position, min(CHUNK_BYTES, size - position))
            digest.update(chunk)
            position += len(chunk)
    return digest.hexdigest()


def same_files(a: Path, b: Path, *, fs: FileSystem | None = None) -> bool:
    """Two partition dirs hold the same file names with the same bytes."""
    fs = fs or default_fs()
    names_a, names_b = _files(a, fs), _files(b, fs)
    return names_a == names_b and all(
        fs.size(a / n) == fs.size(b / n) and _digest(a / n, fs) == _digest(b / n, fs) for n in names_a
    )


def plan_move(
    tp: TopicPartition, source: Path, destination: Path, *, unique_id: str, fs: FileSystem | None = None
) -> MovePlan:
    """Where the move of `tp` from `source` to `destination` starts, from what the dirs hold.

    Args:
        tp: the partition.
        source, destination: two log dirs of one broker (the caller checked that and holds their locks).
        unique_id: 32 hex digits for the names of a new `-future` or `-delete` dir (a random UUID's, as Kafka).
        fs: the file system.

    Raises:
        MoveError: the dirs are not in any state a move (or an interrupted one) leaves.
    """
    fs = fs or default_fs()
    live = str(tp)
    in_source, in_destination = fs.is_dir(source / live), fs.is_dir(destination / live)
    futures = _suffixed(destination, tp, DirKind.FUTURE, fs)
    deletes = _suffixed(source, tp, DirKind.DELETE, fs)
    if len(futures) > 1:
        raise MoveError(f"{len(futures)} -future dirs of {tp} in {destination}: {', '.join(futures)}")
    future = futures[0] if futures else f"{live}.{unique_id}{DirKind.FUTURE.value}"
    delete = f"{live}.{unique_id}{DirKind.DELETE.value}"
    if in_source and not in_destination:
        size = sum(fs.size(source / live / n) for n in _files(source / live, fs))
        return MovePlan(tp, source, destination, future, delete, MoveStep.COPY, (), size)
    if futures:
        raise MoveError(f"{tp} is live in {destination} and has a -future dir there too ({futures[0]})")
    if in_source and in_destination:
        if not same_files(source / live, destination / live, fs=fs):
            raise MoveError(
                f"{tp} is live in both {source} and {destination} and they differ: "
                "this is not what a move leaves; look at both before anything deletes one"
            )
        return MovePlan(tp, source, destination, future, delete, MoveStep.RETIRE_SOURCE, (), 0)
    if in_destination:
        step = MoveStep.CLEAN_SOURCE if deletes or _has_entries(source, tp, fs) else MoveStep.DONE
        return MovePlan(tp, source, destination, future, delete, step, tuple(deletes), 0)
    raise MoveError(f"{tp} is live in neither {source} nor {destination}")


def _has_entries(log_dir: Path, tp: TopicPartition, fs: FileSystem) -> bool:
    return any(tp in _entries(log_dir / name, fs) for name in CHECKPOINTS)


def _entries(path: Path, fs: FileSystem) -> dict[TopicPartition, int]:
    return read_offset_checkpoint(path, fs=fs) if fs.exists(path) else {}


def _copy_file(
    source: Path,
    target: Path,
    *,
    throttle: Callable[[int], None] | None,
    progress: Callable[[int], None] | None,
    fs: FileSystem,
) -> LoadAction | None:
    """Make `target` hold `source`'s bytes (kept, continued or rewritten), fsynced; its action, or None if kept."""
    size = fs.size(source)
    existed = fs.exists(target)
    start = 0
    if existed:
        have = fs.size(target)
        if have <= size and _digest_prefix(target, have, fs) == _digest_prefix(source, have, fs):
            start = have
        if start == size:
            return None
    with fs.open(source) as reader, fs.open(target, writable=True, create=True) as writer:
        if start == 0 and existed:
            writer.truncate(0)
        position = start
        while position < size:
            chunk = reader.read_at(position, min(CHUNK_BYTES, size - position))
            if throttle is not None:
                throttle(len(chunk))
            writer.write_at(position, chunk)
            position += len(chunk)
            if progress is not None:
                progress(len(chunk))
        writer.fsync()
    how = "continued from byte " + str(start) if start else ("rewritten" if existed else "copied")
    return LoadAction(
        ActionKind.MOVE_COPY,
        target.name,
        _offset_or(target.name),
        size - start,
        f"{how} from {source}",
        FileChange.REWRITE if existed else FileChange.CREATE,
        target=str(target.parent.name),
    )


def _digest_prefix(path: Path, length: int, fs: FileSystem) -> str:
    digest = hashlib.sha256()
    with fs.open(path) as handle:
        position = 0
        while position < length:
            chunk = handle.read_at(position, min(CHUNK_BYTES, length - position))
            digest.update(chunk)
            position += len(chunk)
    return digest.hexdigest()


def _offset_or(name: str) -> int:
    return names.offset_from_file_name(name) if name[:1].isdigit() else -1


def _rewrite_checkpoint(path: Path, entries: dict[TopicPartition, int], reason: str, fs: FileSystem) -> LoadAction:
    content = format_offset_checkpoint(entries)
    existed = fs.exists(path)
    fs.write_atomic(path, content)
    return written(ActionKind.WRITE_CHECKPOINT, path.name, content, existed=existed, reason=reason)


def apply_move(
    plan: MovePlan,
    *,
    throttle: Callable[[int], None] | None = None,
    progress: Callable[[int], None] | None = None,
    fs: FileSystem | None = None,
) -> tuple[LoadAction, ...]:
    """Carry a move out from its plan's step (the module docstring's steps and crash story).

    Args:
        plan: from :func:`plan_move`.
        throttle: called with each chunk's size before it is written (a token bucket's acquire).
        progress: called with each chunk's size after it is written.
        fs: the file system.

    Returns:
        One action per file or directory changed.

    Raises:
        MoveError: the copy does not verify (nothing but the `-future` dir was written).
    """
    fs = fs or default_fs()
    actions: list[LoadAction] = []
    with actions_on_failure(actions):
        _apply(plan, throttle, progress, fs, actions)
    return tuple(actions)


def _apply(
    plan: MovePlan,
    throttle: Callable[[int], None] | None,
    progress: Callable[[int], None] | None,
    fs: FileSystem,
    actions: list[LoadAction],
) -> None:
    tp, live = plan.topic_partition, str(plan.topic_partition)
    source_dir, future_dir = plan.source / live, plan.destination / plan.future_name
    if plan.step <= MoveStep.COPY:
        # Step 1: the copy.
        if not fs.is_dir(future_dir):
            fs.make_dirs(future_dir)
            fs.fsync_dir(plan.destination)
            actions.append(
                LoadAction(ActionKind.MOVE_COPY, future_dir.name, -1, 0, "the future dir", FileChange.CREATE)
            )
        wanted = _files(source_dir, fs)
        for name in _files(future_dir, fs):
            if name not in wanted:
                size = fs.size(future_dir / name)
                fs.delete(future_dir / name)
                actions.append(
                    LoadAction(
                        ActionKind.MOVE_COPY, name, _offset_or(name), size, "not in the source", FileChange.DELETE
                    )
                )
        for name in wanted:
            action = _copy_file(source_dir / name, future_dir / name, throttle=throttle, progress=progress, fs=fs)
            if action is not None:
                actions.append(action)
        fs.fsync_dir(future_dir)
        # Step 2: verify.
        if not same_files(source_dir, future_dir, fs=fs):
            raise MoveError(f"the copy {future_dir} does not verify against {source_dir}: the source stays live")
        # Step 3: the destination's checkpoints gain the partition's entries.
        for name in CHECKPOINTS:
            entries = _entries(plan.source / name, fs)
            if tp in entries:
                theirs = _entries(plan.destination / name, fs)
                if theirs.get(tp) != entries[tp]:
                    theirs[tp] = entries[tp]
                    actions.append(
                        _rewrite_checkpoint(plan.destination / name, theirs, f"{tp} moves here from {plan.source}", fs)
                    )
        # Step 4: the switch.
        fs.rename_atomic(future_dir, plan.destination / live)
        actions.append(
            LoadAction(ActionKind.MOVE_SWITCH, future_dir.name, -1, 0, "the moved log is live", FileChange.RENAME, live)
        )
    leftovers = list(plan.leftovers)
    if plan.step <= MoveStep.RETIRE_SOURCE:
        # Step 5: the source is renamed for deletion.
        fs.rename_atomic(source_dir, plan.source / plan.delete_name)
        actions.append(
            LoadAction(
                ActionKind.MOVE_RETIRE,
                live,
                -1,
                0,
                f"live in {plan.destination} now",
                FileChange.RENAME,
                plan.delete_name,
            )
        )
        leftovers.append(plan.delete_name)
    if plan.step <= MoveStep.CLEAN_SOURCE:
        # Step 6: the source's checkpoints lose the partition's entries.
        for name in CHECKPOINTS:
            entries = _entries(plan.source / name, fs)
            if tp in entries:
                del entries[tp]
                actions.append(
                    _rewrite_checkpoint(plan.source / name, entries, f"{tp} moved to {plan.destination}", fs)
                )
        # Step 7: the source's files go.
        for leftover in leftovers:
            gone = plan.source / leftover
            for name in fs.list_dir(gone):
                size = fs.size(gone / name)
                fs.delete(gone / name)
                actions.append(
                    LoadAction(
                        ActionKind.MOVE_DELETE_SOURCE, name, _offset_or(name), size, f"in {leftover}", FileChange.DELETE
                    )
                )
            fs.fsync_dir(gone)
            fs.remove_dir(gone)
            fs.fsync_dir(plan.source)
            actions.append(
                LoadAction(ActionKind.MOVE_DELETE_SOURCE, leftover, -1, 0, "the moved source", FileChange.DELETE)
            )
