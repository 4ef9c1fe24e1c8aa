"""The one Delta writer: delta-rs (`deltalake`), tables at protocol reader 1 / writer 2, UTC timestamps.

Writes are idempotent per run (`--run-id`): a retried run never adds its rows twice
(:func:`write_run` replaces a run's snapshot, :func:`upsert_run` merges its rows by key). Spark
reads the tables as Parquet through `file_uris()` with `basePath`.
deltalake's readers must be given an explicit pyarrow filesystem (they can abort the process at exit
otherwise), so every read here passes one.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyarrow import fs as pafs

from jobs._tables import ensure_current, stamp_version

PARTITION_COLUMN = "date"  # the tables are partitioned by the UTC day of their rows
_COMMIT_ATTEMPTS = 50
DEFAULT_RETENTION_HOURS = 168  # Delta's delta.deletedFileRetentionDuration default (7 days)


def table_exists(path: Path) -> bool:
    return (path / "_delta_log").is_dir()


def quote_sql(value: str) -> str:
    """`value` as an SQL string literal (DataFusion, DuckDB and Spark share the quoting)."""
    return "'" + value.replace("'", "''") + "'"


def _commit(path: Path, table: pa.Table, write_existing: Callable[[], None]) -> None:
    """Create the table with `table`'s rows, or `write_existing()` into it: one Delta commit, tried
    again against the newer snapshot whenever another writer committed first.

    A new table is partitioned by :data:`PARTITION_COLUMN` when the rows have it. Concurrency:
    delta-rs commits optimistically (the next `_delta_log/<version>.json` is created only if absent);
    a writer that loses the race to another process (on this or another host) gets a
    `CommitFailedError`. Every write here is keyed by its own run, so trying again never duplicates
    rows and never removes another writer's. A crash before the commit leaves only unreferenced
    Parquet files (vacuum removes them). A table written before a column was added (segment_stats'
    `topic_id`, the fleet columns) gains it; its older rows read null. A table of an older version
    is upgraded in place first, and a new one is stamped with the current version (:mod:`jobs._tables`).
    """
    from deltalake import write_deltalake
    from deltalake.exceptions import CommitFailedError

    path.mkdir(parents=True, exist_ok=True)
    partition_by = [PARTITION_COLUMN] if PARTITION_COLUMN in table.schema.names else None
    for attempt in itertools.count(1):
        try:
            if table_exists(path):
                ensure_current(path)
                write_existing()
            else:
                write_deltalake(str(path), table, mode="append", partition_by=partition_by)
                stamp_version(path)  # a crash before it: the schema says the version (jobs._tables)
            return
        except CommitFailedError:
            if attempt >= _COMMIT_ATTEMPTS:
                raise
            time.sleep(random.uniform(0.01, 0.05) * attempt)  # back off so the writers spread out


def write_run(path: Path, table: pa.Table, *, run_id: str, log_dirs: Sequence[str]) -> None:
    """Write a run's rows as the run's snapshot of its log dirs: they replace every row of the same
    `run_id` and one of `log_dirs` in one commit (a predicate overwrite), so a retried run never
    appends its rows twice (segment_stats: the retry's statistics are the current ones), and runs of
    other brokers that share the run id (one Airflow run over a fleet) keep theirs."""
    from deltalake import write_deltalake

    dirs = ", ".join(map(quote_sql, sorted(set(log_dirs)))) or "''"
    predicate = f"run_id = {quote_sql(run_id)} AND log_dir IN ({dirs})"
    _commit(
        path,
        table,
        lambda: write_deltalake(str(path), table, mode="overwrite", predicate=predicate, schema_mode="merge"),
    )


def upsert_run(path: Path, table: pa.Table, *, run_id: str, keys: Sequence[str]) -> None:
    """Merge a run's rows in one commit: a row whose `keys` equal one already written by the same run
    replaces it, any other row is added, and the run's other rows are kept (maintenance_log: a retry
    replaces what it reports again, e.g. each partition's final status, and never erases the record of
    a file change its earlier try made). Rows of `table` with equal keys are merged into the last."""
    table = _last_per_key(table, keys)
    # NULL-safe: a key column may be NULL (an action about no segment has no base offset).
    on = " AND ".join([f"t.run_id = {quote_sql(run_id)}", *(f"(t.{k} IS NOT DISTINCT FROM s.{k})" for k in keys)])

    def merge() -> None:
        from deltalake import DeltaTable

        DeltaTable(str(path)).merge(
            table, on, source_alias="s", target_alias="t", merge_schema=True
        ).when_matched_update_all().when_not_matched_insert_all().execute()

    _commit(path, table, merge)


def _last_per_key(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    """`table` with one row per key (the last one), in the original order."""
    last = {tuple(row[k] for k in keys): i for i, row in enumerate(table.select(list(keys)).to_pylist())}
    return table.take(sorted(last.values())) if len(last) < table.num_rows else table


@dataclass(frozen=True, slots=True)
class Optimized:
    """What :func:`optimize_table` did: files compacted into fewer, and files vacuum removed."""

    files_removed: int
    files_added: int
    files_vacuumed: int


def optimize_table(path: Path, *, retention_hours: int) -> Optimized:
    """Compact a table's small files (Delta's `OPTIMIZE`, one commit) and vacuum the files no
    version within `retention_hours` references.

    Each run appends at least one small file per date partition; compaction rewrites them into
    larger ones (readers of older versions still see the old files until vacuum). Vacuum never
    removes a file the current version or any version newer than `retention_hours` needs; below
    Delta's default of 168 hours the operator has chosen to break older readers and time travel.
    """
    from deltalake import DeltaTable

    table = DeltaTable(str(path))
    metrics = table.optimize.compact()
    vacuumed = DeltaTable(str(path)).vacuum(
        retention_hours=retention_hours,
        dry_run=False,
        enforce_retention_duration=retention_hours >= DEFAULT_RETENTION_HOURS,
    )
    return Optimized(metrics.get("numFilesRemoved", 0), metrics.get("numFilesAdded", 0), len(vacuumed))


def read_table(path: Path) -> pa.Table:
    """A Delta table's current snapshot as Arrow."""
    from deltalake import DeltaTable

    return DeltaTable(str(path)).to_pyarrow_table(
        filesystem=pafs.SubTreeFileSystem(str(path.resolve()), pafs.LocalFileSystem())
    )
