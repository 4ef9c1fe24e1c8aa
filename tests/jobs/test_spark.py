from __future__ import annotations

import dataclasses
import gc
import io
import sys
import time
from pathlib import Path

import pytest

from jobs._log_dirs import PartitionTask, discover_partitions
from jobs._results import EXIT_FAILED, PartitionRow, exit_code, failed_row
from jobs._spark import Progress, _ProgressMonitor, run_partition_tasks, spark_defaults
from storage_core.errors import CorruptRecordError, StorageError


def test_spark_defaults_reads_the_properties_file(tmp_path: Path) -> None:
    path = tmp_path / "spark-defaults.conf"
    path.write_text("# comment\nspark.master   local[3]\nspark.ui.enabled=false\n")
    assert spark_defaults(path) == {"spark.master": "local[3]", "spark.ui.enabled": "false"}
    assert spark_defaults(tmp_path / "missing.conf") == {}


@pytest.mark.spark
def test_session_settings_come_from_conf(spark) -> None:
    assert spark.sparkContext.master == "local[2]"
    assert spark.conf.get("spark.ui.enabled") == "false"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.sparkContext.getConf().get("spark.python.worker.reuse") == "true"
    # Workers over Unix domain sockets: loopback TCP stalled every task ~40 ms (bench/README.md).
    assert spark.sparkContext.getConf().get("spark.python.unix.domain.socket.enabled") == "true"


def count_files(task: PartitionTask) -> PartitionRow:
    """A trivial executor function: one partition's file count, or a failed row."""
    started = time.monotonic()
    path = Path(task.log_dir) / task.dir_name
    try:
        if (path / "poison").exists():
            raise CorruptRecordError("poisoned partition", path=path / "poison", position=0)
        files = len(list(path.iterdir()))
    except (StorageError, OSError) as exc:
        return failed_row(task, started, exc)
    elapsed = int((time.monotonic() - started) * 1000)
    return PartitionRow(
        task.log_dir, task.dir_name, task.topic, task.partition, "ok", task.size_bytes, elapsed, segments_deleted=files
    )


@pytest.mark.spark
def test_failed_partitions_are_rows_and_the_others_are_done(spark, tmp_path: Path, capsys) -> None:
    log_dir = tmp_path / "logs"
    for n, files in enumerate((3, 1, 2, 2)):
        partition = log_dir / f"t-{n}"
        partition.mkdir(parents=True)
        for i in range(files):
            (partition / f"{i:020d}.log").write_bytes(b"x" * (100 * (n + 1)))
    (log_dir / "t-1" / "poison").write_bytes(b"")
    tasks, problems = discover_partitions([log_dir])
    assert problems == []
    (log_dir / "t-2" / "00000000000000000000.log").unlink()
    (log_dir / "t-2" / "00000000000000000001.log").unlink()
    (log_dir / "t-2").rmdir()  # gone after discovery: the executor's OSError becomes a failed row
    capsys.readouterr()

    rows = run_partition_tasks(spark, tasks, count_files, description="count files")

    assert [r.dir_name for r in rows] == [t.dir_name for t in tasks]  # task order (largest first)
    by_name = {r.dir_name: r for r in rows}
    assert {name: (r.status, r.error_type) for name, r in by_name.items()} == {
        "t-0": ("ok", ""),
        "t-1": ("failed", "CorruptRecordError"),
        "t-2": ("failed", "FileNotFoundError"),
        "t-3": ("ok", ""),
    }
    assert (by_name["t-0"].segments_deleted, by_name["t-3"].segments_deleted) == (3, 2)
    assert exit_code(rows) == EXIT_FAILED
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    assert sorted(line.split()[0] for line in lines) == ["[1/4]", "[2/4]", "[3/4]", "[4/4]"]
    assert sorted(line.split()[1:3] for line in lines) == [
        ["t-0", "ok"],
        ["t-1", "failed"],
        ["t-2", "failed"],
        ["t-3", "ok"],
    ]
    assert spark.sparkContext.getLocalProperty("spark.job.description") is None


def frozen_objects(task: int) -> int:
    """An executor function: how many objects the worker's collector skips (frozen before the task)."""
    return gc.get_freeze_count()


@pytest.mark.spark
def test_workers_freeze_their_imports_before_the_first_task(spark) -> None:
    # Reused workers gc.collect() after every task; the import-time heap is frozen so it is not walked.
    assert all(count > 1000 for count in run_partition_tasks(spark, [1, 2, 3], frozen_objects, description="gc"))


@pytest.mark.spark
def test_no_tasks_runs_no_spark_job(spark) -> None:
    assert run_partition_tasks(spark, [], count_files, description="nothing") == []


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@dataclasses.dataclass
class _Feed:
    value: list[Progress | None]


def test_progress_on_a_terminal_prints_lines_above_a_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    feed = _Feed([])
    out = _Terminal()
    monkeypatch.setattr(sys, "stderr", out)  # the lines are log records on stderr, the bar is drawn on `out`
    monitor = _ProgressMonitor(feed, total=4, description="recover 4 partitions", log_lines=True, out=out)  # type: ignore[arg-type]
    with monitor:
        feed.value += [Progress("t-0", "ok", 2_000_000, 1000), None]  # None: a row without progress fields
    text = out.getvalue()
    assert "[1/4] t-0 ok 2000000 B 2.0 MB/s\n" in text
    assert "[###############...............] 2/4 recover 4 partitions" in text
    assert text.endswith("\r\x1b[K")  # the bar is cleared at the end
