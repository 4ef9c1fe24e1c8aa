"""`logkeeper disk-usage`: every byte of every log dir, classified, into the Delta table `disk_usage`.

    logkeeper disk-usage --log-dirs D[,D] [--plan] [--high-watermark-source S] [--dedupe-buffer-bytes N]
                         (+ the common options)

Read-only, beside live brokers (no `.lock`, no clean-shutdown marker needed, nothing written in a log
dir): executors load each partition over an overlay, as retention's dry run does (:mod:`jobs._load`:
segments are aged by their real timestamps, not a file's mtime), and classify its files on disk
(:mod:`storage_core.disk_usage`) with what retention would delete now (its plan, tiered topics'
uploads included, :mod:`jobs._tiered`) and, for compacted topics, what a clean would free
(:mod:`storage_core.cleaner.explain`); stray replicas (by topic id against the metadata image),
`-future`, `-delete` and `-stray` dirs count whole. The driver adds the
log dirs' own entries (checkpoints, the metadata log, leftovers) and the quarantine's pieces. Every
byte of a log dir is in exactly one row: the rows of a log dir add up to `du -sb` (`bytes`) and
`du -sB1` (`disk_bytes`) of it.

A topic whose own configs are unknown (never guessed) has nothing retention-eligible; its bytes are
`live_data` and its row says why. `--plan` then runs, with the same options, the dry runs of the jobs
that free the reclaimable classes found (`retention`, `compact`, `recover`: each one's plan goes to
the maintenance log under run id `<run id>.plan-<job>`, and beside `--result-json`), so the figures
here can be checked against the files those jobs would delete.
"""

from __future__ import annotations

import dataclasses
import datetime
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from jobs import _log
from jobs._common import (
    ActionRow,
    JobArgs,
    JobSummary,
    PartitionRow,
    PartitionTask,
    add_high_watermark_source,
    checkpoint_keys,
    common_args,
    discover_partitions,
    get_spark,
    high_watermark,
    job_parser,
    locked_log_dirs,
    partition_row,
    run_main,
    run_partition_tasks,
    run_partition_work,
)
from jobs._delta import write_run
from jobs._fleet import log_dir_identity
from jobs._load import job_fs, load_options, loaded_first, quarantine_roots
from jobs._schema import to_arrow
from jobs._tables import DISK_USAGE
from jobs._tiered import tiered_copies
from storage_core import disk_usage
from storage_core.cleaner.explain import explain_cleaning
from storage_core.config import LogConfig
from storage_core.disk_usage import UsageClass, UsageEntry
from storage_core.loader import LoadOptions
from storage_core.log_dir import open_log_dir
from storage_core.names import TopicPartition
from storage_core.retention import plan_retention
from storage_core.tiered.local_retention import RemoteCopies

log = _log.get("disk-usage")

# The whole-dir classes of the partition dirs that are not this broker's live replicas.
_WHOLE = {"future": UsageClass.FUTURE_REPLICA, "delete": UsageClass.DELETE_PENDING, "stray": UsageClass.STRAY_REPLICA}
# The jobs whose dry runs `--plan` shows, by the class they free.
PLAN_JOBS = {
    UsageClass.RETENTION_ELIGIBLE: "retention",
    UsageClass.TIERED_UPLOADED: "retention",
    UsageClass.COMPACTION_RECLAIMABLE: "compact",
    UsageClass.TEMPORARY: "recover",
}


@dataclass(frozen=True, slots=True)
class DiskUsageArgs:
    common: JobArgs
    plan: bool
    high_watermark_source: str
    dedupe_buffer_bytes: int | None
    argv: tuple[str, ...]  # the command line, for the jobs `--plan` runs


@dataclass(frozen=True, slots=True)
class UsageTask:
    """One partition dir to classify (picklable): a whole-dir class, or a live replica with its topic's
    config (None: unknown) and what retention and the cleaner need."""

    partition: PartitionTask
    whole: UsageClass | None
    config: LogConfig | None
    why_unknown: str
    load: LoadOptions | None  # a dry run's load: the plans see the log a broker would load
    high_watermark: int | None
    cleaner_checkpoint: int | None
    remote: RemoteCopies | None
    dedupe_buffer_bytes: int
    load_factor: float
    now_ms: int


@dataclass(frozen=True, slots=True)
class UsageRow:
    """A partition's row and its classified bytes."""

    row: PartitionRow
    entries: tuple[UsageEntry, ...]


@dataclass(frozen=True, slots=True)
class DiskUsageRow:
    """One row of `disk_usage` (docs/tables.md): bytes of one class and rule in one directory."""

    run_id: str
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
    usage_class: str
    rule: str | None
    reclaimable: bool
    freed_by: str | None
    files: int
    bytes: int
    disk_bytes: int


def parse_args(argv: list[str]) -> DiskUsageArgs:
    parser = job_parser("disk-usage", "Classify every byte of Kafka log dirs (read-only, beside live brokers).")
    add_high_watermark_source(parser)
    parser.add_argument("--dedupe-buffer-bytes", type=int, help="offset map memory for the compaction estimate")
    parser.add_argument(
        "--plan", action="store_true", help="then run the dry runs of the jobs that would free the reclaimable bytes"
    )
    namespace = parser.parse_args(argv)
    common = common_args(namespace)
    return DiskUsageArgs(
        common, namespace.plan, namespace.high_watermark_source, namespace.dedupe_buffer_bytes, tuple(argv)
    )


def usage_one(task: UsageTask) -> UsageRow:
    """Executor side: classify one partition dir's bytes."""
    part = task.partition
    dir_path = Path(part.log_dir) / part.dir_name
    entries: tuple[UsageEntry, ...] = ()

    def classify(started: float) -> PartitionRow:
        nonlocal entries
        if task.whole is not None:
            entries = disk_usage.whole_dir_usage(dir_path, task.whole)
            return partition_row(part, "ok", started=started, actions=(_summary(entries, task.whole.value),))
        plan = explanation = None
        if task.config is not None and task.load is not None:
            with loaded_first(part, task.load, None) as (fs, _):  # over an overlay: nothing changes
                plan = plan_retention(
                    dir_path,
                    config=task.config,
                    log_start_offset=task.load.log_start_offset,
                    high_watermark=task.high_watermark,
                    now_ms=task.now_ms,
                    remote=task.remote,
                    fs=fs,
                )
                if task.config.compact:
                    explanation = explain_cleaning(
                        dir_path,
                        config=task.config,
                        cleaner_checkpoint=task.cleaner_checkpoint,
                        log_start_offset=task.load.log_start_offset,
                        high_watermark=task.high_watermark,
                        now_ms=task.now_ms,
                        dedupe_buffer_bytes=task.dedupe_buffer_bytes,
                        load_factor=task.load_factor,
                        fs=fs,
                    )
        entries = disk_usage.partition_usage(dir_path, retention=plan, compaction=explanation)
        note = "" if task.config is not None else f"; nothing counted as reclaimable: {task.why_unknown}"
        return partition_row(part, "ok", started=started, actions=(_summary(entries, note),))

    row = run_partition_work(task, classify, read_only=True)
    if row.status == "failed" and not entries:  # a log that does not read: its files by name only
        try:
            entries = disk_usage.partition_usage(dir_path, retention=None, compaction=None)
        except OSError:
            entries = ()
    return UsageRow(row, entries)


def _summary(entries: tuple[UsageEntry, ...], note: str) -> ActionRow:
    reclaimable = sum(e.bytes for e in entries if e.freed_by)
    parts = ", ".join(f"{e.usage_class.value}{'/' + e.rule if e.rule else ''} {e.bytes} B" for e in entries)
    return ActionRow("disk_usage", "", -1, reclaimable, f"{parts}{note}")


def _tasks(args: DiskUsageArgs, found: list[PartitionTask]) -> list[UsageTask]:
    common = args.common
    view = common.cluster
    with job_fs(dry_run=True) as overlay:  # reads only
        states = {log_dir: open_log_dir(log_dir, fs=overlay) for log_dir in common.log_dirs}
    keys = checkpoint_keys(found)
    roots = quarantine_roots(common)
    live = []
    tasks = []
    for part in found:
        tp = TopicPartition(part.topic, part.partition)
        whole = _WHOLE.get(part.kind)
        if whole is None and view.topology(part.log_dir, part.dir_name, tp).is_stray:
            whole = UsageClass.STRAY_REPLICA
        if whole is not None:
            tasks.append(UsageTask(part, whole, None, "", None, None, None, None, 0, 0.0, common.now_ms))
            continue
        live.append(part)
    copies = tiered_copies(view, [p for p in live if view.layers(p.log_dir).knows(p.topic)], common.log_dirs)
    for part in live:
        state = states[Path(part.log_dir)]
        key = keys.get((part.log_dir, part.dir_name))
        layers = view.layers(part.log_dir)
        known = layers.knows(part.topic) or common.assume_broker_defaults
        broker = layers.broker
        tasks.append(
            UsageTask(
                part,
                None,
                view.topic_config(part.log_dir, part.topic).config if known else None,
                "" if known else f"the topic's own configs are unknown ({view.unknown_reason(part.log_dir)})",
                dataclasses.replace(load_options(common, state, part, roots, key), dry_run=True),
                high_watermark(state, key, args.high_watermark_source),
                state.cleaner_offsets.get(key) if key else None,
                copies.get((part.log_dir, part.dir_name)),
                min(args.dedupe_buffer_bytes or broker.offset_map_bytes, 2**31 - 1),
                broker.dedupe_buffer_load_factor,
                common.now_ms,
            )
        )
    return tasks


def usage_table(args: DiskUsageArgs, done: list[UsageRow], *, ts: datetime.datetime) -> pa.Table:
    """The `disk_usage` rows of a run: the partitions', the log dirs' own and the quarantine's."""
    common = args.common
    rows = []

    def add(log_dir: str, topic: str | None, partition: int | None, dir_name: str, entry: UsageEntry) -> None:
        who = log_dir_identity(log_dir)
        rows.append(
            DiskUsageRow(
                common.run_id,
                common.run_ts,
                ts,
                ts.date(),
                log_dir,
                who.cluster_id,
                who.node_id,
                who.host,
                topic,
                partition,
                dir_name,
                entry.usage_class.value,
                entry.rule or None,
                bool(entry.freed_by),
                entry.freed_by or None,
                entry.files,
                entry.bytes,
                entry.disk_bytes,
            )
        )

    for d in done:
        for entry in d.entries:
            add(d.row.log_dir, d.row.topic, d.row.partition, d.row.dir_name, entry)
    for log_dir in common.log_dirs:
        mine = [d.row.dir_name for d in done if d.row.log_dir == str(log_dir)]
        for entry in disk_usage.log_dir_usage(log_dir, mine):
            add(str(log_dir), None, None, "", entry)
    if common.quarantine_dir is not None:
        for run, entries in disk_usage.quarantine_usage(common.quarantine_dir).items():
            for entry in entries:
                add(str(common.quarantine_dir), None, None, run, entry)
    return to_arrow(rows, DiskUsageRow)


def _report(table: pa.Table) -> None:
    totals: dict[tuple[str, str], int] = defaultdict(int)
    for row in table.select(["log_dir", "usage_class", "bytes"]).to_pylist():
        totals[(row["log_dir"], row["usage_class"])] += row["bytes"]
    for log_dir in sorted({d for d, _ in totals}):
        mine = {cls: n for (d, cls), n in totals.items() if d == log_dir}
        reclaimable = sum(n for cls, n in mine.items() if cls in {c.value for c in disk_usage.FREED_BY})
        listed = ", ".join(f"{cls} {n:,}" for cls, n in sorted(mine.items(), key=lambda kv: -kv[1]) if n)
        total = sum(mine.values())
        log.info(f"logkeeper disk-usage: {log_dir}: {total:,} B, {reclaimable:,} B reclaimable: {listed}")


def run(args: DiskUsageArgs) -> JobSummary:
    common = args.common
    with locked_log_dirs(
        common.log_dirs, allow_missing_meta_properties=common.allow_missing_meta_properties, read_only=True
    ):
        found, rows = discover_partitions(common.log_dirs)
        tasks = _tasks(args, found)
        spark = get_spark(common.master, "logkeeper disk-usage")
        done = run_partition_tasks(spark, tasks, usage_one, description=f"disk usage of {len(tasks)} partitions")
        table = usage_table(args, done, ts=datetime.datetime.now(datetime.UTC))
    if not common.dry_run and table.num_rows:
        log_dirs = [str(d) for d in common.log_dirs]
        if common.quarantine_dir is not None:
            log_dirs.append(str(common.quarantine_dir))
        write_run(common.warehouse / DISK_USAGE, table, run_id=common.run_id, log_dirs=log_dirs)
    _report(table)
    done_rows = tuple(rows + [d.row for d in done])
    summary = JobSummary("disk-usage", common.run_id, common.dry_run, done_rows, (), common.run_ts)
    if args.plan:
        classes = zip(table["usage_class"].to_pylist(), table["bytes"].to_pylist(), strict=True)
        _plan(args, {UsageClass(c) for c, n in classes if n})
    return summary


# What each job `--plan` runs does not take of disk-usage's own options.
_NOT_TAKEN = {
    "retention": ("--dedupe-buffer-bytes",),
    "compact": (),
    "recover": ("--dedupe-buffer-bytes", "--high-watermark-source"),
}


def _plan(args: DiskUsageArgs, present: set[UsageClass]) -> None:
    """Run the dry run of each job that frees a class present (its own maintenance-log rows and JSON)."""
    from jobs import compact, recover, retention

    mains = {"retention": retention.main, "compact": compact.main, "recover": recover.main}
    for job in dict.fromkeys(PLAN_JOBS[c] for c in sorted(present) if c in PLAN_JOBS):
        argv = _without(list(args.argv), ("--plan",), ("--result-json", "--run-id", *_NOT_TAKEN[job]))
        argv += ["--dry-run", "--run-id", f"{args.common.run_id}.plan-{job}"]
        if args.common.result_json is not None:
            out = args.common.result_json
            argv += ["--result-json", str(out.with_name(f"{out.stem}.plan-{job}{out.suffix}"))]
        log.info(f"logkeeper disk-usage --plan: logkeeper {job} {' '.join(argv)}")
        code = mains[job](argv)
        if code:
            log.warning(f"logkeeper disk-usage --plan: logkeeper {job} --dry-run exited {code}")


def _without(argv: list[str], flags: tuple[str, ...], options: tuple[str, ...]) -> list[str]:
    """`argv` without the `flags` and the `options` (and their values, `--x v` or `--x=v`)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in flags or (arg.split("=", 1)[0] in options and "=" in arg):
            continue
        elif arg in options:
            skip = True
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    return run_main("disk-usage", parse_args, run, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    raise SystemExit(main())
