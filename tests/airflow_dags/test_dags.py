"""The DAGs, in Airflow's own virtualenv (.venv-airflow): they import cleanly and the stats DAG runs.

Run by `./dev test` with `.venv-airflow/bin/python -m pytest tests/airflow_dags` (Airflow and its
Spark provider cannot share pyspark's virtualenv).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from airflow.dag_processing.dagbag import DagBag

from tests.lock_holder import hold_log_dir_lock

REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "airflow_dags"
PIPELINE_PYTHON = REPO / ".venv" / "bin" / "python"


@pytest.fixture(scope="module")
def dagbag() -> DagBag:
    return DagBag(dag_folder=str(DAGS))


def test_no_import_errors(dagbag: DagBag) -> None:
    assert dagbag.import_errors == {}


def test_the_four_dags(dagbag: DagBag) -> None:
    assert set(dagbag.dag_ids) == {
        "logkeeper_nightly",
        "logkeeper_stats_hourly",
        "logkeeper_recover_manual",
        "logkeeper_scrub_daily",
    }
    for dag in dagbag.dags.values():
        assert dag.tags
        assert dag.catchup is False
        assert dag.doc_md
    assert dagbag.dags["logkeeper_recover_manual"].params["dry_run"] is True
    assert [t.task_id for t in dagbag.dags["logkeeper_nightly"].tasks] == ["list_log_dirs", "maintain"]
    scrub = dagbag.dags["logkeeper_scrub_daily"]
    assert [t.task_id for t in scrub.tasks] == ["list_log_dirs", "scrub"]
    assert scrub.params["max_bytes_per_second"] == 50 * 1024 * 1024


def test_jobs_get_the_topic_config_file_of_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(DAGS))
    try:
        from _logkeeper import submit
    finally:
        sys.path.remove(str(DAGS))
    monkeypatch.setenv("LOGKEEPER_WAREHOUSE", "/wh")
    monkeypatch.delenv("LOGKEEPER_SPARK_MASTER", raising=False)
    monkeypatch.delenv("LOGKEEPER_TOPIC_CONFIG", raising=False)
    assert submit("maintain", "--log-dirs", "/d").endswith("maintain --warehouse /wh --log-dirs /d")
    monkeypatch.setenv("LOGKEEPER_TOPIC_CONFIG", "/etc/kafka/topics.txt")
    assert submit("maintain", "--log-dirs", "/d").endswith(
        "maintain --warehouse /wh --topic-config /etc/kafka/topics.txt --log-dirs /d"
    )


def test_dag_files_import_only_airflow_and_the_standard_library() -> None:
    for path in DAGS.glob("*.py"):
        text = path.read_text()
        for heavy in ("pyspark", "storage_core", "deltalake", "great_expectations", "import jobs"):
            assert heavy not in text, (path.name, heavy)


def _pipeline(code: str, *args: str) -> str:
    """Run `code` in logkeeper's own virtualenv (Airflow's has no pyspark, deltalake or storage_core)."""
    result = subprocess.run(
        [str(PIPELINE_PYTHON), "-c", code, *args], cwd=REPO, check=True, capture_output=True, text=True
    )
    return result.stdout


_RUN_IDS = (
    "import sys, pathlib, json; from jobs._delta import read_table; "
    "print(json.dumps(sorted(set(read_table(pathlib.Path(sys.argv[1])).column(sys.argv[2]).to_pylist()))))"
)


@pytest.fixture
def live_broker() -> Iterator[Callable[[Path], None]]:
    """`live_broker(log_dir)`: a process holds the log dir's `.lock` as a running broker does."""
    holders: list[subprocess.Popen[str]] = []
    yield lambda log_dir: holders.append(hold_log_dir_lock(log_dir))
    for holder in holders:
        holder.kill()
        holder.wait()


def _airflow(tmp_path: Path, log_dirs: list[Path], *argv: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "LOGKEEPER_HOME": str(REPO),
        "LOGKEEPER_LOG_DIRS": ",".join(map(str, log_dirs)),
        "LOGKEEPER_WAREHOUSE": str(tmp_path / "warehouse"),
        "LOGKEEPER_SPARK_MASTER": "local[2]",
    }
    airflow = str(Path(sys.executable).parent / "airflow")
    if not (tmp_path / "airflow").exists():
        subprocess.run([airflow, "db", "migrate"], env=env, check=True, capture_output=True)
    return subprocess.run([airflow, *argv], env=env, capture_output=True, text=True, check=False)


def test_stats_dag_runs_end_to_end_beside_a_live_broker(tmp_path: Path, live_broker) -> None:
    logs = tmp_path / "logs"
    _pipeline("import sys, pathlib; from jobs.demo import generate; generate(pathlib.Path(sys.argv[1]))", str(logs))
    log_dirs = sorted(p for p in logs.iterdir() if p.is_dir())
    live_broker(log_dirs[0])
    result = _airflow(tmp_path, log_dirs, "dags", "test", "logkeeper_stats_hourly", "2026-11-22")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    run_ids = json.loads(_pipeline(_RUN_IDS, str(tmp_path / "warehouse" / "segment_stats"), "run_id"))
    assert len(run_ids) == 1
    assert run_ids[0].startswith("manual__")  # Airflow's run id, in the characters --run-id takes
    lives = json.loads(_pipeline(_RUN_IDS, str(tmp_path / "warehouse" / "segment_stats"), "live"))
    assert lives == [False, True]


def test_scrub_dag_runs_one_throttled_task_per_log_dir(tmp_path: Path, live_broker) -> None:
    build = (
        "import sys, pathlib; from tests.builders.log_dir import LogDirBuilder\n"
        "for name in ('a', 'b'):\n"
        "    builder = LogDirBuilder(pathlib.Path(sys.argv[1]) / name)\n"
        "    builder.partition('orders', 0, segments=3)\n"
        "    builder.checkpoints()\n"
    )
    _pipeline(build, str(tmp_path / "logs"))
    log_dirs = [tmp_path / "logs" / "a", tmp_path / "logs" / "b"]
    live_broker(log_dirs[1])
    result = _airflow(
        tmp_path,
        log_dirs,
        "dags",
        "test",
        "logkeeper_scrub_daily",
        "2026-11-22",
        "-c",
        json.dumps({"max_bytes_per_second": 5_000_000, "max_duration_s": 600}),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    run_ids = json.loads(_pipeline(_RUN_IDS, str(tmp_path / "warehouse" / "maintenance_log"), "run_id"))
    assert [r.rsplit(".", 1)[1] for r in run_ids] == ["0", "1"]
    cursors = sorted(p.name for p in (tmp_path / "warehouse" / "_scrub_cursors").rglob("*.json"))
    assert cursors == ["orders-0.json", "orders-0.json"]
