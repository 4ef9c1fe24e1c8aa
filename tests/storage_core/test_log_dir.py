"""A whole log dir's recovery (marker, partitions, checkpoints) crashed at every mutating operation."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage_core import names
from storage_core.checkpoint import read_offset_checkpoint, write_offset_checkpoint
from storage_core.clean_shutdown import read_clean_shutdown, write_clean_shutdown
from storage_core.fs import FaultInjectingFileSystem, FileSystem, LocalFileSystem, SimulatedCrash
from storage_core.loader import LoadOptions, load_partition
from storage_core.log_dir import PartitionOutcome, close_log_dir, open_log_dir
from storage_core.names import TopicPartition
from storage_core.records.batch import Record, build_batch

T0 = 1_700_000_000_000


def _recover_log_dir(log_dir: Path, fs: FileSystem) -> None:
    """The recover job's sequence for one log dir, without Spark."""
    state = open_log_dir(log_dir, fs=fs)
    outcomes = []
    for part in sorted(p for p in log_dir.iterdir() if p.is_dir()):
        tp = names.parse_partition_dir_name(part.name).topic_partition
        result = load_partition(
            part,
            LoadOptions(
                had_clean_shutdown=state.had_clean_shutdown,
                recovery_point=state.recovery_points.get(tp, 0),
                log_start_offset=state.log_start_offsets.get(tp, 0),
                now_ms=T0,
                quarantine_dir=log_dir.parent / "quarantine" / part.name,
            ),
            fs=fs,
        )
        outcomes.append(
            PartitionOutcome(tp, True, result.log_start_offset, result.log_end_offset, result.first_segment_base_offset)
        )
    close_log_dir(state, outcomes, fs=fs)


def _make(root: Path) -> Path:
    log_dir = root / "logs"
    for topic, count in (("a", 25), ("b", 7)):
        part = log_dir / f"{topic}-0"
        part.mkdir(parents=True)
        for base in range(0, count, 10):
            data = b"".join(
                build_batch([Record(o, T0 + o, b"k%d" % o, b"v" * 40)], base_offset=o)
                for o in range(base, min(count, base + 10))
            )
            names.log_file(part, base).write_bytes(data)
    with names.log_file(log_dir / "a-0", 20).open("ab") as f:
        f.write(b"\x00" * 50)  # a zero-filled preallocated tail
    write_offset_checkpoint(
        log_dir / names.RECOVERY_POINT_CHECKPOINT, {TopicPartition("a", 0): 5, TopicPartition("gone", 3): 9}
    )
    return log_dir


def _state(log_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(log_dir)): p.read_bytes() for p in sorted(log_dir.rglob("*")) if p.is_file()}


def test_uninterrupted_run_checkpoints_and_marks_clean(tmp_path: Path) -> None:
    log_dir = _make(tmp_path)
    _recover_log_dir(log_dir, LocalFileSystem())
    assert read_offset_checkpoint(log_dir / names.RECOVERY_POINT_CHECKPOINT) == {
        TopicPartition("a", 0): 25,
        TopicPartition("b", 0): 7,
    }
    assert read_clean_shutdown(log_dir) is not None


def test_a_clean_marker_is_deleted_before_any_partition_is_touched(tmp_path: Path) -> None:
    log_dir = _make(tmp_path)
    write_clean_shutdown(log_dir)
    fs = FaultInjectingFileSystem(fail_at=2)  # right after the marker's deletion
    with pytest.raises(SimulatedCrash):
        _recover_log_dir(log_dir, fs)
    assert fs.operations[0][0] == "delete"
    assert read_clean_shutdown(log_dir) is None


def test_crash_at_every_mutating_operation_then_rerun_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    reference = _make(tmp_path / "reference")
    counting = FaultInjectingFileSystem()
    _recover_log_dir(reference, counting)
    expected = _state(reference)
    for n in range(1, len(counting.operations) + 1):
        log_dir = _make(tmp_path / f"crash-{n}")
        with pytest.raises(SimulatedCrash):
            _recover_log_dir(log_dir, FaultInjectingFileSystem(fail_at=n))
        _recover_log_dir(log_dir, LocalFileSystem())
        assert _state(log_dir) == expected, f"crash at operation {n}: {counting.operations[n - 1]}"
