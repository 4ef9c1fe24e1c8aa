"""Every byte of a log dir, classified: what it is, and whether (and by what) it could be freed.

A broker's disk fills and nobody can say which bytes could go. :func:`partition_usage` and
:func:`log_dir_usage` put every directory entry of a log dir into exactly one :class:`UsageClass`
(a `.log` file's bytes may be split between live data and the compaction estimate), so the classes
of a log dir add up to `du -sb` of it (`bytes`, the entries' sizes) and to `du -sB1` (`disk_bytes`,
their allocated blocks: a broker preallocates the active segment's indexes, sparse), directories
included, hard links once. What each class is:

| class | what | freed by |
|---|---|---|
| `live_data` | `.log` bytes of segments retention keeps | - |
| `retention_eligible` | a segment (all its files) retention deletes now, by `rule` | `retention` |
| `tiered_uploaded` | a tiered topic's segment, uploaded and past `local.retention.*` (`rule`) | `retention` |
| `compaction_reclaimable` | estimated bytes a clean would free (:mod:`storage_core.cleaner.explain`) | `compact` |
| `indexes` | `.index`, `.timeindex`, `.txnindex` of kept segments | - |
| `snapshots` | producer-state `.snapshot` files of kept segments | - |
| `partition_files` | `leader-epoch-checkpoint`, `partition.metadata` | - |
| `log_dir_files` | checkpoints, `meta.properties`, `.lock`, the clean-shutdown marker | - |
| `temporary` | leftovers of interrupted work: `.cleaned`, `.swap`, `.deleted`, `.tmp` | `recover` (the load) |
| `stray_replica` | a whole stray replica: `-stray` dirs, or not this broker's by the metadata image | operator |
| `future_replica` | a whole `-future` dir (a move between disks in progress, or abandoned) | `move` |
| `delete_pending` | a whole `-delete` dir (a deleted replica the broker removes after a delay) | broker |
| `cluster_metadata` | `__cluster_metadata-0` (the KRaft metadata log) | - |
| `remote_index_cache` | `remote-log-index-cache` (tiered storage's cache of remote indexes) | broker |
| `directories` | the directories themselves (their own entries' size) | - |
| `other` | anything Kafka did not write | operator |
| `quarantine` | pieces logkeeper removed from a log and kept (outside every log dir) | operator |

Reads only, and never follows a symlink: it runs beside a live broker (a file that vanishes while
listed raises FileNotFoundError: the caller reports the partition as changed during the read).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.cleaner.explain import CleaningExplanation
from storage_core.fs import FileIdentity, FileSystem, default_fs, space_used
from storage_core.retention import RetentionPlan, RetentionReason


class UsageClass(enum.StrEnum):
    """What a byte of a log dir is (see the module docstring)."""

    LIVE_DATA = "live_data"
    RETENTION_ELIGIBLE = "retention_eligible"
    TIERED_UPLOADED = "tiered_uploaded"
    COMPACTION_RECLAIMABLE = "compaction_reclaimable"
    INDEXES = "indexes"
    SNAPSHOTS = "snapshots"
    PARTITION_FILES = "partition_files"
    LOG_DIR_FILES = "log_dir_files"
    TEMPORARY = "temporary"
    STRAY_REPLICA = "stray_replica"
    FUTURE_REPLICA = "future_replica"
    DELETE_PENDING = "delete_pending"
    CLUSTER_METADATA = "cluster_metadata"
    REMOTE_INDEX_CACHE = "remote_index_cache"
    DIRECTORIES = "directories"
    OTHER = "other"
    QUARANTINE = "quarantine"


# What frees each reclaimable class (the job whose dry run `disk-usage --plan` shows, or who must).
FREED_BY: dict[UsageClass, str] = {
    UsageClass.RETENTION_ELIGIBLE: "retention",
    UsageClass.TIERED_UPLOADED: "retention",
    UsageClass.COMPACTION_RECLAIMABLE: "compact",
    UsageClass.TEMPORARY: "recover",
    UsageClass.STRAY_REPLICA: "operator",
    UsageClass.FUTURE_REPLICA: "move",
    UsageClass.DELETE_PENDING: "broker",
    UsageClass.REMOTE_INDEX_CACHE: "broker",
    UsageClass.OTHER: "operator",
    UsageClass.QUARANTINE: "operator",
}
_TEMPORARY_SUFFIXES = (names.CLEANED_SUFFIX, names.SWAP_SUFFIX, names.DELETED_SUFFIX, names.TMP_SUFFIX)
_LOG_DIR_FILES = frozenset(
    {
        names.RECOVERY_POINT_CHECKPOINT,
        names.LOG_START_OFFSET_CHECKPOINT,
        names.REPLICATION_OFFSET_CHECKPOINT,
        names.CLEANER_OFFSET_CHECKPOINT,
        names.META_PROPERTIES,
        names.CLEAN_SHUTDOWN_FILE,
        names.LOCK_FILE,
    }
)
_PARTITION_FILES = frozenset({names.LEADER_EPOCH_CHECKPOINT, names.PARTITION_METADATA})


@dataclass(frozen=True, slots=True)
class UsageEntry:
    """Bytes of one class (and rule) in one directory.

    Attributes:
        usage_class: what they are.
        rule: which rule makes them reclaimable (retention's `retention.ms`, ...; the temporary
            suffix; "" when none applies).
        files: directory entries counted (a split `.log` counts in its first class only).
        bytes: their sizes (`du -b`).
        disk_bytes: their allocated blocks (`du -B1`).
    """

    usage_class: UsageClass
    rule: str
    files: int
    bytes: int
    disk_bytes: int

    @property
    def freed_by(self) -> str:
        return FREED_BY.get(self.usage_class, "")


class _Tally:
    """Adds entries up per (class, rule), each inode once."""

    def __init__(self, fs: FileSystem | None) -> None:
        self._sums: dict[tuple[UsageClass, str], list[int]] = {}
        self._seen: set[FileIdentity] = set()
        self.fs = fs or default_fs()

    def add(self, usage_class: UsageClass, rule: str, *, files: int, size: int, disk: int) -> None:
        entry = self._sums.setdefault((usage_class, rule), [0, 0, 0])
        entry[0] += files
        entry[1] += size
        entry[2] += disk

    def path(self, path: Path, usage_class: UsageClass, rule: str = "") -> tuple[int, int]:
        """Count `path` itself (not what a directory holds); returns its (bytes, disk bytes)."""
        used = space_used(path)
        if used.identity in self._seen:
            return 0, 0
        self._seen.add(used.identity)
        self.add(usage_class, rule, files=1, size=used.apparent_bytes, disk=used.allocated_bytes)
        return used.apparent_bytes, used.allocated_bytes

    def tree(self, path: Path, usage_class: UsageClass, rule: str = "") -> None:
        """Count `path` and, for a directory, everything in it, in one class."""
        self.path(path, usage_class, rule)
        if space_used(path).is_dir:
            for name in sorted(self.fs.list_dir(path)):
                self.tree(path / name, usage_class, rule)

    def entries(self) -> tuple[UsageEntry, ...]:
        return tuple(
            UsageEntry(cls, rule, *sums) for (cls, rule), sums in sorted(self._sums.items(), key=lambda kv: kv[0])
        )


def whole_dir_usage(dir_path: Path, usage_class: UsageClass, *, fs: FileSystem | None = None) -> tuple[UsageEntry, ...]:
    """A directory and everything in it as one class (a stray, `-future` or `-delete` replica, ...)."""
    tally = _Tally(fs)
    tally.tree(Path(dir_path), usage_class)
    return tally.entries()


_RULES = {
    RetentionReason.LOG_START_OFFSET_BREACH: "log_start_offset",
    RetentionReason.RETENTION_SIZE_BREACH: "retention.bytes",
    RetentionReason.RETENTION_MS_BREACH: "retention.ms",
}


def _deleted_segments(plan: RetentionPlan | None) -> dict[int, tuple[UsageClass, str]]:
    """Base offset -> (class, rule) of each segment the retention plan deletes."""
    if plan is None:
        return {}
    out = {}
    for deletion in plan.deletions:
        rule = _RULES[deletion.reason]
        if deletion.uploaded:  # a tiered topic's local rule
            out[deletion.segment.base_offset] = (UsageClass.TIERED_UPLOADED, f"local.{rule}")
        else:
            out[deletion.segment.base_offset] = (UsageClass.RETENTION_ELIGIBLE, rule)
    return out


def partition_usage(
    dir_path: Path,
    *,
    retention: RetentionPlan | None,
    compaction: CleaningExplanation | None,
    fs: FileSystem | None = None,
) -> tuple[UsageEntry, ...]:
    """Every entry of a live partition dir, classified (the dir's own entry as `directories`).

    Args:
        dir_path: the partition dir.
        retention: what retention would delete now (None: its config is unknown, nothing is eligible).
        compaction: the cleaner's explanation, for a compacted topic (its estimate is taken out of
            the live data of the segments below the first uncleanable offset).
    """
    dir_path = Path(dir_path)
    tally = _Tally(fs)
    tally.path(dir_path, UsageClass.DIRECTORIES)
    deleted = _deleted_segments(retention)
    live_below_end = [0, 0]
    end = compaction.plan.first_uncleanable_offset if compaction is not None else -1
    for name in sorted(tally.fs.list_dir(dir_path)):
        path = dir_path / name
        if space_used(path).is_dir:
            tally.tree(path, UsageClass.OTHER, "directory in a partition dir")
        elif name.endswith(_TEMPORARY_SUFFIXES):
            tally.path(path, UsageClass.TEMPORARY, name[name.rindex(".") :])
        elif names.is_segment_file_name(name):
            base = names.offset_from_file_name(name)
            if base in deleted:
                tally.path(path, *deleted[base])
            elif name.endswith(names.LOG_SUFFIX):
                size, disk = tally.path(path, UsageClass.LIVE_DATA)
                if base < end:
                    live_below_end[0] += size
                    live_below_end[1] += disk
            elif name.endswith(names.SNAPSHOT_SUFFIX):
                tally.path(path, UsageClass.SNAPSHOTS)
            else:
                tally.path(path, UsageClass.INDEXES)
        elif name in _PARTITION_FILES:
            tally.path(path, UsageClass.PARTITION_FILES)
        else:
            tally.path(path, UsageClass.OTHER)
    if compaction is not None and live_below_end[0] > 0:
        moved = min(compaction.reclaimable_bytes, live_below_end[0])
        moved_disk = live_below_end[1] * moved // live_below_end[0]
        tally.add(UsageClass.LIVE_DATA, "", files=0, size=-moved, disk=-moved_disk)
        tally.add(UsageClass.COMPACTION_RECLAIMABLE, "estimate", files=0, size=moved, disk=moved_disk)
    return tally.entries()


def log_dir_usage(
    log_dir: Path, partition_dirs: Iterable[str], *, fs: FileSystem | None = None
) -> tuple[UsageEntry, ...]:
    """The log dir's own entries, classified: the dir itself, its files, the metadata log, the
    remote index cache, and anything else; `partition_dirs` (counted by :func:`partition_usage` or
    :func:`whole_dir_usage`) are left out."""
    log_dir = Path(log_dir)
    skip = set(partition_dirs)
    tally = _Tally(fs)
    tally.path(log_dir, UsageClass.DIRECTORIES)
    for name in sorted(tally.fs.list_dir(log_dir)):
        path = log_dir / name
        if name in skip:
            continue
        if name == f"{names.METADATA_TOPIC}-0":
            tally.tree(path, UsageClass.CLUSTER_METADATA)
        elif name == names.REMOTE_INDEX_CACHE_DIR:
            tally.tree(path, UsageClass.REMOTE_INDEX_CACHE)
        elif name in _LOG_DIR_FILES:
            tally.path(path, UsageClass.LOG_DIR_FILES)
        elif name.endswith(names.TMP_SUFFIX) and not space_used(path).is_dir:
            tally.path(path, UsageClass.TEMPORARY, names.TMP_SUFFIX)
        else:
            tally.tree(path, UsageClass.OTHER)
    return tally.entries()


def quarantine_usage(quarantine_dir: Path, *, fs: FileSystem | None = None) -> dict[str, tuple[UsageEntry, ...]]:
    """Per run id, the bytes of its quarantined pieces (`<quarantine>/<run id>/...`); "" for the
    quarantine directory's own entry (`directories`), so the rows add up to `du` of it."""
    fs = fs or default_fs()
    quarantine_dir = Path(quarantine_dir)
    if not fs.is_dir(quarantine_dir):
        return {}
    own = _Tally(fs)
    own.path(quarantine_dir, UsageClass.DIRECTORIES)
    runs = {
        run: whole_dir_usage(quarantine_dir / run, UsageClass.QUARANTINE, fs=fs)
        for run in sorted(fs.list_dir(quarantine_dir))
    }
    return {"": own.entries(), **runs}
