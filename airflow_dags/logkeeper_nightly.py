"""Nightly Kafka log maintenance of a fleet: `logkeeper maintain` (recover, retention, compact, stats)
per broker, on the broker's own host.

The brokers come from the inventory `LOGKEEPER_INVENTORY` (read when this file is parsed); without
one, `LOGKEEPER_LOG_DIRS` is one broker on the Airflow worker's own host. Per broker one task
`maintain_broker_<id>` maintains all its log dirs in one Spark application:

* **queue**: the broker's (`logkeeper-<host>` unless the inventory names one). Run an Airflow
  worker on every broker host that serves only its host's queue (Celery:
  `airflow celery worker --queues logkeeper-<host>`), so each job locks, lists and changes the
  disks where they are.
* **pool** `logkeeper_brokers`: its slots bound how many brokers are maintained at once, so a rolling
  maintenance never takes more than N brokers down together
  (`airflow pools set logkeeper_brokers N "brokers maintained at once"`).
* **retries** 2 (10 minutes apart), **execution_timeout** 4 hours, `max_active_runs=1`.
* `--run-id` is the DAG run's id (the same for every try), so a retry replaces the rows of the try
  before it; `--result-json` gives each step's counts and failed partitions to XCom.
* The broker must be stopped. Exit 3 (a running broker holds its `.lock`; nothing was touched) makes
  the task **skipped**, not failed. `LOGKEEPER_STOP_BROKER` / `LOGKEEPER_START_BROKER` (shell
  commands, `{broker}` and `{host}` replaced) stop and start it around the job, inside the task, so
  the pool slot covers the whole time it is down.
"""

from __future__ import annotations

import datetime

import pendulum
from _logkeeper import Broker, brokers, log_dirs, run_job
from airflow.sdk import dag, task

POOL = "logkeeper_brokers"


@dag(
    dag_id="logkeeper_nightly",
    schedule="0 2 * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args={
        "retries": 2,
        "retry_delay": datetime.timedelta(minutes=10),
        "execution_timeout": datetime.timedelta(hours=4),
        "pool": POOL,
    },
    tags=["logkeeper", "kafka", "maintenance"],
    doc_md=__doc__,
)
def logkeeper_nightly() -> None:
    fleet = brokers()
    if not fleet:  # no inventory: LOGKEEPER_LOG_DIRS, as one broker on the worker's own host
        _maintain(None)()
    for broker in fleet:
        _maintain(broker)()


def _maintain(broker: Broker | None):
    """The task that maintains one broker's log dirs (all of `LOGKEEPER_LOG_DIRS` without one)."""
    if broker is None:
        dirs, task_id, queue = ",".join(log_dirs()), "maintain", None
    else:
        dirs = ",".join(f"{broker.host}:{d}" for d in broker.log_dirs)  # refused on any other host
        task_id, queue = f"maintain_broker_{broker.id}", broker.queue

    @task(task_id=task_id, **({"queue": queue} if queue else {}))
    def maintain(run_id: str | None = None) -> dict:
        return run_job("maintain", "--log-dirs", dirs, run_id=str(run_id), broker=broker)

    return maintain


logkeeper_nightly()
