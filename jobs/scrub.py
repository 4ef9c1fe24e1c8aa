"""`logkeeper scrub`: CRC-check every batch of every closed segment, and its indexes, beside live brokers.

    logkeeper scrub --log-dirs D [--max-bytes-per-second N] [--recheck-period-ms P] [--max-duration-s S]
                    [--cursor-dir C] [--throttle-dir T] (+ the common options)

Reads only, so it takes no `.lock`: a running broker keeps its dir. Executors scrub one partition
each (:func:`storage_core.live.scrub.scrub_partition`) with idle I/O priority, reads admitted by a
token bucket shared by every scrub task of the host (:mod:`jobs._throttle`) and the page cache left
to the broker. Each partition's cursor (`<cursor dir>`, default `<warehouse>/_scrub_cursors`) says
what was verified: a run scrubs what is due (never verified, changed, or verified longer ago than
the recheck period), stops starting segments after `--max-duration-s`, and the next run resumes.

Findings go to the Delta table `<warehouse>/scrub_findings` (partition, segment, byte position,
offset range, what is wrong), to the maintenance log as `corruption_detected` / `index_mismatch`
actions (the `corruption_found` audit query shows them) and to `--result-json`. Exit 1 when a
finding is corruption (below the recovery point); damage above it is reported as possibly unflushed.
"""

from __future__ import annotations

import dataclasses
import datetime
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from jobs._common import (
    ActionRow,
    JobArgs,
    JobSummary,
    PartitionDir,
    PartitionRow,
    UsageError,
    common_args,
    discover_log_dirs,
    job_parser,
    locked_log_dirs,
    partition_row,
    run_main,
    run_partition_work,
)
from jobs._delta import write_run
from jobs._io_priority import idle_io_priority
from jobs._load import job_fs
from jobs._schema import arrow_schema
from jobs._tables import SCRUB_FINDINGS, known
from jobs._throttle import HostTokenBucket, default_throttle_dir
from storage_core.live import is_live
from storage_core.live.reader import CHUNK_BYTES
from storage_core.live.scrub import ScrubFinding, scrub_partition
from storage_core.live.scrub_cursor import cursor_path, read_cursor, write_cursor
from storage_core.load_actions import ActionKind
from storage_core.log_dir import open_log_dir
from storage_core.names import TopicPartition

DEFAULT_RECHECK_MS = 7 * 24 * 3600 * 1000
MIN_CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class ScrubArgs:
    common: JobArgs
    max_bytes_per_second: int
    recheck_period_ms: int
    max_duration_s: float | None
    cursor_dir: Path
    throttle_dir: Path


@dataclass(frozen=True, slots=True)
class ScrubTask:
    """One partition to scrub, with everything the executor needs (picklable)."""

    partition: PartitionDir
    recovery_point: int | None
    live: bool
    cursor_path: Path
    max_bytes_per_second: int
    throttle_dir: Path
    now_ms: int
    recheck_ms: int
    deadline: float | None  # time.time() after which no segment is started
    save: bool


@dataclass(frozen=True, slots=True)
class FindingKey:
    """Which run and partition a `scrub_findings` row belongs to (the finding's own fields follow):
    `run_ts` is the job's logical now (what "due for a recheck" was decided with), `ts` the wall clock
    when the row was written."""

    run_id: str
    run_ts: datetime.datetime
    ts: datetime.datetime
    log_dir: str
    topic: str
    partition: int
    dir_name: str


@dataclass(frozen=True, slots=True)
class FindingVerdict:
    """Whether the finding is corruption (below the recovery point) or possibly unflushed data."""

    corruption: bool


# ScrubFinding's -1 (not readable) is NULL in the table.
_UNKNOWN_AS_NULL = ("position", "first_offset", "last_offset")
SCRUB_FINDINGS_SCHEMA = pa.schema(
    [
        *arrow_schema(FindingKey),
        *(f.with_nullable(True) if f.name in _UNKNOWN_AS_NULL else f for f in arrow_schema(ScrubFinding)),
        *arrow_schema(FindingVerdict),
    ]
)


@dataclass(frozen=True, slots=True)
class ScrubRow:
    """A partition's row and its findings."""

    row: PartitionRow
    findings: tuple[ScrubFinding, ...]


def parse_args(argv: list[str]) -> ScrubArgs:
    parser = job_parser("scrub", "CRC-check every batch of every closed segment and its indexes, beside live brokers.")
    parser.add_argument(
        "--max-bytes-per-second",
        type=int,
        default=0,
        help="read rate of all scrub tasks of a host together (0: unthrottled), as log.cleaner.io.max.bytes.per.second",
    )
    parser.add_argument(
        "--recheck-period-ms", type=int, default=DEFAULT_RECHECK_MS, help="re-verify a segment after this long"
    )
    parser.add_argument("--max-duration-s", type=float, help="start no segment after this many seconds (resumes)")
    parser.add_argument("--cursor-dir", type=Path, help="scrub cursors (default: <warehouse>/_scrub_cursors)")
    parser.add_argument("--throttle-dir", type=Path, help="the host's shared token bucket (default: a tmp dir)")
    namespace = parser.parse_args(argv)
    common = common_args(namespace)
    if namespace.max_bytes_per_second < 0:
        raise UsageError("--max-bytes-per-second must be >= 0 (0: unthrottled)")
    if namespace.recheck_period_ms < 0:
        raise UsageError("--recheck-period-ms must be >= 0")
    if namespace.max_duration_s is not None and namespace.max_duration_s <= 0:
        raise UsageError("--max-duration-s must be > 0")
    if namespace.cursor_dir is None and "://" in str(common.warehouse):
        raise UsageError("--cursor-dir is needed when the warehouse is not a local path")
    cursor_dir = (namespace.cursor_dir or common.warehouse / "_scrub_cursors").absolute()
    for log_dir in common.log_dirs:
        if cursor_dir.resolve().is_relative_to(log_dir.resolve()):
            raise UsageError(f"--cursor-dir {cursor_dir} is inside log dir {log_dir}: scrub never writes there")
    return ScrubArgs(
        common,
        namespace.max_bytes_per_second,
        namespace.recheck_period_ms,
        namespace.max_duration_s,
        cursor_dir,
        namespace.throttle_dir or default_throttle_dir(),
    )


def _finding_action(finding: ScrubFinding) -> ActionRow:
    where = f"position {finding.position}, " if finding.position >= 0 else ""
    offsets = f"offsets [{finding.first_offset}, {finding.last_offset}]: " if finding.first_offset >= 0 else ""
    if not finding.is_corruption:
        kind = "unflushed_damage"
    elif finding.kind.endswith("index_invalid"):
        kind = ActionKind.INDEX_MISMATCH.value
    else:
        kind = ActionKind.CORRUPTION_DETECTED.value
    return ActionRow(kind, finding.file, finding.base_offset, 0, f"{finding.kind}: {where}{offsets}{finding.detail}")


def scrub_one(task: ScrubTask) -> ScrubRow:
    """Executor side: scrub one partition's due closed segments, saving its cursor after each."""
    part = task.partition
    findings: tuple[ScrubFinding, ...] = ()

    def scrub(started: float) -> PartitionRow:
        nonlocal findings
        cursor, warning = read_cursor(task.cursor_path, log_dir=part.log_dir, dir_name=part.dir_name)
        rate = task.max_bytes_per_second
        throttle = None
        if rate:
            burst = max(MIN_CHUNK_BYTES, min(CHUNK_BYTES, rate // 10))
            throttle = HostTokenBucket(task.throttle_dir / "scrub.bucket", rate_bytes_per_s=rate, burst_bytes=burst)
        with idle_io_priority():
            result = scrub_partition(
                Path(part.log_dir) / part.dir_name,
                cursor=cursor,
                now_ms=task.now_ms,
                recheck_ms=task.recheck_ms,
                recovery_point=task.recovery_point,
                live=task.live,
                throttle=throttle,
                chunk_bytes=max(MIN_CHUNK_BYTES, min(CHUNK_BYTES, rate // 10)) if rate else CHUNK_BYTES,
                keep_going=lambda: task.deadline is None or time.time() < task.deadline,
                save_cursor=(lambda c: write_cursor(task.cursor_path, c)) if task.save else None,
            )
        findings = result.findings
        changed = [s for s in result.segments if s.status == "changed_during_read"]
        actions = [_finding_action(f) for f in findings]
        actions += [
            ActionRow(ActionKind.CHANGED_DURING_READ.value, "", s.base_offset, 0, "deleted or replaced while read")
            for s in changed
        ]
        summary = (
            f"scrubbed {len(result.segments) - len(changed)} segments ({result.bytes_read} bytes), "
            f"{result.segments_not_due} not due, {result.segments_left} left for the next run"
            + (f"; {warning}" if warning else "")
        )
        actions.append(ActionRow("scrub_summary", "", -1, 0, summary))
        corrupt = any(f.is_corruption for f in findings)
        return partition_row(
            part,
            "corrupt" if corrupt else "ok",
            started=started,
            actions=tuple(actions),
            error_type="CorruptDataFound" if corrupt else "",
            error_message=next((a.reason for a in actions if a.kind != "scrub_summary"), "") if corrupt else "",
        )

    row = run_partition_work(task, scrub, read_only=True)
    return ScrubRow(row, findings)


def findings_table(run_id: str, done: list[ScrubRow], *, run_ts: datetime.datetime, ts: datetime.datetime) -> pa.Table:
    """The `scrub_findings` rows of a run: key, finding, verdict."""
    rows = [
        {
            **dataclasses.asdict(
                FindingKey(run_id, run_ts, ts, d.row.log_dir, d.row.topic, d.row.partition, d.row.dir_name)
            ),
            **dataclasses.asdict(f),
            **{name: known(getattr(f, name)) for name in _UNKNOWN_AS_NULL},
            **dataclasses.asdict(FindingVerdict(f.is_corruption)),
        }
        for d in done
        for f in d.findings
    ]
    return pa.Table.from_pylist(rows, schema=SCRUB_FINDINGS_SCHEMA)


def run(args: ScrubArgs) -> JobSummary:
    from jobs._common import get_spark, run_partition_tasks

    common = args.common
    run_id = common.run_id
    deadline = None if args.max_duration_s is None else time.time() + args.max_duration_s
    with (
        locked_log_dirs(
            common.log_dirs, allow_missing_meta_properties=common.allow_missing_meta_properties, read_only=True
        ),
        job_fs(dry_run=True) as overlay,  # reads only: the marker stays
    ):
        states = {log_dir: open_log_dir(log_dir, fs=overlay) for log_dir in common.log_dirs}
    live = {log_dir: is_live(log_dir) for log_dir in common.log_dirs}
    found, rows = discover_log_dirs(common.log_dirs)
    tasks = []
    for part in found:
        log_dir = Path(part.log_dir)
        tasks.append(
            ScrubTask(
                part,
                states[log_dir].recovery_points.get(TopicPartition(part.topic, part.partition)),
                live[log_dir],
                cursor_path(args.cursor_dir, log_dir, part.dir_name),
                args.max_bytes_per_second,
                args.throttle_dir,
                common.now_ms,
                args.recheck_period_ms,
                deadline,
                not common.dry_run,
            )
        )
    spark = get_spark(common.master, "logkeeper scrub")
    done = run_partition_tasks(spark, tasks, scrub_one, description=f"scrub {len(tasks)} partitions")
    findings = findings_table(run_id, done, run_ts=common.run_ts, ts=datetime.datetime.now(datetime.UTC))
    if findings.num_rows and not common.dry_run:
        log_dirs = [str(d) for d in common.log_dirs]
        write_run(common.warehouse / SCRUB_FINDINGS, findings, run_id=run_id, log_dirs=log_dirs)
    return JobSummary("scrub", run_id, common.dry_run, tuple(rows + [d.row for d in done]), (), common.run_ts)


def main(argv: list[str] | None = None) -> int:
    return run_main("scrub", parse_args, run, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    raise SystemExit(main())
