from __future__ import annotations

import dataclasses
import errno
from collections.abc import Callable
from pathlib import Path

import pytest

from jobs._log_dirs import PartitionTask, close_log_dirs, discover_log_dirs, discover_partitions, locked_log_dirs
from jobs._results import ActionRow, PartitionRow
from storage_core import names
from storage_core.checkpoint import read_offset_checkpoint, write_offset_checkpoint
from storage_core.errors import LogDirLockedError
from storage_core.fs import LocalFileSystem
from storage_core.log_dir import open_log_dir
from storage_core.names import TopicPartition
from tests.builders.log_dir import kafka_log_dir
from tests.jobs.conftest import locked_by_another_process

UUID = "0123456789abcdef0123456789abcdef"


def _partition(log_dir: Path, name: str, size: int) -> None:
    path = log_dir / name
    path.mkdir(parents=True)
    (path / "00000000000000000000.log").write_bytes(b"x" * size)
    (path / "00000000000000000000.index").write_bytes(b"")
    (path / "leader-epoch-checkpoint").write_text("0\n0\n")


@pytest.fixture
def log_dirs(tmp_path: Path) -> list[Path]:
    first, second = tmp_path / "d1", tmp_path / "d2"
    _partition(first, "orders-0", 300)
    _partition(first, "orders-1", 100)
    _partition(first, f"orders-2.{UUID}-delete", 50)
    _partition(first, f"orders-3.{UUID}-future", 700)
    _partition(first, f"orders-4.{UUID}-stray", 10)
    _partition(first, "__cluster_metadata-0", 10_000)
    (first / "remote-log-index-cache").mkdir()
    (first / "lost+found").mkdir()
    (first / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    (first / "meta.properties").write_text("version=1\n")
    _partition(second, "__consumer_offsets-49", 500)
    return [first, second]


def test_discovery_finds_every_kind_largest_first_and_reports_junk(log_dirs: list[Path]) -> None:
    first, second = log_dirs
    found, problems = discover_partitions(log_dirs)
    checkpoint = len("0\n0\n")  # sizes are every file's: the .log, the empty .index, the checkpoint
    assert found == [
        PartitionTask(str(first), f"orders-3.{UUID}-future", "orders", 3, "future", 700 + checkpoint),
        PartitionTask(str(second), "__consumer_offsets-49", "__consumer_offsets", 49, "live", 500 + checkpoint),
        PartitionTask(str(first), "orders-0", "orders", 0, "live", 300 + checkpoint),
        PartitionTask(str(first), "orders-1", "orders", 1, "live", 100 + checkpoint),
        PartitionTask(str(first), f"orders-2.{UUID}-delete", "orders", 2, "delete", 50 + checkpoint),
        PartitionTask(str(first), f"orders-4.{UUID}-stray", "orders", 4, "stray", 10 + checkpoint),
    ]
    assert [(p.log_dir, p.dir_name, p.status, p.error_type) for p in problems] == [
        (str(first), "lost+found", "failed", "InvalidNameError")
    ]
    assert "lost+found" in problems[0].error_message


def test_jobs_skip_replicas_pending_deletion(log_dirs: list[Path]) -> None:
    found, rows = discover_log_dirs(log_dirs)
    assert f"orders-2.{UUID}-delete" not in {p.dir_name for p in found}
    assert {(r.dir_name, r.status) for r in rows} == {("lost+found", "failed"), (f"orders-2.{UUID}-delete", "skipped")}


class _UnlistableDir(LocalFileSystem):
    """A file system on which one directory cannot be listed (EACCES)."""

    def __init__(self, unlistable: Path) -> None:
        self._unlistable = unlistable

    def list_dir(self, path: Path) -> list[str]:
        if Path(path) == self._unlistable:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return super().list_dir(path)


def test_an_unlistable_partition_dir_is_a_failed_row(log_dirs: list[Path]) -> None:
    first = log_dirs[0]
    found, problems = discover_partitions([first], fs=_UnlistableDir(first / "orders-1"))
    assert "orders-1" not in {p.dir_name for p in found}
    assert ("orders-1", "failed", "PermissionError") in {(p.dir_name, p.status, p.error_type) for p in problems}
    found, problems = discover_partitions([first], fs=_UnlistableDir(first))
    assert (found, [(p.dir_name, p.error_type) for p in problems]) == ([], [("", "PermissionError")])


def test_locks_are_held_for_the_block_and_released_after(tmp_path: Path) -> None:
    first, second = kafka_log_dir(tmp_path / "d1"), kafka_log_dir(tmp_path / "d2")
    with locked_log_dirs([first, second]) as locks:
        assert [lock.log_dir for lock in locks] == [first, second]
        assert locked_by_another_process(first)
        assert locked_by_another_process(second)
    assert not locked_by_another_process(first)
    assert not locked_by_another_process(second)


def test_a_held_lock_refuses_and_releases_the_locks_already_taken(
    tmp_path: Path, hold_lock: Callable[[Path], None]
) -> None:
    free, held = kafka_log_dir(tmp_path / "free"), kafka_log_dir(tmp_path / "held")
    hold_lock(held)
    locking = locked_log_dirs([free, held])
    with pytest.raises(LogDirLockedError) as error:
        locking.__enter__()
    assert error.value.path == held
    assert not locked_by_another_process(free)
    assert [p.name for p in free.iterdir()] == ["meta.properties"]  # nothing touched: locks probed before any is taken


def test_only_the_live_dir_writes_its_partitions_checkpoint_entries(tmp_path: Path) -> None:
    log_dir = kafka_log_dir(tmp_path / "d")
    t0 = TopicPartition("t", 0)
    write_offset_checkpoint(log_dir / names.RECOVERY_POINT_CHECKPOINT, {t0: 200})
    write_offset_checkpoint(log_dir / names.LOG_START_OFFSET_CHECKPOINT, {t0: 150})
    state = open_log_dir(log_dir)
    live = PartitionRow(str(log_dir), "t-0", "t", 0, "ok", 0, 0, 150, 200, 100)
    stray = PartitionRow(str(log_dir), f"t-0.{UUID}-stray", "t", 0, "ok", 0, 0, 0, 100, 0)
    assert close_log_dirs({log_dir: state}, [live, stray], require_clean=False, offsets_unchanged=False).failures == []
    assert read_offset_checkpoint(log_dir / names.RECOVERY_POINT_CHECKPOINT) == {t0: 200}
    assert read_offset_checkpoint(log_dir / names.LOG_START_OFFSET_CHECKPOINT) == {t0: 150}
    assert (log_dir / names.CLEAN_SHUTDOWN_FILE).exists()

    # A dir renamed aside during the run writes nothing; a failed stray keeps the dir unclean.
    renamed = dataclasses.replace(
        live, actions=(ActionRow("rename_stray", "t-0", -1, 0, "stray", "rename", "t-0.x-stray"),)
    )
    failed_stray = dataclasses.replace(stray, status="failed")
    state = open_log_dir(log_dir)
    close_log_dirs({log_dir: state}, [renamed, failed_stray], require_clean=False, offsets_unchanged=False)
    assert read_offset_checkpoint(log_dir / names.RECOVERY_POINT_CHECKPOINT) == {}
    assert not (log_dir / names.CLEAN_SHUTDOWN_FILE).exists()
