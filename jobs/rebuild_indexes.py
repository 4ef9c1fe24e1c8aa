"""`logkeeper rebuild-indexes`: verify (`--verify-only`) or rebuild every partition's indexes on executors.

Each partition's `.index`, `.timeindex` and `.txnindex` are checked against a rebuild from its
`.log` files (:func:`storage_core.index_rebuild.rebuild_indexes`); invalid or missing ones are
reported (`--verify-only`), or replaced atomically. `.log` files are never changed (that is
`recover`'s job). A dry run rebuilds over overlay file systems: it reports each file a real run
would write, and changes none. `--verify-only` only reads: it takes no `.lock`, so it runs beside a
live broker, whose active segments are reported in flight and not verified.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from jobs._common import (
    JobArgs,
    JobSummary,
    PartitionDir,
    PartitionRow,
    action_rows,
    common_args,
    discover_log_dirs,
    get_spark,
    job_parser,
    locked_log_dirs,
    log_dir_rows,
    partition_row,
    run_main,
    run_partition_tasks,
    run_partition_work,
)
from jobs._load import job_fs
from storage_core.index_rebuild import rebuild_indexes
from storage_core.live import is_live
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
    dry_run: bool
    live: bool  # verify-only beside a live broker: read as a consumer reads (storage_core.live)
    dry_run_state: Path | None = None


def parse_args(argv: list[str]) -> RebuildArgs:
    parser = job_parser("rebuild-indexes", "Verify or rebuild Kafka offset, time and transaction indexes.")
    parser.add_argument("--verify-only", action="store_true", help="report invalid indexes, change nothing")
    namespace = parser.parse_args(argv)
    return RebuildArgs(common_args(namespace), namespace.verify_only)


def rebuild_partition(task: RebuildTask) -> PartitionRow:
    """Executor side: check (and unless verify-only, fix) one partition's indexes."""
    part = task.partition

    def rebuild(started: float) -> PartitionRow:
        dir_path = Path(part.log_dir) / part.dir_name
        with job_fs(task.dry_run, task.dry_run_state, str(dir_path)) as fs:
            result = rebuild_indexes(
                dir_path, settings=task.settings, verify_only=task.verify_only, live=task.live, fs=fs
            )
        mismatched = task.verify_only and result.mismatches > 0
        return partition_row(
            part,
            "corrupt" if mismatched else "ok",
            started=started,
            indexes_rebuilt=0 if task.verify_only else result.mismatches,
            actions=action_rows(result.actions),
            error_type="IndexMismatch" if mismatched else "",
            error_message=f"{result.mismatches} invalid or missing index files" if mismatched else "",
        )

    return run_partition_work(task, rebuild)


def run(args: RebuildArgs) -> JobSummary:
    common = args.common
    with locked_log_dirs(
        common.log_dirs,
        allow_missing_meta_properties=common.allow_missing_meta_properties,
        dry_run=common.dry_run,
        read_only=args.verify_only,
    ) as locks:
        live = {log_dir: args.verify_only and is_live(log_dir) for log_dir in common.log_dirs}
        found, rows = discover_log_dirs(common.log_dirs)
        tasks = []
        for part in found:
            config = common.cluster.topic_config(part.log_dir, part.topic).config
            settings = SegmentSettings(config.index_interval_bytes, config.segment_index_bytes)
            tasks.append(
                RebuildTask(
                    part, settings, args.verify_only, common.dry_run, live[Path(part.log_dir)], common.dry_run_state
                )
            )
        spark = get_spark(common.master, "logkeeper rebuild-indexes")
        rows += run_partition_tasks(
            spark,
            tasks,
            rebuild_partition,
            description=f"rebuild-indexes {len(tasks)} partitions",
            dry_run=common.dry_run,
        )
    log_dirs = log_dir_rows(common.log_dirs, locks)
    return JobSummary(
        "rebuild-indexes", common.run_id, common.dry_run or args.verify_only, tuple(rows), log_dirs, common.run_ts
    )


def main(argv: list[str] | None = None) -> int:
    return run_main("rebuild-indexes", parse_args, run, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    raise SystemExit(main())
