"""Spark for logkeeper jobs: the session and running partition tasks on executors.

pyspark is imported inside the functions, so importing a job module (or `logkeeper dump`) starts
no JVM. One Spark task per partition: :func:`run_partition_tasks` spreads the tasks (sorted largest
first by the caller) with `numSlices=len(tasks)` over a module-level executor function. Each task
also sends a small progress entry through an accumulator, which reaches the driver as the task
finishes (PySpark merges accumulator updates on the driver per completed task), so the driver logs
`[n/N] topic-partition status bytes MB/s` as partitions finish, and draws a bar on a terminal.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, TypeVar

from jobs import _log
from jobs._results import ProgressRow, core_note, file_changes, progress_line
from storage_core.java_properties import parse_java_properties

if TYPE_CHECKING:
    from pyspark import Accumulator
    from pyspark.sql import SparkSession

log = _log.get("progress")
T = TypeVar("T")
R = TypeVar("R")


def conf_dir() -> Path:
    """logkeeper's conf/ (`$LOGKEEPER_HOME/conf`; spark-submit.sh sets it, the code may run from a zip)."""
    return Path(os.environ.get("LOGKEEPER_HOME", Path(__file__).resolve().parent.parent)) / "conf"


def spark_defaults(path: Path | None = None) -> dict[str, str]:
    """The settings of conf/spark-defaults.conf (Java properties, as spark-submit reads it); {} if absent."""
    path = path or conf_dir() / "spark-defaults.conf"
    try:
        return parse_java_properties(path.read_text(encoding="latin-1"))
    except FileNotFoundError:
        return {}


def get_spark(master: str | None, app_name: str) -> SparkSession:
    """The SparkSession (reused if one exists).

    Under spark-submit (spark-submit.sh) the master and conf/spark-defaults.conf were applied by
    spark-submit: only an explicit `master` is set. Run directly, conf/spark-defaults.conf is
    applied here, `master` winning over its spark.master (default local[*]), and the UI stays off
    unless the file turns it on.

    Args:
        master: `--master`, or None.
        app_name: the Spark application name (`logkeeper <job>`).
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Executors must run the interpreter that has storage_core's dependencies.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:  # the steps of `maintain`, tests: reuse it (the builder would warn)
        return active
    builder = SparkSession.builder.appName(app_name)
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # launched by spark-submit, which already configured Spark
        session = (builder.master(master) if master else builder).getOrCreate()
    else:
        settings = {"spark.ui.enabled": "false", **spark_defaults()}
        builder = builder.master(master or settings.pop("spark.master", "local[*]"))
        settings.pop("spark.master", None)
        # Spark's start-up lines below ERROR (conf/log4j2.properties), unless the operator set their own.
        settings.setdefault(
            "spark.driver.extraJavaOptions",
            f"-Dlog4j2.configurationFile={(conf_dir() / 'log4j2.properties').resolve().as_uri()}",
        )
        for key, value in settings.items():
            builder = builder.config(key, value)
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel(_log.spark_log_level())
    return session


def stop_spark(session: SparkSession) -> None:
    """Stop `session` so that a successful run ends without a traceback.

    pyspark/daemon.py forks the Python workers and, with spark.python.worker.reuse, keeps them idle
    between tasks. When the SparkContext stops, the JVM closes their sockets before the daemon's
    SIGHUP ends them; a worker that reads the EOF first reports it, fails to flush into the closed
    socket and prints a BrokenPipeError traceback (about one run in five). The idle workers of this
    driver's own JVM (local mode: the daemon's children, found under this process in /proc) are
    ended first, while nothing runs on them; executors on other hosts are not touched.
    """
    for pid in _idle_local_workers():
        with contextlib.suppress(OSError):  # gone already
            os.kill(pid, signal.SIGKILL)
    session.stop()


def _idle_local_workers() -> list[int]:
    """The pids of the Python workers the pyspark daemons under this process forked (none off Linux)."""
    parents: dict[int, int] = {}
    daemons: set[int] = set()
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:  # ended meanwhile
            continue
        pid = int(entry.name)
        parents[pid] = int(stat.rsplit(")", 1)[1].split()[1])
        if b"pyspark.daemon" in command:
            daemons.add(pid)

    def under_this_process(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == os.getpid():
                return True
        return False

    return [pid for pid in daemons if parents.get(pid) in daemons and under_this_process(pid)]


@dataclasses.dataclass(frozen=True, slots=True)
class Progress:
    """What a finished partition tells the driver for its progress line (executors add it to the
    feed of :func:`progress_feed`)."""

    dir_name: str
    status: str
    size_bytes: int
    duration_ms: int
    core: str = ""  # the executor's core_note(): says when it ran the pure-Python twins
    changes: str = ""  # file_changes() of the row's actions (a dry run's: what it would change)


class _ProgressFeed:
    """Accumulator param: a list of progress entries (None for rows without progress fields)."""

    def zero(self, value: list[Progress | None]) -> list[Progress | None]:
        return []

    def addInPlace(self, left: list[Progress | None], right: list[Progress | None]) -> list[Progress | None]:
        left.extend(right)
        return left


@functools.cache
def _freeze_worker_heap() -> None:
    """Executor side, once per Python worker: move everything alive now to the permanent generation.

    A reused PySpark worker runs a full `gc.collect()` after every task (pyspark/daemon.py). Over the
    ~47,000 objects of the imports (pyspark, jobs, storage_core) that took about 10 ms, a real share
    of a small partition's task; frozen, they are skipped and a collection only walks what tasks made.
    """
    gc.freeze()


def _run_and_report(executor_fn: Callable[[T], R], feed: Accumulator[list[Progress | None]], task: T) -> R:
    """Executor side: run one task, then send its progress entry to the driver."""
    _freeze_worker_heap()
    row = executor_fn(task)
    shown = getattr(row, "row", row)  # a job's wrapper (compact's, scrub's) carries the partition row as `row`
    entry = None
    if isinstance(shown, ProgressRow):
        changes = file_changes(getattr(shown, "actions", ()))
        entry = Progress(shown.dir_name, shown.status, shown.size_bytes, shown.duration_ms, core_note(), changes)
    feed.add([entry])
    return row


class _ProgressMonitor:
    """Driver side: prints a line per finished partition and, on a terminal, a bar below them."""

    _BAR = 30

    def __init__(
        self,
        feed: Accumulator[list[Progress | None]],
        *,
        total: int,
        description: str,
        log_lines: bool,
        out: TextIO,
        dry_run: bool = False,
    ) -> None:
        self._feed, self._total, self._description, self._dry_run = feed, total, description, dry_run
        self._log_lines, self._out, self._tty = log_lines, out, out.isatty()
        self._seen = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> _ProgressMonitor:
        if self._log_lines or self._tty:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._poll()  # every finished task's entry has arrived once the job returned
        if self._tty:
            print("\r\x1b[K", end="", file=self._out, flush=True)

    def _loop(self) -> None:
        while not self._stop.wait(0.2):
            self._poll()

    def _poll(self) -> None:
        entries = self._feed.value
        arrived = len(entries)
        if arrived == self._seen:
            return
        if self._tty:
            print("\r\x1b[K", end="", file=self._out)
        for rank in range(self._seen + 1, arrived + 1):
            entry = entries[rank - 1]
            if self._log_lines and entry is not None:
                planned = entry.changes if self._dry_run else ""
                fields = {"partition": entry.dir_name, "status": entry.status, "bytes": entry.size_bytes}
                fields |= {"duration_ms": entry.duration_ms} | ({"would": planned} if planned else {})
                log.info(progress_line(rank, self._total, entry, entry.core, planned), extra={"fields": fields})
        self._seen = arrived
        if self._tty:
            filled = self._BAR * arrived // self._total
            bar = "#" * filled + "." * (self._BAR - filled)
            print(f"[{bar}] {arrived}/{self._total} {self._description}", end="", file=self._out)
        self._out.flush()


@contextlib.contextmanager
def progress_feed(
    spark: SparkSession, *, total: int, description: str, log_lines: bool = True, dry_run: bool = False
) -> Iterator[Accumulator[list[Progress | None]]]:
    """A feed executors add :class:`Progress` entries to while the block runs a Spark job; the driver
    prints `[n/N] ...` as they arrive (n: how many have finished; unless not `log_lines`) and draws a
    bar on a terminal. The job's description (`sc.setJobDescription`) is `description` for the block."""
    sc = spark.sparkContext
    sc.setJobDescription(description)
    feed = sc.accumulator([], _ProgressFeed())
    try:
        monitor = _ProgressMonitor(
            feed, total=total, description=description, log_lines=log_lines, out=sys.stderr, dry_run=dry_run
        )
        with monitor:
            yield feed
    finally:
        sc.setJobDescription(None)  # type: ignore[arg-type]


def run_partition_tasks(
    spark: SparkSession,
    tasks: Sequence[T],
    executor_fn: Callable[[T], R],
    *,
    description: str,
    log_progress: bool = True,
    dry_run: bool = False,
) -> list[R]:
    """Run `executor_fn` over `tasks`, one Spark task each, and return the rows in task order; the
    driver logs `[n/N] ...` as partitions finish (rows with `dir_name`, `status`, `size_bytes`,
    `duration_ms`) unless not `log_progress`.

    Args:
        spark: the session.
        tasks: plain picklable dataclasses, sorted largest first by the caller.
        executor_fn: a module-level function (never a closure over the session) that calls one
            storage_core entry point and returns a typed row; it must turn StorageError and
            OSError into a failed row.
        description: the Spark job description (`sc.setJobDescription`), also shown by the bar.
        dry_run: the rows are plans: a progress line says what its partition would change.
    """
    if not tasks:
        return []
    with progress_feed(
        spark, total=len(tasks), description=description, log_lines=log_progress, dry_run=dry_run
    ) as feed:
        task_fn = functools.partial(_run_and_report, executor_fn, feed)
        return spark.sparkContext.parallelize(list(tasks), numSlices=len(tasks)).map(task_fn).collect()
