"""`logkeeper stats`: one row per segment into the Delta table `<warehouse>/segment_stats`.

Stats changes nothing in a log dir that a live broker holds (its `.lock` is locked by another
process): it takes no lock there and reads segments the way a consumer does
(:mod:`storage_core.live.reader`); each row says whether its partition was read as one consistent
snapshot (`snapshot_consistent`) and whether a broker held the log dir (`live`). A log dir no broker
holds is locked, and its partitions, if it was cleanly shut down, are first loaded as a broker would
(:mod:`jobs._load`: a missing or broken index is rebuilt, interrupted swaps finished), one Spark task
each, with the marker removed for the time of the load and written again after it, as retention
does; what the load changed is in each partition's row. The statistics are computed on executors by
the Arrow UDF :func:`udfs.segments.segment_stats_batches`, one task input per partition (storage_core
reads the batch headers, and the records where a column needs them). Before anything is committed, a
Great Expectations suite checks the rows (:mod:`jobs._quality`); a failing suite fails the job and
commits nothing. The validation result is kept under `<warehouse>/_validations/`. Appends are
idempotent per run id. A dry run loads over overlay file systems and computes the statistics of the
files as they are.

Each row also carries the partition's `topic_id` (its `partition.metadata`) and, with the cluster's
metadata log, `is_replica_of_this_broker`; stray replicas (:mod:`storage_core.topology`) are
reported with a `stray_replica` action on their partition row.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from jobs import _log
from jobs._cluster import ClusterView
from jobs._common import (
    EXIT_FAILED,
    ActionRow,
    JobArgs,
    JobSummary,
    PartitionTask,
    checkpoint_keys,
    close_log_dirs,
    common_args,
    discover_log_dirs,
    get_spark,
    job_parser,
    locked_log_dirs,
    log_dir_rows,
    partition_row,
    run_main,
    run_partition_tasks,
)
from jobs._delta import write_run
from jobs._fleet import log_dir_identity
from jobs._load import job_fs, load_options, quarantine_roots
from jobs._quality import validate_segment_stats
from jobs._schema import to_spark_schema
from jobs._spark import progress_feed
from jobs._tables import SEGMENT_STATS
from jobs.recover import RecoverTask, recover_partition
from storage_core.live import is_live
from storage_core.log_dir import open_log_dir
from storage_core.names import TopicPartition
from storage_core.topology import ReplicaTopology, check_replica
from udfs.segments import SEGMENT_STATS_SCHEMA, segment_stats_batches

log = _log.get("stats")


@dataclass(frozen=True, slots=True)
class StatsArgs:
    common: JobArgs


class StatsValidationError(Exception):
    """The statistics failed their Great Expectations suite; nothing was committed."""


def parse_args(argv: list[str]) -> StatsArgs:
    parser = job_parser("stats", "Write per-segment statistics of Kafka log dirs to the Delta table segment_stats.")
    return StatsArgs(common_args(parser.parse_args(argv), quarantines=True))


def run(args: StatsArgs) -> JobSummary:
    common = args.common
    run_id = common.run_id
    run_ts_ms = common.now_ms
    live = {log_dir: is_live(log_dir) for log_dir in common.log_dirs}
    offline = tuple(log_dir for log_dir in common.log_dirs if not live[log_dir])
    allow = common.allow_missing_meta_properties
    with (
        job_fs(common.dry_run, common.dry_run_state) as fs,
        locked_log_dirs([d for d in common.log_dirs if live[d]], allow_missing_meta_properties=allow, read_only=True),
        locked_log_dirs(offline, allow_missing_meta_properties=allow, dry_run=common.dry_run) as locks,
    ):
        states = {log_dir: open_log_dir(log_dir, fs=fs) for log_dir in offline}
        found, rows = discover_log_dirs(common.log_dirs)
        clean = [p for p in found if Path(p.log_dir) in states and states[Path(p.log_dir)].had_clean_shutdown]
        roots = quarantine_roots(common)
        keys = checkpoint_keys(found)
        load_tasks = [  # the load is recover's, on a cleanly shut down dir that no broker holds
            RecoverTask(
                p,
                load_options(common, states[Path(p.log_dir)], p, roots, keys.get((p.log_dir, p.dir_name))),
                common.dry_run_state,
            )
            for p in clean
        ]
        spark = get_spark(common.master, "logkeeper stats")
        loaded = run_partition_tasks(spark, load_tasks, recover_partition, description=f"load {len(clean)} partitions")
        closed = close_log_dirs(states, rows + loaded, require_clean=True, offsets_unchanged=False, fs=fs)
        rows += closed.failures
        topologies = {part: _topology(common.cluster, part) for part in found}
        inputs = []
        for p in found:
            who = log_dir_identity(p.log_dir)
            topology = topologies[p]
            identity = (run_id, run_ts_ms, p.log_dir, who.cluster_id, who.node_id, who.host, p.dir_name, p.topic)
            inputs.append(
                (*identity, p.partition, topology.topic_id, topology.is_replica_of_this_broker, live[Path(p.log_dir)])
            )
        frame = spark.createDataFrame(
            inputs,
            "run_id string, run_ts_ms long, log_dir string, cluster_id string, node_id long, host string, "
            "dir_name string, topic string, partition long, topic_id string, is_replica_of_this_broker boolean, "
            "live boolean",
        ).repartition(max(1, min(len(inputs), spark.sparkContext.defaultParallelism * 4)))
        with progress_feed(spark, total=len(found), description=f"stats: {len(found)} partitions") as feed:
            batches = functools.partial(segment_stats_batches, progress=feed)
            table = frame.mapInArrow(batches, to_spark_schema(SEGMENT_STATS_SCHEMA)).toArrow()
    started = time.monotonic()
    passed = validate_segment_stats(
        table.to_pandas(), result_path=common.warehouse / "_validations" / f"segment_stats-{run_id}.json"
    )
    if not passed:
        raise StatsValidationError(f"segment statistics failed validation; see {common.warehouse}/_validations")
    if not common.dry_run and table.num_rows:
        write_run(common.warehouse / SEGMENT_STATS, table, run_id=run_id, log_dirs=[str(d) for d in common.log_dirs])
    loaded_rows = {(row.log_dir, row.dir_name): row for row in loaded}
    for part in found:
        row = loaded_rows.get((part.log_dir, part.dir_name)) or partition_row(part, "ok", started=started)
        rows.append(dataclasses.replace(row, actions=(*row.actions, *_stray_actions(topologies[part]))))
    for row in rows:
        for action in (a for a in row.actions if a.kind == "stray_replica"):
            log.warning(f"logkeeper stats: stray replica {row.log_dir}/{row.dir_name}: {action.reason}")
    log.info(f"logkeeper stats: {table.num_rows} segments of {len(found)} partitions")
    log_dirs = log_dir_rows(common.log_dirs, locks, opened=states, closed=closed.written)
    return JobSummary("stats", run_id, common.dry_run, tuple(rows), log_dirs, common.run_ts)


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
        log.error(f"logkeeper stats: {exc}")
        return EXIT_FAILED


if __name__ == "__main__":
    raise SystemExit(main())
