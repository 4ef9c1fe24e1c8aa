"""`logkeeper report --warehouse W --out report.html`: one self-contained HTML page about the warehouse.

The page needs no network: inline CSS, plots as inline SVG (:mod:`jobs._svg`), tables of the rows
behind them. One inline script only checks the page once a browser has laid it out: it sets each
plot's `data-drawn` to the number of its marks that have a visible size (a test, or a reader's
browser console, can tell a drawn plot from one that rendered nothing). Sections, each a
`<section data-rows="N">` (N: rows of data behind it; 0 shows "no data yet"):

1. bytes per topic over time (segment_stats, one point per stats run);
2. bytes per broker log dir over time (segment_stats);
3. retention deletions per day, by the rule that fired (maintenance_log);
4. compaction savings per topic (conf/audit/compaction_savings.sql);
5. corruption findings and the bytes removed or quarantined for them (conf/audit/corruption_found.sql);
6. scrub findings per topic and kind (scrub_findings);
7. partitions due for compaction (conf/audit/due_for_compaction.sql);
8. the last run of each job, with its failures (maintenance_log);
9. disk usage: each broker log dir's bytes by class at its newest `disk-usage` run, and what frees them
   (disk_usage);
10. stuck compaction (conf/audit/compaction_stuck.sql, from `compact --explain`);
11. tiered storage: why local segments of tiered topics stay, at each partition's newest retention
    run (maintenance_log `tiered_keep` rows);
12. moves between disks: each `logkeeper move`'s partitions, steps and bytes (maintenance_log).

The queries run on the embedded engine (DuckDB, :mod:`jobs._query`); the page is written to a
temporary file and renamed over `--out`, so a reader never sees half a report.
"""

from __future__ import annotations

import argparse
import datetime
import html
import os
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from jobs import _log
from jobs._errors import UsageError
from jobs._query import present_tables, run_embedded
from jobs._results import EXIT_OK, EXIT_USAGE
from jobs._svg import bar_chart, line_chart
from jobs._tables import TABLE_VERSION, TableVersionError, check_versions
from jobs.audit import query_text

log = _log.get("report")

BYTES_PER_LOG_DIR = """
SELECT run_ts, host || ':' || log_dir AS broker_log_dir, node_id,
       CAST(SUM(log_bytes + index_bytes + timeindex_bytes + txnindex_bytes) AS BIGINT) AS bytes
FROM segment_stats GROUP BY run_ts, host, log_dir, node_id ORDER BY run_ts, broker_log_dir
"""
RETENTION_PER_DAY = """
SELECT CAST(CAST(run_ts AS DATE) AS VARCHAR) AS day, retention_rule, COUNT(*) AS segments,
       CAST(SUM(bytes_removed) AS BIGINT) AS bytes_freed
FROM maintenance_log
WHERE job = 'retention' AND action = 'delete_segment' AND NOT dry_run
GROUP BY CAST(CAST(run_ts AS DATE) AS VARCHAR), retention_rule ORDER BY day, retention_rule
"""
LAST_RUNS = """
SELECT job, run_id, run_ts, ts, dry_run, COUNT(*) AS partitions,
       CAST(SUM(CASE WHEN status IN ('failed', 'corrupt', 'truncated') THEN 1 ELSE 0 END) AS BIGINT) AS failed,
       CAST(SUM(bytes_removed) AS BIGINT) AS bytes_removed,
       STRING_AGG(CASE WHEN status IN ('failed', 'corrupt', 'truncated') THEN dir_name || ': ' || reason END, '; ')
         AS failures
FROM (
  SELECT *, MAX(ts) OVER (PARTITION BY job) AS newest FROM maintenance_log WHERE action = 'partition'
) AS runs
WHERE ts = newest
GROUP BY job, run_id, run_ts, ts, dry_run ORDER BY job
"""

DISK_USAGE_BY_CLASS = """
WITH newest AS (SELECT log_dir, MAX(run_ts) AS run_ts FROM disk_usage GROUP BY log_dir)
SELECT d.host || ':' || d.log_dir AS broker_log_dir, d.usage_class, d.freed_by,
       CAST(SUM(d.files) AS BIGINT) AS files, CAST(SUM(d.bytes) AS BIGINT) AS bytes,
       CAST(SUM(d.disk_bytes) AS BIGINT) AS disk_bytes
FROM disk_usage d JOIN newest n ON n.log_dir = d.log_dir AND n.run_ts = d.run_ts
GROUP BY d.host, d.log_dir, d.usage_class, d.freed_by ORDER BY broker_log_dir, bytes DESC, d.usage_class
"""
TIERED_KEPT = """
WITH newest AS (
  SELECT log_dir, dir_name, MAX(run_ts) AS run_ts FROM maintenance_log
  WHERE job = 'retention' AND action = 'tiered_keep' GROUP BY log_dir, dir_name
)
SELECT m.topic, m.reason_code, COUNT(*) AS segments, COUNT(DISTINCT m.log_dir || '/' || m.dir_name) AS partitions,
       MAX(m.reason) AS example
FROM maintenance_log m JOIN newest n ON n.log_dir = m.log_dir AND n.dir_name = m.dir_name AND n.run_ts = m.run_ts
WHERE m.job = 'retention' AND m.action = 'tiered_keep'
GROUP BY m.topic, m.reason_code ORDER BY m.topic, segments DESC, m.reason_code
"""
MOVES = """
SELECT run_id, run_ts, log_dir, dir_name, action, status, CAST(SUM(bytes_removed) AS BIGINT) AS bytes,
       COUNT(*) AS actions, MAX(reason) AS reason
FROM maintenance_log WHERE job = 'move'
GROUP BY run_id, run_ts, log_dir, dir_name, action, status ORDER BY run_ts, log_dir, dir_name, action
"""

SCRUB_FINDINGS_PER_TOPIC = """
SELECT topic, kind, COUNT(*) AS findings, CAST(SUM(CASE WHEN corruption THEN 1 ELSE 0 END) AS BIGINT) AS corruption,
       MAX(ts) AS last_found
FROM scrub_findings GROUP BY topic, kind ORDER BY topic, kind
"""

SELF_CHECK = """
for (const plot of document.querySelectorAll("svg.plot")) {
  const drawn = [...plot.querySelectorAll(".mark")].filter((m) => {
    const box = m.getBBox();
    return box.width > 0 && box.height > 0;
  });
  plot.dataset.drawn = drawn.length;
}
document.body.dataset.checked = "yes";
"""

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:960px;color:#222}
h1{font-size:22px;margin-bottom:4px} h2{font-size:17px;margin:28px 0 6px;border-bottom:1px solid #ddd}
.meta{color:#666} table{border-collapse:collapse;margin:8px 0;font-size:12px}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top} th{background:#f4f4f4}
.rows{overflow-x:auto}
td.num{text-align:right;font-variant-numeric:tabular-nums} .empty{color:#a00} svg.plot{display:block}
"""


def _series(rows: list[dict], key: str, value: str) -> dict[str, list[tuple[datetime.datetime, float]]]:
    series: dict[str, list[tuple[datetime.datetime, float]]] = defaultdict(list)
    for row in rows:
        series[str(row[key])].append((row["run_ts"], float(row[value] or 0)))
    return dict(series)


def _stacked(rows: list[dict], label: str, part: str, value: str) -> list[tuple[str, dict[str, float]]]:
    bars: dict[str, dict[str, float]] = {}
    for row in rows:
        parts = bars.setdefault(str(row[label]), {})
        parts[str(row[part])] = parts.get(str(row[part]), 0.0) + float(row[value] or 0)
    return list(bars.items())


@dataclass(frozen=True, slots=True)
class SectionSpec:
    """A section: its id, title, caption, SQL, the table the SQL needs, and how its rows become a plot."""

    key: str
    title: str
    caption: str
    sql: str
    needs: str
    draw: Callable[[list[dict]], str]


SECTIONS = (
    SectionSpec(
        "bytes-per-topic",
        "Bytes per topic over time",
        "Log bytes on disk per topic at each stats run (at the run's logical now).",
        query_text("bytes_per_topic"),
        "segment_stats",
        lambda rows: line_chart(_series(rows, "topic", "log_bytes"), y_format="bytes", title="log bytes per topic"),
    ),
    SectionSpec(
        "bytes-per-broker",
        "Bytes per broker log dir over time",
        "Log and index bytes per broker (host and log dir) at each stats run.",
        BYTES_PER_LOG_DIR,
        "segment_stats",
        lambda rows: line_chart(
            _series(rows, "broker_log_dir", "bytes"), y_format="bytes", title="bytes per broker log dir"
        ),
    ),
    SectionSpec(
        "retention-per-day",
        "Retention deletions per day",
        "Bytes of segments retention deleted per day (of the run's logical now), by the rule that fired.",
        RETENTION_PER_DAY,
        "maintenance_log",
        lambda rows: bar_chart(
            _stacked(rows, "day", "retention_rule", "bytes_freed"), y_format="bytes", title="retention per day"
        ),
    ),
    SectionSpec(
        "compaction-savings",
        "Compaction savings",
        "Bytes the cleaner removed per topic (all runs).",
        query_text("compaction_savings"),
        "maintenance_log",
        lambda rows: bar_chart(
            [(r["topic"], {"bytes saved": float(r["bytes_saved"])}) for r in rows], y_format="bytes", title="savings"
        ),
    ),
    SectionSpec(
        "corruption",
        "Corruption findings",
        "Truncated tails, corrupt batches kept below the recovery point, index mismatches and failures; bytes removed "
        "and bytes quarantined (copied out of the log dir first: the `quarantine` part) per topic.",
        query_text("corruption_found"),
        "maintenance_log",
        lambda rows: bar_chart(
            _stacked(rows, "topic", "action", "bytes_removed"), y_format="bytes", title="bytes removed for corruption"
        ),
    ),
    SectionSpec(
        "scrub-findings",
        "Scrub findings",
        "Damaged batches and index entries the scrubber found beside live brokers, per topic and kind.",
        SCRUB_FINDINGS_PER_TOPIC,
        "scrub_findings",
        lambda rows: bar_chart(_stacked(rows, "topic", "kind", "findings"), y_format="count", title="scrub findings"),
    ),
    SectionSpec(
        "due-for-compaction",
        "Partitions due for compaction",
        "The newest cleaner plan of each partition says it is a candidate, and nothing has cleaned it since.",
        query_text("due_for_compaction"),
        "maintenance_log",
        lambda rows: bar_chart(
            [(f"{r['topic']}-{r['partition']}", {"dirty ratio": r["dirty_ratio"] or 0.0}) for r in rows],
            y_format="ratio",
            title="dirty ratio of partitions due",
        ),
    ),
    SectionSpec(
        "last-runs",
        "Last run of each job",
        "The newest run of each job: partitions, failures and the bytes it removed.",
        LAST_RUNS,
        "maintenance_log",
        lambda rows: bar_chart(
            [(r["job"], {"ok": r["partitions"] - r["failed"], "failed": r["failed"]}) for r in rows],
            y_format="count",
            title="partitions per job's last run",
        ),
    ),
    SectionSpec(
        "disk-usage",
        "Disk usage by class",
        "Every byte of each broker log dir at its newest disk-usage run, by class (live data, retention-eligible, "
        "tiered and uploaded, compaction estimate, strays, leftovers, ...) and what would free it.",
        DISK_USAGE_BY_CLASS,
        "disk_usage",
        lambda rows: bar_chart(
            _stacked(rows, "broker_log_dir", "usage_class", "bytes"), y_format="bytes", title="bytes by class"
        ),
    ),
    SectionSpec(
        "compaction-stuck",
        "Stuck compaction",
        "Compacted partitions whose newest compact --explain says max.compaction.lag.ms is overdue, the dedupe buffer "
        "is too small, an open transaction holds cleaning back, or a clean is due: estimated bytes a clean frees.",
        query_text("compaction_stuck"),
        "compaction_explain",
        lambda rows: bar_chart(
            [(f"{r['topic']}-{r['partition']}", {r["stuck_reason"]: float(r["reclaimable_bytes"])}) for r in rows],
            y_format="bytes",
            title="reclaimable bytes of stuck partitions",
        ),
    ),
    SectionSpec(
        "tiered-retention",
        "Tiered storage: why local segments stay",
        "Segments of tiered topics that retention kept at its newest run, by reason (not uploaded, active segment, "
        "copy disabled, below local retention, upload state unknown).",
        TIERED_KEPT,
        "maintenance_log",
        lambda rows: bar_chart(
            _stacked(rows, "topic", "reason_code", "segments"), y_format="count", title="kept segments by reason"
        ),
    ),
    SectionSpec(
        "moves",
        "Moves between disks",
        "Partitions logkeeper move copied to another log dir of their broker: each step and its bytes.",
        MOVES,
        "maintenance_log",
        lambda rows: bar_chart(
            _stacked(rows, "dir_name", "action", "bytes"), y_format="bytes", title="bytes per moved partition"
        ),
    ),
)


def _cell(value: object) -> str:
    if value is None:
        return "<td>NULL</td>"
    if isinstance(value, bool):
        return f"<td>{value}</td>"
    if isinstance(value, int | float):
        text = f"{value:,}" if isinstance(value, int) else f"{value:.4g}"
        return f'<td class="num">{text}</td>'
    if isinstance(value, datetime.datetime):
        return f"<td>{value:%Y-%m-%d %H:%M:%S}</td>"
    return f"<td>{html.escape(str(value))}</td>"


def _table(rows: pa.Table, limit: int = 50) -> str:
    head = "".join(f"<th>{html.escape(name)}</th>" for name in rows.column_names)
    body = "".join(
        "<tr>" + "".join(_cell(v) for v in row.values()) + "</tr>" for row in rows.slice(0, limit).to_pylist()
    )
    more = f'<p class="meta">{rows.num_rows - limit} more rows not shown</p>' if rows.num_rows > limit else ""
    return f'<div class="rows"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{more}'


def render(warehouse: Path) -> str:
    """The report page of the warehouse."""
    have = set(present_tables(warehouse))
    parts = []
    for spec in SECTIONS:
        rows = run_embedded(warehouse, spec.sql) if spec.needs in have else pa.table({})
        if rows.num_rows:
            content = spec.draw(rows.to_pylist()) + _table(rows)
        else:
            content = f'<p class="empty">no data yet ({spec.needs} has no rows for this)</p>'
        parts.append(
            f'<section id="{spec.key}" data-rows="{rows.num_rows}"><h2>{html.escape(spec.title)}</h2>'
            f'<p class="meta">{html.escape(spec.caption)}</p>{content}</section>'
        )
    now = datetime.datetime.now(datetime.UTC)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>logkeeper report: {html.escape(str(warehouse))}</title><style>{CSS}</style></head><body>"
        f'<h1>logkeeper report</h1><p class="meta">warehouse {html.escape(str(warehouse.resolve()))} · '
        f"tables version {TABLE_VERSION} · written {now:%Y-%m-%d %H:%M:%S} UTC</p>"
        + "".join(parts)
        + f"<script>{SELF_CHECK}</script></body></html>\n"
    )


def write_report(warehouse: Path, out: Path) -> None:
    """Write the report of `warehouse` to `out` (temp file, then rename: never half a page)."""
    page = render(warehouse)
    out.parent.mkdir(parents=True, exist_ok=True)
    temp = out.with_name(out.name + ".tmp")
    temp.write_text(page, encoding="utf-8")
    os.replace(temp, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="logkeeper report", description="Write a self-contained HTML report (plots and tables) of the warehouse."
    )
    parser.add_argument("--warehouse", type=Path, default=Path("warehouse"), help="Delta warehouse directory")
    parser.add_argument("--out", type=Path, default=Path("report.html"), help="the HTML file to write")
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code else EXIT_OK
    try:
        if not present_tables(args.warehouse):
            raise UsageError(f"no Delta tables under {args.warehouse} (run logkeeper stats or a job first)")
        check_versions(args.warehouse)
    except (UsageError, TableVersionError) as exc:
        log.error(f"logkeeper report: {exc}")
        return EXIT_USAGE
    write_report(args.warehouse, args.out)
    log.info(f"logkeeper report: wrote {args.out}")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
