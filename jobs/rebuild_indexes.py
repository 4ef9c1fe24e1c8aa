"""`logkeeper rebuild-indexes`: verify (`--verify-only`) or rebuild every partition's indexes on executors.

Each partition's `.index`, `.timeindex` and `.txnindex` are checked against a rebuild from its
`.log` files (:func:`storage_core.index_rebuild.rebuild_indexes`); invalid or missing ones are
reported, or replaced atomically. `.log` files are never changed (that is `recover`'s job).
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
from storage_core.index_rebuild import rebuild_indexes
from storage_core.partition_segments import SegmentSettings


@dataclass(frozen=True, slots=True)
class RebuildArgs:
    common: JobArgs
    verify_only: bool


@dataclass(frozen=True, slots=True)
class RebuildTask:
    partition: PartitionDir
    settings: SegmentSettings
    verify_only: bool
    rank: int
    total: int


def parse_args(argv: list[str]) -> RebuildArgs:
    parser = job_parser("rebuild-indexes", "Verify or rebuild Kafka offset, time and transaction indexes.")
    parser.add_argument("--verify-only", action="store_true", help="report invalid indexes, change nothing")
    namespace = parser.parse_args(argv)
    return RebuildArgs(common_args(namespace), namespace.verify_only)


def rebuild_partition(task: RebuildTask) -> PartitionRow:
    """Executor side: check (and unless verify-only, fix) one partition's indexes."""
    part = task.partition

    def rebuild(started: float) -> PartitionRow:
        result = rebuild_indexes(
            Path(part.log_dir) / part.dir_name, settings=task.settings, verify_only=task.verify_only
        )
        mismatched = task.verify_only and result.mismatches > 0
        return partition_row(
            part,
            "corrupt" if mismatched else "ok",
            started=started,
            indexes_rebuilt=0 if task.verify_only else result.mismatches,
            actions=tuple(ActionRow.of(a) for a in result.actions),
            error_type="IndexMismatch" if mismatched else "",
            error_message=f"{result.mismatches} invalid or missing index files" if mismatched else "",
        )

    return run_partition_work(task, rebuild)


def run(args: RebuildArgs) -> JobSummary:
    common = args.common
    with locked_log_dirs(common.log_dirs):
        found, rows = discover_log_dirs(common.log_dirs)
        tasks = []
        for rank, part in enumerate(found, start=1):
            config = common.cluster.topic_config(part.log_dir, part.topic).config
            settings = SegmentSettings(config.index_interval_bytes, config.segment_index_bytes)
            verify_only = args.verify_only or common.dry_run
            tasks.append(RebuildTask(part, settings, verify_only, rank, len(found)))
        spark = get_spark(common.master, "logkeeper rebuild-indexes")
        rows += run_on_executors(
            spark, tasks, rebuild_partition, description=f"rebuild-indexes {len(tasks)} partitions"
        )
    return JobSummary("rebuild-indexes", new_run_id(), common.dry_run or args.verify_only, tuple(rows))


def main(argv: list[str] | None = None) -> int:
    return run_main("rebuild-indexes", parse_args, run, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    raise SystemExit(main())
