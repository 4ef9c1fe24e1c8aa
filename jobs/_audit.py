"""The maintenance log: every action of every job, appended to the Delta table `<warehouse>/maintenance_log`.

One row per file action a partition's maintenance took (or, in a dry run, planned), plus one
`partition` summary row per partition, so that audit queries see every partition a run touched,
and one row per file a job changed in a log dir itself (`.lock`, marker, checkpoints: `dir_name`
empty, `topic` and `partition` NULL). `change` says how the file changed (create, rewrite, truncate, delete,
rename, quarantine, none); a quarantined piece's row holds its path (`target`), byte count
(`bytes_removed`), sha256 and offset range. Every row names its run and its log dir the fleet-wide
way (:func:`row_key`): run id, job, both clocks (`run_ts`, the job's logical now; `ts`, when the row
was written), `date` (the UTC day of `ts`, the table's partition column), absolute log dir and the
log dir's broker identity (:mod:`jobs._fleet`). The cleaner's plan and retention's rule are typed
columns (`reason_code`, `retention_rule`, `dirty_ratio`, ...), not only words in `reason`.
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass
from pathlib import Path

from jobs._common import ActionRow, JobSummary
from jobs._delta import upsert_run
from jobs._fleet import log_dir_identity
from jobs._schema import arrow_schema, to_arrow
from jobs._tables import MAINTENANCE_LOG, RETENTION_RULES, known


@dataclass(frozen=True, slots=True)
class MaintenanceLogRow:
    """One row of the maintenance log (docs/tables.md says what each column means). NULL: unknown or
    not applicable (a log dir's own file has no topic, partition or offsets)."""

    run_id: str
    job: str
    run_ts: datetime.datetime
    ts: datetime.datetime
    date: datetime.date
    log_dir: str
    cluster_id: str | None
    node_id: int | None
    host: str
    topic: str | None
    partition: int | None
    dir_name: str
    action: str
    files: str
    base_offset: int | None
    log_start_offset: int | None
    log_end_offset: int | None
    bytes_before: int
    bytes_removed: int
    status: str
    reason: str
    dry_run: bool
    change: str
    target: str
    sha256: str | None
    first_offset: int | None
    last_offset: int | None
    reason_code: str | None
    retention_rule: str | None
    dirty_ratio: float | None
    min_cleanable_ratio: float | None
    cleanable_bytes: int | None
    first_uncleanable_offset: int | None


MAINTENANCE_LOG_SCHEMA = arrow_schema(MaintenanceLogRow)


def _action_fields(action: ActionRow) -> dict[str, object]:
    return {
        "action": action.kind,
        "files": action.file,
        "base_offset": known(action.base_offset),
        "bytes_removed": action.bytes,
        "reason": action.reason,
        "change": action.change,
        "target": action.target,
        "sha256": action.sha256 or None,
        "first_offset": known(action.first_offset),
        "last_offset": known(action.last_offset),
        "reason_code": action.code or None,
        "retention_rule": RETENTION_RULES.get(action.code),
        "dirty_ratio": action.dirty_ratio,
        "min_cleanable_ratio": action.min_cleanable_ratio,
        "cleanable_bytes": action.cleanable_bytes,
        "first_uncleanable_offset": action.first_uncleanable_offset,
    }


def row_key(summary: JobSummary, log_dir: str, ts: datetime.datetime) -> dict[str, object]:
    """The columns that say which run wrote a row (`ts`: when) and which broker's log dir it is about."""
    return {
        "run_id": summary.run_id,
        "job": summary.job,
        "run_ts": summary.run_ts or ts,
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
            "topic": part.topic or None,
            "partition": known(part.partition),
            "dir_name": part.dir_name,
            "log_start_offset": known(part.log_start_offset),
            "log_end_offset": known(part.log_end_offset),
            "bytes_before": part.size_bytes,
            "status": part.status,
        }
        reason = f"{part.error_type}: {part.error_message}" if part.error_type else part.error_message
        summary_row = ActionRow("partition", "", -1, part.truncated_bytes + part.bytes_deleted, reason)
        rows += [MaintenanceLogRow(**_action_fields(a), **where) for a in (summary_row, *part.actions)]
    for log_dir in summary.log_dirs:
        where = {**run, **row_key(summary, log_dir.log_dir, ts), "topic": None, "partition": None, "dir_name": ""}
        where |= {"log_start_offset": None, "log_end_offset": None, "bytes_before": 0, "status": "ok"}
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
