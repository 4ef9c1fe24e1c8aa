"""The maintenance log: every action of every job, appended to the Delta table `<warehouse>/maintenance_log`.

One row per file action a partition's maintenance took (or, in a dry run, planned), plus one
`partition` summary row per partition, so that audit queries see every partition a run touched,
and one row per file a job changed in a log dir itself (`.lock`, marker, checkpoints: `dir_name`
empty, `partition` -1). `change` says how the file changed (create, rewrite, truncate, delete,
rename, quarantine, none); a quarantined piece's row holds its path (`target`), byte count
(`bytes_removed`), sha256 and offset range. Every row names its run and its log dir the fleet-wide
way (:func:`row_key`): run id, job, time, `date` (the table's partition column), absolute log dir
and the log dir's broker identity (:mod:`jobs._fleet`).
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass
from pathlib import Path

from jobs._common import ActionRow, JobSummary
from jobs._delta import MAINTENANCE_LOG, upsert_run
from jobs._fleet import log_dir_identity
from jobs._schema import to_arrow


@dataclass(frozen=True, slots=True)
class MaintenanceLogRow:
    """One row of the maintenance log."""

    run_id: str
    job: str
    ts: datetime.datetime
    date: datetime.date
    log_dir: str
    cluster_id: str
    node_id: int
    host: str
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
    change: str
    target: str
    sha256: str
    first_offset: int
    last_offset: int


def _action_fields(action: ActionRow) -> dict[str, object]:
    return {
        "action": action.kind,
        "files": action.file,
        "base_offset": action.base_offset,
        "bytes_removed": action.bytes,
        "reason": action.reason,
        "change": action.change,
        "target": action.target,
        "sha256": action.sha256,
        "first_offset": action.first_offset,
        "last_offset": action.last_offset,
    }


def row_key(summary: JobSummary, log_dir: str, ts: datetime.datetime) -> dict[str, object]:
    """The columns that say which run wrote a row and which broker's log dir it is about."""
    return {
        "run_id": summary.run_id,
        "job": summary.job,
        "ts": ts,
        "date": ts.date(),
        "log_dir": log_dir,
        **dataclasses.asdict(log_dir_identity(log_dir)),
    }


def maintenance_rows(summary: JobSummary, *, ts: datetime.datetime) -> list[MaintenanceLogRow]:
    rows = []
    run = {"dry_run": summary.dry_run}
    for part in summary.rows:
        where = {
            **run,
            **row_key(summary, part.log_dir, ts),
            "topic": part.topic,
            "partition": part.partition,
            "dir_name": part.dir_name,
            "log_start_offset": part.log_start_offset,
            "log_end_offset": part.log_end_offset,
            "bytes_before": part.size_bytes,
            "status": part.status,
        }
        reason = f"{part.error_type}: {part.error_message}" if part.error_type else part.error_message
        summary_row = ActionRow("partition", "", -1, part.truncated_bytes + part.bytes_deleted, reason)
        rows += [MaintenanceLogRow(**_action_fields(a), **where) for a in (summary_row, *part.actions)]
    for log_dir in summary.log_dirs:
        where = {**run, **row_key(summary, log_dir.log_dir, ts), "topic": "", "partition": -1, "dir_name": ""}
        where |= {"log_start_offset": -1, "log_end_offset": -1, "bytes_before": 0, "status": "ok"}
        rows += [MaintenanceLogRow(**_action_fields(a), **where) for a in log_dir.actions]
    return rows


# What makes a row the same row in a retry of its run: a partition's summary row (action
# `partition`), one file action of it, or one file change in a log dir itself.
ROW_KEY = ("run_id", "job", "log_dir", "dir_name", "action", "files", "base_offset", "change", "target")


def write_maintenance_log(warehouse: Path, summary: JobSummary) -> None:
    """Add a run's rows to `<warehouse>/maintenance_log`; a retry of the run (same run id) replaces
    the rows it writes again and keeps the record of the file changes its earlier tries made."""
    now = datetime.datetime.now(datetime.UTC)
    rows = maintenance_rows(summary, ts=now)
    if rows:
        upsert_run(warehouse / MAINTENANCE_LOG, to_arrow(rows, MaintenanceLogRow), run_id=summary.run_id, keys=ROW_KEY)
