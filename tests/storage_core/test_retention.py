"""Kafka's retention scenarios (kafka-maintenance.md §8.2) against plan_retention / apply_retention."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from storage_core import names
from storage_core.config import LogConfig
from storage_core.fs import FaultInjectingFileSystem, LocalFileSystem, SimulatedCrash
from storage_core.leader_epoch import EpochEntry, read_leader_epoch_checkpoint, write_leader_epoch_checkpoint
from storage_core.records.batch import Record, build_batch
from storage_core.retention import RetentionReason, apply_retention, clamp_high_watermark, plan_retention
from tests.builders.log_dir import recover_unclean

NOW = 1_800_000_000_000
DELETE = LogConfig(retention_ms=-1, retention_bytes=-1)
FS = LocalFileSystem()


def make_log(path: Path, *, records: int, per_segment: int, ts=lambda o: NOW, active_empty: bool = False) -> int:
    """One-record batches at offsets 0..records-1, `per_segment` per segment; returns one batch's size."""
    path.mkdir(parents=True, exist_ok=True)
    size = 0
    for base in range(0, records, per_segment):
        batches = [
            build_batch([Record(o, ts(o), b"k", b"v" * 20)], base_offset=o)
            for o in range(base, min(records, base + per_segment))
        ]
        size = len(batches[0])
        names.log_file(path, base).write_bytes(b"".join(batches))
    if active_empty:
        names.log_file(path, records).write_bytes(b"")
    recover_unclean(path, now_ms=NOW)
    return size


def bases(path: Path) -> list[int]:
    return sorted(names.offset_from_file_name(p.name) for p in path.glob("*.log"))


def run(path: Path, config: LogConfig, *, lso: int = 0, hw: int | None = 10**9, now: int = NOW):
    plan = plan_retention(path, config=config, log_start_offset=lso, high_watermark=hw, now_ms=now, fs=FS)
    apply_retention(plan, fs=FS)
    return plan


def test_size_retention_keeps_the_log_at_or_above_retention_bytes(tmp_path: Path) -> None:
    # testCleanupSegmentsToMaintainSize: 20 segments of 10 records, retention.bytes = 50s + 10 -> 6 left.
    size = make_log(tmp_path / "t-0", records=200, per_segment=10)
    plan = run(tmp_path / "t-0", replace(DELETE, retention_bytes=50 * size + 10))
    assert len(bases(tmp_path / "t-0")) == 6
    assert {d.reason for d in plan.deletions} == {RetentionReason.RETENTION_SIZE_BREACH}


@pytest.mark.parametrize(("retained_records", "segments_left"), [(10, 2), (15, 3)])
def test_size_retention_two_cases(tmp_path: Path, retained_records: int, segments_left: int) -> None:
    size = make_log(tmp_path / "t-0", records=15, per_segment=5)
    run(tmp_path / "t-0", replace(DELETE, retention_bytes=retained_records * size))
    assert len(bases(tmp_path / "t-0")) == segments_left


def test_time_retention_rolls_when_everything_expires(tmp_path: Path) -> None:
    make_log(tmp_path / "t-0", records=15, per_segment=5, ts=lambda o: 10)
    plan = run(tmp_path / "t-0", replace(DELETE, retention_ms=10_000))
    assert bases(tmp_path / "t-0") == [15]
    assert plan.new_log_start_offset == 15
    assert plan.log_end_offset == 15


def test_time_retention_keeps_fresh_segments(tmp_path: Path) -> None:
    make_log(tmp_path / "t-0", records=15, per_segment=5)
    assert run(tmp_path / "t-0", replace(DELETE, retention_ms=10**9)).deletions == ()
    assert len(bases(tmp_path / "t-0")) == 3


def test_time_retention_falls_back_to_mtime_without_timestamps(tmp_path: Path) -> None:
    make_log(tmp_path / "t-0", records=20, per_segment=10, ts=lambda o: -1)
    for log in (tmp_path / "t-0").glob("*.log"):
        os.utime(log, ns=(NOW * 1_000_000, NOW * 1_000_000))
    plan = run(tmp_path / "t-0", replace(DELETE, retention_ms=1000), now=NOW + 1001)
    assert [d.segment.base_offset for d in plan.deletions] == [0, 10]
    assert all(d.segment.timestamp_from_mtime for d in plan.deletions)


def test_policy_decides_which_passes_run(tmp_path: Path) -> None:
    for name, policy, lso, left in (
        ("compact", {"compact"}, 0, 3),
        ("both", {"compact", "delete"}, 0, 1),
        ("compact-lso", {"compact"}, 5, 2),
    ):
        path = tmp_path / f"{name}-0"
        make_log(path, records=15, per_segment=5, ts=lambda o: 10)
        run(path, replace(DELETE, retention_ms=10_000, cleanup_policy=frozenset(policy)), lso=lso)
        assert len(bases(path)) == left, name


@pytest.mark.parametrize("hw", [0, 3, 5, 9, 10, 12, 15])
def test_nothing_at_or_above_the_high_watermark_is_deleted(tmp_path: Path, hw: int) -> None:
    make_log(tmp_path / "t-0", records=15, per_segment=5, ts=lambda o: 10)
    plan = run(tmp_path / "t-0", replace(DELETE, retention_ms=0), hw=hw)
    remaining = bases(tmp_path / "t-0")
    assert remaining[0] <= hw
    assert all(b > hw for b in remaining[1:])
    assert plan.new_log_start_offset <= max(hw, 0)


def test_no_high_watermark_means_nothing_is_deleted(tmp_path: Path) -> None:
    make_log(tmp_path / "t-0", records=15, per_segment=5, ts=lambda o: 10)
    assert run(tmp_path / "t-0", replace(DELETE, retention_ms=0), hw=None).deletions == ()


@pytest.mark.parametrize(("lso", "left"), [(1, 3), (6, 2), (15, 1)])
def test_log_start_offset_breach(tmp_path: Path, lso: int, left: int) -> None:
    make_log(tmp_path / "t-0", records=15, per_segment=5)
    plan = run(tmp_path / "t-0", DELETE, lso=lso)
    assert len(bases(tmp_path / "t-0")) == left
    assert plan.new_log_start_offset == lso


def test_retention_is_idempotent_and_never_changes_the_log_end(tmp_path: Path) -> None:
    make_log(tmp_path / "t-0", records=25, per_segment=5, ts=lambda o: 10)
    first = run(tmp_path / "t-0", replace(DELETE, retention_ms=0))
    assert len(first.deletions) == 5
    second = run(tmp_path / "t-0", replace(DELETE, retention_ms=0))
    assert (second.deletions, second.log_end_offset) == ((), 25)


def test_deleted_files_and_snapshots_are_gone(tmp_path: Path) -> None:
    make_log(tmp_path / "t-0", records=15, per_segment=5)
    run(tmp_path / "t-0", DELETE, lso=10)
    left = sorted(p.name for p in (tmp_path / "t-0").iterdir())
    assert not [n for n in left if n.endswith(".deleted")]
    assert all(names.offset_from_file_name(n) >= 10 for n in left if n[0].isdigit())


def test_leader_epochs_follow_the_new_log_start(tmp_path: Path) -> None:
    make_log(tmp_path / "t-0", records=15, per_segment=5)
    epochs = tmp_path / "t-0" / names.LEADER_EPOCH_CHECKPOINT
    write_leader_epoch_checkpoint(epochs, [EpochEntry(0, 0), EpochEntry(1, 7), EpochEntry(2, 10)], fs=FS)
    run(tmp_path / "t-0", DELETE, lso=5)
    assert read_leader_epoch_checkpoint(epochs, fs=FS) == [EpochEntry(0, 5), EpochEntry(1, 7), EpochEntry(2, 10)]


def test_future_timestamps_are_reported(tmp_path: Path) -> None:
    make_log(tmp_path / "t-0", records=10, per_segment=5, ts=lambda o: NOW + 10**9 if o < 5 else 10)
    plan = plan_retention(
        tmp_path / "t-0",
        config=replace(DELETE, retention_ms=1000),
        log_start_offset=0,
        high_watermark=10,
        now_ms=NOW,
        fs=FS,
    )
    assert plan.future_timestamp_segments == (0,)
    assert plan.deletions == ()  # the future segment blocks the prefix


def test_dry_plan_lists_exactly_what_the_run_deletes(tmp_path: Path) -> None:
    size = make_log(tmp_path / "t-0", records=30, per_segment=5)
    config = replace(DELETE, retention_bytes=12 * size)
    plan = plan_retention(tmp_path / "t-0", config=config, log_start_offset=0, high_watermark=30, now_ms=NOW, fs=FS)
    before = bases(tmp_path / "t-0")
    apply_retention(plan, fs=FS)
    assert sorted(set(before) - set(bases(tmp_path / "t-0"))) == [d.segment.base_offset for d in plan.deletions]


def test_crash_at_every_operation_leaves_whole_segments_and_a_safe_start(tmp_path: Path) -> None:
    def fresh(name: str) -> Path:
        path = tmp_path / name / "t-0"
        make_log(path, records=20, per_segment=5, ts=lambda o: 10)
        return path

    config = replace(DELETE, retention_ms=0)
    counting = FaultInjectingFileSystem()
    reference = fresh("reference")
    plan = plan_retention(reference, config=config, log_start_offset=0, high_watermark=20, now_ms=NOW, fs=FS)
    apply_retention(plan, fs=counting)
    for n in range(1, len(counting.operations) + 1):
        path = fresh(f"crash-{n}")
        crash_plan = plan_retention(path, config=config, log_start_offset=0, high_watermark=20, now_ms=NOW, fs=FS)
        with pytest.raises(SimulatedCrash):
            apply_retention(crash_plan, fs=FaultInjectingFileSystem(fail_at=n))
        # A load (as the next recover, or the broker, would do) then a second retention run.
        result = recover_unclean(path, now_ms=NOW)
        assert result.log_start_offset == min(bases(path))  # never ahead of the first remaining offset
        assert result.log_end_offset == 20
        run(path, config, hw=20)
        assert bases(path) == bases(reference)


@pytest.mark.parametrize(
    ("checkpoint", "expected"),
    [(None, 10), (0, 10), (9, 10), (10, 10), (15, 15), (20, 20), (21, 20), (2**63 - 1, 20)],
)
def test_high_watermark_is_clamped_as_a_starting_broker_clamps_it(checkpoint: int | None, expected: int) -> None:
    assert clamp_high_watermark(checkpoint, 10, 20) == expected


def test_a_high_watermark_below_the_log_start_is_the_log_start_even_past_the_log_end() -> None:
    assert clamp_high_watermark(5, 30, 20) == 30  # Kafka tests the log start first
    assert clamp_high_watermark(None, 30, 20) == 30
