"""The warehouse tables: documented types through three readers, and the upgrade of version-1 tables.

`tests/jobs/data/warehouse_v1` holds the three tables as logkeeper wrote them before version 2 (the
demo's `maintain`, then a `scrub` that found a flipped bit, run by commit a7f88b3).
"""

from __future__ import annotations

import datetime
import re
import shutil
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from jobs import audit, stats
from jobs._audit import write_maintenance_log
from jobs._common import JobSummary, PartitionRow
from jobs._delta import read_table
from jobs._tables import (
    MAINTENANCE_LOG,
    SCRUB_FINDINGS,
    SEGMENT_STATS,
    TABLE_VERSION,
    TABLES,
    TIMESTAMP,
    V1_TABLES,
    VERSION_PROPERTY,
    current_schema,
    ensure_current,
    table_version,
    upgrade_rows,
)
from tests.jobs.conftest import MASTER, REPO

pytestmark = [pytest.mark.spark, pytest.mark.slow]

V1 = Path(__file__).parent / "data" / "warehouse_v1"
DOCS = REPO / "docs" / "tables.md"
# Columns whose values are a count or size: never NULL, never negative.
_NULLABLE_NEVER_NEGATIVE = ("base_offset", "log_start_offset", "log_end_offset", "first_offset", "last_offset")


def _v1_copy(tmp_path: Path) -> Path:
    warehouse = tmp_path / "warehouse"
    shutil.copytree(V1, warehouse)
    return warehouse


def _version(path: Path) -> int:
    return table_version(DeltaTable(str(path)), path.name)


def _documented() -> dict[str, dict[str, str]]:
    """table -> column -> type, from the `| column | type | meaning |` tables under each `## <table>`."""
    tables: dict[str, dict[str, str]] = {}
    current = None
    for line in DOCS.read_text().splitlines():
        if heading := re.match(r"^## `(\w+)`", line):
            current = tables.setdefault(heading[1], {})
        elif current is not None and (row := re.match(r"^\| `(\w+)` \| `([^`]+)` \|", line)):
            current[row[1]] = row[2]
    return tables


def _delta_type(field: pa.Field) -> str:
    """How docs/tables.md names a column's type (Delta's names; `?` for a nullable column)."""
    names = {
        pa.string(): "string",
        pa.int64(): "long",
        pa.bool_(): "boolean",
        pa.float64(): "double",
        pa.date32(): "date",
        TIMESTAMP: "timestamp",
    }
    return names[field.type] + ("?" if field.nullable else "")


def test_the_data_dictionary_lists_every_column_with_its_type() -> None:
    documented = _documented()
    assert set(documented) == set(TABLES)
    for name in TABLES:
        schema = current_schema(name)
        assert documented[name] == {f.name: _delta_type(f) for f in schema}, name


def test_version_1_tables_are_upgraded_in_place_and_appended_to_in_one_schema(spark, tmp_path: Path) -> None:
    warehouse = _v1_copy(tmp_path)
    before = {name: read_table(warehouse / name) for name in V1_TABLES}
    assert {name: _version(warehouse / name) for name in V1_TABLES} == dict.fromkeys(V1_TABLES, 1)
    assert before[SEGMENT_STATS].schema.field("min_timestamp").type == pa.int64()

    # A job appends to a version-1 maintenance log: the table is upgraded first, never mixed; an
    # audit query upgrades the others.
    summary = JobSummary("recover", "after-upgrade", False, (PartitionRow("/d", "t-0", "t", 0, "ok", 1, 1),))
    write_maintenance_log(warehouse, summary)
    assert audit.main(["--warehouse", str(warehouse), "--query", "bytes_per_topic", "--format", "csv"]) == 0
    added = {MAINTENANCE_LOG: 1}
    for name in V1_TABLES:
        path = warehouse / name
        table = DeltaTable(str(path))
        assert table.metadata().configuration[VERSION_PROPERTY] == str(TABLE_VERSION)
        after = read_table(path)
        assert after.schema.equals(current_schema(name), check_metadata=False), name
        assert after.num_rows == before[name].num_rows + added.get(name, 0)
        assert table.metadata().partition_columns == DeltaTable(str(V1 / name)).metadata().partition_columns

    log = [r for r in read_table(warehouse / MAINTENANCE_LOG).to_pylist() if r["run_id"] != "after-upgrade"]
    assert all(r["run_ts"] == r["ts"] for r in log)  # v1 kept only the wall clock
    for column in _NULLABLE_NEVER_NEGATIVE:
        assert all(r[column] is None or r[column] >= 0 for r in log), column
    assert {r["topic"] for r in log if r["partition"] is None} == {None}  # a log dir's own files
    plans = [r for r in log if r["action"] == "clean_plan"]
    assert plans
    for plan in plans:
        ratio = float(re.search(r"dirty ratio ([0-9.]+)", plan["reason"])[1])
        assert plan["dirty_ratio"] == ratio
        assert plan["min_cleanable_ratio"] == 0.01
        assert plan["reason_code"] in ("dirty_ratio", "max_compaction_lag", "below_min_cleanable_ratio", "empty")
    deletions = [r for r in log if r["job"] == "retention" and r["action"] == "delete_segment"]
    assert deletions
    assert {r["retention_rule"] for r in deletions} == {"retention.ms"}

    stats_rows = read_table(warehouse / SEGMENT_STATS).to_pylist()
    v1_stats = before[SEGMENT_STATS].to_pylist()
    key = ("log_dir", "topic", "partition", "base_offset")
    v1_by_key = {tuple(r[k] for k in key): r for r in v1_stats}
    for row in stats_rows:
        old = v1_by_key[tuple(row[k] for k in key)]
        for column in ("min_timestamp", "max_timestamp"):
            expected = (
                None
                if old[column] < 0
                else datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(milliseconds=old[column])
            )
            assert row[column] == expected
        assert row["ts"] is None  # not recorded by version 1
    findings = read_table(warehouse / SCRUB_FINDINGS).to_pylist()
    assert findings
    assert all(f["run_ts"] == f["ts"] and (f["position"] is None or f["position"] >= 0) for f in findings)


def test_a_crash_between_the_upgrade_and_its_version_stamp_is_finished_by_the_next_open(tmp_path: Path) -> None:
    warehouse = _v1_copy(tmp_path)
    path = warehouse / MAINTENANCE_LOG
    # Step (1) of the upgrade only: the converted rows, no version property.
    upgraded = upgrade_rows(MAINTENANCE_LOG, read_table(path), 1)
    write_deltalake(str(path), upgraded, mode="overwrite", schema_mode="overwrite", partition_by=["date"])
    assert VERSION_PROPERTY not in DeltaTable(str(path)).metadata().configuration
    assert _version(path) == TABLE_VERSION  # the schema says so
    version_before = DeltaTable(str(path)).version()
    ensure_current(path)
    table = DeltaTable(str(path))
    assert table.metadata().configuration[VERSION_PROPERTY] == str(TABLE_VERSION)
    assert table.version() == version_before + 1  # only the stamp: the rows were not converted twice
    assert read_table(path).num_rows == upgraded.num_rows


def test_a_table_of_a_newer_version_is_refused_before_anything_changes(tmp_path: Path, capsys) -> None:
    warehouse = _v1_copy(tmp_path)
    ensure_current(warehouse / SEGMENT_STATS)
    newer = {VERSION_PROPERTY: str(TABLE_VERSION + 1)}
    DeltaTable(str(warehouse / SEGMENT_STATS)).alter.set_table_properties(newer, raise_if_not_exists=False)
    listing = sorted(p.relative_to(warehouse) for p in warehouse.rglob("*"))
    assert audit.main(["--warehouse", str(warehouse), "--query", "bytes_per_topic"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"is a version {TABLE_VERSION + 1} table" in err
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    assert stats.main(["--log-dirs", str(log_dir), "--master", MASTER, "--warehouse", str(warehouse)]) == 2
    assert "upgrade logkeeper" in capsys.readouterr().err
    assert sorted(p.relative_to(warehouse) for p in warehouse.rglob("*")) == listing


def test_tables_made_by_real_jobs_read_the_same_in_deltalake_polars_and_spark(spark, audit_warehouse) -> None:
    warehouse = audit_warehouse
    for name in TABLES:
        path = warehouse / name
        arrow = read_table(path)
        assert arrow.num_rows > 0, name
        assert arrow.schema.equals(current_schema(name), check_metadata=False), name
        files = DeltaTable(str(path)).file_uris()
        frame = pl.concat([pl.read_parquet(f, hive_partitioning=False) for f in files], how="diagonal_relaxed")
        for field in current_schema(name):
            if field.name == "date":  # the partition column lives in the file paths, not the files
                continue
            dtype = frame.schema[field.name]
            if field.type == TIMESTAMP:
                assert dtype == pl.Datetime("us", "UTC"), (name, field.name, dtype)
            elif field.type == pa.int64():
                assert dtype == pl.Int64, (name, field.name, dtype)
            if field.nullable and field.name in _NULLABLE_NEVER_NEGATIVE:
                assert frame[field.name].drop_nulls().min() is None or frame[field.name].drop_nulls().min() >= 0
        spark_frame = spark.read.option("basePath", str(path.resolve())).parquet(*files)
        spark_types = dict(spark_frame.dtypes)
        for field in current_schema(name):
            if field.type == TIMESTAMP:
                assert spark_types[field.name] == "timestamp", (name, field.name)
            elif field.type == pa.int64():
                assert spark_types[field.name] == "bigint", (name, field.name)
        assert spark_frame.count() == len(frame) == arrow.num_rows
        if name == SEGMENT_STATS:
            stamps = frame.select("min_timestamp").drop_nulls()["min_timestamp"]
            assert stamps.min() > datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)  # no 1969 sentinels
