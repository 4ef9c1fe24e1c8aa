"""Recover Kafka log dirs after an unclean shutdown, on demand.

Trigger with params: `log_dirs` (comma-separated, required: a trigger without it, or with an empty
one, is rejected) and `dry_run` (default true: report what would be truncated, deleted or rebuilt,
and change nothing). Set `dry_run` false to recover. The run id goes to `--run-id` (a retry replaces
its rows) and the result to XCom; exit 3 (a live broker holds the lock) skips the task.
"""

from __future__ import annotations

import datetime

import pendulum
from airflow.sdk import Param, dag, task


@dag(
    dag_id="logkeeper_recover_manual",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["logkeeper", "kafka", "recovery"],
    params={
        "log_dirs": Param(type="string", minLength=1, pattern=r"\S", description="comma-separated Kafka log dirs"),
        "dry_run": Param(True, type="boolean", description="report only, change nothing"),
    },
    doc_md=__doc__,
)
def logkeeper_recover_manual() -> None:
    @task(retries=0, execution_timeout=datetime.timedelta(hours=4))
    def recover(params: dict | None = None, run_id: str | None = None) -> dict:
        from _logkeeper import run_job

        params = params or {}
        args = ["--log-dirs", params["log_dirs"]]
        if params.get("dry_run", True):
            args.append("--dry-run")
        return run_job("recover", *args, run_id=str(run_id))

    recover()


logkeeper_recover_manual()
