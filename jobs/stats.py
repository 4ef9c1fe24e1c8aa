"""`logkeeper stats`: one row per segment into the Delta table `<warehouse>/segment_stats`.

Segments are listed on the driver; their statistics are computed on executors by the Arrow UDF
:func:`udfs.segments.segment_stats_batches` (storage_core reads the batch headers, and the records
where a column needs them). Before anything is committed, a Great Expectations suite checks the
rows (:mod:`jobs._quality`); a failing suite fails the job and commits nothing. The validation
result is kept under `<warehouse>/_validations/`. Appends are idempotent per run id.

Each row also carries the partition's `topic_id` (its `partition.metadata`) and, with the cluster's
metadata log, `is_replica_of_this_broker`; stray replicas (:mod:`storage_core.topology`) are
reported with a `stray_replica` action on their partition row.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

from jobs._cluster import ClusterView
from jobs._common import (
    EXIT_FAILED,
    ActionRow,
    JobArgs,
    JobSummary,
    PartitionTask,
    common_args,
    discover_log_dirs,
    get_spark,
    job_parser,
    locked_log_dirs,
    new_run_id,
    partition_row,
    run_main,
)
from jobs._delta import SEGMENT_STATS, write_run
from jobs._quality import validate_segment_stats
from jobs._schema import to_spark_schema
from storage_core import names
from storage_core.names import TopicPartition
from storage_core.topology import ReplicaTopology, check_replica
from udfs.segments import SEGMENT_STATS_SCHEMA, segment_stats_batches


@dataclass(frozen=True, slots=True)
class StatsArgs:
    common: JobArgs


class StatsValidationError(Exception):
    """The statistics failed their Great Expectations suite; nothing was committed."""


def parse_args(argv: list[str]) -> StatsArgs:
    parser = job_parser("stats", "Write per-segment statistics of Kafka log dirs to the Delta table segment_stats.")
    return StatsArgs(common_args(parser.parse_args(argv)))


def run(args: StatsArgs) -> JobSummary:
    common = args.common
    run_id = new_run_id()
    run_ts_ms = common.now_ms
    with locked_log_dirs(common.log_dirs):
        found, rows = discover_log_dirs(common.log_dirs)
        inputs = []
        topologies = {}
        for part in found:
            dir_path = Path(part.log_dir) / part.dir_name
            topology = topologies[part] = _topology(common.cluster, part)
            bases = names.log_base_offsets(p.name for p in dir_path.iterdir())
            inputs += [
                (
                    run_id,
                    run_ts_ms,
                    part.log_dir,
                    part.dir_name,
                    part.topic,
                    part.partition,
                    topology.topic_id,
                    topology.is_replica_of_this_broker,
                    base,
                    base == bases[-1],
                )
                for base in bases
            ]
        spark = get_spark(common.master, "logkeeper stats")
        spark.sparkContext.setJobDescription(f"stats: {len(inputs)} segments of {len(found)} partitions")
        frame = spark.createDataFrame(
            inputs,
            "run_id string, run_ts_ms long, log_dir string, dir_name string, topic string, partition long, "
            "topic_id string, is_replica_of_this_broker boolean, base_offset long, is_active boolean",
        ).repartition(max(1, min(len(inputs), spark.sparkContext.defaultParallelism * 4)))
        table = frame.mapInArrow(segment_stats_batches, to_spark_schema(SEGMENT_STATS_SCHEMA)).toArrow()
    started = time.monotonic()
    passed = validate_segment_stats(
        table.to_pandas(), result_path=common.warehouse / "_validations" / f"segment_stats-{run_id}.json"
    )
    if not passed:
        raise StatsValidationError(f"segment statistics failed validation; see {common.warehouse}/_validations")
    if not common.dry_run and table.num_rows:
        write_run(common.warehouse / SEGMENT_STATS, table, key={"run_id": run_id})
    rows += [partition_row(p, "ok", started=started, actions=_stray_actions(topologies[p])) for p in found]
    for row in rows:
        for action in (a for a in row.actions if a.kind == "stray_replica"):
            print(f"logkeeper stats: stray replica {row.log_dir}/{row.dir_name}: {action.reason}", file=sys.stderr)
    print(f"logkeeper stats: {table.num_rows} segments of {len(found)} partitions", file=sys.stderr)
    return JobSummary("stats", run_id, common.dry_run, tuple(rows))


def _topology(view: ClusterView, part: PartitionTask) -> ReplicaTopology:
    """A live or `-future` dir against the metadata image; of other dirs only the topic id."""
    dir_path = Path(part.log_dir) / part.dir_name
    if part.kind not in ("live", "future"):
        return check_replica(dir_path, TopicPartition(part.topic, part.partition), image=None, node_id=None)
    return view.topology(part.log_dir, part.dir_name, TopicPartition(part.topic, part.partition))


def _stray_actions(topology: ReplicaTopology) -> tuple[ActionRow, ...]:
    if topology.is_stray:
        return (ActionRow("stray_replica", "", -1, 0, topology.stray_reason),)
    if topology.problem:
        return (ActionRow("unreadable_partition_metadata", "", -1, 0, topology.problem),)
    return ()


def main(argv: list[str] | None = None) -> int:
    try:
        return run_main("stats", parse_args, run, sys.argv[1:] if argv is None else argv)
    except StatsValidationError as exc:
        print(f"logkeeper stats: {exc}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    raise SystemExit(main())
