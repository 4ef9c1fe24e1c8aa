"""The warehouse's table versions: which version a Delta table is, and its upgrade in place.

The tables (`segment_stats`, `maintenance_log`, `scrub_findings`; their columns are declared by their
row dataclasses and listed with their meaning in docs/tables.md) follow one set of conventions since
version 2: timestamps are Delta `timestamp` (microseconds, UTC); an unknown value is NULL, never a
sentinel such as -1 or ""; counts and sizes are `long`; every row carries both clocks of its run,
`run_ts` (the job's logical now, `--now-ms`: what retention and the cleaner decided with) and `ts`
(the wall clock when the row was written).

Version 1 (logkeeper up to 2026-11-24) kept segment timestamps as epoch milliseconds with -1 for
unknown, -1 for unknown offsets and node ids, "" for an unknown cluster or topic id, only the wall
clock in `maintenance_log` and `scrub_findings`, and the cleaner's plan and retention's rule only in
the free-text `reason`.

A table's version is its Delta table property `logkeeper.tableVersion`; without it, the schema tells
(a version-2 table has its version's marker column, :data:`_MARKERS`). Every logkeeper command that
reads or appends to a table first calls :func:`ensure_current`, which upgrades an older table in
place, so rows of two versions are never mixed; a table newer than this code is refused
(:class:`TableVersionError`, exit 2), never rewritten. A new version adds a step to
:data:`_UPGRADES` and its marker, and bumps :data:`TABLE_VERSION`.

Crash story of an upgrade: (1) one Delta commit overwrites the table with the converted rows in the
new schema (the old files stay for time travel until vacuum); (2) a second commit sets the version
property. A crash before (1) leaves the old table as it was; one between (1) and (2) leaves a table
whose schema already has the marker column, which reads as the new version, and the next open only
sets the property. Two processes upgrading at once: Delta's optimistic commit lets one overwrite
win; the other gets a `CommitFailedError`, tries again and finds the table current
(:func:`jobs._delta._commit`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

SEGMENT_STATS = "segment_stats"
MAINTENANCE_LOG = "maintenance_log"
SCRUB_FINDINGS = "scrub_findings"
DISK_USAGE = "disk_usage"
COMPACTION_EXPLAIN = "compaction_explain"
TABLES = (SEGMENT_STATS, MAINTENANCE_LOG, SCRUB_FINDINGS, DISK_USAGE, COMPACTION_EXPLAIN)
V1_TABLES = (SEGMENT_STATS, MAINTENANCE_LOG, SCRUB_FINDINGS)  # the tables version 1 had (the others began at 2)
TABLE_VERSION = 2
VERSION_PROPERTY = "logkeeper.tableVersion"
TIMESTAMP = pa.timestamp("us", tz="UTC")
# The column each version introduced in each table: a table without the version property that has it
# is of that version (an upgrade that crashed between its two commits).
# (`disk_usage` and `compaction_explain` began at version 2.)
_MARKERS = {
    2: {
        SEGMENT_STATS: "ts",
        MAINTENANCE_LOG: "run_ts",
        SCRUB_FINDINGS: "run_ts",
        DISK_USAGE: "ts",
        COMPACTION_EXPLAIN: "ts",
    }
}


class TableVersionError(Exception):
    """A table was written by a newer logkeeper than this one (exit 2; nothing is read or written)."""


def current_schema(name: str) -> pa.Schema:
    """The schema this logkeeper writes to table `name` (declared by the table's row dataclasses)."""
    if name == SEGMENT_STATS:
        from udfs.segments import SEGMENT_STATS_SCHEMA

        return SEGMENT_STATS_SCHEMA
    if name == MAINTENANCE_LOG:
        from jobs._audit import MAINTENANCE_LOG_SCHEMA

        return MAINTENANCE_LOG_SCHEMA
    if name == SCRUB_FINDINGS:
        from jobs.scrub import SCRUB_FINDINGS_SCHEMA

        return SCRUB_FINDINGS_SCHEMA
    if name == DISK_USAGE:
        from jobs._schema import arrow_schema
        from jobs.disk_usage import DiskUsageRow

        return arrow_schema(DiskUsageRow)
    if name == COMPACTION_EXPLAIN:
        from jobs._schema import arrow_schema
        from jobs.compact_explain import CompactionExplainRow

        return arrow_schema(CompactionExplainRow)
    raise KeyError(name)


# --- conversions shared by the rows of this version and the upgrade of older ones --------------------


def known(value: int | None) -> int | None:
    """A count, offset or id whose unknown value was -1 (or any negative number), as NULL-able."""
    return None if value is None or value < 0 else value


def _null_if_negative(column: pa.ChunkedArray) -> pa.ChunkedArray:
    return pc.if_else(pc.less(column, 0), pa.scalar(None, column.type), column)


def _null_if_empty(column: pa.ChunkedArray) -> pa.ChunkedArray:
    return pc.if_else(pc.equal(column, ""), pa.scalar(None, column.type), column)


def epoch_ms_as_timestamps(table: pa.Table, names: Iterable[str]) -> pa.Table:
    """`table` with its epoch-millisecond columns `names` (Kafka's -1: unknown) as UTC timestamps
    (NULL): the one conversion, for the stats UDF's rows and for version-1 tables."""
    for name in names:
        column = _null_if_negative(table[name])
        table = _with(table, name, pc.multiply(column, 1000).cast(pa.int64()).cast(TIMESTAMP))
    return table


# Retention's reason codes (storage_core.retention.RetentionReason) -> the setting whose rule fired.
RETENTION_RULES = {
    "log_start_offset_breach": "log_start_offset",
    "retention_size_breach": "retention.bytes",
    "retention_ms_breach": "retention.ms",
}
_V1_PLAN = re.compile(
    r"dirty ratio (?P<ratio>[0-9.]+) \(min\.cleanable\.dirty\.ratio (?P<min>[0-9.]+)\); "
    r"cleanable \[(?P<first>-?\d+), (?P<end>-?\d+)\); (?P<candidate>candidate|not a candidate)"
)
_V1_RETENTION = re.compile(r"^(log_start_offset_breach|retention_size_breach|retention_ms_breach): ")


def _with(table: pa.Table, name: str, column: pa.ChunkedArray | pa.Array) -> pa.Table:
    """`table` with column `name` replaced by (or, if absent, appended as) `column`."""
    if name in table.schema.names:
        return table.set_column(table.schema.get_field_index(name), name, column)
    return table.append_column(name, column)


def _map_rows(table: pa.Table, columns: dict[str, pa.DataType], fill: Callable[[dict[str, Any]], dict]) -> pa.Table:
    """`table` plus `columns`, each row's values computed by `fill(row)` (missing keys: NULL)."""
    values = [fill(row) for row in table.to_pylist()]
    for name, type_ in columns.items():
        table = _with(table, name, pa.array([v.get(name) for v in values], type_))
    return table


def _v1_plan_and_rule(row: dict[str, Any]) -> dict[str, Any]:
    """The typed plan or rule a version-1 row kept only in its `reason` text."""
    if row["action"] == "clean_plan" and (plan := _V1_PLAN.search(row["reason"] or "")):
        ratio, minimum = float(plan["ratio"]), float(plan["min"])
        # v1 did not record the cleanable bytes; the reason code follows from the ratio as
        # CleanablePlan.reason_code decides it (a due partition below the ratio: max.compaction.lag.ms).
        if plan["candidate"] == "candidate":
            code = "dirty_ratio" if ratio > minimum else "max_compaction_lag"
        else:
            code = "empty" if plan["first"] == plan["end"] and ratio == 0 else "below_min_cleanable_ratio"
        return {
            "dirty_ratio": ratio,
            "min_cleanable_ratio": minimum,
            "first_uncleanable_offset": int(plan["end"]),
            "reason_code": code,
        }
    if row["action"] == "delete_segment" and (rule := _V1_RETENTION.match(row["reason"] or "")):
        return {"reason_code": rule[1], "retention_rule": RETENTION_RULES[rule[1]]}
    return {}


def _v1_to_v2_maintenance_log(table: pa.Table) -> pa.Table:
    """`ts` (the only clock v1 kept) also becomes `run_ts`; sentinels become NULL; the cleaner's plan
    and retention's rule are parsed out of the reason text v1 wrote."""
    table = _with(table, "run_ts", table["ts"])
    for name in ("partition", "node_id", "base_offset", "log_start_offset", "log_end_offset"):
        table = _with(table, name, _null_if_negative(table[name]))
    for name in ("first_offset", "last_offset"):
        if name in table.schema.names:
            table = _with(table, name, _null_if_negative(table[name]))
    for name in ("cluster_id", "topic", "sha256"):
        if name in table.schema.names:
            table = _with(table, name, _null_if_empty(table[name]))
    typed = {
        "reason_code": pa.string(),
        "retention_rule": pa.string(),
        "dirty_ratio": pa.float64(),
        "min_cleanable_ratio": pa.float64(),
        "cleanable_bytes": pa.int64(),
        "first_uncleanable_offset": pa.int64(),
    }
    return _map_rows(table, typed, _v1_plan_and_rule)


def _v1_to_v2_segment_stats(table: pa.Table) -> pa.Table:
    """Epoch-ms timestamps become timestamps; sentinels NULL; v1 did not record the wall clock (`ts` NULL)."""
    table = epoch_ms_as_timestamps(table, ("min_timestamp", "max_timestamp"))
    for name in ("node_id",):
        if name in table.schema.names:
            table = _with(table, name, _null_if_negative(table[name]))
    for name in ("cluster_id", "topic_id"):
        if name in table.schema.names:
            table = _with(table, name, _null_if_empty(table[name]))
    return _with(table, "ts", pa.nulls(table.num_rows, TIMESTAMP))


def _v1_to_v2_scrub_findings(table: pa.Table) -> pa.Table:
    """`ts` (the only clock v1 kept) also becomes `run_ts`; -1 positions and offsets become NULL."""
    table = _with(table, "run_ts", table["ts"])
    for name in ("position", "first_offset", "last_offset"):
        table = _with(table, name, _null_if_negative(table[name]))
    return table


_UPGRADES: dict[tuple[str, int], Callable[[pa.Table], pa.Table]] = {
    (MAINTENANCE_LOG, 1): _v1_to_v2_maintenance_log,
    (SEGMENT_STATS, 1): _v1_to_v2_segment_stats,
    (SCRUB_FINDINGS, 1): _v1_to_v2_scrub_findings,
}


def upgrade_rows(name: str, table: pa.Table, version: int) -> pa.Table:
    """A version-`version` table's rows as rows of :func:`current_schema` (columns a row of that
    version lacks read NULL)."""
    for step in range(version, TABLE_VERSION):
        table = _UPGRADES[(name, step)](table)
    schema = current_schema(name)
    columns = [
        table[f.name].cast(f.type) if f.name in table.schema.names else pa.nulls(table.num_rows, f.type) for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


# --- the table on disk --------------------------------------------------------------------------------


def _open(path: Path) -> Any:
    from deltalake import DeltaTable

    return DeltaTable(str(path))


def table_version(table: Any, name: str) -> int:
    """A DeltaTable's logkeeper version: its property, else the newest version whose marker column it has."""
    stamped = table.metadata().configuration.get(VERSION_PROPERTY)
    if stamped is not None:
        return int(stamped)
    columns = {field.name for field in table.schema().fields}
    return max((v for v, markers in _MARKERS.items() if markers[name] in columns), default=1)


def stamp_version(path: Path) -> None:
    """Set the version property of the table at `path` to :data:`TABLE_VERSION` (one Delta commit)."""
    _open(path).alter.set_table_properties({VERSION_PROPERTY: str(TABLE_VERSION)}, raise_if_not_exists=False)


def _check_not_newer(path: Path, version: int) -> None:
    if version > TABLE_VERSION:
        raise TableVersionError(
            f"{path} is a version {version} table; this logkeeper knows versions up to {TABLE_VERSION}: "
            "upgrade logkeeper"
        )


def check_versions(warehouse: Path) -> None:
    """Refuse, before a job changes anything, a warehouse whose tables are newer than this logkeeper.

    Raises:
        TableVersionError: a table's version is above :data:`TABLE_VERSION`.
    """
    for name in TABLES:
        path = warehouse / name
        if (path / "_delta_log").is_dir():
            _check_not_newer(path, table_version(_open(path), name))


def ensure_current(path: Path) -> None:
    """Upgrade the table at `path` (named after its directory) in place to :data:`TABLE_VERSION`;
    a no-op when current, or when there is no table yet.

    Raises:
        TableVersionError: the table is newer than this logkeeper.
    """
    from deltalake import write_deltalake

    from jobs._delta import PARTITION_COLUMN, read_table

    if not (path / "_delta_log").is_dir():
        return
    name = path.name
    table = _open(path)
    version = table_version(table, name)
    _check_not_newer(path, version)
    if version < TABLE_VERSION:
        upgraded = upgrade_rows(name, read_table(path), version)
        partition_by = [PARTITION_COLUMN] if PARTITION_COLUMN in table.metadata().partition_columns else None
        write_deltalake(str(path), upgraded, mode="overwrite", schema_mode="overwrite", partition_by=partition_by)
    if VERSION_PROPERTY not in _open(path).metadata().configuration:
        stamp_version(path)
