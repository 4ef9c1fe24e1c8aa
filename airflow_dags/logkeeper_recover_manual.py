"""Recover Kafka log dirs after an unclean shutdown, on demand.

Trigger with params: `log_dirs` (comma-separated) and `dry_run` (default true: report what would be
truncated, deleted or rebuilt, and change nothing). Set `dry_run` false to recover.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag, task


@dag(
    dag_id="logkeeper_recover_manual",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["logkeeper", "kafka", "recovery"],
    params={
        "log_dirs": Param("", type="string", description="comma-separated Kafka log dirs"),
        "dry_run": Param(True, type="boolean", description="report only, change nothing"),
    },
    doc_md=__doc__,
)
def logkeeper_recover_manual() -> None:
    @task.bash
    def recover(params: dict | None = None) -> str:
        from _logkeeper import submit

        params = params or {}
        args = ["--log-dirs", params["log_dirs"]]
        if params.get("dry_run", True):
            args.append("--dry-run")
        return submit("recover", *args)

    recover()


logkeeper_recover_manual()
