"""Time, size and log-start-offset retention, exactly as Kafka decides it (`UnifiedLog.deleteOldSegments`).

kafka-maintenance.md §5. :func:`plan_retention` is read-only; :func:`apply_retention` carries a plan out.

Passes, in Kafka's order, each over the segments the previous one left:

1. log-start-offset breach: the next segment's base offset is <= the log start offset;
2. size breach (`retention.bytes` >= 0 and the log, active segment included, is at least that big):
   delete the oldest segments while the log stays at or above `retention.bytes`;
3. time breach (`retention.ms` >= 0): `now - largestTimestamp > retention.ms`, where
   `largestTimestamp` is the segment's last time-index timestamp, or its `.log` mtime when it has none.

Only `compact` in `cleanup.policy` runs pass 1 alone. A tiered topic (`remote.storage.enable`) uses
`local.retention.*` in passes 2-3 and deletes only uploaded segments there, and the plan says why each
of its segments stays (:mod:`storage_core.tiered.local_retention`). Deletion is always a prefix: a segment is
deletable only if the high watermark covers its whole offset range (next base, or the log end
offset for the last one) and it is not the empty active segment. When every segment goes, a new
empty active segment is rolled at the log end offset first. The new log start offset is the base
of the first kept segment. Segments with timestamps in the future are reported (KIP-937): they hold
back time retention of everything after them.

Crash story (:func:`apply_retention`): each deleted segment's files are renamed to `.deleted`, in
ascending order, then (with `file.delete.delay.ms` 0) deleted; its producer snapshot likewise; the
leader-epoch cache is truncated from the new start and rewritten atomically. The caller checkpoints
the log start offset afterwards. A crash at any point leaves whole segments, `.deleted` files that
any load removes, and a log start offset that is never ahead of the first remaining offset.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.config import LogConfig
from storage_core.fs import FileSystem, default_fs
from storage_core.index.time_index import TimeIndex
from storage_core.leader_epoch import LeaderEpochCache, format_leader_epoch_checkpoint, read_leader_epoch_checkpoint
from storage_core.load_actions import ActionKind, FileChange, LoadAction, actions_on_failure, written
from storage_core.segment import read_next_offset
from storage_core.tiered.local_retention import (
    UNKNOWN,
    KeptSegment,
    LocalSegment,
    RemoteCopies,
    kept_reasons,
    retention_keys,
    retention_limits,
    upload_required,
)


def clamp_high_watermark(high_watermark: int | None, log_start: int, log_end: int) -> int:
    """The high watermark a broker would start with (`UnifiedLog.updateHighWatermark`): the checkpoint's
    value, at least the log start and at most the log end, in that order; None (no checkpoint entry)
    reads as 0, hence the log start."""
    hw = high_watermark or 0
    return log_start if hw < log_start else min(hw, log_end)


class RetentionReason(enum.StrEnum):
    LOG_START_OFFSET_BREACH = "log_start_offset_breach"
    RETENTION_SIZE_BREACH = "retention_size_breach"
    RETENTION_MS_BREACH = "retention_ms_breach"


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """What retention needs to know about one segment."""

    base_offset: int
    size_bytes: int
    largest_timestamp: int
    timestamp_from_mtime: bool


@dataclass(frozen=True, slots=True)
class SegmentDeletion:
    """A segment retention deletes, and why."""

    segment: SegmentInfo
    reason: RetentionReason
    detail: str
    uploaded: bool = False  # a tiered topic's segment, past local retention and uploaded


@dataclass(frozen=True, slots=True)
class RetentionPlan:
    """What retention will do to one partition directory.

    Attributes:
        dir_path: the partition directory.
        log_start_offset: the log start offset before retention.
        log_end_offset: the log end offset (retention never changes it).
        high_watermark: the high watermark used, clamped to [log start, log end].
        deletions: the segments to delete, oldest first.
        roll_at: the base offset of a new empty active segment to create first, or None.
        future_timestamp_segments: bases of segments whose largest timestamp is after `now`.
        next_kept_base_offset: the base of the first segment that stays, None if none does.
        first_base_offset: the first segment's base offset before retention.
        kept: for a tiered topic, why each segment that stays does (empty for other topics).
    """

    dir_path: Path
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    deletions: tuple[SegmentDeletion, ...]
    roll_at: int | None
    future_timestamp_segments: tuple[int, ...]
    next_kept_base_offset: int | None
    first_base_offset: int
    kept: tuple[KeptSegment, ...] = ()

    @property
    def new_log_start_offset(self) -> int:
        """The base of the first kept segment (the rolled one if every segment goes)."""
        if not self.deletions:
            return self.log_start_offset
        following = self.next_kept_base_offset if self.next_kept_base_offset is not None else self.roll_at
        return max(self.log_start_offset, self.log_end_offset if following is None else following)

    @property
    def first_base_offset_after(self) -> int:
        """The first segment's base offset once the plan is applied."""
        if not self.deletions:
            return self.first_base_offset
        following = self.next_kept_base_offset if self.next_kept_base_offset is not None else self.roll_at
        return self.log_end_offset if following is None else following

    def future_timestamp_actions(self) -> tuple[LoadAction, ...]:
        return tuple(
            LoadAction(
                ActionKind.FUTURE_TIMESTAMP,
                names.log_file(self.dir_path, base).name,
                base,
                0,
                "largest timestamp is in the future: it holds back time retention (KIP-937)",
            )
            for base in self.future_timestamp_segments
        )

    def kept_actions(self) -> tuple[LoadAction, ...]:
        """One `tiered_keep` finding per segment of a tiered topic that stays, with its reason code."""
        return tuple(
            LoadAction(
                ActionKind.TIERED_KEEP,
                names.log_file(self.dir_path, kept.base_offset).name,
                kept.base_offset,
                0,
                f"{kept.reason.value}: {kept.detail}",
                code=kept.reason.value,
            )
            for kept in self.kept
        )

    @property
    def bytes_deleted(self) -> int:
        return sum(d.segment.size_bytes for d in self.deletions)


def segment_infos(dir_path: Path, fs: FileSystem) -> list[SegmentInfo]:
    """Every segment of a partition directory with its size and largest timestamp, by base offset."""
    infos = []
    for name in fs.list_dir(dir_path):
        if not (name.endswith(names.LOG_SUFFIX) and names.is_segment_file_name(name)):
            continue
        base = names.offset_from_file_name(name)
        time_index = names.time_index_file(dir_path, base)
        last = TimeIndex.open(time_index, base, fs=fs).last_entry.timestamp if fs.exists(time_index) else -1
        log = dir_path / name
        from_mtime = last < 0
        infos.append(SegmentInfo(base, fs.size(log), fs.mtime_ms(log) if from_mtime else last, from_mtime))
    return sorted(infos, key=lambda s: s.base_offset)


def next_offset_of(dir_path: Path, segment: SegmentInfo, fs: FileSystem) -> int:
    """The next offset after the segment's last batch, its base offset when empty."""
    return read_next_offset(
        names.log_file(dir_path, segment.base_offset),
        base_offset=segment.base_offset,
        index_path=names.offset_index_file(dir_path, segment.base_offset),
        fs=fs,
    )


def plan_retention(
    dir_path: Path,
    *,
    config: LogConfig,
    log_start_offset: int,
    high_watermark: int | None,
    now_ms: int,
    remote: RemoteCopies | None = None,
    fs: FileSystem | None = None,
) -> RetentionPlan:
    """Decide which segments Kafka's retention would delete (reads only).

    Args:
        dir_path: a loaded (clean) partition directory.
        config: the topic's log config.
        log_start_offset: the log-start-offset checkpoint value (0 if absent).
        high_watermark: the replication-offset checkpoint value; None means no high watermark is
            known, which Kafka treats as the log start offset (nothing is deletable).
        now_ms: the clock.
        remote: for a tiered topic, what is known of its uploads (None: nothing, so none counts as
            uploaded).
        fs: the file system.
    """
    fs = fs or default_fs()
    copies = remote or UNKNOWN
    needs_upload = upload_required(config)
    retention_ms, retention_bytes = retention_limits(config)
    ms_key, bytes_key = retention_keys(config)
    segments = segment_infos(Path(dir_path), fs)
    if not segments:
        return RetentionPlan(
            Path(dir_path), log_start_offset, log_start_offset, log_start_offset, (), None, (), None, log_start_offset
        )
    log_start = max(log_start_offset, segments[0].base_offset)
    log_end = next_offset_of(Path(dir_path), segments[-1], fs)
    hw = clamp_high_watermark(high_watermark, log_start, log_end)
    remaining = list(segments)
    deletions: list[SegmentDeletion] = []

    def take(reason: RetentionReason, predicate: Callable[[SegmentInfo, SegmentInfo | None], str | None]) -> None:
        while remaining:
            segment, following = remaining[0], (remaining[1] if len(remaining) > 1 else None)
            upper = following.base_offset if following is not None else log_end
            if following is None and segment.size_bytes == 0:
                return
            detail = predicate(segment, following) if hw >= upper else None
            if detail is None:
                return
            uploaded = needs_upload and reason != RetentionReason.LOG_START_OFFSET_BREACH
            if uploaded:
                if not copies.covers(segment.base_offset, upper - 1):
                    return  # never an un-uploaded segment (tiered_keep says why)
                detail += f"; uploaded (offsets [{segment.base_offset}, {upper - 1}] are in finished remote copies)"
            deletions.append(SegmentDeletion(segment, reason, detail, uploaded))
            remaining.pop(0)

    take(
        RetentionReason.LOG_START_OFFSET_BREACH,
        lambda s, n: (
            f"next segment starts at {n.base_offset} <= log start offset {log_start}"
            if n is not None and n.base_offset <= log_start
            else None
        ),
    )
    if config.delete:
        total = sum(s.size_bytes for s in remaining)
        if retention_bytes >= 0 and total >= retention_bytes:
            excess = [total - retention_bytes]

            def size_breach(segment: SegmentInfo, _: SegmentInfo | None) -> str | None:
                if excess[0] - segment.size_bytes < 0:
                    return None
                excess[0] -= segment.size_bytes
                return f"log of {total} bytes exceeds {bytes_key} {retention_bytes}"

            take(RetentionReason.RETENTION_SIZE_BREACH, size_breach)
        if retention_ms >= 0:
            take(
                RetentionReason.RETENTION_MS_BREACH,
                lambda s, n: (
                    (
                        f"largest timestamp {s.largest_timestamp}"
                        f"{' (file mtime)' if s.timestamp_from_mtime else ''} is {now_ms - s.largest_timestamp} ms old,"
                        f" over {ms_key} {retention_ms}"
                    )
                    if now_ms - s.largest_timestamp > retention_ms
                    else None
                ),
            )
    roll_at = None
    if deletions and not remaining:
        roll_at = log_end
        if deletions[-1].segment.base_offset == log_end:  # the empty active segment, recreated
            deletions.pop()
    future = tuple(s.base_offset for s in segments if s.largest_timestamp > now_ms and not s.timestamp_from_mtime)
    next_kept = remaining[0].base_offset if remaining else None
    kept: tuple[KeptSegment, ...] = ()
    if config.tiered and config.delete and remaining:
        uppers = [s.base_offset for s in remaining[1:]] + [log_end]
        local = [
            LocalSegment(s.base_offset, upper - 1, s.size_bytes, s.largest_timestamp)
            for s, upper in zip(remaining, uppers, strict=True)
        ]
        kept = kept_reasons(local, config=config, remote=copies, high_watermark=hw, now_ms=now_ms)
    return RetentionPlan(
        Path(dir_path),
        log_start,
        log_end,
        hw,
        tuple(deletions),
        roll_at,
        future,
        next_kept,
        segments[0].base_offset,
        kept,
    )


def apply_retention(
    plan: RetentionPlan, *, file_delete_delay_ms: int = 0, fs: FileSystem | None = None
) -> tuple[LoadAction, ...]:
    """Carry out a plan: roll if needed, rename deleted segments to `.deleted`, delete them, fix epochs.

    A dry run applies the plan to an overlay file system (:mod:`storage_core.overlay_fs`).

    Returns:
        One action per file change (and per future-timestamped segment), for the audit trail.
    """
    actions: list[LoadAction] = []
    with actions_on_failure(actions):
        return _apply(plan, file_delete_delay_ms, fs or default_fs(), actions)


def _apply(
    plan: RetentionPlan, file_delete_delay_ms: int, fs: FileSystem, actions: list[LoadAction]
) -> tuple[LoadAction, ...]:
    dir_path = plan.dir_path
    if plan.roll_at is not None:
        reason = "every segment is deletable: roll a new active segment first"
        for path in (
            names.log_file(dir_path, plan.roll_at),
            names.offset_index_file(dir_path, plan.roll_at),
            names.time_index_file(dir_path, plan.roll_at),
        ):
            if not fs.exists(path):
                fs.write_file(path, b"")
                actions.append(
                    written(
                        ActionKind.CREATE_SEGMENT,
                        path.name,
                        b"",
                        existed=False,
                        base_offset=plan.roll_at,
                        reason=reason,
                    )
                )
        fs.fsync_dir(dir_path)
    renamed: list[tuple[LoadAction, Path]] = []
    for deletion in plan.deletions:
        base = deletion.segment.base_offset
        reason = f"{deletion.reason.value}: {deletion.detail}"
        for kind, path in (
            (ActionKind.DELETE_SEGMENT, names.log_file(dir_path, base)),
            (ActionKind.DELETE_SEGMENT, names.offset_index_file(dir_path, base)),
            (ActionKind.DELETE_SEGMENT, names.time_index_file(dir_path, base)),
            (ActionKind.DELETE_SEGMENT, names.txn_index_file(dir_path, base)),
            (ActionKind.DELETE_SNAPSHOT, names.snapshot_file(dir_path, base)),
        ):
            if fs.exists(path):
                target = path.with_name(path.name + names.DELETED_SUFFIX)
                size = fs.size(path)
                fs.rename_atomic(path, target)
                action = LoadAction(
                    kind, path.name, base, size, reason, FileChange.RENAME, target.name, code=deletion.reason.value
                )
                renamed.append((action, target))
    new_start = plan.new_log_start_offset
    epoch_path = dir_path / names.LEADER_EPOCH_CHECKPOINT
    epoch_action = None
    if plan.deletions and fs.exists(epoch_path):
        before = read_leader_epoch_checkpoint(epoch_path, fs=fs)
        cache = LeaderEpochCache(before)
        cache.truncate_from_start(new_start)
        if cache.entries != before:
            content = format_leader_epoch_checkpoint(cache.entries)
            fs.write_atomic(epoch_path, content)
            epoch_action = written(
                ActionKind.UPDATE_LEADER_EPOCHS,
                epoch_path.name,
                content,
                existed=True,
                reason=f"truncated from the new log start offset {new_start}",
            )
    if file_delete_delay_ms == 0:
        for action, path in renamed:
            fs.delete(path)
            actions.append(dataclasses.replace(action, change=FileChange.DELETE, target=""))
        if renamed:
            fs.fsync_dir(dir_path)
    else:
        actions += [action for action, _ in renamed]  # the `.deleted` files stay for the delay
    if epoch_action is not None:
        actions.append(epoch_action)
    return tuple(actions) + plan.future_timestamp_actions() + plan.kept_actions()
