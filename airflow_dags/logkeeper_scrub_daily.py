"""Daily throttled CRC scrub of every Kafka log dir, beside live brokers: `logkeeper scrub` per log dir.

Every batch of every closed segment is CRC-checked, with its indexes, without the `.lock`. Params:
`max_bytes_per_second` (all scrub tasks of a host together; 0: unthrottled), `max_duration_s` (no
segment is started after it: the cursor in the warehouse resumes tomorrow), `recheck_period_days`.
A task fails (exit 1) when its log dir holds corruption: the finding rows are in the Delta table
`scrub_findings` and the `corruption_found` audit query. One mapped task per log dir, each passing
its own `--run-id` (Airflow's run id and the map index).
"""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag, task


@dag(
    dag_id="logkeeper_scrub_daily",
    schedule="0 4 * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["logkeeper", "kafka", "scrub"],
    params={
        "max_bytes_per_second": Param(
            50 * 1024 * 1024, type="integer", minimum=0, description="read rate per host (0: unthrottled)"
        ),
        "max_duration_s": Param(4 * 3600, type="integer", minimum=1, description="start no segment after this"),
        "recheck_period_days": Param(7, type="integer", minimum=0, description="re-verify a segment after this"),
    },
    doc_md=__doc__,
)
def logkeeper_scrub_daily() -> None:
    @task
    def list_log_dirs() -> list[str]:
        from _logkeeper import log_dirs

        return log_dirs()

    @task.bash
    def scrub(log_dir: str, params: dict | None = None, run_id: str | None = None, ti=None) -> str:
        from _logkeeper import job_run_id, submit

        params = params or {}
        return submit(
            "scrub",
            "--log-dirs",
            log_dir,
            "--run-id",
            job_run_id(run_id or "", ti.map_index if ti is not None else -1),
            "--max-bytes-per-second",
            str(int(params.get("max_bytes_per_second", 0))),
            "--max-duration-s",
            str(int(params.get("max_duration_s", 4 * 3600))),
            "--recheck-period-ms",
            str(int(params.get("recheck_period_days", 7)) * 86_400_000),
        )

    scrub.expand(log_dir=list_log_dirs())


logkeeper_scrub_daily()
