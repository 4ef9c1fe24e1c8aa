"""The maintenance log: every action of every job, appended to the Delta table `<warehouse>/maintenance_log`.

One row per file action a partition's maintenance took (or, in a dry run, planned), plus one
`partition` summary row per partition, so that audit queries see every partition a run touched.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from jobs._common import JobSummary
from jobs._delta import MAINTENANCE_LOG, write_run
from jobs._schema import to_arrow


@dataclass(frozen=True, slots=True)
class MaintenanceLogRow:
    """One row of the maintenance log."""

    run_id: str
    job: str
    ts: datetime.datetime
    log_dir: str
    topic: str
    partition: int
    dir_name: str
    action: str
    files: str
    base_offset: int
    log_start_offset: int
    log_end_offset: int
    bytes_before: int
    bytes_removed: int
    status: str
    reason: str
    dry_run: bool


def maintenance_rows(summary: JobSummary, *, ts: datetime.datetime) -> list[MaintenanceLogRow]:
    rows = []
    for part in summary.rows:
        common = {
            "run_id": summary.run_id,
            "job": summary.job,
            "ts": ts,
            "log_dir": part.log_dir,
            "topic": part.topic,
            "partition": part.partition,
            "dir_name": part.dir_name,
            "log_start_offset": part.log_start_offset,
            "log_end_offset": part.log_end_offset,
            "bytes_before": part.size_bytes,
            "status": part.status,
            "dry_run": summary.dry_run,
        }
        rows.append(
            MaintenanceLogRow(
                action="partition",
                files="",
                base_offset=-1,
                bytes_removed=part.truncated_bytes + part.bytes_deleted,
                reason=f"{part.error_type}: {part.error_message}" if part.error_type else part.error_message,
                **common,
            )
        )
        rows += [
            MaintenanceLogRow(
                action=a.kind, files=a.file, base_offset=a.base_offset, bytes_removed=a.bytes, reason=a.reason, **common
            )
            for a in part.actions
        ]
    return rows


def write_maintenance_log(warehouse: Path, summary: JobSummary) -> None:
    """Append (idempotently per run id) a run's rows to `<warehouse>/maintenance_log`."""
    now = datetime.datetime.now(datetime.UTC)
    rows = maintenance_rows(summary, ts=now)
    if rows:
        write_run(
            warehouse / MAINTENANCE_LOG,
            to_arrow(rows, MaintenanceLogRow),
            key={"run_id": summary.run_id, "job": summary.job},
        )
