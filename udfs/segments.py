"""Arrow UDF over segments: one `storage_core.segment_stats` call per segment row, on executors.

Input rows: run_id, run_ts_ms, log_dir, dir_name, topic, partition, topic_id,
is_replica_of_this_broker, base_offset, is_active.
Output rows: the `segment_stats` table, :data:`SEGMENT_STATS_SCHEMA` = the run and partition
(:class:`SegmentKey`) followed by :class:`storage_core.segment_stats.SegmentStats`. Used with
`DataFrame.mapInArrow(segment_stats_batches, to_spark_schema(SEGMENT_STATS_SCHEMA))`.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from jobs._schema import arrow_schema
from storage_core.segment_stats import SegmentStats, segment_stats


@dataclass(frozen=True, slots=True)
class SegmentKey:
    """Which run and which partition a segment_stats row belongs to.

    `topic_id` is the partition dir's `partition.metadata` id ("" if none); `is_replica_of_this_broker`
    whether the cluster's metadata log assigns the partition to this broker (null: unknown, no
    metadata log or no node id; :mod:`storage_core.topology`).
    """

    run_id: str
    run_ts: datetime.datetime
    log_dir: str
    topic: str
    partition: int
    topic_id: str
    is_replica_of_this_broker: bool | None


SEGMENT_STATS_SCHEMA = pa.schema([*arrow_schema(SegmentKey), *arrow_schema(SegmentStats)])


def segment_stats_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow function: compute each input segment's statistics."""
    for batch in batches:
        rows = []
        for item in batch.to_pylist():
            key = SegmentKey(
                run_id=item["run_id"],
                run_ts=datetime.datetime.fromtimestamp(item["run_ts_ms"] / 1000, tz=datetime.UTC),
                log_dir=item["log_dir"],
                topic=item["topic"],
                partition=item["partition"],
                topic_id=item["topic_id"],
                is_replica_of_this_broker=item["is_replica_of_this_broker"],
            )
            stats = segment_stats(
                Path(item["log_dir"]) / item["dir_name"], item["base_offset"], is_active=item["is_active"]
            )
            rows.append({**dataclasses.asdict(key), **dataclasses.asdict(stats)})
        yield from pa.Table.from_pylist(rows, schema=SEGMENT_STATS_SCHEMA).to_batches()
