"""Is this a Kafka log dir we may maintain? Checked before anything is taken, created or changed.

A broker refuses to start on a log dir it cannot account for (`LogManager.loadLogs`); a maintenance
tool must be at least as strict, or it writes segments, indexes and checkpoints into directories
that are not Kafka's. :func:`check_log_dirs` reads (never opens for writing) every log dir of a run
and raises :class:`InvalidLogDirError` naming the first offending path:

* **not a partition dir**: every subdirectory is parsed as `LocalLog.parseTopicPartitionName` does
  (:func:`storage_core.names.parse_partition_dir_name`: `<topic>-<partition>`, or with
  `.<id>-delete`, `-future`, `-stray`), except `remote-log-index-cache` and the KRaft metadata log
  (`__cluster_metadata-<n>`), which LogManager skips. Hidden names are not special: a broker fails
  on `lost+found` or `.Trash-1000` too;
* **two dirs of one partition**: two live dirs (or two `-future` dirs) of one topic-partition, in
  one log dir or across the log dirs of one broker, as LogManager's "Duplicate log directories"
  refusal; `orders-1` and `orders-١` are the same partition to Java's `Integer.parseInt`. A broker
  is told by its `meta.properties` (cluster.id and node.id/broker.id): a fleet run may hold several
  brokers' log dirs, and two brokers hold replicas of one partition by design. Log dirs without a
  broker identity count as one broker (the strict reading);
* **no `meta.properties`** (unless allowed: a broker of a ZooKeeper cluster before 2.x may not have
  one), or one that does not parse;
* **a topic Kafka cannot create** (`Topic.validate`: `[a-zA-Z0-9._-]`, at most 249 characters), in
  particular one with whitespace (Java's `\\s`, the checkpoint's field separator), whose entry would
  make the log dir's checkpoints unreadable;
* **symlinks**: a partition dir that is a symlink, a symlink inside a partition dir, or a log-dir
  file that links outside the log dir: following one would change another directory's (possibly a
  live broker's) files. A `.lock` that is a directory or a dangling symlink
  (:func:`storage_core.lock.check_lock_file`). The log dir path itself may be a symlink (a mount
  point often is); what is inside is judged from its real path.

Nothing here writes, so a refused run leaves every log dir byte for byte as it was.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.errors import CorruptCheckpointError, InvalidLogDirError, InvalidNameError
from storage_core.fs import FileSystem, default_fs
from storage_core.lock import check_lock_file
from storage_core.meta_properties import read_meta_properties
from storage_core.names import DirKind, PartitionDirName

ALLOW_MISSING_META_PROPERTIES = "--allow-missing-meta-properties"
_JAVA_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]")
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


@dataclass(frozen=True, slots=True)
class PartitionDirEntry:
    """A partition dir found by the check: its log dir, name and parsed name."""

    log_dir: Path
    name: str
    parsed: PartitionDirName
    broker: tuple[str | None, int | None] = (None, None)


def check_log_dirs(
    log_dirs: Sequence[Path],
    *,
    allow_missing_meta_properties: bool = False,
    allow_duplicates: Collection[names.TopicPartition] = (),
    fs: FileSystem | None = None,
) -> list[PartitionDirEntry]:
    """Check every log dir of a run (see the module docstring); return their partition dirs.

    Args:
        log_dirs: the run's log dirs.
        allow_missing_meta_properties: accept dirs without `meta.properties`.
        allow_duplicates: partitions that may be live in two dirs: `move` resuming a move that
            crashed between its switch and the source's retirement (it checks that both copies
            are the same bytes before it goes on).
        fs: the file system.

    Raises:
        InvalidLogDirError: the first problem found, naming the path; nothing was changed.
    """
    fs = fs or default_fs()
    entries: list[PartitionDirEntry] = []
    for log_dir in map(Path, log_dirs):
        entries += _check_log_dir(log_dir, allow_missing_meta_properties, fs)
    _refuse_duplicates([e for e in entries if e.parsed.topic_partition not in allow_duplicates])
    return entries


def _check_log_dir(log_dir: Path, allow_missing_meta_properties: bool, fs: FileSystem) -> list[PartitionDirEntry]:
    check_lock_file(log_dir, fs=fs)
    broker = _check_meta_properties(log_dir, allow_missing_meta_properties, fs)
    real_log_dir = fs.real_path(log_dir)
    found = []
    for name in fs.list_dir(log_dir):
        path = log_dir / name
        if name == names.LOCK_FILE:
            continue  # locked where it points, as a broker does (check_lock_file refused the rest)
        if not fs.is_dir(path):
            if fs.is_symlink(path) and not _is_within(fs.real_path(path), real_log_dir):
                raise InvalidLogDirError(
                    f"a symlink to {fs.real_path(path)}, outside the log dir: logkeeper never follows a symlink "
                    "out of the log dir it maintains; replace it by the file itself",
                    path=path,
                )
            continue  # LogManager loads directories only
        if name == names.REMOTE_INDEX_CACHE_DIR:
            continue
        parsed = _parse(path)
        if parsed.topic_partition.topic == names.METADATA_TOPIC:
            continue  # the KRaft metadata log: not a partition LogManager loads
        if fs.is_symlink(path):
            raise InvalidLogDirError(
                f"the partition dir is a symlink (to {fs.real_path(path)}): logkeeper never follows a symlink out "
                "of the log dir it maintains; move the directory itself into the log dir",
                path=path,
            )
        _check_topic_name(path, parsed)
        _check_partition_files(path, fs)
        found.append(PartitionDirEntry(log_dir, name, parsed, broker))
    return found


def _check_meta_properties(log_dir: Path, allowed_missing: bool, fs: FileSystem) -> tuple[str | None, int | None]:
    """Refuse a missing (unless allowed), outside-linked or unparsable `meta.properties`; return the
    broker it names, (cluster.id, node.id or broker.id), or (None, None) where it names none."""
    path = log_dir / names.META_PROPERTIES
    if not fs.exists(path):
        if allowed_missing:
            return (None, None)
        raise InvalidLogDirError(
            f"no {names.META_PROPERTIES}: not a Kafka log dir (a broker writes one when it formats or first uses "
            f"a log dir); if this is the log dir of an old ZooKeeper-mode broker that never wrote one, pass "
            f"{ALLOW_MISSING_META_PROPERTIES}",
            path=log_dir,
        )
    if fs.is_symlink(path) and not _is_within(fs.real_path(path), fs.real_path(log_dir)):
        raise InvalidLogDirError(
            f"a symlink to {fs.real_path(path)}, outside the log dir: logkeeper never follows a symlink out of "
            "the log dir it maintains",
            path=path,
        )
    try:
        meta = read_meta_properties(path, fs=fs)
    except CorruptCheckpointError as exc:
        raise InvalidLogDirError(f"a broker would refuse this log dir: {exc}", path=path) from None
    node = meta.node_id if meta.node_id is not None else meta.broker_id
    return (meta.cluster_id, node) if node is not None else (None, None)


def _parse(path: Path) -> PartitionDirName:
    try:
        return names.parse_partition_dir_name(path.name)
    except InvalidNameError as exc:
        raise InvalidLogDirError(
            f"not a Kafka partition dir ({exc}): a broker refuses a log dir holding it (LocalLog."
            "parseTopicPartitionName: <topic>-<partition>, or <topic>-<partition>.<id>-delete|-future|-stray); "
            "move it out of the log dir",
            path=path,
        ) from None


def _check_topic_name(path: Path, parsed: PartitionDirName) -> None:
    """Kafka creates no topic outside `[a-zA-Z0-9._-]{1,249}` (`Topic.validate`); a dir naming one is
    not a partition (and a topic with whitespace could not even be written to a checkpoint)."""
    topic = parsed.topic_partition.topic
    if _TOPIC_NAME.fullmatch(topic) and topic not in (".", ".."):
        return
    why = (
        "contains whitespace: its entry would make the log dir's checkpoints unreadable"
        if _JAVA_WHITESPACE.search(topic)
        else "is not a name Kafka can create (Topic.validate: ASCII letters, digits, '.', '_', '-', at most 249)"
    )
    raise InvalidLogDirError(f"topic {topic!r} {why}: not a Kafka partition dir; move it out of the log dir", path=path)


def _check_partition_files(partition_dir: Path, fs: FileSystem) -> None:
    for name in fs.list_dir(partition_dir):
        path = partition_dir / name
        if fs.is_symlink(path):
            raise InvalidLogDirError(
                f"a symlink (to {fs.real_path(path)}) inside a partition dir: maintenance rewrites, truncates and "
                "deletes these files, which through a link would change another file; replace it by the file itself",
                path=path,
            )


def _refuse_duplicates(entries: Sequence[PartitionDirEntry]) -> None:
    """Two live (or two future) dirs of one partition on one broker: LogManager.loadLog's "Duplicate
    log directories"."""
    seen: dict[tuple[tuple[str | None, int | None], names.TopicPartition, DirKind], PartitionDirEntry] = {}
    for entry in entries:
        if entry.parsed.kind not in (DirKind.LIVE, DirKind.FUTURE):
            continue  # any number of -delete and -stray dirs may coexist
        key = (entry.broker, entry.parsed.topic_partition, entry.parsed.kind)
        previous = seen.setdefault(key, entry)
        if previous is not entry:
            raise InvalidLogDirError(
                f"duplicate log directories for {entry.parsed.topic_partition}"
                + (" (future replica)" if entry.parsed.kind is DirKind.FUTURE else "")
                + f": {previous.log_dir / previous.name} and {entry.log_dir / entry.name} name the same partition "
                "(Java's Integer.parseInt reads any Unicode decimal digit); a broker refuses to start: keep one",
                path=entry.log_dir / entry.name,
            )


def _is_within(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents
