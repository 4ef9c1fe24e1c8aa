"""`segment_stats_batches`, the mapInArrow function of the stats job, called as Spark calls it."""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path

import pyarrow as pa

from storage_core.segment_stats import segment_stats
from tests.builders.log_dir import T0, LogDirBuilder
from udfs.segments import SEGMENT_STATS_SCHEMA, segment_stats_batches


def input_batch(log_dir: Path, dir_names: list[str], *, live: bool) -> pa.RecordBatch:
    rows = [
        {
            "run_id": "r1",
            "run_ts_ms": T0,
            "log_dir": str(log_dir),
            "cluster_id": "c1",
            "node_id": 7,
            "host": "broker-7",
            "dir_name": dir_name,
            "topic": dir_name.rsplit("-", 1)[0],
            "partition": 0,
            "topic_id": "",
            "is_replica_of_this_broker": None,
            "live": live,
        }
        for dir_name in dir_names
    ]
    return pa.RecordBatch.from_pylist(rows)


def test_one_output_row_per_segment_of_each_input_partition_with_the_table_schema(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    LogDirBuilder(logs).partition("orders", 0, segments=3, batches_per_segment=5)
    LogDirBuilder(logs).partition("events", 0, segments=2, batches_per_segment=5)
    batches = [input_batch(logs, ["orders-0"], live=True), input_batch(logs, ["events-0"], live=False)]
    out = pa.Table.from_batches(list(segment_stats_batches(iter(batches))))
    assert out.schema == SEGMENT_STATS_SCHEMA
    rows = out.to_pylist()
    assert [(r["topic"], r["base_offset"], r["is_active"], r["live"]) for r in rows] == [
        ("orders", 0, False, True),
        ("orders", 5, False, True),
        ("orders", 10, True, True),
        ("events", 0, False, False),
        ("events", 5, True, False),
    ]
    assert {r["snapshot_consistent"] for r in rows} == {True}
    expected = dataclasses.asdict(segment_stats(logs / "orders-0", 0, is_active=False))
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    for name in ("min_timestamp", "max_timestamp"):  # epoch ms in storage_core, UTC timestamps in the table
        expected[name] = epoch + datetime.timedelta(milliseconds=expected[name])
    assert {k: rows[0][k] for k in expected} == expected
    assert {(r["run_id"], r["cluster_id"], r["node_id"], r["host"]) for r in rows} == {("r1", "c1", 7, "broker-7")}
    assert {r["date"] for r in rows} == {rows[0]["run_ts"].date()}
    assert {(r["topic_id"], r["is_replica_of_this_broker"]) for r in rows} == {(None, None)}
    assert out.column("run_ts").type == pa.timestamp("us", tz="UTC")


def test_an_empty_input_yields_nothing() -> None:
    assert list(segment_stats_batches(iter([]))) == []
