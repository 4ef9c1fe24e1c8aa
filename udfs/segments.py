"""Arrow UDF over partitions: one `storage_core.segment_stats.partition_segment_stats` call per partition row.

Input rows: run_id, run_ts_ms, log_dir, cluster_id, node_id, host, dir_name, topic, partition,
topic_id, is_replica_of_this_broker, live (the log dir's identity, :mod:`jobs._fleet`, is read on
the driver).
Output rows: the `segment_stats` table, :data:`SEGMENT_STATS_SCHEMA` = the run and partition
(:class:`SegmentKey`), then :class:`storage_core.segment_stats.SegmentStats`, then
:class:`SnapshotColumns` (whether the partition's rows describe one consistent snapshot). Used with
`DataFrame.mapInArrow(segment_stats_batches, to_spark_schema(SEGMENT_STATS_SCHEMA))`.
"""

from __future__ import annotations

import dataclasses
import datetime
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from jobs._schema import arrow_schema
from jobs._spark import Progress
from jobs._tables import TIMESTAMP, epoch_ms_as_timestamps
from storage_core.segment_stats import SegmentStats, partition_segment_stats

if TYPE_CHECKING:
    from pyspark import Accumulator


@dataclass(frozen=True, slots=True)
class SegmentKey:
    """Which run and which partition a segment_stats row belongs to.

    `run_ts` is the job's logical now (`--now-ms`), `ts` the wall clock when the partition was read;
    `date` (the UTC day of `run_ts`) is the table's partition column; `cluster_id`, `node_id` and
    `host` say which broker's log dir it is (:mod:`jobs._fleet`). `topic_id` is the partition dir's
    `partition.metadata` id (NULL if none); `is_replica_of_this_broker` whether the cluster's metadata
    log assigns the partition to this broker (NULL: unknown, no metadata log or no node id;
    :mod:`storage_core.topology`).
    """

    run_id: str
    run_ts: datetime.datetime
    ts: datetime.datetime | None  # NULL only in rows upgraded from version 1, which did not record it
    date: datetime.date
    log_dir: str
    cluster_id: str | None
    node_id: int | None
    host: str
    topic: str
    partition: int
    topic_id: str | None
    is_replica_of_this_broker: bool | None


@dataclass(frozen=True, slots=True)
class SnapshotColumns:
    """How a partition's rows were read: beside a live broker, and as one consistent snapshot
    (no segment appeared, went or changed during the read) or not."""

    live: bool
    snapshot_consistent: bool


# SegmentStats keeps Kafka's epoch milliseconds (-1: no record has a timestamp); the table keeps
# nullable UTC timestamps (rows are built with the milliseconds, then converted column by column).
_EPOCH_MS_COLUMNS = ("min_timestamp", "max_timestamp")
_ROW_SCHEMA = pa.schema([*arrow_schema(SegmentKey), *arrow_schema(SegmentStats), *arrow_schema(SnapshotColumns)])
SEGMENT_STATS_SCHEMA = pa.schema(
    [pa.field(f.name, TIMESTAMP) if f.name in _EPOCH_MS_COLUMNS else f for f in _ROW_SCHEMA]
)


def segment_stats_batches(
    batches: Iterator[pa.RecordBatch], progress: Accumulator[list[Progress | None]] | None = None
) -> Iterator[pa.RecordBatch]:
    """mapInArrow function: compute the statistics of each input partition's segments; with a
    `progress` feed (:func:`jobs._spark.progress_feed`), one entry per partition dir goes to the
    driver when it is done."""
    for batch in batches:
        rows = []
        for item in batch.to_pylist():
            run_ts = datetime.datetime.fromtimestamp(item["run_ts_ms"] / 1000, tz=datetime.UTC)
            key = SegmentKey(
                run_id=item["run_id"],
                run_ts=run_ts,
                ts=datetime.datetime.now(datetime.UTC),
                date=run_ts.date(),
                log_dir=item["log_dir"],
                cluster_id=item["cluster_id"],
                node_id=item["node_id"],
                host=item["host"],
                topic=item["topic"],
                partition=item["partition"],
                topic_id=item["topic_id"] or None,
                is_replica_of_this_broker=item["is_replica_of_this_broker"],
            )
            started = time.monotonic()
            snapshot, stats = partition_segment_stats(Path(item["log_dir"]) / item["dir_name"], live=item["live"])
            columns = dataclasses.asdict(SnapshotColumns(item["live"], snapshot.consistent))
            rows += [{**dataclasses.asdict(key), **dataclasses.asdict(s), **columns} for s in stats]
            if progress is not None:
                size, took_ms = sum(s.log_bytes for s in stats), int((time.monotonic() - started) * 1000)
                progress.add([Progress(item["dir_name"], "ok", size, took_ms)])
        table = pa.Table.from_pylist(rows, schema=_ROW_SCHEMA)
        yield from epoch_ms_as_timestamps(table, _EPOCH_MS_COLUMNS).to_batches()
