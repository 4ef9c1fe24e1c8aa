"""`logkeeper audit --warehouse W --query NAME`: run one of conf/audit/*.sql in Spark SQL and print it.

The Delta tables `segment_stats`, `maintenance_log` and `scrub_findings` of the warehouse are registered as views
(their current snapshots, read through `file_uris()`); a missing table is an error naming the job
that creates it.

`logkeeper audit --warehouse W --optimize [--retention-hours H]` compacts both tables' small files
(every run of every broker adds some) and vacuums files older than H hours (default 168, Delta's)
that no current version needs; it needs no Spark.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from jobs._common import EXIT_OK, EXIT_USAGE, get_spark
from jobs._delta import (
    DEFAULT_RETENTION_HOURS,
    MAINTENANCE_LOG,
    SCRUB_FINDINGS,
    SEGMENT_STATS,
    optimize_table,
    spark_view,
    table_exists,
)

QUERIES = Path(os.environ.get("LOGKEEPER_HOME", Path(__file__).resolve().parent.parent)) / "conf" / "audit"


def available_queries() -> list[str]:
    return sorted(p.stem for p in QUERIES.glob("*.sql"))


def run_query(spark, warehouse: Path, name: str):
    """The DataFrame of one audit query over the warehouse's tables."""
    for table in (SEGMENT_STATS, MAINTENANCE_LOG, SCRUB_FINDINGS):
        if table_exists(warehouse / table):
            spark_view(spark, warehouse / table, table)
    return spark.sql((QUERIES / f"{name}.sql").read_text())


def optimize(warehouse: Path, *, retention_hours: int) -> int:
    """Compact and vacuum every table of the warehouse; one line per table."""
    tables = [t for t in (SEGMENT_STATS, MAINTENANCE_LOG) if table_exists(warehouse / t)]
    if not tables:
        print(f"logkeeper audit: no Delta tables under {warehouse}", file=sys.stderr)
        return EXIT_USAGE
    for name in tables:
        done = optimize_table(warehouse / name, retention_hours=retention_hours)
        print(
            f"logkeeper audit: {name}: {done.files_removed} files compacted into {done.files_added}, "
            f"{done.files_vacuumed} vacuumed",
            file=sys.stderr,
        )
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="logkeeper audit", description="Run an audit query over the Delta tables.")
    parser.add_argument("--warehouse", type=Path, default=Path("warehouse"))
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--query", help=f"one of: {', '.join(available_queries())}")
    action.add_argument("--optimize", action="store_true", help="compact and vacuum the Delta tables")
    parser.add_argument(
        "--retention-hours",
        type=int,
        default=DEFAULT_RETENTION_HOURS,
        help="--optimize: vacuum files unreferenced for this long (default: 168, Delta's)",
    )
    parser.add_argument("--master", default=os.environ.get("LOGKEEPER_SPARK_MASTER"))
    parser.add_argument("--limit", type=int, default=100)
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code else EXIT_OK
    if args.retention_hours < 0:
        print(f"logkeeper audit: --retention-hours must be >= 0 (got {args.retention_hours})", file=sys.stderr)
        return EXIT_USAGE
    if args.optimize:
        return optimize(args.warehouse, retention_hours=args.retention_hours)
    if args.query not in available_queries():
        print(
            f"logkeeper audit: unknown query {args.query!r}; one of: {', '.join(available_queries())}", file=sys.stderr
        )
        return EXIT_USAGE
    if not any(table_exists(args.warehouse / t) for t in (SEGMENT_STATS, MAINTENANCE_LOG)):
        print(
            f"logkeeper audit: no Delta tables under {args.warehouse} (run logkeeper stats or a job first)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    spark = get_spark(args.master, "logkeeper audit")
    frame = run_query(spark, args.warehouse, args.query)
    frame.show(n=args.limit, truncate=False)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
