"""What every logkeeper Spark job shares: arguments, config, log-dir locks, discovery, Spark, results.

Jobs are thin: `parse_args(argv) -> args`, `run(spark, args) -> JobSummary`, `main(argv) -> int`.
`run` discovers partition dirs, builds plain task dataclasses sorted largest first, spreads them
with `sc.parallelize(tasks, numSlices=len(tasks))` over a module-level executor function that calls
one storage_core entry point and returns a :class:`PartitionRow`, then finishes per log dir on the
driver. Exit codes: 0 ok, 1 some partition failed, 2 bad arguments or config, 3 refused (a live
process holds a log dir's `.lock`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from storage_core import names
from storage_core.config import BrokerConfig, TopicOverrides, load_broker_config, load_topic_overrides
from storage_core.errors import InvalidConfigError, InvalidNameError, LogDirLockedError
from storage_core.load_actions import LoadAction
from storage_core.lock import LogDirLock, acquire_log_dir_lock
from storage_core.log_dir import LogDirState, PartitionOutcome, close_log_dir
from storage_core.names import TopicPartition

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_REFUSED = 0, 1, 2, 3
T = TypeVar("T")
R = TypeVar("R")


class UsageError(Exception):
    """Bad arguments or configuration: one line on stderr, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def job_parser(job: str, description: str) -> argparse.ArgumentParser:
    """The options every job takes (Kafka's config names in the files they point to)."""
    parser = _Parser(prog=f"logkeeper {job}", description=description)
    parser.add_argument("--log-dirs", help="comma-separated Kafka log dirs (default: log.dirs of --server-properties)")
    parser.add_argument("--server-properties", type=Path, help="a broker's server.properties (defaults, log.dirs)")
    parser.add_argument("--topic-config", type=Path, help='TOML per-topic overrides: [topics."name"] tables')
    parser.add_argument("--warehouse", type=Path, default=Path("warehouse"), help="Delta warehouse directory")
    parser.add_argument(
        "--master",
        default=os.environ.get("LOGKEEPER_SPARK_MASTER"),
        help="Spark master (default: spark-submit's, else local[*])",
    )
    parser.add_argument("--now-ms", type=int, default=None, help="the clock, in ms since the epoch (default: now)")
    parser.add_argument("--dry-run", action="store_true", help="report what would change, change nothing")
    parser.add_argument("--result-json", type=Path, help="write the per-partition results as JSON here")
    return parser


@dataclass(frozen=True, slots=True)
class JobArgs:
    """The parsed common options."""

    log_dirs: tuple[Path, ...]
    broker: BrokerConfig
    topics: TopicOverrides
    warehouse: Path
    master: str | None
    now_ms: int
    dry_run: bool
    result_json: Path | None


def common_args(namespace: argparse.Namespace) -> JobArgs:
    """Validate the common options; raises UsageError with an operator-readable message."""
    try:
        if namespace.server_properties is not None and not namespace.server_properties.is_file():
            raise UsageError(f"--server-properties {namespace.server_properties}: no such file")
        if namespace.topic_config is not None and not namespace.topic_config.is_file():
            raise UsageError(f"--topic-config {namespace.topic_config}: no such file")
        broker = load_broker_config(namespace.server_properties)
        topics = load_topic_overrides(namespace.topic_config)
    except InvalidConfigError as exc:
        raise UsageError(f"invalid configuration: {exc}") from None
    raw = namespace.log_dirs.split(",") if namespace.log_dirs else list(broker.log_dirs)
    log_dirs = tuple(Path(d.strip()) for d in raw if d.strip())
    if not log_dirs:
        raise UsageError("no log dirs: give --log-dirs or a --server-properties with log.dirs")
    for log_dir in log_dirs:
        if not log_dir.is_dir():
            raise UsageError(f"log dir {log_dir} does not exist or is not a directory")
    return JobArgs(
        log_dirs=log_dirs,
        broker=broker,
        topics=topics,
        warehouse=namespace.warehouse,
        master=namespace.master,
        now_ms=namespace.now_ms if namespace.now_ms is not None else int(time.time() * 1000),
        dry_run=namespace.dry_run,
        result_json=namespace.result_json,
    )


@contextmanager
def locked_log_dirs(log_dirs: Sequence[Path]) -> Iterator[list[LogDirLock]]:
    """Hold every log dir's `.lock` for the block; LogDirLockedError (nothing touched) if one is held."""
    locks: list[LogDirLock] = []
    try:
        for log_dir in log_dirs:
            locks.append(acquire_log_dir_lock(log_dir))
        yield locks
    finally:
        for lock in locks:
            lock.release()


@dataclass(frozen=True, slots=True)
class PartitionDir:
    """A partition directory found in a log dir."""

    log_dir: str
    dir_name: str
    topic: str
    partition: int
    kind: str
    size_bytes: int


def discover_partitions(log_dir: Path) -> tuple[list[PartitionDir], list[tuple[str, str]]]:
    """Partition dirs of a log dir (largest first) and the names that are not partition dirs."""
    found: list[PartitionDir] = []
    problems: list[tuple[str, str]] = []
    for entry in sorted(log_dir.iterdir()):
        if not entry.is_dir() or not names.is_partition_dir_candidate(entry.name):
            continue
        try:
            parsed = names.parse_partition_dir_name(entry.name)
        except InvalidNameError as exc:
            problems.append((entry.name, str(exc)))
            continue
        size = sum(f.stat().st_size for f in entry.iterdir() if f.is_file())
        found.append(
            PartitionDir(
                str(log_dir),
                entry.name,
                parsed.topic_partition.topic,
                parsed.topic_partition.partition,
                parsed.kind.name.lower(),
                size,
            )
        )
    found.sort(key=lambda p: -p.size_bytes)
    return found, problems


@dataclass(frozen=True, slots=True)
class ActionRow:
    """One file action, as it goes to JSON and (later) to the audit table."""

    kind: str
    file: str
    base_offset: int
    bytes: int
    reason: str

    @classmethod
    def of(cls, action: LoadAction) -> ActionRow:
        return cls(action.kind.value, action.file, action.base_offset, action.bytes, action.reason)


@dataclass(frozen=True, slots=True)
class PartitionRow:
    """The typed result of one partition, as executors return it."""

    log_dir: str
    dir_name: str
    topic: str
    partition: int
    status: str  # ok | corrupt | failed | skipped
    size_bytes: int
    duration_ms: int
    log_start_offset: int = -1
    log_end_offset: int = -1
    first_segment_base_offset: int = -1
    truncated_bytes: int = 0
    bytes_deleted: int = 0
    segments_deleted: int = 0
    indexes_rebuilt: int = 0
    actions: tuple[ActionRow, ...] = field(default=())
    error_type: str = ""
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class JobSummary:
    """A job run: its id and every partition's row; totals are derived."""

    job: str
    run_id: str
    dry_run: bool
    rows: tuple[PartitionRow, ...]

    @property
    def failed(self) -> int:
        return sum(1 for r in self.rows if r.status in ("failed", "corrupt"))

    @property
    def exit_code(self) -> int:
        return EXIT_FAILED if self.failed else EXIT_OK


def failed_row(part: PartitionDir, started: float, exc: BaseException) -> PartitionRow:
    """The row of a partition whose storage_core call raised (executors never let it escape)."""
    return PartitionRow(
        part.log_dir,
        part.dir_name,
        part.topic,
        part.partition,
        "failed",
        part.size_bytes,
        int((time.monotonic() - started) * 1000),
        error_type=type(exc).__name__,
        error_message=str(exc),
    )


def discover_log_dirs(log_dirs: Sequence[Path]) -> tuple[list[PartitionDir], list[PartitionRow]]:
    """Every live, future and stray partition dir of the log dirs (largest first), plus rows for the
    directories that will not be maintained: names that are not partition dirs (failed, as a broker
    would refuse them) and replicas pending deletion (`-delete`, skipped)."""
    found: list[PartitionDir] = []
    rows: list[PartitionRow] = []
    for log_dir in log_dirs:
        partitions, problems = discover_partitions(log_dir)
        rows += [
            PartitionRow(str(log_dir), name, "", -1, "failed", 0, 0, error_type="InvalidNameError", error_message=why)
            for name, why in problems
        ]
        for part in partitions:
            if part.kind == "delete":
                rows.append(
                    PartitionRow(
                        part.log_dir,
                        part.dir_name,
                        part.topic,
                        part.partition,
                        "skipped",
                        part.size_bytes,
                        0,
                        error_message="replica pending deletion (-delete): not maintained",
                    )
                )
            else:
                found.append(part)
    found.sort(key=lambda p: -p.size_bytes)
    return found, rows


def refused_unclean(part: PartitionDir) -> PartitionRow:
    """The row of a partition whose log dir was not cleanly shut down (retention and compact refuse it)."""
    return PartitionRow(
        part.log_dir,
        part.dir_name,
        part.topic,
        part.partition,
        "failed",
        part.size_bytes,
        0,
        error_type="UncleanLogDir",
        error_message="log dir was not cleanly shut down: run `logkeeper recover` first",
    )


def close_log_dirs(
    states: Mapping[Path, LogDirState], rows: Sequence[PartitionRow], *, require_clean: bool, offsets_unchanged: bool
) -> None:
    """Checkpoint every maintained log dir, and mark it clean if nothing in it failed.

    Args:
        states: what `open_log_dir` read, per log dir.
        rows: every row of the run (partitions, skipped ones, and names that are not partitions).
        require_clean: only dirs that had a clean shutdown were maintained (retention, compact).
        offsets_unchanged: the job moved no log start or end offset (compact): keep those entries.
    """
    for log_dir, state in states.items():
        if require_clean and not state.had_clean_shutdown:
            continue
        mine = [r for r in rows if r.log_dir == str(log_dir)]
        outcomes = [
            PartitionOutcome(
                TopicPartition(r.topic, r.partition),
                r.status != "failed",
                r.log_start_offset,
                r.log_end_offset,
                r.first_segment_base_offset,
                offsets_unchanged=offsets_unchanged,
            )
            for r in mine
            if r.partition >= 0 and (offsets_unchanged or r.status != "skipped")
        ]
        unloadable = sum(1 for r in mine if r.partition < 0)
        close_log_dir(state, outcomes, other_failures=unloadable)


def new_run_id() -> str:
    return uuid.uuid4().hex


def progress_line(rank: int, total: int, row: PartitionRow) -> str:
    """`[n/N] topic-partition status bytes MB/s`, printed as each partition finishes."""
    rate = row.size_bytes / 1e6 / max(row.duration_ms / 1000, 1e-3)
    return f"[{rank}/{total}] {row.dir_name} {row.status} {row.size_bytes} B {rate:.1f} MB/s"


def get_spark(master: str | None, app_name: str) -> SparkSession:
    """The SparkSession (reused if one exists), with the UI off unless configured.

    `master` None keeps the master spark-submit gave (`--master`, conf/spark-defaults.conf), and
    outside spark-submit runs `local[*]`.
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Executors must run the interpreter that has storage_core's dependencies.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    if master is not None:
        builder = builder.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:  # not launched by spark-submit, which sets the master
        builder = builder.master("local[*]")
    return (
        builder.appName(app_name)
        .config("spark.ui.enabled", os.environ.get("LOGKEEPER_SPARK_UI", "false"))
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.python.worker.reuse", "true")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )


def run_on_executors(spark: SparkSession, items: Sequence[T], fn: Callable[[T], R], *, description: str) -> list[R]:
    """Run `fn` over `items` (already sorted largest first), one Spark task each.

    On a terminal a progress bar (tasks done / total, from Spark's status tracker) is drawn on stderr
    while the job runs; executors print one line per partition as it finishes either way.
    """
    if not items:
        return []
    sc = spark.sparkContext
    sc.setJobDescription(description)
    done = threading.Event()
    bar = threading.Thread(target=_draw_progress, args=(sc, len(items), description, done), daemon=True)
    if sys.stderr.isatty():
        bar.start()
    try:
        return sc.parallelize(list(items), numSlices=len(items)).map(fn).collect()
    finally:
        done.set()
        if bar.is_alive():
            bar.join()
        sc.setJobDescription(None)


def _draw_progress(sc: Any, total: int, description: str, done: threading.Event) -> None:
    """Redraw `[####....] n/N description` until `done` is set."""
    width = 30
    while not done.wait(0.5):
        tracker = sc.statusTracker()
        stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
        finished = sum(s.numCompletedTasks for s in stages if s is not None)
        filled = width * min(finished, total) // total
        print(f"\r[{'#' * filled}{'.' * (width - filled)}] {finished}/{total} {description}", end="", file=sys.stderr)
    print("\r" + " " * (width + 40 + len(description)) + "\r", end="", file=sys.stderr)


def write_result_json(path: Path, summary: JobSummary) -> None:
    """{job, run_id, dry_run, partitions: [...]} with rows in a stable order."""
    rows = sorted(summary.rows, key=lambda r: (r.log_dir, r.topic, r.partition, r.dir_name))
    body: dict[str, Any] = {
        "job": summary.job,
        "run_id": summary.run_id,
        "dry_run": summary.dry_run,
        "partitions": [dataclasses.asdict(row) for row in rows],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body, indent=2) + "\n")


def run_main(job: str, parse: Callable[[list[str]], Any], run: Callable[[Any], JobSummary], argv: list[str]) -> int:
    """Shared `main`: usage errors exit 2, a locked log dir exits 3, otherwise the summary's code."""
    try:
        args = parse(argv)
    except UsageError as exc:
        print(f"logkeeper {job}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        summary = run(args)
    except LogDirLockedError as exc:
        print(f"logkeeper {job}: refused: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    if args.common.result_json is not None:
        write_result_json(args.common.result_json, summary)
    from jobs._audit import write_maintenance_log  # imports pyarrow/deltalake only when a job ran

    write_maintenance_log(args.common.warehouse, summary)
    ok = sum(1 for r in summary.rows if r.status == "ok")
    print(
        f"logkeeper {job}: {len(summary.rows)} partitions, {ok} ok, {summary.failed} failed"
        + (" (dry run: nothing changed)" if summary.dry_run else ""),
        file=sys.stderr,
    )
    for row in summary.rows:
        if row.status in ("failed", "corrupt"):
            print(
                f"  {row.log_dir}/{row.dir_name}: {row.status}: {row.error_type} {row.error_message}", file=sys.stderr
            )
    return summary.exit_code
