"""`logkeeper recover`: Kafka's LogManager.loadLogs + LogLoader over every partition, on Spark executors.

Driver: lock every log dir (refuse a held `.lock`), read each dir's clean-shutdown marker and
checkpoints and delete the marker (unless dry run), discover partitions, run
:func:`recover_partition` on executors largest first, then per log dir write the recovery-point and
log-start-offset checkpoints and, only if every partition of the dir recovered, `.kafka_cleanshutdown`
(so a broker starts without recovery).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from jobs._common import (
    ActionRow,
    JobArgs,
    JobSummary,
    PartitionDir,
    PartitionRow,
    close_log_dirs,
    common_args,
    discover_log_dirs,
    get_spark,
    job_parser,
    locked_log_dirs,
    new_run_id,
    partition_row,
    run_main,
    run_on_executors,
    run_partition_work,
)
from storage_core.config import effective_log_config
from storage_core.load_actions import ActionKind
from storage_core.loader import LoadOptions, load_partition
from storage_core.log_dir import open_log_dir
from storage_core.names import TopicPartition
from storage_core.partition_segments import SegmentSettings


@dataclass(frozen=True, slots=True)
class RecoverArgs:
    common: JobArgs
    deep_verify: bool


@dataclass(frozen=True, slots=True)
class RecoverTask:
    """One partition to load, with everything the executor needs (picklable)."""

    partition: PartitionDir
    options: LoadOptions
    rank: int
    total: int


def parse_args(argv: list[str]) -> RecoverArgs:
    parser = job_parser("recover", "Recover Kafka log dirs after an unclean shutdown, as the broker's LogLoader.")
    parser.add_argument("--deep-verify", action="store_true", help="also CRC-check segments below the recovery point")
    namespace = parser.parse_args(argv)
    return RecoverArgs(common_args(namespace), namespace.deep_verify)


def recover_partition(task: RecoverTask) -> PartitionRow:
    """Executor side: load one partition directory; any storage or I/O error becomes a failed row."""
    part = task.partition

    def load(started: float) -> PartitionRow:
        result = load_partition(Path(part.log_dir) / part.dir_name, task.options)
        corrupt = result.corruption_found
        return partition_row(
            part,
            "corrupt" if corrupt else "ok",
            started=started,
            log_start_offset=result.log_start_offset,
            log_end_offset=result.log_end_offset,
            first_segment_base_offset=result.first_segment_base_offset,
            truncated_bytes=result.truncated_bytes,
            segments_deleted=result.segments_deleted,
            indexes_rebuilt=result.segments_recovered,
            actions=tuple(ActionRow.of(a) for a in result.actions),
            error_type="CorruptDataBelowRecoveryPoint" if corrupt else "",
            error_message=next((a.reason for a in result.actions if a.kind == ActionKind.CORRUPTION_DETECTED), ""),
        )

    return run_partition_work(task, load)


def run(args: RecoverArgs) -> JobSummary:
    common = args.common
    run_id = new_run_id()
    with locked_log_dirs(common.log_dirs):
        states = {log_dir: open_log_dir(log_dir, dry_run=common.dry_run) for log_dir in common.log_dirs}
        found, skipped = discover_log_dirs(common.log_dirs)
        tasks = []
        for rank, part in enumerate(found, start=1):
            state = states[Path(part.log_dir)]
            tp = TopicPartition(part.topic, part.partition)
            config = effective_log_config(common.broker, common.topics, part.topic)
            options = LoadOptions(
                had_clean_shutdown=state.had_clean_shutdown,
                recovery_point=state.recovery_points.get(tp, 0),
                log_start_offset=state.log_start_offsets.get(tp, 0),
                now_ms=common.now_ms,
                settings=SegmentSettings(config.index_interval_bytes, config.segment_index_bytes),
                producer_id_expiration_ms=common.broker.producer_id_expiration_ms,
                deep_verify=args.deep_verify,
                dry_run=common.dry_run,
            )
            tasks.append(RecoverTask(part, options, rank, len(found)))
        spark = get_spark(common.master, "logkeeper recover")
        rows = run_on_executors(spark, tasks, recover_partition, description=f"recover {len(tasks)} partitions")
        if not common.dry_run:
            close_log_dirs(states, skipped + rows, require_clean=False, offsets_unchanged=False)
    return JobSummary("recover", run_id, common.dry_run, tuple(skipped + rows))


def main(argv: list[str] | None = None) -> int:
    return run_main("recover", parse_args, run, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    raise SystemExit(main())
