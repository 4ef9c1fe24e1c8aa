"""`logkeeper audit`: every conf/audit query gives the same rows on DuckDB and on Spark, the filters
and output formats, and bad arguments (exit 2, one line, no JVM)."""

from __future__ import annotations

import csv
import datetime
import io
import json
import math
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from jobs import audit
from jobs._query import TableFilter
from tests.jobs.conftest import REPO

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _comparable(table: pa.Table) -> list[tuple]:
    """Rows as tuples: timestamps in UTC, floats rounded (the engines may differ in the last bit)."""

    def value(v: object) -> object:
        if isinstance(v, datetime.datetime):
            return v.astimezone(datetime.UTC) if v.tzinfo else v.replace(tzinfo=datetime.UTC)
        if isinstance(v, float):
            return round(v, 9)
        return v

    return [tuple(value(v) for v in row.values()) for row in table.to_pylist()]


@pytest.mark.parametrize("query", audit.available_queries())
def test_each_query_gives_the_same_rows_on_duckdb_and_spark(spark, audit_warehouse, query: str) -> None:
    embedded = audit.run_query(audit_warehouse, query)
    on_spark = audit.run_query(audit_warehouse, query, engine="spark", spark=spark)
    assert embedded.column_names == on_spark.column_names
    assert _comparable(embedded) == _comparable(on_spark)
    assert embedded.num_rows > 0, f"{query}: the audit warehouse should give every query rows"


def test_filters_give_the_same_rows_on_both_engines(spark, audit_warehouse) -> None:
    since = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    for where in (
        TableFilter(topic="orders"),
        TableFilter(since=since),
        TableFilter(since=datetime.datetime.now(datetime.UTC)),
    ):
        for query in ("bytes_per_topic", "corruption_found"):
            embedded = audit.run_query(audit_warehouse, query, where=where)
            on_spark = audit.run_query(audit_warehouse, query, engine="spark", spark=spark, where=where)
            assert _comparable(embedded) == _comparable(on_spark), (query, where)
    assert {
        r["topic"]
        for r in audit.run_query(audit_warehouse, "bytes_per_topic", where=TableFilter(topic="orders")).to_pylist()
    } == {"orders"}
    future = TableFilter(since=datetime.datetime(2100, 1, 1, tzinfo=datetime.UTC))
    assert audit.run_query(audit_warehouse, "bytes_per_topic", where=future).num_rows == 0


def test_due_for_compaction_has_the_typed_plan_of_partitions_due_only(audit_warehouse) -> None:
    due = audit.run_query(audit_warehouse, "due_for_compaction").to_pylist()
    assert {(Path(r["log_dir"]).parent.name, r["topic"], r["partition"]) for r in due} == {("second", "accounts", 0)}
    (row,) = due
    assert row["reason_code"] == "dirty_ratio"
    assert row["dirty_ratio"] > row["min_cleanable_ratio"] == 0.01
    assert row["cleanable_bytes"] > 0
    assert row["first_uncleanable_offset"] > 0


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`logkeeper audit` in a fresh process (the embedded engine must not start a JVM)."""
    return subprocess.run(
        [sys.executable, "-m", "jobs.cli", "audit", *args], capture_output=True, text=True, cwd=REPO, timeout=120
    )


def test_formats_on_the_command_line_without_a_jvm(audit_warehouse) -> None:
    base = ["--warehouse", str(audit_warehouse), "--query", "bytes_per_topic"]
    expected = audit.run_query(audit_warehouse, "bytes_per_topic").to_pylist()

    table = _cli(*base)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["run_ts", "topic", "partitions", "segments", "log_bytes", "index_bytes", "records"]
    assert lines[-1] == f"({len(expected)} rows)"
    assert "Traceback" not in table.stderr
    assert "SparkSession" not in table.stderr

    rows = list(csv.DictReader(io.StringIO(_cli(*base, "--format", "csv").stdout)))
    assert [(r["topic"], int(r["log_bytes"])) for r in rows] == [(r["topic"], r["log_bytes"]) for r in expected]

    objects = [json.loads(line) for line in _cli(*base, "--format", "json", "--topic", "clicks").stdout.splitlines()]
    assert {o["topic"] for o in objects} == {"clicks"}
    assert all(datetime.datetime.fromisoformat(o["run_ts"]).tzinfo is not None for o in objects)
    assert math.fsum(o["log_bytes"] for o in objects) == sum(r["log_bytes"] for r in expected if r["topic"] == "clicks")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--query", "nope"], "unknown query 'nope'"),
        (["--query", "bytes_per_topic", "--since", "yesterday"], "not an ISO date/time"),
        (["--query", "bytes_per_topic", "--format", "xml"], "invalid choice"),
        (["--query", "bytes_per_topic", "--engine", "presto"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(audit_warehouse, args: list[str], message: str) -> None:
    result = _cli("--warehouse", str(audit_warehouse), *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_an_empty_warehouse_is_a_one_line_error(tmp_path: Path) -> None:
    result = _cli("--warehouse", str(tmp_path), "--query", "bytes_per_topic")
    assert result.returncode == 2
    assert result.stderr.strip().endswith("(run logkeeper stats or a job first)")
