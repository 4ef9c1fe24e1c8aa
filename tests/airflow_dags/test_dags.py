"""The DAGs, in Airflow's own virtualenv (.venv-airflow): they import cleanly and the stats DAG runs.

Run by `./dev test` with `.venv-airflow/bin/python -m pytest tests/airflow_dags` (Airflow and its
Spark provider cannot share pyspark's virtualenv).
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import sqlite3
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


@pytest.fixture(scope="module", autouse=True)
def _dags_folder_on_sys_path() -> Iterator[None]:
    """Airflow puts the DAGs folder on sys.path (the DAG files import `_logkeeper`); so do the tests."""
    sys.path.insert(0, str(DAGS))
    yield
    sys.path.remove(str(DAGS))


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
    assert [t.task_id for t in dagbag.dags["logkeeper_nightly"].tasks] == ["maintain"]  # no inventory
    scrub = dagbag.dags["logkeeper_scrub_daily"]
    assert [t.task_id for t in scrub.tasks] == ["list_log_dirs", "scrub"]
    assert scrub.params["max_bytes_per_second"] == 50 * 1024 * 1024


def test_the_fleet_dag_routes_each_broker_to_its_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inventory = tmp_path / "inventory.toml"
    inventory.write_text(
        '[[brokers]]\nid = 1\nhost = "kafka-1"\nlog_dirs = ["/data/a", "/data/b"]\n\n'
        '[[brokers]]\nid = 2\nhost = "kafka-2"\nlog_dirs = ["/data/a"]\nqueue = "rack-2"\n'
    )
    monkeypatch.setenv("LOGKEEPER_INVENTORY", str(inventory))
    dag = DagBag(dag_folder=str(DAGS)).dags["logkeeper_nightly"]
    assert {t.task_id: t.queue for t in dag.tasks} == {
        "maintain_broker_1": "logkeeper-kafka-1",
        "maintain_broker_2": "rack-2",
    }
    assert dag.max_active_runs == 1
    for t in dag.tasks:
        assert (t.pool, t.retries, t.execution_timeout) == ("logkeeper_brokers", 2, datetime.timedelta(hours=4))


def test_jobs_get_the_topic_config_file_of_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from _logkeeper import submit

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
    env = _airflow_env(tmp_path, LOGKEEPER_LOG_DIRS=",".join(map(str, log_dirs)))
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
    assert run_ids[0].startswith("logkeeper_stats_hourly.manual__")  # the DAG's id and Airflow's run id
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


def _airflow_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "LOGKEEPER_HOME": str(REPO),
        "LOGKEEPER_WAREHOUSE": str(tmp_path / "warehouse"),
        "LOGKEEPER_SPARK_MASTER": "local[2]",
        **extra,
    }


def test_the_recover_dag_rejects_a_trigger_without_log_dirs(tmp_path: Path) -> None:
    env = _airflow_env(tmp_path)
    airflow = str(Path(sys.executable).parent / "airflow")
    subprocess.run([airflow, "db", "migrate"], env=env, check=True, capture_output=True)
    for conf in ('{"log_dirs": ""}', '{"log_dirs": "  "}', "{}"):
        result = subprocess.run(
            [airflow, "dags", "test", "logkeeper_recover_manual", "2026-11-22", "--conf", conf],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode != 0, conf
        assert "log_dirs" in result.stdout + result.stderr, conf
    assert not (tmp_path / "warehouse").exists()


_HOLD = """
import fcntl, os, sys, time
fd = os.open(os.path.join(sys.argv[1], ".lock"), os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
time.sleep(600)
"""


def test_the_fleet_dag_maintains_each_broker_and_skips_a_running_one(tmp_path: Path) -> None:
    """Two brokers on this host: broker 1 stopped (maintained), broker 2 running (its lock held: skipped)."""
    logs = tmp_path / "logs"
    subprocess.run([str(PIPELINE_PYTHON), "-c", _DEMO, str(logs)], cwd=REPO, check=True)
    one, two = sorted(p for p in logs.iterdir() if p.is_dir())
    topics = tmp_path / "topics.toml"
    topics.write_text(
        '[topics."accounts"]\n"cleanup.policy" = "compact"\n[topics."clicks"]\n"retention.ms" = -1\n'
        '[topics."orders"]\n"retention.ms" = -1\n'
    )
    inventory = tmp_path / "inventory.toml"
    here = socket.gethostname()
    inventory.write_text(
        f'[[brokers]]\nid = 1\nhost = "{here}"\nlog_dirs = ["{one}"]\n\n'
        f'[[brokers]]\nid = 2\nhost = "{here}"\nlog_dirs = ["{two}"]\n'
    )
    env = _airflow_env(tmp_path, LOGKEEPER_INVENTORY=str(inventory), LOGKEEPER_TOPIC_CONFIG=str(topics))
    airflow = str(Path(sys.executable).parent / "airflow")
    subprocess.run([airflow, "db", "migrate"], env=env, check=True, capture_output=True)
    subprocess.run([airflow, "pools", "set", "logkeeper_brokers", "1", "brokers at once"], env=env, check=True)
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(two)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        result = subprocess.run(
            [airflow, "dags", "test", "logkeeper_nightly", "2026-11-22"], env=env, capture_output=True, text=True
        )
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with sqlite3.connect(tmp_path / "airflow" / "airflow.db") as db:
        states = dict(db.execute("SELECT task_id, state FROM task_instance WHERE dag_id = 'logkeeper_nightly'"))
        (dag_run_id,) = db.execute("SELECT run_id FROM dag_run WHERE dag_id = 'logkeeper_nightly'").fetchone()
        (value,) = db.execute(
            "SELECT value FROM xcom WHERE task_id = 'maintain_broker_1' AND key = 'return_value'"
        ).fetchone()
    assert states == {"maintain_broker_1": "success", "maintain_broker_2": "skipped"}
    outcome = json.loads(value) if isinstance(value, str) else json.loads(value.decode())
    assert outcome["exit_code"] == 0
    assert set(outcome["steps"]) == {"recover", "retention", "compact", "stats"}
    run_id = f"logkeeper_nightly.{dag_run_id}"  # the DAG's id and Airflow's run id
    assert all(step["run_id"] == run_id and step["failed"] == [] for step in outcome["steps"].values())
    # The maintenance log holds broker 1's rows under the DAG run's id, and nothing of broker 2.
    rows = subprocess.run(
        [str(PIPELINE_PYTHON), "-c", _LOG_DIRS_OF_RUN, str(tmp_path / "warehouse"), run_id],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert rows == [str(one)]


_DEMO = "import sys, pathlib; from jobs.demo import generate; generate(pathlib.Path(sys.argv[1]))"
_LOG_DIRS_OF_RUN = """
import sys, pathlib
from jobs._delta import read_table
from jobs._tables import MAINTENANCE_LOG
rows = read_table(pathlib.Path(sys.argv[1]) / MAINTENANCE_LOG).to_pylist()
print(" ".join(sorted({r["log_dir"] for r in rows if r["run_id"] == sys.argv[2]})))
"""
