"""SQL over the warehouse's Delta tables, on two engines that give the same rows.

- `embedded` (the default): DuckDB in this process, no JVM. Each table is a view over its current
  Delta snapshot's Parquet files (`file_uris()`), read by DuckDB's own Parquet reader with the
  filters pushed down.
- `spark`: Spark SQL over the same snapshot files (`file_uris()` with `basePath`), for tables too
  big for one machine.

Both engines see every table under its own name (`segment_stats`, `maintenance_log`,
`scrub_findings`, `disk_usage`, `compaction_explain`; one no job has written yet reads as empty, in
its current schema, so every query runs on any warehouse) after the same filters
(:class:`TableFilter`: `run_ts >= since`, `topic = T`), run the session in UTC and return Arrow.
The queries in conf/audit/ are written in the SQL both share: standard joins and window functions,
`INTERVAL '7' DAY`, `CAST(SUM(x) AS BIGINT)` (DuckDB sums longs into a 128-bit integer).
An older table is upgraded in place before it is read (:func:`jobs._tables.ensure_current`).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from jobs._delta import quote_sql, table_exists
from jobs._tables import TABLES, current_schema, ensure_current

ENGINES = ("embedded", "spark")


@dataclass(frozen=True, slots=True)
class TableFilter:
    """The rows every table shows a query: of runs from `since` on (their logical now), of one `topic`."""

    since: datetime.datetime | None = None
    topic: str | None = None


NO_FILTER = TableFilter()


def present_tables(warehouse: Path) -> list[str]:
    """The names of the warehouse's tables that exist."""
    return [name for name in TABLES if table_exists(warehouse / name)]


def snapshot_files(path: Path) -> list[str]:
    """The Parquet files of the table's current snapshot (the table upgraded in place first if older)."""
    from deltalake import DeltaTable

    ensure_current(path)
    return DeltaTable(str(path)).file_uris()


def _where_sql(where: TableFilter) -> str:
    conditions = []
    if where.since is not None:
        conditions.append(f"run_ts >= TIMESTAMPTZ {quote_sql(where.since.isoformat())}")
    if where.topic is not None:
        conditions.append(f"topic = {quote_sql(where.topic)}")
    return f" WHERE {' AND '.join(conditions)}" if conditions else ""


def run_embedded(warehouse: Path, sql: str, where: TableFilter = NO_FILTER) -> pa.Table:
    """`sql` on DuckDB over the warehouse's tables: each a view over its snapshot's Parquet files, read
    by DuckDB's own reader (the `date` partition column from the file paths; a file written before a
    column was added reads it NULL)."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        for name in TABLES:
            files = snapshot_files(warehouse / name) if table_exists(warehouse / name) else []
            if files:
                listed = ", ".join(map(quote_sql, files))
                source = f"read_parquet([{listed}], hive_partitioning = true, union_by_name = true)"
            else:  # no table yet, or one whose rows were all replaced by none
                con.register(f"_{name}_empty", current_schema(name).empty_table())
                source = f"_{name}_empty"
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM {source}{_where_sql(where)}")
        return con.sql(sql).to_arrow_table()
    finally:
        con.close()


def run_spark(spark: Any, warehouse: Path, sql: str, where: TableFilter = NO_FILTER) -> pa.Table:
    """`sql` in Spark SQL over the warehouse's tables (views of the current snapshots' files)."""
    from pyspark.sql import functions as F

    from jobs._schema import to_spark_schema

    spark.conf.set("spark.sql.session.timeZone", "UTC")
    for name in TABLES:
        path = warehouse / name
        files = snapshot_files(path) if table_exists(path) else []
        if files:
            # mergeSchema: files written before a column was added lack it (they read NULL).
            reader = spark.read.option("basePath", str(path.resolve())).option("mergeSchema", "true")
            frame = reader.parquet(*files)
        else:
            frame = spark.createDataFrame([], to_spark_schema(current_schema(name)))
        if where.since is not None:
            frame = frame.filter(F.col("run_ts") >= F.lit(where.since))
        if where.topic is not None:
            frame = frame.filter(F.col("topic") == where.topic)
        frame.createOrReplaceTempView(name)
    return spark.sql(sql).toArrow()
