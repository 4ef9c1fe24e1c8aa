"""Hourly segment statistics of every Kafka log dir into the Delta table `segment_stats`, beside live brokers.

`logkeeper stats` only reads: it takes no `.lock`, so it runs while the brokers do and never
collides with the nightly maintenance. Segments are read as a consumer reads them; each row says
whether its partition was read as one consistent snapshot. The task passes Airflow's run id as
`--run-id`, so a retried run replaces its own rows instead of duplicating them.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import dag, task


@dag(
    dag_id="logkeeper_stats_hourly",
    schedule="@hourly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["logkeeper", "kafka", "stats"],
    doc_md=__doc__,
)
def logkeeper_stats_hourly() -> None:
    @task.bash
    def segment_stats(run_id: str | None = None) -> str:
        from _logkeeper import job_run_id, log_dirs, submit

        return submit("stats", "--log-dirs", ",".join(log_dirs()), "--run-id", job_run_id(run_id or ""))

    segment_stats()


logkeeper_stats_hourly()
