"""The DAGs, in Airflow's own virtualenv (.venv-airflow): they import cleanly and the stats DAG runs.

Run by `./dev test` with `.venv-airflow/bin/python -m pytest tests/airflow_dags` (Airflow and its
Spark provider cannot share pyspark's virtualenv).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from airflow.dag_processing.dagbag import DagBag

REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "airflow_dags"
PIPELINE_PYTHON = REPO / ".venv" / "bin" / "python"


@pytest.fixture(scope="module")
def dagbag() -> DagBag:
    return DagBag(dag_folder=str(DAGS))


def test_no_import_errors(dagbag: DagBag) -> None:
    assert dagbag.import_errors == {}


def test_the_three_dags(dagbag: DagBag) -> None:
    assert set(dagbag.dag_ids) == {"logkeeper_nightly", "logkeeper_stats_hourly", "logkeeper_recover_manual"}
    for dag in dagbag.dags.values():
        assert dag.tags
        assert dag.catchup is False
        assert dag.doc_md
    assert dagbag.dags["logkeeper_recover_manual"].params["dry_run"] is True
    assert [t.task_id for t in dagbag.dags["logkeeper_nightly"].tasks] == ["list_log_dirs", "maintain"]


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


def test_stats_dag_runs_end_to_end(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    subprocess.run(
        [
            str(PIPELINE_PYTHON),
            "-c",
            "import sys, pathlib; from jobs.demo import generate; generate(pathlib.Path(sys.argv[1]))",
            str(logs),
        ],
        cwd=REPO,
        check=True,
    )
    log_dirs = sorted(p for p in logs.iterdir() if p.is_dir())
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
    subprocess.run([airflow, "db", "migrate"], env=env, check=True, capture_output=True)
    result = subprocess.run(
        [airflow, "dags", "test", "logkeeper_stats_hourly", "2026-11-22"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    commits = list((tmp_path / "warehouse" / "segment_stats" / "_delta_log").glob("*.json"))
    assert commits, "the stats DAG committed nothing"
