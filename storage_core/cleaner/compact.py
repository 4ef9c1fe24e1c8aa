"""Compact one partition as Kafka's cleaner would, pass after pass, until it is no longer a candidate.

Choosing (`LogCleanerManager.cleanableOffsets` / `grabFilthiestCompactedLog`, kafka-maintenance.md
§6.2): the first dirty offset comes from cleaner-offset-checkpoint (clamped to [log start, log end],
forcing a checkpoint update otherwise); the first uncleanable offset is the smallest of the last
stable offset, the active segment's base offset and (with `min.compaction.lag.ms`) the first segment
too young to clean, aligned down to a segment base. The log is a candidate when its dirty ratio
`cleanable / (clean + cleanable)` is above `min.cleanable.dirty.ratio`, or when
`max.compaction.lag.ms` forces compaction. Each pass (:mod:`storage_core.cleaner.clean`) ends at the
map's end offset, which becomes the new checkpoint value.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.cleaner.clean import (
    ActiveProducer,
    CleanerStats,
    PassContext,
    build_offset_map,
    clean_group,
    group_segments,
)
from storage_core.cleaner.offset_map import OffsetMap
from storage_core.cleaner.txn_tracker import TransactionTracker
from storage_core.config import LogConfig
from storage_core.fs import FileSystem, default_fs
from storage_core.load_actions import LoadAction, actions_on_failure
from storage_core.overlay_fs import OverlayFileSystem
from storage_core.producer_rebuild import end_txn_marker_of
from storage_core.producer_state import ProducerStateManager
from storage_core.records.batch import RecordBatch
from storage_core.records.file_records import iterate_batches
from storage_core.retention import SegmentInfo, clamp_high_watermark, next_offset_of, segment_infos

CANDIDATE_REASONS = frozenset({"max_compaction_lag", "dirty_ratio"})


@dataclass(frozen=True, slots=True)
class CleanablePlan:
    """Whether (and what) the cleaner would clean now."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    needs_compaction_now: bool
    checkpoint_forced: bool
    min_cleanable_ratio: float
    earliest_dirty_timestamp_ms: int | None = None  # the dirty section's first batches' earliest max timestamp

    @property
    def cleanable_ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0

    @property
    def reason_code(self) -> str:
        """Why the partition is or is not a candidate now: `empty` (nothing to clean),
        `max_compaction_lag` (max.compaction.lag.ms passed over dirty records: due whatever the
        ratio), `dirty_ratio` (the dirty ratio is above min.cleanable.dirty.ratio) or
        `below_min_cleanable_ratio` (not due)."""
        if self.clean_bytes + self.cleanable_bytes == 0:
            return "empty"
        if self.needs_compaction_now and self.cleanable_bytes > 0:
            return "max_compaction_lag"
        return "dirty_ratio" if self.cleanable_ratio > self.min_cleanable_ratio else "below_min_cleanable_ratio"

    @property
    def is_candidate(self) -> bool:
        return self.reason_code in CANDIDATE_REASONS


@dataclass(frozen=True, slots=True)
class CleanPass:
    """One completed cleaning pass; `actions`: one per file it changed."""

    first_dirty_offset: int
    end_offset: int
    groups: tuple[tuple[int, ...], ...]
    stats: CleanerStats
    summary: tuple[str, ...]
    actions: tuple[LoadAction, ...] = ()


@dataclass(frozen=True, slots=True)
class CompactResult:
    """The passes run on a partition and the resulting cleaner checkpoint offset."""

    initial_plan: CleanablePlan
    passes: tuple[CleanPass, ...]
    cleaner_offset: int
    log_start_offset: int
    log_end_offset: int


def _floor(segments: list[SegmentInfo], offset: int) -> int:
    """Index of the segment holding `offset` (the first one if the offset is below them all)."""
    index = 0
    for i, segment in enumerate(segments):
        if segment.base_offset <= offset:
            index = i
    return index


def active_producers(
    dir_path: Path, segments: list[SegmentInfo], fs: FileSystem
) -> tuple[dict[int, ActiveProducer], int | None]:
    """Active producers (last data offset, epoch) and the first undecided offset, by replaying the log."""
    psm = ProducerStateManager(dir_path, fs=fs)
    for segment in segments:
        for batch in iterate_batches(fs.mmap(names.log_file(dir_path, segment.base_offset))):
            if batch.producer_id >= 0:
                marker = end_txn_marker_of(batch) if batch.is_control and isinstance(batch, RecordBatch) else None
                completed = psm.apply_batch(batch, marker=marker)
                if completed is not None:
                    psm.complete_txn(completed)
    producers = {
        pid: ActiveProducer(None if entry.last_data_offset < 0 else entry.last_data_offset, entry.producer_epoch)
        for pid, entry in psm.producers.items()
    }
    return producers, psm.first_undecided_offset


def plan_cleaning(
    dir_path: Path,
    *,
    config: LogConfig,
    cleaner_checkpoint: int | None,
    log_start_offset: int,
    last_stable_offset: int,
    now_ms: int,
    fs: FileSystem | None = None,
) -> CleanablePlan:
    """Kafka's choice for one log (reads only)."""
    fs = fs or default_fs()
    segments = segment_infos(Path(dir_path), fs)
    log_end = next_offset_of(Path(dir_path), segments[-1], fs)
    log_start = max(log_start_offset, segments[0].base_offset)
    dirty = log_start if cleaner_checkpoint is None else cleaner_checkpoint
    forced = dirty < log_start or dirty > log_end
    first_dirty = log_start if forced else dirty
    active = segments[-1]
    limits = [last_stable_offset, active.base_offset]
    non_active = segments[:-1]
    if config.min_compaction_lag_ms > 0:
        for segment in non_active[_floor(non_active, first_dirty) :] if non_active else []:
            if segment.largest_timestamp > now_ms - config.min_compaction_lag_ms:
                limits.append(segment.base_offset)
                break
    first_uncleanable = max(first_dirty, min(limits))
    # The segment holding the first uncleanable offset (the active one if it holds it) starts the
    # uncleanable part: the pass is segment-aligned.
    aligned = segments[_floor(segments, first_uncleanable)].base_offset
    clean_bytes = sum(s.size_bytes for s in segments if s.base_offset < first_dirty)
    start = _floor(segments, min(first_dirty, aligned))
    cleanable_bytes = sum(s.size_bytes for s in segments[start:] if s.base_offset < aligned)
    earliest = None
    for segment in non_active[_floor(non_active, first_dirty) :] if non_active else []:
        first = next(iterate_batches(fs.mmap(names.log_file(Path(dir_path), segment.base_offset))), None)
        if first is not None and first.max_timestamp > 0:
            earliest = first.max_timestamp if earliest is None else min(earliest, first.max_timestamp)
    clean_until = now_ms - max(config.max_compaction_lag_ms, 0)
    needs_now = earliest is not None and earliest < clean_until
    ratio = config.min_cleanable_dirty_ratio
    return CleanablePlan(first_dirty, aligned, clean_bytes, cleanable_bytes, needs_now, forced, ratio, earliest)


def compact_partition(
    dir_path: Path,
    *,
    config: LogConfig,
    cleaner_checkpoint: int | None,
    log_start_offset: int,
    high_watermark: int | None,
    now_ms: int,
    dedupe_buffer_bytes: int,
    load_factor: float = 0.9,
    dry_run: bool = False,
    max_passes: int = 100,
    fs: FileSystem | None = None,
) -> CompactResult:
    """Clean a compacted partition until it is no longer a candidate.

    A dry run cleans over an overlay file system (:mod:`storage_core.overlay_fs`, unless given one):
    it reports every pass a real run would make, and changes nothing.
    """
    fs = fs or default_fs()
    if dry_run and not isinstance(fs, OverlayFileSystem):
        fs = OverlayFileSystem(fs)
    dir_path = Path(dir_path)
    passes: list[CleanPass] = []
    done: list[LoadAction] = []  # the file changes of the passes so far, for a failure's audit trail
    initial: CleanablePlan | None = None
    checkpoint = cleaner_checkpoint
    for _ in range(max_passes):
        segments = segment_infos(dir_path, fs)
        log_start = max(log_start_offset, segments[0].base_offset)
        log_end = next_offset_of(dir_path, segments[-1], fs)
        producers, first_undecided = active_producers(dir_path, segments, fs)
        hw = clamp_high_watermark(high_watermark, log_start, log_end)
        last_stable = hw if first_undecided is None else min(max(first_undecided, log_start), hw)
        plan = plan_cleaning(
            dir_path,
            config=config,
            cleaner_checkpoint=checkpoint,
            log_start_offset=log_start_offset,
            last_stable_offset=last_stable,
            now_ms=now_ms,
            fs=fs,
        )
        initial = initial or plan
        if plan.checkpoint_forced:
            checkpoint = plan.first_dirty_offset
        if not plan.is_candidate:
            break
        with actions_on_failure(done):
            passes.append(
                _clean_pass(
                    dir_path,
                    plan,
                    segments,
                    producers,
                    config=config,
                    log_start=log_start,
                    now_ms=now_ms,
                    dedupe_buffer_bytes=dedupe_buffer_bytes,
                    load_factor=load_factor,
                    fs=fs,
                )
            )
        done += passes[-1].actions
        checkpoint = passes[-1].end_offset
    if initial is None:
        raise ValueError("max_passes must be at least 1")
    segments = segment_infos(dir_path, fs)
    return CompactResult(
        initial,
        tuple(passes),
        initial.first_dirty_offset if checkpoint is None else checkpoint,
        max(log_start_offset, segments[0].base_offset),
        next_offset_of(dir_path, segments[-1], fs),
    )


def _clean_pass(
    dir_path: Path,
    plan: CleanablePlan,
    segments: list[SegmentInfo],
    producers: dict[int, ActiveProducer],
    *,
    config: LogConfig,
    log_start: int,
    now_ms: int,
    dedupe_buffer_bytes: int,
    load_factor: float,
    fs: FileSystem,
) -> CleanPass:
    started = time.monotonic()
    stats = CleanerStats()
    offset_map = OffsetMap(dedupe_buffer_bytes)
    bases = [s.base_offset for s in segments]
    scan = build_offset_map(
        dir_path,
        bases,
        start=plan.first_dirty_offset,
        end=plan.first_uncleanable_offset,
        offset_map=offset_map,
        load_factor=load_factor,
        log_start_offset=log_start,
        stats=stats,
        fs=fs,
    )
    end = scan.end_offset
    mapped = time.monotonic()
    below_dirty = [s for s in segments if s.base_offset < plan.first_dirty_offset]
    legacy_horizon = (
        fs.mtime_ms(names.log_file(dir_path, below_dirty[-1].base_offset)) - config.delete_retention_ms
        if below_dirty
        else 0
    )
    groups = group_segments(
        dir_path,
        [b for b in bases if b < end],
        max_size=config.segment_bytes,
        max_index_size=config.segment_index_bytes,
        first_uncleanable=plan.first_uncleanable_offset,
        fs=fs,
    )
    ctx = PassContext(
        offset_map,
        TransactionTracker(),
        config,
        now_ms,
        plan.first_uncleanable_offset,
        producers,
        stats,
        mapped_region=scan.region,
    )
    actions: list[LoadAction] = []
    with actions_on_failure(actions):
        for group in groups:
            actions += clean_group(
                dir_path, group, bases, ctx, legacy_horizon_ms=legacy_horizon, log_start_offset=log_start, fs=fs
            )
    stats.buffer_utilization = offset_map.utilization
    stats.elapsed_secs = time.monotonic() - started
    stats.elapsed_index_secs = mapped - started
    summary = stats.summary_lines(name=dir_path.name, first_dirty=plan.first_dirty_offset, end_offset=end)
    return CleanPass(
        plan.first_dirty_offset, end, tuple(tuple(g) for g in groups), stats, tuple(summary), tuple(actions)
    )
