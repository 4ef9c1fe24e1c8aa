"""`logkeeper retention`: Kafka's time, size and log-start-offset retention over every partition.

Driver: lock every log dir, list its partitions and decide each topic's config from the cluster's
metadata log and the topic-config file (:mod:`jobs._cluster`: a topic whose own configs are
unknown is refused, exit 2, before anything is touched; stray replicas are left alone); then read
its checkpoints (log start offsets, high watermarks from replication-offset-checkpoint) and
clean-shutdown marker; a dir that was not cleanly shut down is refused per partition (run `recover`
first: retention must not act on unrecovered logs). Each partition's row names, in a
`retention_plan` action, the settings used and where they came from. Executors load each partition
as a broker would (:mod:`jobs._load`: missing indexes rebuilt first, so the time rule sees the real
largest timestamps), then plan and apply :mod:`storage_core.retention`, largest first. A tiered
topic's partition (`remote.storage.enable`) carries what `__remote_log_metadata` on these disks says
of its uploads (:mod:`jobs._tiered`): `local.retention.*` deletes only uploaded segments, and a
`tiered_keep` action says why each other segment stays. The driver
then checkpoints the new log start offsets and re-creates the clean-shutdown marker. A dry run does
the same over overlay file systems.

`--dry-run` only reads: it takes no `.lock`, and on a log dir a live broker holds it does not
require the marker (the broker deleted it when it started), so it plans beside a running broker over
the log as it is (elsewhere it refuses what the real run refuses); a partition that changes
while it is planned is reported `changed_during_read`.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from jobs._cluster import select_configured
from jobs._common import (
    ActionRow,
    JobArgs,
    JobSummary,
    PartitionDir,
    PartitionRow,
    UsageError,
    action_rows,
    add_high_watermark_source,
    checkpoint_keys,
    close_log_dirs,
    common_args,
    discover_log_dirs,
    get_spark,
    high_watermark,
    job_parser,
    locked_log_dirs,
    log_dir_rows,
    partition_row,
    refused_unclean,
    run_main,
    run_partition_tasks,
    run_partition_work,
)
from jobs._load import job_fs, load_options, load_status, loaded_first, quarantine_roots
from jobs._tiered import TIERED_SETTINGS, tiered_copies
from storage_core.config import LogConfig
from storage_core.config_layers import ConfigValue
from storage_core.live import is_live
from storage_core.loader import LoadOptions
from storage_core.log_dir import open_log_dir
from storage_core.retention import apply_retention, plan_retention
from storage_core.tiered.local_retention import RemoteCopies

# The settings retention decides with (their values and sources go into every row).
SETTINGS = ("cleanup.policy", "retention.ms", "retention.bytes")


@dataclass(frozen=True, slots=True)
class RetentionArgs:
    common: JobArgs
    high_watermark_source: str
    file_delete_delay_ms: int


@dataclass(frozen=True, slots=True)
class RetentionTask:
    partition: PartitionDir
    load: LoadOptions
    config: LogConfig
    settings: tuple[ConfigValue, ...]
    high_watermark: int | None
    file_delete_delay_ms: int
    dry_run_state: Path | None = None
    remote: RemoteCopies | None = None  # a tiered topic's uploads


def add_options(parser: argparse.ArgumentParser) -> None:
    """retention's own options (`maintain` takes them too)."""
    add_high_watermark_source(parser)
    parser.add_argument(
        "--file-delete-delay-ms",
        type=int,
        default=0,
        help="keep deleted segments as .deleted files this long (file.delete.delay.ms; 0: delete at once)",
    )


def parse_args(argv: list[str]) -> RetentionArgs:
    parser = job_parser("retention", "Delete Kafka segments by time, size and log start offset, as the broker does.")
    add_options(parser)
    namespace = parser.parse_args(argv)
    if namespace.file_delete_delay_ms < 0:
        raise UsageError("--file-delete-delay-ms must be >= 0")
    common = common_args(namespace, destructive="apply retention to", quarantines=True)
    return RetentionArgs(common, namespace.high_watermark_source, namespace.file_delete_delay_ms)


def retain_partition(task: RetentionTask) -> PartitionRow:
    """Executor side: plan (and apply) retention for one partition."""
    part = task.partition

    def retain(started: float) -> PartitionRow:
        with loaded_first(part, task.load, task.dry_run_state) as (fs, loaded):
            plan = plan_retention(
                Path(part.log_dir) / part.dir_name,
                config=task.config,
                log_start_offset=task.load.log_start_offset,
                high_watermark=task.high_watermark,
                now_ms=task.load.now_ms,
                remote=task.remote,
                fs=fs,
            )
            actions = apply_retention(plan, file_delete_delay_ms=task.file_delete_delay_ms, fs=fs)
        decision = ActionRow("retention_plan", "", -1, 0, ", ".join(map(str, task.settings)))
        return partition_row(
            part,
            started=started,
            log_start_offset=plan.new_log_start_offset,
            log_end_offset=plan.log_end_offset,
            first_segment_base_offset=plan.first_base_offset_after,
            truncated_bytes=loaded.truncated_bytes,
            bytes_deleted=plan.bytes_deleted,
            segments_deleted=len(plan.deletions),
            indexes_rebuilt=loaded.segments_recovered,
            actions=(decision, *action_rows(loaded.actions + actions)),
            settings=task.settings,
            **load_status(loaded),
        )

    return run_partition_work(task, retain, read_only=task.load.dry_run)


def run(args: RetentionArgs) -> JobSummary:
    common = args.common
    with (
        job_fs(common.dry_run, common.dry_run_state) as fs,
        locked_log_dirs(
            common.log_dirs, allow_missing_meta_properties=common.allow_missing_meta_properties, dry_run=common.dry_run
        ) as locks,
    ):
        found, rows = discover_log_dirs(common.log_dirs)
        keys = checkpoint_keys(found)  # live and -future dirs read their own dir's entries, as in cleanupLogs
        configured, strays = select_configured(
            found, common.cluster, assume_broker_defaults=common.assume_broker_defaults, job="apply retention to"
        )
        rows += strays
        states = {log_dir: open_log_dir(log_dir, fs=fs) for log_dir in common.log_dirs}
        live = {log_dir: is_live(log_dir) for log_dir in common.log_dirs}  # a dry run plans beside a broker
        eligible = []
        for item in configured:
            log_dir = Path(item.partition.log_dir)
            if states[log_dir].had_clean_shutdown or (common.dry_run and live[log_dir]):
                eligible.append(item)
            else:
                rows.append(refused_unclean(item.partition))
        roots = quarantine_roots(common)
        copies = tiered_copies(common.cluster, (item.partition for item in eligible), common.log_dirs)
        tasks = []
        for item in eligible:
            part = item.partition
            state = states[Path(part.log_dir)]
            tp = keys.get((part.log_dir, part.dir_name))
            tiered = item.config.config.tiered
            tasks.append(
                RetentionTask(
                    part,
                    load_options(common, state, part, roots, tp),
                    item.config.config,
                    item.config.values(*SETTINGS, *(TIERED_SETTINGS if tiered else ())),
                    high_watermark(state, tp, args.high_watermark_source),
                    args.file_delete_delay_ms,
                    common.dry_run_state,
                    copies.get((part.log_dir, part.dir_name)),
                )
            )
        spark = get_spark(common.master, "logkeeper retention")
        done = run_partition_tasks(
            spark, tasks, retain_partition, description=f"retention {len(tasks)} partitions", dry_run=common.dry_run
        )
        closed = close_log_dirs(states, rows + done, require_clean=True, offsets_unchanged=False, fs=fs)
        rows += closed.failures
    log_dirs = log_dir_rows(common.log_dirs, locks, opened=states, closed=closed.written)
    return JobSummary("retention", common.run_id, common.dry_run, tuple(rows + done), log_dirs, common.run_ts)


def main(argv: list[str] | None = None) -> int:
    return run_main("retention", parse_args, run, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    raise SystemExit(main())
