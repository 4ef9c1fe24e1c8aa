"""Why a compacted partition is (not) cleaned: the cleaner's choice with every figure behind it.

Operators see a partition that does not shrink and cannot tell why (KAFKA-19895: one marked
uncleanable stays so until the broker restarts). :func:`explain_cleaning` is the cleaner's own
choice (:func:`storage_core.cleaner.compact.plan_cleaning`, `LogCleanerManager.cleanableOffsets`)
told out:

1. the dirty ratio `cleanable / (clean + cleanable)` against `min.cleanable.dirty.ratio`, and the
   compaction lags: how old the first dirty batch is, against `min.compaction.lag.ms` (too young to
   clean) and `max.compaction.lag.ms` (overdue: cleaned whatever the ratio);
2. the first uncleanable offset and what set it (:class:`UncleanableReason`): the active segment,
   a segment younger than `min.compaction.lag.ms`, an open transaction (the last stable offset),
   or the high watermark;
3. an estimate of the bytes a clean would free: a key -> last offset map over the dirty section
   (as the cleaner builds it), then every record below the end of it whose key has a later offset
   there is superseded; each batch counts for its share of superseded records (compressed batches
   shrink by about that share);
4. whether the dedupe buffer holds the dirty section's distinct keys (24 bytes a key, times the
   load factor): if not, one pass cleans only up to where the map fills.

Reads only; beside a live broker the figures are those of the files as they were read.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.cleaner.compact import CleanablePlan, active_producers, plan_cleaning
from storage_core.cleaner.offset_map import ENTRY_SIZE
from storage_core.config import LogConfig
from storage_core.distinct_keys import key_hash
from storage_core.fs import FileSystem, default_fs
from storage_core.records.file_records import Batch, iterate_batches
from storage_core.retention import SegmentInfo, clamp_high_watermark, next_offset_of, segment_infos


class UncleanableReason(enum.StrEnum):
    """What set the first uncleanable offset (the end of what a clean may touch)."""

    ACTIVE_SEGMENT = "active_segment"  # the active segment is never cleaned
    MIN_COMPACTION_LAG = "min_compaction_lag"  # a segment younger than min.compaction.lag.ms
    OPEN_TRANSACTION = "open_transaction"  # the last stable offset: a transaction is still open
    HIGH_WATERMARK = "high_watermark"  # records above the high watermark are not committed
    EMPTY = "empty"  # nothing to clean


@dataclass(frozen=True, slots=True)
class CleaningExplanation:
    """The cleaner's choice for one partition, with the figures behind it (see the module docstring).

    Attributes:
        plan: the cleaner's plan (ratio, offsets, bytes, `reason_code`: due or not, and why).
        uncleanable_reason: what set the first uncleanable offset.
        uncleanable_detail: the same in words, with the figures.
        last_stable_offset: the last stable offset the plan used.
        first_dirty_timestamp_ms: the first dirty batch's max timestamp (None: no timestamp).
        dirty_lag_ms: how old the first dirty batch is (None without a timestamp).
        overdue_ms: how long past max.compaction.lag.ms the oldest dirty batch is (None: not overdue).
        dirty_keys: distinct keys in the dirty section.
        dedupe_buffer_keys: how many keys the dedupe buffer holds (slots times the load factor).
        reclaimable_bytes: the estimated bytes a clean would free.
        superseded_records: records a clean would drop (superseded by a later one of the same key).
        scanned_records: records below the end of the dirty section.
    """

    plan: CleanablePlan
    uncleanable_reason: UncleanableReason
    uncleanable_detail: str
    last_stable_offset: int
    first_dirty_timestamp_ms: int | None
    dirty_lag_ms: int | None
    overdue_ms: int | None
    dirty_keys: int
    dedupe_buffer_keys: int
    reclaimable_bytes: int
    superseded_records: int
    scanned_records: int

    @property
    def buffer_fits(self) -> bool:
        """One pass can map the whole dirty section."""
        return self.dirty_keys <= self.dedupe_buffer_keys

    def summary(self) -> str:
        """One line for an operator."""
        plan = self.plan
        lag = "no timestamps" if self.dirty_lag_ms is None else f"first dirty batch {self.dirty_lag_ms} ms old"
        overdue = f", max.compaction.lag.ms overdue by {self.overdue_ms} ms" if self.overdue_ms is not None else ""
        fits = "fits" if self.buffer_fits else "does NOT fit (one pass cleans only part)"
        return (
            f"{plan.reason_code}: dirty ratio {plan.cleanable_ratio:.3f} vs min.cleanable.dirty.ratio "
            f"{plan.min_cleanable_ratio}; cleanable [{plan.first_dirty_offset}, {plan.first_uncleanable_offset}) "
            f"ends at {self.uncleanable_reason.value} ({self.uncleanable_detail}); {lag}{overdue}; "
            f"a clean would free about {self.reclaimable_bytes} B ({self.superseded_records} of "
            f"{self.scanned_records} records superseded); {self.dirty_keys} dirty keys, the dedupe buffer holds "
            f"{self.dedupe_buffer_keys}: {fits}"
        )


def explain_cleaning(
    dir_path: Path,
    *,
    config: LogConfig,
    cleaner_checkpoint: int | None,
    log_start_offset: int,
    high_watermark: int | None,
    now_ms: int,
    dedupe_buffer_bytes: int,
    load_factor: float,
    fs: FileSystem | None = None,
) -> CleaningExplanation:
    """Explain the cleaner's choice for one compacted partition (reads only)."""
    fs = fs or default_fs()
    dir_path = Path(dir_path)
    segments = segment_infos(dir_path, fs)
    log_start = max(log_start_offset, segments[0].base_offset)
    log_end = next_offset_of(dir_path, segments[-1], fs)
    _, first_undecided = active_producers(dir_path, segments, fs)
    hw = clamp_high_watermark(high_watermark, log_start, log_end)
    last_stable = hw if first_undecided is None else min(max(first_undecided, log_start), hw)
    plan = plan_cleaning(
        dir_path,
        config=config,
        cleaner_checkpoint=cleaner_checkpoint,
        log_start_offset=log_start_offset,
        last_stable_offset=last_stable,
        now_ms=now_ms,
        fs=fs,
    )
    reason, detail = _uncleanable(plan, segments, log_end, last_stable, hw, first_undecided, config, now_ms)
    first_ts = plan.earliest_dirty_timestamp_ms
    lag = None if first_ts is None else now_ms - first_ts
    overdue = lag - config.max_compaction_lag_ms if lag is not None and plan.needs_compaction_now else None
    latest = _latest_offsets(dir_path, segments, plan.first_dirty_offset, plan.first_uncleanable_offset, fs)
    superseded, scanned, freed = _superseded(dir_path, segments, plan.first_uncleanable_offset, latest, fs)
    capacity = int(min(dedupe_buffer_bytes, 2**31 - 1) // ENTRY_SIZE * load_factor)
    return CleaningExplanation(
        plan, reason, detail, last_stable, first_ts, lag, overdue, len(latest), capacity, freed, superseded, scanned
    )


def _uncleanable(
    plan: CleanablePlan,
    segments: list[SegmentInfo],
    log_end: int,
    last_stable: int,
    high_watermark: int,
    first_undecided: int | None,
    config: LogConfig,
    now_ms: int,
) -> tuple[UncleanableReason, str]:
    """Which of the cleaner's limits (`cleanableOffsets`) set the first uncleanable offset: the
    smallest of the last stable offset, the active segment's base and the first segment too young
    for min.compaction.lag.ms (an open transaction before the high watermark when the last stable
    offset is it)."""
    if log_end <= max(plan.first_dirty_offset, segments[0].base_offset) and plan.clean_bytes == 0:
        return UncleanableReason.EMPTY, "no records"
    active = segments[-1].base_offset
    young = None
    if config.min_compaction_lag_ms > 0:
        first = segments.index(_holding(segments, plan.first_dirty_offset))
        young = next(
            (s for s in segments[first:-1] if s.largest_timestamp > now_ms - config.min_compaction_lag_ms), None
        )
    limit = min(last_stable, active, young.base_offset if young is not None else active)
    if last_stable == limit and last_stable < active:
        if first_undecided is not None and last_stable < high_watermark:
            return (
                UncleanableReason.OPEN_TRANSACTION,
                f"the last stable offset {last_stable}: a transaction is open from offset {first_undecided}",
            )
        return UncleanableReason.HIGH_WATERMARK, f"the high watermark {high_watermark}"
    if young is not None and young.base_offset == limit:
        return (
            UncleanableReason.MIN_COMPACTION_LAG,
            f"the segment at {young.base_offset} (largest timestamp {young.largest_timestamp}) is younger than "
            f"min.compaction.lag.ms {config.min_compaction_lag_ms}",
        )
    return UncleanableReason.ACTIVE_SEGMENT, f"the active segment starts at {active}"


def _holding(segments: list[SegmentInfo], offset: int) -> SegmentInfo:
    """The segment holding `offset` (the first one when the offset is below them all)."""
    below = [s for s in segments if s.base_offset <= offset]
    return below[-1] if below else segments[0]


def _batches(dir_path: Path, segments: list[SegmentInfo], end: int, fs: FileSystem) -> Iterator[Batch]:
    for segment in segments:
        if segment.base_offset >= end:
            return
        yield from iterate_batches(fs.mmap(names.log_file(dir_path, segment.base_offset)))


def _latest_offsets(
    dir_path: Path, segments: list[SegmentInfo], start: int, end: int, fs: FileSystem
) -> dict[int, int]:
    """Key hash -> its last offset in [start, end) (the cleaner's offset map, unbounded)."""
    latest: dict[int, int] = {}
    for batch in _batches(dir_path, segments, end, fs):
        if batch.is_control or batch.last_offset < start:
            continue
        for record in batch.records():
            if start <= record.offset < end and record.key is not None:
                latest[key_hash(record.key)] = record.offset
    return latest


def _superseded(
    dir_path: Path, segments: list[SegmentInfo], end: int, latest: dict[int, int], fs: FileSystem
) -> tuple[int, int, int]:
    """(records superseded, records read, estimated bytes freed) below `end`."""
    superseded = scanned = freed = 0
    for batch in _batches(dir_path, segments, end, fs):
        if batch.is_control:
            continue
        records = batch.records()
        gone = sum(1 for r in records if r.key is not None and latest.get(key_hash(r.key), -1) > r.offset)
        superseded += gone
        scanned += len(records)
        if records:
            freed += batch.size_in_bytes if gone == len(records) else batch.size_in_bytes * gone // len(records)
    return superseded, scanned, freed
