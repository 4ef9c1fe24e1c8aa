"""The fleet-wide audit: broker identity on every row, idempotent retries by run id, concurrent
writers, date partitioning, and `logkeeper audit --optimize`."""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import DeltaTable

from jobs import audit, recover, stats
from jobs._audit import ROW_KEY, write_maintenance_log
from jobs._common import ActionRow, JobSummary, PartitionRow
from jobs._delta import read_table
from jobs._fleet import LogDirIdentity, read_identity
from jobs._tables import MAINTENANCE_LOG, SEGMENT_STATS
from jobs.demo import generate
from storage_core.meta_properties import MetaProperties, write_meta_properties
from storage_core.names import META_PROPERTIES
from tests.jobs.conftest import MASTER, REPO

CLUSTER = "4L6g3nShT-eMCtK--X86sw"


def _brokers(root: Path) -> list[Path]:
    """The demo's two crashed log dirs, as log dirs of brokers 1 (KRaft) and 2 (ZooKeeper mode)."""
    log_dirs = generate(root / "logs")
    write_meta_properties(log_dirs[0] / META_PROPERTIES, MetaProperties(1, cluster_id=CLUSTER, node_id=1))
    write_meta_properties(log_dirs[1] / META_PROPERTIES, MetaProperties(0, cluster_id=CLUSTER, broker_id=2))
    return log_dirs


def test_identity_comes_from_meta_properties(tmp_path: Path) -> None:
    kraft, zookeeper, blank = [*_brokers(tmp_path), tmp_path / "new-disk"]
    blank.mkdir()
    host = socket.gethostname()
    assert read_identity(kraft) == LogDirIdentity(CLUSTER, 1, host)
    assert read_identity(zookeeper) == LogDirIdentity(CLUSTER, 2, host)
    assert read_identity(blank, host="b9") == LogDirIdentity(None, None, "b9")
    (blank / META_PROPERTIES).write_text("version=7\n")  # corrupt: unknown, never a crash
    assert read_identity(blank, host="b9") == LogDirIdentity(None, None, "b9")


@pytest.mark.spark
@pytest.mark.slow
def test_rows_carry_the_fleet_columns_and_a_retry_replaces_its_rows(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log_dirs = _brokers(tmp_path)
    monkeypatch.chdir(tmp_path)
    relative = ",".join(os.path.relpath(d, tmp_path) for d in log_dirs) + ",./logs/../logs/kafka-logs-1/"
    argv = ["--log-dirs", relative, "--master", MASTER, "--warehouse", "wh", "--run-id", "airflow-run-1"]
    assert recover.main(argv) == 0
    assert stats.main(argv) == 0
    wh = tmp_path / "wh"
    counts = {name: read_table(wh / name).num_rows for name in (MAINTENANCE_LOG, SEGMENT_STATS)}
    assert all(counts.values())
    for name in (MAINTENANCE_LOG, SEGMENT_STATS):
        rows = read_table(wh / name).to_pylist()
        assert {(r["log_dir"], r["cluster_id"], r["node_id"], r["host"]) for r in rows} == {
            (str(log_dirs[0]), CLUSTER, 1, socket.gethostname()),
            (str(log_dirs[1]), CLUSTER, 2, socket.gethostname()),
        }
        assert {r["run_id"] for r in rows} == {"airflow-run-1"}
        assert DeltaTable(str(wh / name)).metadata().partition_columns == ["date"]

    changes = [r for r in read_table(wh / MAINTENANCE_LOG).to_pylist() if r["action"] != "partition"]
    assert changes  # the crashed demo dirs needed repairs

    # The retry of the same run (same --run-id): the record of what the first try changed is kept and
    # replaced, not repeated; the only rows it adds are the file changes only it made (it deletes the
    # clean-shutdown marker the first try's recovery left, one row per log dir). A third try adds
    # nothing: the tables hold the same number of rows.
    assert recover.main(argv) == 0
    assert stats.main(argv) == 0
    kept = [r for r in read_table(wh / MAINTENANCE_LOG).to_pylist() if r["action"] != "partition"]
    retry_only = [r for r in kept if (r["job"], r["action"]) == ("recover", "delete_clean_shutdown")]
    assert sorted(r["log_dir"] for r in retry_only) == sorted(map(str, log_dirs))
    assert sorted(_key(r) for r in kept if r not in retry_only) == sorted(map(_key, changes))
    counts = {name: read_table(wh / name).num_rows for name in counts}
    assert recover.main(argv) == 0
    assert stats.main(argv) == 0
    assert {name: read_table(wh / name).num_rows for name in counts} == counts
    # Another run adds its own rows.
    assert stats.main([*argv[:-1], "airflow-run-2"]) == 0
    assert read_table(wh / SEGMENT_STATS).num_rows == 2 * counts[SEGMENT_STATS]

    # One Airflow run over a fleet: each broker's job shares the run id and keeps the others' rows.
    for log_dir in log_dirs:
        assert stats.main(["--log-dirs", str(log_dir), "--master", MASTER, "--warehouse", "wh2", "--run-id", "f"]) == 0
    assert {r["log_dir"] for r in read_table(tmp_path / "wh2" / SEGMENT_STATS).to_pylist()} == set(map(str, log_dirs))

    # Spark reads the partitioned tables (the date column comes from the partition directories).
    grouped = audit.run_query(wh, "bytes_per_topic", engine="spark", spark=spark).to_pylist()
    assert {r["topic"] for r in grouped} == {"clicks", "orders", "accounts"}
    frame = spark.read.option("basePath", str(wh / SEGMENT_STATS)).parquet(
        *DeltaTable(str(wh / SEGMENT_STATS)).file_uris()
    )
    assert frame.select("date").distinct().count() == 1

    # Compact and vacuum: fewer files, the same rows.
    files_before = len(DeltaTable(str(wh / SEGMENT_STATS)).file_uris())
    log_rows = read_table(wh / MAINTENANCE_LOG).num_rows
    assert audit.main(["--warehouse", str(wh), "--optimize", "--retention-hours", "0"]) == 0
    assert len(DeltaTable(str(wh / SEGMENT_STATS)).file_uris()) < files_before
    assert read_table(wh / SEGMENT_STATS).num_rows == 2 * counts[SEGMENT_STATS]
    assert read_table(wh / MAINTENANCE_LOG).num_rows == log_rows
    assert not any(p.suffix == ".parquet" and "date=" not in str(p) for p in (wh / SEGMENT_STATS).rglob("*"))


def _key(row: dict[str, object]) -> tuple[object, ...]:
    """What makes a maintenance-log row the same row in a retry (its other fields are the retry's)."""
    return tuple(str(row[k]) for k in ROW_KEY)


def test_a_retry_replaces_the_status_it_reports_again(tmp_path: Path) -> None:
    part = PartitionRow("/data/d1", "t-0", "t", 0, "failed", 1, 1, error_type="OSError", error_message="EIO")
    truncated = ActionRow("truncate_segment", "00000000000000000000.log", 0, 17, "torn batch")
    write_maintenance_log(
        tmp_path, JobSummary("recover", "r1", False, (dataclasses.replace(part, actions=(truncated,)),))
    )
    write_maintenance_log(tmp_path, JobSummary("recover", "r1", False, (dataclasses.replace(part, status="ok"),)))
    rows = read_table(tmp_path / MAINTENANCE_LOG).to_pylist()
    assert sorted((r["action"], r["status"]) for r in rows) == [("partition", "ok"), ("truncate_segment", "failed")]


_WRITER = """
import datetime, sys
from pathlib import Path
from jobs._audit import ROW_KEY, write_maintenance_log
from jobs._results import JobSummary, PartitionRow

warehouse, writer = Path(sys.argv[1]), sys.argv[2]
for run in range(int(sys.argv[3])):
    rows = tuple(PartitionRow(f"/data/{writer}", f"t-{p}", "t", p, "ok", 1, 1) for p in range(3))
    write_maintenance_log(warehouse, JobSummary("recover", f"{writer}-{run}", False, rows))
    if run == 0:  # a retry of the first run while the others write: it replaces, never duplicates
        write_maintenance_log(warehouse, JobSummary("recover", f"{writer}-0", False, rows))
"""


def test_concurrent_writers_lose_no_rows(tmp_path: Path) -> None:
    writers, runs = 4, 4
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(tmp_path / "wh"), f"w{i}", str(runs)],
            cwd=REPO,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(writers)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
    rows = read_table(tmp_path / "wh" / MAINTENANCE_LOG).to_pylist()
    assert len(rows) == writers * runs * 3
    assert {r["run_id"] for r in rows} == {f"w{i}-{run}" for i in range(writers) for run in range(runs)}


def test_optimize_without_tables_is_a_usage_error(tmp_path: Path) -> None:
    assert audit.main(["--warehouse", str(tmp_path), "--optimize"]) == 2
    assert audit.main(["--warehouse", str(tmp_path), "--optimize", "--retention-hours", "-1"]) == 2
