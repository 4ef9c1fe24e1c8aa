"""`logkeeper audit --warehouse W --query NAME`: run one of conf/audit/*.sql over the Delta tables.

The queries run on DuckDB in this process by default (`--engine embedded`: no JVM, an answer in well
under a second on a demo warehouse) or in Spark SQL (`--engine spark [--master M]`, for fleet-size
tables); both see the same snapshot of `segment_stats`, `maintenance_log` and `scrub_findings` and
give the same rows (:mod:`jobs._query`). `--since` keeps the rows of runs from that time on (their
logical now, `run_ts`), `--topic` one topic's; `--format table|csv|json` (json: one object per line).
A table written by an older logkeeper is upgraded in place first (:mod:`jobs._tables`).

`logkeeper audit --warehouse W --optimize [--retention-hours H]` compacts the tables' small files
(every run of every broker adds some) and vacuums files older than H hours (default 168, Delta's)
that no current version needs.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.csv as pacsv

from jobs import _log
from jobs._common import EXIT_OK, EXIT_USAGE
from jobs._delta import DEFAULT_RETENTION_HOURS, optimize_table, table_exists
from jobs._query import ENGINES, NO_FILTER, TableFilter, present_tables, run_embedded, run_spark
from jobs._tables import TABLES, TableVersionError, ensure_current

log = _log.get("audit")

QUERIES = Path(os.environ.get("LOGKEEPER_HOME", Path(__file__).resolve().parent.parent)) / "conf" / "audit"
FORMATS = ("table", "csv", "json")


def available_queries() -> list[str]:
    return sorted(p.stem for p in QUERIES.glob("*.sql"))


def query_text(name: str) -> str:
    return (QUERIES / f"{name}.sql").read_text()


def run_query(
    warehouse: Path, name: str, *, engine: str = "embedded", spark: Any = None, where: TableFilter = NO_FILTER
) -> pa.Table:
    """The rows of audit query `name` over the warehouse's tables, on `engine` (`spark` needs a session)."""
    if engine == "spark":
        return run_spark(spark, warehouse, query_text(name), where)
    return run_embedded(warehouse, query_text(name), where)


def optimize(warehouse: Path, *, retention_hours: int) -> int:
    """Compact and vacuum every table of the warehouse; one line per table."""
    tables = [t for t in TABLES if table_exists(warehouse / t)]
    if not tables:
        log.error(f"logkeeper audit: no Delta tables under {warehouse}")
        return EXIT_USAGE
    for name in tables:
        ensure_current(warehouse / name)
        done = optimize_table(warehouse / name, retention_hours=retention_hours)
        log.info(
            f"logkeeper audit: {name}: {done.files_removed} files compacted into {done.files_added}, "
            f"{done.files_vacuumed} vacuumed"
        )
    return EXIT_OK


def _cell(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ", timespec="milliseconds")
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def print_table(table: pa.Table, out: TextIO, *, limit: int) -> None:
    """Rows as aligned text columns (at most `limit`; a last line says how many were left out)."""
    rows = [[_cell(v) for v in row.values()] for row in table.slice(0, limit).to_pylist()]
    widths = [max([len(name), *(len(r[i]) for r in rows)]) for i, name in enumerate(table.column_names)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    print(line.format(*table.column_names).rstrip(), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in rows:
        print(line.format(*row).rstrip(), file=out)
    left = table.num_rows - len(rows)
    print(f"({table.num_rows} rows" + (f", {left} not shown: --limit" if left > 0 else "") + ")", file=out)


def _json_value(value: object) -> object:
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def write_rows(table: pa.Table, fmt: str, out: TextIO, *, limit: int) -> None:
    """`table` on `out` as `fmt`: an aligned text table, CSV with a header, or one JSON object per row."""
    if fmt == "table":
        print_table(table, out, limit=limit)
    elif fmt == "csv":
        sink = pa.BufferOutputStream()
        pacsv.write_csv(table, sink)
        out.write(sink.getvalue().to_pybytes().decode())
    else:
        for row in table.to_pylist():
            out.write(json.dumps(row, default=_json_value) + "\n")


def _since(text: str) -> datetime.datetime:
    """`--since`: an ISO date or time (UTC unless it says otherwise), or `<n>d`/`<n>h` ago."""
    now = datetime.datetime.now(datetime.UTC)
    if text[:-1].isdigit() and text[-1] in "dh":
        return now - datetime.timedelta(**{"days" if text[-1] == "d" else "hours": int(text[:-1])})
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO date/time or <n>d/<n>h: {text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="logkeeper audit", description="Run an audit query over the Delta tables.")
    parser.add_argument(
        "--warehouse", type=Path, default=Path("warehouse"), help="the Delta tables' directory (default: warehouse)"
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--query", help=f"the query to run, one of: {', '.join(available_queries())}")
    action.add_argument("--optimize", action="store_true", help="compact and vacuum the Delta tables")
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="embedded",
        help="embedded: DuckDB in this process, no JVM (default); spark: Spark SQL, for fleet-size tables",
    )
    parser.add_argument(
        "--master",
        default=os.environ.get("LOGKEEPER_SPARK_MASTER"),
        help="--engine spark: the Spark master (default: $LOGKEEPER_SPARK_MASTER, else local)",
    )
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format (default: table)")
    parser.add_argument(
        "--since",
        type=_since,
        help="only rows of runs from then on: an ISO date/time (UTC unless given) or <n>d / <n>h ago",
    )
    parser.add_argument("--topic", help="only this topic's rows")
    parser.add_argument("--limit", type=int, default=100, help="--format table: at most this many rows (default 100)")
    parser.add_argument(
        "--retention-hours",
        type=int,
        default=DEFAULT_RETENTION_HOURS,
        help="--optimize: vacuum files unreferenced for this long (default: 168, Delta's)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code else EXIT_OK
    if args.retention_hours < 0:
        log.error(f"logkeeper audit: --retention-hours must be >= 0 (got {args.retention_hours})")
        return EXIT_USAGE
    try:
        if args.optimize:
            return optimize(args.warehouse, retention_hours=args.retention_hours)
        return _query(args)
    except TableVersionError as exc:
        log.error(f"logkeeper audit: {exc}")
        return EXIT_USAGE


def _query(args: argparse.Namespace) -> int:
    if args.query not in available_queries():
        log.error(f"logkeeper audit: unknown query {args.query!r}; one of: {', '.join(available_queries())}")
        return EXIT_USAGE
    if not present_tables(args.warehouse):
        log.error(f"logkeeper audit: no Delta tables under {args.warehouse} (run logkeeper stats or a job first)")
        return EXIT_USAGE
    where = TableFilter(since=args.since, topic=args.topic)
    spark = None
    if args.engine == "spark":
        from jobs._common import get_spark

        spark = get_spark(args.master, "logkeeper audit")
    rows = run_query(args.warehouse, args.query, engine=args.engine, spark=spark, where=where)
    write_rows(rows, args.format, sys.stdout, limit=args.limit)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
