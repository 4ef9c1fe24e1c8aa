"""Nightly Kafka log maintenance: `logkeeper maintain` (recover, retention, compact, stats) per log dir.

One mapped task per log dir of `LOGKEEPER_LOG_DIRS`, so a broken disk fails only its own task.
Each task is idempotent: maintaining an already maintained log dir changes nothing. The broker
that owns a log dir must be stopped; a held `.lock` makes the task fail (exit 3) without touching it.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import dag, task


@dag(
    dag_id="logkeeper_nightly",
    schedule="0 2 * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["logkeeper", "kafka", "maintenance"],
    doc_md=__doc__,
)
def logkeeper_nightly() -> None:
    @task
    def list_log_dirs() -> list[str]:
        from _logkeeper import log_dirs

        return log_dirs()

    @task.bash
    def maintain(log_dir: str) -> str:
        from _logkeeper import submit

        return submit("maintain", "--log-dirs", log_dir)

    maintain.expand(log_dir=list_log_dirs())


logkeeper_nightly()
