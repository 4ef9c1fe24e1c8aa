"""`logkeeper stats`, the maintenance log and every audit query, over tables made by real jobs."""

from __future__ import annotations

import datetime
import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from deltalake import DeltaTable
from kafka.record.memory_records import MemoryRecords

from jobs import audit, compact, recover, retention, stats
from jobs._delta import read_table
from jobs._quality import validate_segment_stats
from jobs._tables import MAINTENANCE_LOG, SEGMENT_STATS
from jobs.demo import TOPIC_CONFIG, generate
from storage_core import names
from storage_core.checkpoint import write_offset_checkpoint
from tests.jobs.conftest import MASTER
from tests.realdata.manifest import REALDATA, writable_copy

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def peer_stats(log: Path) -> dict[str, object]:
    """The same figures computed with kafka-python (an independent reader)."""
    memory = MemoryRecords(log.read_bytes())
    out: Counter[str] = Counter()
    pids, keys, stamps, next_offset = set(), set(), [], names.offset_from_file_name(log.name)
    while (batch := memory.next_batch()) is not None:
        out["batch_count"] += 1
        out[f"{['none', 'gzip', 'snappy', 'lz4', 'zstd'][batch.compression_type]}_batch_count"] += 1
        out["control_batch_count"] += bool(batch.is_control_batch)
        out["transactional_batch_count"] += bool(batch.is_transactional) if batch.magic == 2 else 0
        if batch.magic == 2 and batch.producer_id >= 0:
            pids.add(batch.producer_id)
        next_offset = (batch.base_offset + batch.last_offset_delta + 1) if batch.magic == 2 else None
        for record in batch:
            out["record_count"] += 1
            if batch.magic < 2:
                next_offset = record.offset + 1
            if record.timestamp is not None and record.timestamp >= 0:
                stamps.append(record.timestamp)
            if not batch.is_control_batch and record.key is not None:
                out["keyed_record_count"] += 1
                out["tombstone_count"] += record.value is None
                keys.add(bytes(record.key))
    return {
        **out,
        "producer_id_count": len(pids),
        "distinct_key_estimate": len(keys),
        "next_offset": next_offset,
        "min_timestamp": _timestamp(min(stamps, default=None)),
        "max_timestamp": _timestamp(max(stamps, default=None)),
    }


def _timestamp(ms: int | None) -> datetime.datetime | None:
    """The table's type of a Kafka timestamp: UTC, NULL when no record has one."""
    return (
        None if ms is None else datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(milliseconds=ms)
    )


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory, spark) -> tuple[Path, list[Path]]:
    """Real jobs over the demo's crashed log dirs: recover, retention, compact, stats."""
    root = tmp_path_factory.mktemp("pipeline")
    log_dirs = generate(root / "logs")
    for log_dir in log_dirs:
        hws = {names.parse_partition_dir_name(p.name).topic_partition: 10**9 for p in log_dir.iterdir() if p.is_dir()}
        write_offset_checkpoint(log_dir / names.REPLICATION_OFFSET_CHECKPOINT, hws)
    (root / "topics.toml").write_text(TOPIC_CONFIG)
    wh = root / "warehouse"
    common = [
        "--log-dirs",
        ",".join(map(str, log_dirs)),
        "--master",
        MASTER,
        "--warehouse",
        str(wh),
        "--topic-config",
        str(root / "topics.toml"),
    ]
    assert recover.main(common) == 0
    assert retention.main([*common, "--now-ms", str(1_763_000_000_000 + 8 * 86_400_000)]) == 0
    assert compact.main(common) == 0
    assert stats.main(common) == 0
    return wh, log_dirs


def test_stats_rows_equal_what_kafka_python_computes(warehouse) -> None:
    wh, log_dirs = warehouse
    rows = read_table(wh / SEGMENT_STATS).to_pylist()
    logs = sorted(p for d in log_dirs for p in d.rglob("*.log"))
    assert len(rows) == len(logs)
    by_segment = {(r["log_dir"], f"{r['topic']}-{r['partition']}", r["base_offset"]): r for r in rows}
    for log in logs:
        row = by_segment[(str(log.parent.parent), log.parent.name, names.offset_from_file_name(log.name))]
        for field, value in peer_stats(log).items():
            assert row[field] == value, (log, field)
        assert row["log_bytes"] == log.stat().st_size


def test_stats_on_real_broker_dirs(spark, tmp_path: Path) -> None:
    source = REALDATA / "ArthurArutunyan04__Backend_labs" / "kafka-data"
    log_dir = writable_copy(source, tmp_path / "kafka-data")
    wh = tmp_path / "wh"
    assert stats.main(["--log-dirs", str(log_dir), "--master", MASTER, "--warehouse", str(wh)]) == 0
    rows = read_table(wh / SEGMENT_STATS).to_pylist()
    for row in rows:
        log = names.log_file(log_dir / f"{row['topic']}-{row['partition']}", row["base_offset"])
        expected = peer_stats(log)
        assert {k: row[k] for k in expected} == expected


def test_tables_open_in_deltalake_and_spark_at_protocol_1_2(spark, warehouse) -> None:
    wh, _ = warehouse
    for name in (SEGMENT_STATS, MAINTENANCE_LOG):
        table = DeltaTable(str(wh / name))
        protocol = table.protocol()
        assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2)
        frame = spark.read.option("basePath", str((wh / name).resolve())).parquet(*table.file_uris())
        assert frame.count() == read_table(wh / name).num_rows > 0


def test_every_audit_query_runs_on_tables_made_by_real_jobs(spark, warehouse) -> None:
    wh, _ = warehouse
    results = {name: audit.run_query(wh, name).to_pylist() for name in audit.available_queries()}
    assert set(results) == {
        "bytes_per_topic",
        "compaction_savings",
        "compaction_stuck",
        "corruption_found",
        "due_for_compaction",
        "retention_deletions_last_week",
    }
    assert {r["topic"] for r in results["bytes_per_topic"]} == {"clicks", "orders", "accounts"}
    assert any(r["action"] == "truncate_segment" and r["topic"] == "clicks" for r in results["corruption_found"])
    assert results["compaction_savings"][0]["topic"] == "accounts"
    assert results["compaction_savings"][0]["bytes_saved"] > 0
    assert results["due_for_compaction"] == []  # compact cleaned every partition it found due
    # Retention ran with a clock eight days after the data: the ts filter is relative to now, so
    # the rows are there with the reasons Kafka would give.
    assert all(r["retention_rule"] == "retention.ms" for r in results["retention_deletions_last_week"])
    assert all("retention_ms_breach" in r["reason"] for r in results["retention_deletions_last_week"])
    assert len(results["retention_deletions_last_week"]) > 0


def test_maintenance_log_records_every_job_and_dry_runs_as_plans(spark, warehouse, tmp_path: Path) -> None:
    wh, log_dirs = warehouse
    log = read_table(wh / MAINTENANCE_LOG).to_pandas()
    assert set(log["job"]) >= {"recover", "retention", "compact", "stats"}
    assert not log["dry_run"].any()
    plan_wh = tmp_path / "wh"
    assert (
        recover.main(["--log-dirs", str(log_dirs[0]), "--master", MASTER, "--warehouse", str(plan_wh), "--dry-run"])
        == 0
    )
    plans = read_table(plan_wh / MAINTENANCE_LOG).to_pandas()
    assert plans["dry_run"].all()


def test_a_failing_suite_is_reported_and_kept(tmp_path: Path, warehouse) -> None:
    wh, _ = warehouse
    frame = read_table(wh / SEGMENT_STATS).to_pandas()
    assert validate_segment_stats(frame, result_path=tmp_path / "ok.json")
    broken = frame.copy()
    broken.loc[0, "min_timestamp"] = broken.loc[0, "max_timestamp"] + pd.Timedelta(milliseconds=1)
    broken.loc[1, "none_batch_count"] += 1
    handed_in = broken.copy()
    assert not validate_segment_stats(broken, result_path=tmp_path / "bad.json")
    kept = json.loads((tmp_path / "bad.json").read_text())
    assert kept["success"] is False
    assert kept["statistics"]["unsuccessful_expectations"] == 2
    failed = {
        (
            check["expectation_type"],
            check["kwargs"]["column_A"],
            check["kwargs"]["column_B"],
            check["result"]["unexpected_count"],
        )
        for check in kept["expectations"]
        if not check["success"]
    }
    assert failed == {  # exactly the two rules broken above, each by its one row
        ("expect_column_pair_values_a_to_be_greater_than_b", "max_timestamp", "min_timestamp", 1),
        ("expect_column_pair_values_to_be_equal", "codec_batch_total", "batch_count", 1),
    }
    pd.testing.assert_frame_equal(broken, handed_in)  # the suite's helper column is added to its own copy


def test_a_retried_run_does_not_duplicate_rows(warehouse) -> None:
    from jobs._audit import write_maintenance_log
    from jobs._common import JobSummary, PartitionRow

    wh, _ = warehouse
    summary = JobSummary("recover", "retry-run", False, (PartitionRow("/d", "t-0", "t", 0, "ok", 1, 1),))
    write_maintenance_log(wh, summary)
    first = read_table(wh / MAINTENANCE_LOG).num_rows
    write_maintenance_log(wh, summary)
    assert read_table(wh / MAINTENANCE_LOG).num_rows == first
