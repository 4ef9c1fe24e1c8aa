"""Arrow UDF over segments: one `storage_core.segment_stats` call per segment row, on executors.

Input rows: run_id, run_ts_ms, log_dir, dir_name, topic, partition, base_offset, is_active.
Output rows: :class:`SegmentStatsRow` (the `segment_stats` table's schema). Used with
`DataFrame.mapInArrow(segment_stats_batches, spark_schema(SegmentStatsRow))`.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from jobs._schema import to_arrow
from storage_core.segment_stats import SegmentStats, segment_stats


@dataclass(frozen=True, slots=True)
class SegmentStatsRow:
    """A row of the `segment_stats` Delta table."""

    run_id: str
    run_ts: datetime.datetime
    log_dir: str
    topic: str
    partition: int
    base_offset: int
    next_offset: int
    is_active: bool
    log_bytes: int
    index_bytes: int
    timeindex_bytes: int
    txnindex_bytes: int
    batch_count: int
    record_count: int
    control_batch_count: int
    transactional_batch_count: int
    none_batch_count: int
    gzip_batch_count: int
    snappy_batch_count: int
    lz4_batch_count: int
    zstd_batch_count: int
    min_timestamp: int
    max_timestamp: int
    producer_id_count: int
    keyed_record_count: int
    tombstone_count: int
    distinct_key_estimate: int
    invalid_bytes: int
    status: str


def segment_stats_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow function: compute each input segment's statistics."""
    for batch in batches:
        rows = []
        for item in batch.to_pylist():
            stats: SegmentStats = segment_stats(
                Path(item["log_dir"]) / item["dir_name"], item["base_offset"], is_active=item["is_active"]
            )
            rows.append(
                SegmentStatsRow(
                    run_id=item["run_id"],
                    run_ts=datetime.datetime.fromtimestamp(item["run_ts_ms"] / 1000, tz=datetime.UTC),
                    log_dir=item["log_dir"],
                    topic=item["topic"],
                    partition=item["partition"],
                    **dataclasses.asdict(stats),
                )
            )
        yield from to_arrow(rows, SegmentStatsRow).to_batches()
