"""Moving a partition between log dirs (storage_core.move): every state a crash can leave is resumed
by planning again, and ends as one uninterrupted move does; power losses too; nothing is lost.

The partition (4 segments, indexes, snapshots, leader-epoch-checkpoint, partition.metadata, and
entries in all four checkpoints of its log dir) moves from `a` to `b`. A crash at operation n of the
move, then a fresh plan and apply (the same command again), must leave `b` holding exactly the
source's files and entries, and `a` neither the partition nor its entries.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from storage_core import names
from storage_core.checkpoint import read_offset_checkpoint, write_offset_checkpoint
from storage_core.fs import FaultInjectingFileSystem, FileSystem, SimulatedCrash
from storage_core.move import MoveError, MoveStep, apply_move, plan_move
from storage_core.names import TopicPartition
from storage_core.partition_metadata import PartitionMetadata, write_partition_metadata
from tests.builders.log_dir import LogDirBuilder, kafka_log_dir
from tests.faults import PowerLossFileSystem

TP = TopicPartition("orders", 0)
Entries = dict[str, dict[TopicPartition, int]]
Expected = tuple[dict[str, str], Entries, Entries]
ID = "0123456789abcdef0123456789abcdef"


def _build(root: Path) -> tuple[Path, Path]:
    builder = LogDirBuilder(root / "a")
    part = builder.partition("orders", 0, segments=4)
    write_partition_metadata(part / names.PARTITION_METADATA, PartitionMetadata(0, "4L6g3nShT-eMCtK--X86sw"))
    builder.partition("other", 0, segments=1)
    builder.checkpoints()
    for name in (names.REPLICATION_OFFSET_CHECKPOINT, names.CLEANER_OFFSET_CHECKPOINT):
        write_offset_checkpoint(builder.path / name, {TP: 40, TopicPartition("other", 0): 10})
    write_offset_checkpoint(builder.path / names.LOG_START_OFFSET_CHECKPOINT, {TP: 3})
    b = kafka_log_dir(root / "b")
    write_offset_checkpoint(b / names.RECOVERY_POINT_CHECKPOINT, {TopicPartition("kept", 0): 7})
    return builder.path, b


def _tree(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def _entries(log_dir: Path) -> Entries:
    return {
        name: read_offset_checkpoint(log_dir / name)
        for name in (
            names.RECOVERY_POINT_CHECKPOINT,
            names.LOG_START_OFFSET_CHECKPOINT,
            names.REPLICATION_OFFSET_CHECKPOINT,
            names.CLEANER_OFFSET_CHECKPOINT,
        )
        if (log_dir / name).exists()
    }


def _move(a: Path, b: Path, fs: FileSystem | None = None) -> None:
    apply_move(plan_move(TP, a, b, unique_id=ID, fs=fs), fs=fs)


@pytest.fixture
def expected(tmp_path: Path) -> Expected:
    """The end state of an uninterrupted move: b's partition files, and both dirs' checkpoints."""
    a, b = _build(tmp_path / "reference")
    source = _tree(a / str(TP))
    _move(a, b)
    assert _tree(b / str(TP)) == source
    assert not (a / str(TP)).exists()
    assert [p.name for p in a.iterdir() if p.name.startswith("orders-0")] == []
    return source, _entries(a), _entries(b)


def _operations(root: Path) -> int:
    a, b = _build(root)
    counting = FaultInjectingFileSystem()
    _move(a, b, counting)
    shutil.rmtree(root)
    return len(counting.operations)


def test_an_uninterrupted_move_carries_the_files_and_the_checkpoint_entries(expected: Expected) -> None:
    _, a_entries, b_entries = expected
    assert all(TP not in entries for entries in a_entries.values())
    assert b_entries[names.RECOVERY_POINT_CHECKPOINT] == {TopicPartition("kept", 0): 7, TP: 40}
    assert b_entries[names.LOG_START_OFFSET_CHECKPOINT] == {TP: 3}
    assert b_entries[names.REPLICATION_OFFSET_CHECKPOINT] == {TP: 40}
    assert a_entries[names.REPLICATION_OFFSET_CHECKPOINT] == {TopicPartition("other", 0): 10}


@pytest.mark.parametrize("mode", ["crash", "power-loss"])
def test_a_crash_at_every_operation_is_resumed_to_the_same_end(tmp_path: Path, expected: Expected, mode: str) -> None:
    source, a_entries, b_entries = expected
    total = _operations(tmp_path / "count")
    assert total > 20
    for n in range(1, total + 1):
        a, b = _build(tmp_path / f"at-{n}")
        fs = PowerLossFileSystem(fail_at=n) if mode == "power-loss" else FaultInjectingFileSystem(fail_at=n)
        with pytest.raises(SimulatedCrash):
            _move(a, b, fs)
        if mode == "power-loss":
            fs.power_loss()
        # Nothing is lost at any point: one dir holds the whole partition as it was.
        holders = [d / str(TP) for d in (a, b) if (d / str(TP)).is_dir() and _tree(d / str(TP)) == source]
        assert holders, f"crash at {n}: no dir holds the whole partition"
        _move(a, b)  # the same command again
        assert _tree(b / str(TP)) == source, n
        assert (_entries(a), _entries(b)) == (a_entries, b_entries), n
        assert sorted(p.name for p in a.iterdir() if p.name.startswith("orders-0")) == [], n
        assert sorted(p.name for p in b.iterdir() if p.name.startswith("orders-0")) == ["orders-0"], n


def test_resuming_picks_up_the_step_the_dirs_show(tmp_path: Path) -> None:
    a, b = _build(tmp_path)
    assert plan_move(TP, a, b, unique_id=ID).step is MoveStep.COPY
    shutil.copytree(a / str(TP), b / str(TP))  # as after step 4
    assert plan_move(TP, a, b, unique_id=ID).step is MoveStep.RETIRE_SOURCE
    (b / str(TP) / "00000000000000000000.log").write_bytes(b"not the same")
    with pytest.raises(MoveError, match="differ"):
        plan_move(TP, a, b, unique_id=ID)
