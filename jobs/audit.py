"""`logkeeper audit --warehouse W --query NAME`: run one of conf/audit/*.sql in Spark SQL and print it.

The Delta tables `segment_stats`, `maintenance_log` and `scrub_findings` of the warehouse are registered as views
(their current snapshots, read through `file_uris()`); a missing table is an error naming the job
that creates it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from jobs._common import EXIT_OK, EXIT_USAGE, get_spark
from jobs._delta import MAINTENANCE_LOG, SCRUB_FINDINGS, SEGMENT_STATS, spark_view, table_exists

QUERIES = Path(os.environ.get("LOGKEEPER_HOME", Path(__file__).resolve().parent.parent)) / "conf" / "audit"


def available_queries() -> list[str]:
    return sorted(p.stem for p in QUERIES.glob("*.sql"))


def run_query(spark, warehouse: Path, name: str):
    """The DataFrame of one audit query over the warehouse's tables."""
    for table in (SEGMENT_STATS, MAINTENANCE_LOG, SCRUB_FINDINGS):
        if table_exists(warehouse / table):
            spark_view(spark, warehouse / table, table)
    return spark.sql((QUERIES / f"{name}.sql").read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="logkeeper audit", description="Run an audit query over the Delta tables.")
    parser.add_argument("--warehouse", type=Path, default=Path("warehouse"))
    parser.add_argument("--query", required=True, help=f"one of: {', '.join(available_queries())}")
    parser.add_argument("--master", default=os.environ.get("LOGKEEPER_SPARK_MASTER"))
    parser.add_argument("--limit", type=int, default=100)
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code else EXIT_OK
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
