"""Hourly segment statistics of every Kafka log dir into the Delta table `segment_stats`.

Reads only (the stats job takes each log dir's `.lock` while it reads, so run it on stopped brokers'
dirs or on copies); rows of a retried run replace those of the same run id.
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
    def segment_stats() -> str:
        from _logkeeper import log_dirs, submit

        return submit("stats", "--log-dirs", ",".join(log_dirs()))

    segment_stats()


logkeeper_stats_hourly()
