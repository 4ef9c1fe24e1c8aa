"""The one Delta writer: delta-rs (`deltalake`), tables at protocol reader 1 / writer 2, UTC timestamps.

Appends are idempotent per run: a run's rows replace any rows of the same `run_id` (a retried run
does not duplicate them). Spark reads the tables as Parquet through `file_uris()` with `basePath`.
deltalake's readers must be given an explicit pyarrow filesystem (they can abort the process at exit
otherwise), so every read here passes one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
from pyarrow import fs as pafs

SEGMENT_STATS = "segment_stats"
MAINTENANCE_LOG = "maintenance_log"
SCRUB_FINDINGS = "scrub_findings"


def table_exists(path: Path) -> bool:
    return (path / "_delta_log").is_dir()


def write_run(path: Path, table: pa.Table, *, key: dict[str, str]) -> None:
    """Append a run's rows; rows already written under the same key (run id, and job for the
    maintenance log) are replaced, not duplicated. A table written before a column was added
    (segment_stats' `topic_id`, `is_replica_of_this_broker`) gains it; its older rows read null."""
    from deltalake import write_deltalake

    path.mkdir(parents=True, exist_ok=True)
    if table_exists(path):
        predicate = " AND ".join(f"{column} = '{value.replace(chr(39), chr(39) * 2)}'" for column, value in key.items())
        write_deltalake(str(path), table, mode="overwrite", predicate=predicate, schema_mode="merge")
    else:
        write_deltalake(str(path), table, mode="append")


def read_table(path: Path) -> pa.Table:
    """A Delta table's current snapshot as Arrow."""
    from deltalake import DeltaTable

    return DeltaTable(str(path)).to_pyarrow_table(
        filesystem=pafs.SubTreeFileSystem(str(path.resolve()), pafs.LocalFileSystem())
    )


def spark_view(spark: Any, path: Path, name: str) -> None:
    """Register a Delta table's current snapshot as a Spark temp view."""
    from deltalake import DeltaTable

    uris = DeltaTable(str(path)).file_uris()
    # mergeSchema: files written before a column was added lack it (they read null).
    reader = spark.read.option("basePath", str(path.resolve())).option("mergeSchema", "true")
    reader.parquet(*uris).createOrReplaceTempView(name)
