"""The shared-storage probe: before a job on a cluster changes anything, every executor must see every
log dir as the driver does.

With shared storage (NFS, CephFS, a mounted snapshot) each log dir is at the same path on every host;
a host that mounted another broker's disk there, or none, would make tasks maintain the wrong files.
So a Spark stage runs on every executor and reads, for each log dir, a :class:`LogDirView`: the
identity in its `meta.properties` (`cluster.id`, `node.id`/`broker.id`, `directory.id`) and a
fingerprint of its listing (sha256 of the sorted names of its entries and, inside each partition
dir, every file's name and size; `.lock` and the clean-shutdown marker are left out, as the driver
changes those). The driver compares each view with its own; any difference, any executor that cannot
read a dir, or an executor the stage did not reach is a :class:`ProbeError` (exit 2, nothing changed).

Local masters (`local[...]`) skip the probe: the executors are the driver's own process tree.
The probe only reads; it runs before the log dirs are locked, so a broker must not be started
between the probe and the job (the lock then refuses the job, exit 3).
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from jobs._errors import UsageError
from storage_core import names
from storage_core.errors import StorageError
from storage_core.meta_properties import read_meta_properties

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_NOT_LISTED = frozenset({names.LOCK_FILE, names.CLEAN_SHUTDOWN_FILE})
_ROUNDS = 3  # stages tried until every registered executor has answered


class ProbeError(UsageError):
    """An executor does not see a log dir as the driver does (exit 2 before any change)."""


@dataclass(frozen=True, slots=True)
class LogDirView:
    """What one process sees at a log dir's path (`problem` says why it could not read it)."""

    log_dir: str
    cluster_id: str | None = None
    node_id: int | None = None
    directory_id: str | None = None
    fingerprint: str = ""
    problem: str = ""

    @property
    def identity(self) -> tuple[str | None, int | None, str | None]:
        return self.cluster_id, self.node_id, self.directory_id

    def describe(self) -> str:
        if self.problem:
            return self.problem
        return f"cluster.id={self.cluster_id} node.id={self.node_id} directory.id={self.directory_id}"


def view_of(log_dir: str) -> LogDirView:
    """The view of `log_dir` from this process (never raises: a problem is part of the view)."""
    path = Path(log_dir)
    try:
        meta = read_meta_properties(path / names.META_PROPERTIES)
    except FileNotFoundError:
        meta = None
    except (OSError, StorageError) as exc:
        return LogDirView(log_dir, problem=f"meta.properties unreadable: {exc}")
    try:
        digest = hashlib.sha256()
        for entry in sorted(os.scandir(path), key=lambda e: e.name):
            if entry.name in _NOT_LISTED:
                continue
            digest.update(f"{entry.name}\n".encode())
            if entry.is_dir() and names.is_partition_dir_candidate(entry.name):
                for child in sorted(os.scandir(entry.path), key=lambda e: e.name):
                    digest.update(f"  {child.name} {child.stat().st_size}\n".encode())
    except OSError as exc:
        return LogDirView(log_dir, problem=f"cannot list: {exc.strerror or exc}")
    if meta is None:
        return LogDirView(log_dir, fingerprint=digest.hexdigest())
    node = meta.node_id if meta.node_id is not None else meta.broker_id
    return LogDirView(log_dir, meta.cluster_id, node, meta.directory_id, digest.hexdigest())


@dataclass(frozen=True, slots=True)
class ExecutorReport:
    """One probe task's answer: where it ran and what it saw."""

    host: str
    worker: int  # the pid of the executor's Python daemon (one per executor)
    views: tuple[LogDirView, ...]


def probe_task(log_dirs: Sequence[str]) -> ExecutorReport:
    """Executor side: view every log dir; a short pause lets every executor take a task."""
    time.sleep(0.2)
    return ExecutorReport(socket.gethostname(), os.getppid(), tuple(view_of(d) for d in log_dirs))


def differences(expected: Sequence[LogDirView], reports: Sequence[ExecutorReport]) -> list[str]:
    """What the executors saw differently from the driver, one line each (empty: all agree)."""
    problems = []
    for view in expected:
        if view.problem:
            problems.append(f"{view.log_dir}: the driver cannot read it: {view.problem}")
    wanted = {v.log_dir: v for v in expected}
    for report in reports:
        for seen in report.views:
            mine = wanted[seen.log_dir]
            if seen == mine or mine.problem:
                continue
            where = f"executor on {report.host} (pid {report.worker})"
            if seen.problem:
                problems.append(f"{seen.log_dir}: {where} cannot read it: {seen.problem}")
            elif seen.identity != mine.identity:
                problems.append(f"{seen.log_dir}: {where} sees {seen.describe()}, the driver {mine.describe()}")
            else:
                problems.append(f"{seen.log_dir}: {where} lists different files than the driver")
    return sorted(set(problems))


def _executor_count(spark: SparkSession) -> int:
    """Executors registered now (the driver's block manager is not one)."""
    return max(1, spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1)


def probe_shared_storage(spark: SparkSession, log_dirs: Sequence[Path]) -> None:
    """Check that every executor sees every log dir as the driver does (a no-op on a local master).

    Raises:
        ProbeError: a log dir differs, cannot be read, or an executor never answered.
    """
    sc = spark.sparkContext
    if sc.master.startswith("local"):
        return
    dirs = [str(d) for d in log_dirs]
    expected = [view_of(d) for d in dirs]
    reports: list[ExecutorReport] = []
    sc.setJobDescription(f"probe {len(dirs)} log dirs on every executor")
    try:
        for _ in range(_ROUNDS):
            executors = _executor_count(spark)
            slices = max(2 * executors, sc.defaultParallelism)
            reports += sc.parallelize([dirs] * slices, slices).map(probe_task).collect()
            if len({(r.host, r.worker) for r in reports}) >= executors:
                break
        else:
            raise ProbeError(
                f"the shared-storage probe reached {len({(r.host, r.worker) for r in reports})} of "
                f"{_executor_count(spark)} executors; nothing was changed"
            )
    finally:
        sc.setJobDescription(None)  # type: ignore[arg-type]
    if problems := differences(expected, reports):
        raise ProbeError(
            f"log dirs differ between the driver and executors ({'; '.join(problems)}): with broker-local "
            "disks run one job per broker host (--inventory); nothing was changed"
        )


def probe_if_on_a_cluster(master: str | None, log_dirs: Sequence[Path], app_name: str) -> None:
    """:func:`probe_shared_storage` when the job runs on a cluster: under spark-submit (the session's
    master decides), or with a non-local `--master` or spark.master of conf/spark-defaults.conf.

    Raises:
        ProbeError: see :func:`probe_shared_storage`.
    """
    from jobs._spark import get_spark, spark_defaults

    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    if not submitted and (master or spark_defaults().get("spark.master", "local")).startswith("local"):
        return
    probe_shared_storage(get_spark(master, app_name), log_dirs)
