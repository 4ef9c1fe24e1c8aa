"""Result rows of logkeeper jobs, their exit code, progress lines and the result JSON.

Every partition's outcome is a typed row (frozen dataclass) that executors return; a job run is a
:class:`JobSummary` whose totals are derived from its rows, never stored beside them. Exit codes
(all jobs): 0 ok, 1 some partition failed, is corrupt or was truncated (the others were done), 2 bad
arguments or configuration, 3 refused (a live process holds a log dir's `.lock`).

Partition statuses: `ok`; `truncated` (recovery took records a reader would have returned out of the
live log, a whole valid batch or more: they are in the quarantine, not lost, but the partition's
log no longer holds them, so an operator must look: exit 1; a torn tail holds no such batch and
leaves the partition `ok`); `corrupt` (corruption found and kept: deep verify, verify-only index
mismatches); `failed` (the partition's maintenance raised; its files are as a crash would leave
them); `skipped` (left alone on purpose). A truncated partition is consistent: its log dir is
checkpointed and marked clean, and the later steps of `maintain` process it.


The result JSON (`--result-json`) is `{job, run_id, dry_run, partitions: [row, ...], topics: [...],
log_dirs: [...]}`: rows in a stable order (log dir, topic, partition, dir name), each row's keys in
its dataclass field order; `topics` lists, per log dir and topic, the settings the job decided with
and the layer each came from (`{log_dir, topic, settings: {name: {value, source}}}`,
:mod:`storage_core.config_layers`); `log_dirs` holds each log dir's own file actions (lock, marker,
checkpoints).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import json
import os
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from storage_core import native
from storage_core.config_layers import ConfigValue
from storage_core.errors import StorageError
from storage_core.load_actions import LoadAction, partial_actions

if TYPE_CHECKING:
    from jobs._log_dirs import PartitionTask

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_REFUSED = 0, 1, 2, 3
# Row statuses that make a job exit 1: the partition's maintenance raised, found corruption it must
# not repair by itself (recover below the recovery point, rebuild-indexes --verify-only mismatches), or
# took records out of the live log into the quarantine.
FAILED_STATUSES = frozenset({"failed", "corrupt", "truncated"})
# A read-only run beside a live broker: the partition changed while it was read; nothing failed.
CHANGED_DURING_READ = "changed_during_read"
STATUSES = ("ok", "truncated", "corrupt", "failed", "skipped", CHANGED_DURING_READ)


@dataclass(frozen=True, slots=True)
class ActionRow:
    """One file action (or finding), as it goes to JSON and to the maintenance log (see `LoadAction`).

    `code` is the machine-readable reason (retention: the rule's reason code; the cleaner's plan:
    `CleanablePlan.reason_code`); a `clean_plan` row also carries the plan's figures.
    """

    kind: str
    file: str
    base_offset: int
    bytes: int
    reason: str
    change: str = "none"
    target: str = ""
    sha256: str = ""
    first_offset: int = -1
    last_offset: int = -1
    code: str = ""
    dirty_ratio: float | None = None
    min_cleanable_ratio: float | None = None
    cleanable_bytes: int | None = None
    first_uncleanable_offset: int | None = None

    @classmethod
    def of(cls, action: LoadAction) -> ActionRow:
        return cls(
            action.kind.value,
            action.file,
            action.base_offset,
            action.bytes,
            action.reason,
            action.change.value,
            action.target,
            action.sha256,
            action.first_offset,
            action.last_offset,
            action.code,
        )


def action_rows(actions: Iterable[LoadAction]) -> tuple[ActionRow, ...]:
    return tuple(ActionRow.of(a) for a in actions)


def file_changes(actions: Iterable[ActionRow]) -> str:
    """The file changes among `actions`, in a few words an operator reads in a progress line:
    `truncate 1,021 B of 00000000000000001600.log (batch runs past ...), quarantine 1,021 B,
    delete 3 segment files (107,568 B), write 5 files`; "" when none changes a file. Truncations
    are named one by one; the rest is counted."""
    truncations, quarantined, deleted, written = [], 0, [], 0
    for action in actions:
        if action.change == "truncate":
            where = f" at offset {action.first_offset}" if action.first_offset >= 0 else ""
            truncations.append(f"truncate {action.bytes:,} B of {action.file}{where} ({action.reason})")
        elif action.change == "quarantine":
            quarantined += action.bytes
        elif action.change in ("delete", "rename") and action.kind.startswith("delete"):
            deleted.append(action.bytes)
        elif action.change != "none":
            written += 1
    words = truncations
    if quarantined:
        words.append(f"quarantine {quarantined:,} B")
    if deleted:
        words.append(f"delete {len(deleted)} files ({sum(deleted):,} B)")
    if written:
        words.append(f"write {written} files")
    return ", ".join(words)


@dataclass(frozen=True, slots=True)
class PartitionRow:
    """The typed result of one partition, as executors return it.

    `status` is one of :data:`STATUSES`; a failed row carries `error_type` and `error_message`, a
    truncated or corrupt one says why in them. `settings` are the topic's settings the job decided
    with, each with the layer it came from.
    """

    log_dir: str
    dir_name: str
    topic: str
    partition: int
    status: str
    size_bytes: int
    duration_ms: int
    log_start_offset: int = -1
    log_end_offset: int = -1
    first_segment_base_offset: int = -1
    truncated_bytes: int = 0
    bytes_deleted: int = 0
    segments_deleted: int = 0
    indexes_rebuilt: int = 0
    actions: tuple[ActionRow, ...] = field(default=())
    error_type: str = ""
    error_message: str = ""
    settings: tuple[ConfigValue, ...] = field(default=())


class StatusRow(Protocol):
    """What :func:`exit_code` needs of a row."""

    @property
    def status(self) -> str: ...


def exit_code(rows: Iterable[StatusRow]) -> int:
    """1 if any row failed, found corruption or was truncated, else 0."""
    return EXIT_FAILED if any(row.status in FAILED_STATUSES for row in rows) else EXIT_OK


@dataclass(frozen=True, slots=True)
class LogDirRow:
    """What a job changed in a log dir itself (not in a partition): its `.lock`, the clean-shutdown
    marker, the checkpoints."""

    log_dir: str
    actions: tuple[ActionRow, ...]


@dataclass(frozen=True, slots=True)
class JobSummary:
    """A job run: its id, every partition's row and every log dir's own actions; totals are derived."""

    job: str
    run_id: str
    dry_run: bool
    rows: tuple[PartitionRow, ...]
    log_dirs: tuple[LogDirRow, ...] = ()
    # The job's logical now (`--now-ms`), what its decisions were made with; None: not given by the
    # caller, the rows' write time stands for it.
    run_ts: datetime.datetime | None = None

    @property
    def failed(self) -> int:
        return sum(1 for r in self.rows if r.status in FAILED_STATUSES)

    def status_counts(self) -> str:
        """`2 ok, 1 truncated, 0 failed`: ok and failed always, the other statuses when present."""
        counts = {status: sum(1 for r in self.rows if r.status == status) for status in STATUSES}
        return ", ".join(f"{n} {status}" for status, n in counts.items() if n or status in ("ok", "failed"))

    @property
    def exit_code(self) -> int:
        return exit_code(self.rows)


def new_run_id() -> str:
    return uuid.uuid4().hex


def partition_row(part: PartitionTask, status: str, *, started: float | None, **outcome: Any) -> PartitionRow:
    """A partition's row: its identity and size from `part`, then `status` and the `outcome` fields.

    Args:
        part: the partition.
        status: one of :data:`STATUSES`.
        started: `time.monotonic()` when its work began (the row's `duration_ms` runs from
            there); None for a partition left untouched (0 ms).
        outcome: the other fields of :class:`PartitionRow`, by name.
    """
    duration_ms = 0 if started is None else int((time.monotonic() - started) * 1000)
    return PartitionRow(
        part.log_dir, part.dir_name, part.topic, part.partition, status, part.size_bytes, duration_ms, **outcome
    )


class PartitionWork(Protocol):
    """What :func:`run_partition_work` needs of a job's task: the partition."""

    @property
    def partition(self) -> PartitionTask: ...


def run_partition_work(
    task: PartitionWork, work: Callable[[float], PartitionRow], *, read_only: bool = False
) -> PartitionRow:
    """Executor side of every job: `work(started)` makes the partition's row from its storage_core
    call (`started`: `time.monotonic()` before it); a StorageError or OSError it raises becomes a
    failed row instead (no error escapes a task). The driver prints the row's progress line when the
    task finishes (:func:`jobs._spark.run_partition_tasks`), never the executor: on a cluster an
    executor's stderr lands in its worker's log.

    A `read_only` run (a dry run, beside a live broker that holds the `.lock`) may see a file
    vanish while it reads (retention or the cleaner ran): that is a `changed_during_read` row, not
    a failure.
    """
    started = time.monotonic()
    try:
        return work(started)
    except FileNotFoundError as exc:
        if not read_only:
            return failed_row(task.partition, started, exc)
        return partition_row(task.partition, CHANGED_DURING_READ, started=started, error_message=str(exc))
    except (StorageError, OSError) as exc:
        return failed_row(task.partition, started, exc)


def failed_row(part: PartitionTask, started: float, exc: BaseException) -> PartitionRow:
    """The row of a partition whose storage_core call raised (executors never let it escape).

    Args:
        part: the partition.
        started: `time.monotonic()` when its work began.
        exc: the StorageError or OSError it raised; what was changed before it is still reported
            (`storage_core.load_actions.partial_actions`).
    """
    message = os_error_line(exc) if isinstance(exc, OSError) else " ".join(str(exc).split())
    return partition_row(
        part,
        "failed",
        started=started,
        actions=action_rows(partial_actions(exc)),
        error_type=type(exc).__name__,
        error_message=message,
    )


def refused_unclean(part: PartitionTask) -> PartitionRow:
    """The row of a partition whose log dir was not cleanly shut down (retention and compact refuse it)."""
    return _untouched_row(
        part, "failed", "log dir was not cleanly shut down: run `logkeeper recover` first", error_type="UncleanLogDir"
    )


def failed_log_dir_row(log_dir: Path, exc: OSError) -> PartitionRow:
    """The row of a log dir whose own files (checkpoints, marker) could not be written."""
    return PartitionRow(
        str(log_dir), "", "", -1, "failed", 0, 0, error_type=type(exc).__name__, error_message=os_error_line(exc)
    )


def os_error_line(exc: OSError) -> str:
    """An OSError on one line, naming the file: `<path>: <what the OS said>`."""
    what = exc.strerror or str(exc)
    return f"{exc.filename}: {what}" if exc.filename else what


def skipped_row(part: PartitionTask, reason: str) -> PartitionRow:
    """The row of a partition a job leaves alone on purpose (`reason` says why)."""
    return _untouched_row(part, "skipped", reason)


def _untouched_row(part: PartitionTask, status: str, message: str, *, error_type: str = "") -> PartitionRow:
    return partition_row(part, status, started=None, error_type=error_type, error_message=message)


@runtime_checkable
class ProgressRow(Protocol):
    """What a progress line shows of a row."""

    @property
    def dir_name(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def size_bytes(self) -> int: ...
    @property
    def duration_ms(self) -> int: ...


def core_note() -> str:
    """What a progress line adds when this process runs storage_core on its pure-Python twins
    (an executor without the compiled core: not built, or not shipped with its environment)."""
    return "" if native.IMPLEMENTATION == "native" else f" [storage_core: {native.describe()}]"


def summary_line(job: str, summary: JobSummary) -> str:
    """`logkeeper <job>: N partitions, K ok, T truncated, F failed (dir/partition, ...)`: the counts of
    every status present, naming every failed, corrupt or truncated partition."""
    failed = [f"{r.log_dir}/{r.dir_name}" for r in summary.rows if r.status in FAILED_STATUSES]
    return (
        f"logkeeper {job}: {len(summary.rows)} partitions, {summary.status_counts()}"
        + (f" ({', '.join(failed)})" if failed else "")
        + (" (dry run: nothing changed)" if summary.dry_run else "")
    )


def progress_line(rank: int, total: int, row: ProgressRow, core: str | None = None, planned: str = "") -> str:
    """`[n/N] topic-partition status bytes MB/s`, one per partition as it finishes (n: how many have
    finished); then :func:`core_note` of the process that did the work (`core`; None: this process).
    A dry run's partition with `planned` file changes (:func:`file_changes`) says `would <them>`
    where its status would say `ok`: a plan never reads as nothing to do."""
    rate = row.size_bytes / 1e6 / max(row.duration_ms / 1000, 1e-3)
    note = core_note() if core is None else core
    status = f"{row.status}, would {planned}" if planned else row.status
    return f"[{rank}/{total}] {row.dir_name} {status} {row.size_bytes} B {rate:.1f} MB/s{note}"


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def _plain(value: object) -> object:
    """A row as JSON-ready lists and dicts: `dataclasses.asdict` without its deep copy of every leaf
    (the rows are frozen; at 2,000 partitions asdict was the driver's largest cost after a job)."""
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if dataclasses.is_dataclass(value):
        return {name: _plain(getattr(value, name)) for name in _field_names(type(value))}
    return value


def _json_value(value: object) -> object:
    """JSON for what :func:`_plain` leaves: sets sorted, paths and enums as their text."""
    if isinstance(value, frozenset | set):
        return sorted(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.value
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def topic_settings(rows: Iterable[PartitionRow]) -> dict[tuple[str, str], tuple[ConfigValue, ...]]:
    """(log dir, topic) -> the settings its rows were decided with (topics with none are left out)."""
    return {(r.log_dir, r.topic): r.settings for r in sorted(rows, key=lambda r: (r.log_dir, r.topic)) if r.settings}


def settings_lines(rows: Iterable[PartitionRow]) -> list[str]:
    """One line per topic: the settings used and where each came from (dry runs print them)."""
    return [
        f"  {Path(log_dir).name}/{topic}: " + ", ".join(map(str, settings))
        for (log_dir, topic), settings in topic_settings(rows).items()
    ]


def write_result_json(path: Path, summary: JobSummary) -> None:
    """Write `{job, run_id, dry_run, partitions: [...], topics: [...], log_dirs: [...]}` atomically (temp file,
    then rename)."""
    rows = sorted(summary.rows, key=lambda r: (r.log_dir, r.topic, r.partition, r.dir_name))
    body = {
        "job": summary.job,
        "run_id": summary.run_id,
        "dry_run": summary.dry_run,
        "partitions": [_plain(row) for row in rows],
        "topics": [
            {
                "log_dir": log_dir,
                "topic": topic,
                "settings": {s.name: {"value": s.value, "source": s.source} for s in settings},
            }
            for (log_dir, topic), settings in topic_settings(rows).items()
        ],
        "log_dirs": [_plain(row) for row in sorted(summary.log_dirs, key=lambda r: r.log_dir)],
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + ".tmp")
    # Compact: json's C encoder (indent= runs the pure-Python one, 4x slower on a fleet's rows).
    temp.write_text(json.dumps(body, default=_json_value) + "\n")
    os.replace(temp, path)
