"""`logkeeper recover` end to end on a real local SparkSession and real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobs import recover
from storage_core import names
from storage_core.checkpoint import read_offset_checkpoint
from storage_core.clean_shutdown import read_clean_shutdown
from storage_core.names import TopicPartition
from storage_core.records.batch import Record, build_batch
from tests.builders.log_dir import LogDirBuilder
from tests.jobs.conftest import MASTER, REPO

pytestmark = pytest.mark.spark


def _state(root: Path) -> dict[str, bytes]:
    """Every file of the log dirs under `root` (not the job's warehouse or result files)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".lock" and p.relative_to(root).parts[0] in ("d1", "d2", "d")
    }


def _recover_in_a_process(log_dirs: list[Path], master: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m jobs recover` over `log_dirs` in its own process, `env` added to this one's."""
    return subprocess.run(
        [sys.executable, "-m", "jobs", "recover", "--log-dirs", ",".join(map(str, log_dirs)), "--master", master],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **env},
        timeout=300,
    )


@pytest.fixture
def crashed_log_dirs(tmp_path: Path) -> list[Path]:
    """Two log dirs after an unclean shutdown: a torn tail, a leftover .cleaned, a stale checkpoint."""
    first = LogDirBuilder(tmp_path / "d1")
    orders = first.partition("orders", 0, segments=3)
    first.partition("orders", 1, segments=1)
    first.checkpoints()
    with names.log_file(orders, 20).open("ab") as f:
        f.write(build_batch([Record(30, 1, b"k", b"torn" * 50)], base_offset=30)[:-17])
    Path(str(names.log_file(orders, 0)) + ".cleaned").write_bytes(b"partial clean output")
    second = LogDirBuilder(tmp_path / "d2")
    second.partition("payments", 0, segments=2)
    return [first.path, second.path]


def test_recover_truncates_checkpoints_and_marks_clean(spark, crashed_log_dirs, tmp_path: Path) -> None:
    result_json = tmp_path / "result.json"
    dirs = ",".join(map(str, crashed_log_dirs))
    code = recover.main(["--log-dirs", dirs, "--master", MASTER, "--result-json", str(result_json)])
    assert code == 0
    result = json.loads(result_json.read_text())
    assert (result["job"], result["dry_run"]) == ("recover", False)
    rows = {(Path(p["log_dir"]).name, p["dir_name"]): p for p in result["partitions"]}
    assert set(rows) == {("d1", "orders-0"), ("d1", "orders-1"), ("d2", "payments-0")}
    orders = rows[("d1", "orders-0")]
    assert orders["status"] == "ok"
    assert orders["truncated_bytes"] > 0
    assert orders["log_end_offset"] == 30
    assert {a["kind"] for a in orders["actions"]} >= {"delete_cleaned_file", "truncate_segment", "recover_segment"}
    d1 = crashed_log_dirs[0]
    assert read_offset_checkpoint(d1 / names.RECOVERY_POINT_CHECKPOINT) == {
        TopicPartition("orders", 0): 30,
        TopicPartition("orders", 1): 10,
    }
    for log_dir in crashed_log_dirs:
        assert read_clean_shutdown(log_dir) is not None
    assert not list(d1.rglob("*.cleaned"))
    # A second run is a no-op.
    before = _state(tmp_path / "d1")
    assert recover.main(["--log-dirs", dirs, "--master", MASTER, "--result-json", str(result_json)]) == 0
    assert _state(tmp_path / "d1") == before
    assert all(p["actions"] == [] for p in json.loads(result_json.read_text())["partitions"])


def test_dry_run_changes_nothing(spark, crashed_log_dirs, tmp_path: Path) -> None:
    before = _state(tmp_path)
    result_json = tmp_path / "plan.json"
    args = ["--log-dirs", str(crashed_log_dirs[0]), "--master", MASTER, "--dry-run", "--result-json", str(result_json)]
    assert recover.main(args) == 0
    assert _state(tmp_path) == before
    plan = json.loads(result_json.read_text())
    assert plan["dry_run"] is True
    orders = next(p for p in plan["partitions"] if p["dir_name"] == "orders-0")
    assert orders["truncated_bytes"] > 0


def test_failed_partition_exits_1_and_keeps_the_dir_unclean(spark, tmp_path: Path) -> None:
    builder = LogDirBuilder(tmp_path / "d")
    builder.partition("ok", 0)
    bad = builder.path / "bad-0"
    bad.mkdir()
    txn = build_batch(
        [Record(0, 1, b"k", b"v")],
        base_offset=0,
        producer_id=5,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    plain = build_batch([Record(1, 1, b"k", b"v")], base_offset=1, producer_id=5, producer_epoch=0, base_sequence=1)
    names.log_file(bad, 0).write_bytes(txn + plain)  # a non-transactional batch inside an open transaction
    result_json = tmp_path / "r.json"
    assert recover.main(["--log-dirs", str(builder.path), "--master", MASTER, "--result-json", str(result_json)]) == 1
    rows = {p["dir_name"]: p for p in json.loads(result_json.read_text())["partitions"]}
    assert rows["bad-0"]["status"] == "failed"
    assert rows["bad-0"]["error_type"] == "InvalidTxnStateError"
    assert rows["ok-0"]["status"] == "ok"
    assert read_clean_shutdown(builder.path) is None


HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
time.sleep(120)
"""


def test_a_dir_locked_by_a_live_process_is_refused_and_untouched(crashed_log_dirs, tmp_path: Path) -> None:
    before = _state(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(crashed_log_dirs[1] / ".lock")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        result = _recover_in_a_process(crashed_log_dirs, MASTER)
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 3
    assert "locked by a live process" in result.stderr
    assert "Traceback" not in result.stderr
    assert _state(tmp_path) == before


@pytest.mark.parametrize(
    "args",
    [["--log-dirs", "/nonexistent-dir"], ["--bogus"], ["--log-dirs", ".", "--server-properties", "/nope"], []],
    ids=["missing dir", "unknown flag", "missing properties", "no dirs"],
)
def test_bad_arguments_exit_2_with_one_line(args: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "jobs", "recover", *args], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_server_property_is_a_config_error(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("log.dirs=/tmp\nlog.retension.hours=5\n")
    result = subprocess.run(
        [sys.executable, "-m", "jobs", "recover", "--server-properties", str(props)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "did you mean log.retention.hours" in result.stderr


def test_executors_on_the_pure_python_core_say_so_in_their_progress_lines(crashed_log_dirs, tmp_path: Path) -> None:
    # LOGKEEPER_PURE_PYTHON=1 stands for an executor without the compiled core: the job still
    # recovers, and each partition's line says which implementation did the work.
    result = _recover_in_a_process(crashed_log_dirs, "local", LOGKEEPER_PURE_PYTHON="1", PYTHONPATH=str(REPO))
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == 3
    assert all(line.endswith(" [storage_core: pure Python (LOGKEEPER_PURE_PYTHON=1)]") for line in lines), lines
    assert read_clean_shutdown(crashed_log_dirs[0]) is not None
