"""Hourly segment statistics of every Kafka log dir into the Delta table `segment_stats`, beside live brokers.

`logkeeper stats` only reads a log dir a live broker holds: it takes no `.lock` there, so it runs
while the brokers do and never collides with the nightly maintenance. Segments are read as a
consumer reads them; each row says whether its partition was read as one consistent snapshot. The
task passes Airflow's run id as `--run-id`, so a retried run replaces its own rows instead of
duplicating them; the result goes to XCom.
"""

from __future__ import annotations

import datetime

import pendulum
from airflow.sdk import dag, task


@dag(
    dag_id="logkeeper_stats_hourly",
    schedule="@hourly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["logkeeper", "kafka", "stats"],
    doc_md=__doc__,
)
def logkeeper_stats_hourly() -> None:
    @task(retries=2, retry_delay=datetime.timedelta(minutes=5), execution_timeout=datetime.timedelta(minutes=50))
    def segment_stats(run_id: str | None = None) -> dict:
        from _logkeeper import log_dirs, run_job

        return run_job("stats", "--log-dirs", ",".join(log_dirs()), run_id=str(run_id))

    segment_stats()


logkeeper_stats_hourly()
