"""logkeeper on a real Spark standalone cluster: one master and two workers on 127.0.0.1, started from
the pip-installed Spark (`bin/spark-class`) with their own work dirs and no project venv, and jobs
submitted through `./spark-submit.sh --master spark://...` with relative log dirs.

The second worker runs in its own mount namespace (`unshare -m`, as root) where `shadow/` is another
disk bind-mounted over the driver's: a host that mounted the wrong broker's disk at a log dir's path,
which the shared-storage probe must refuse before anything changes."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest

from jobs._delta import read_table
from jobs._tables import MAINTENANCE_LOG, SEGMENT_STATS
from jobs.demo import generate
from storage_core.meta_properties import MetaProperties, write_meta_properties
from storage_core.names import META_PROPERTIES
from tests.jobs.conftest import REPO

pytestmark = [pytest.mark.spark, pytest.mark.slow]
SPARK_HOME = Path(pyspark.__file__).parent
CLUSTER = "4L6g3nShT-eMCtK--X86sw"
STARTUP_S = 120


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _bare_env() -> dict[str, str]:
    """A worker host's environment: no project venv on PATH, no PYTHONPATH, no virtualenv."""
    venv_bin = str(REPO / ".venv" / "bin")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYSPARK_PYTHON")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    env.update(SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1", SPARK_DAEMON_MEMORY="256m")
    return env


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if match := re.search(pattern, text):
            return match.group(0)
        if proc.poll() is not None:
            raise AssertionError(f"{log.name} exited {proc.returncode}: {text[-2000:]}")
        time.sleep(0.5)
    raise AssertionError(f"{log.name}: no {pattern!r} within {STARTUP_S} s")


_BIND = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'


class _Cluster:
    """The daemons of one standalone cluster; each in its own process group, killed at the end."""

    def __init__(self, root: Path) -> None:
        self.root, self.procs = root, []
        self.url = f"spark://127.0.0.1:{_free_port()}"
        self.work_dirs = [root / "worker-1", root / "worker-2"]
        self.shadow, self.shadow_other = root / "shadow", root / "shadow-other"

    def _start(self, name: str, *args: str, prefix: tuple[str, ...] = ()) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.root / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [*prefix, str(SPARK_HOME / "bin" / "spark-class"), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=_bare_env(),
                cwd=self.root,
                start_new_session=True,
            )
        self.procs.append(proc)
        return proc, log

    def start(self) -> None:
        port = self.url.rsplit(":", 1)[1]
        master, log = self._start(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            port,
            "--webui-port",
            "0",
        )
        _wait_for(log, r"I have been elected leader", master)
        self.shadow.mkdir()
        self.shadow_other.mkdir()
        # worker-2's mount namespace: shadow-other over shadow (then exec the worker in it).
        mounted = ("unshare", "--mount", "--propagation", "private", "sh", "-c", _BIND, "sh")
        for i, work_dir in enumerate(self.work_dirs, start=1):
            work_dir.mkdir()
            prefix = (*mounted, str(self.shadow_other), str(self.shadow)) if i == 2 else ()
            worker, log = self._start(
                f"worker-{i}",
                "org.apache.spark.deploy.worker.Worker",
                self.url,
                "--host",
                "127.0.0.1",
                "--cores",
                "1",
                "--memory",
                "1g",
                "--work-dir",
                str(work_dir),
                "--webui-port",
                "0",
                prefix=prefix,
            )
            _wait_for(log, r"Successfully registered with master", worker)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Cluster]:
    running = _Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        running.start()
        yield running
    finally:
        running.stop()


def _submit(cluster: _Cluster, cwd: Path, *job: str) -> subprocess.CompletedProcess[str]:
    env = _bare_env()
    env.pop("SPARK_HOME")  # spark-submit.sh finds the pip-installed Spark of the checkout's venv
    return subprocess.run(
        [
            str(REPO / "spark-submit.sh"),
            "--master",
            cluster.url,
            "--executor-memory",
            "512m",
            "--conf",
            "spark.executor.cores=1",
            "--conf",
            "spark.scheduler.minRegisteredResourcesRatio=1.0",  # start once both executors are up
            *job,
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=env,
        timeout=900,
    )


def test_recover_and_stats_on_a_two_worker_cluster_with_relative_log_dirs(cluster: _Cluster, tmp_path: Path) -> None:
    log_dirs = generate(tmp_path / "data" / "logs")
    for node_id, log_dir in enumerate(log_dirs, start=1):
        write_meta_properties(log_dir / META_PROPERTIES, MetaProperties(1, cluster_id=CLUSTER, node_id=node_id))
    relative = ",".join(str(d.relative_to(tmp_path)) for d in log_dirs)
    common = ["--log-dirs", relative, "--warehouse", "wh", "--run-id", "cluster-run"]

    recovered = _submit(cluster, tmp_path, "recover", *common)
    assert recovered.returncode == 0, recovered.stderr[-4000:]
    # Progress reached the driver, one line per partition in completion order, and the summary
    # (spark-submit's PythonRunner merges the driver's stderr into its stdout).
    driver_output = recovered.stdout.splitlines()
    progress = [line for line in driver_output if re.match(r"\[\d/4\] ", line)]
    assert [line.split("]")[0] for line in progress] == ["[1/4", "[2/4", "[3/4", "[4/4"]
    assert "logkeeper recover: 4 partitions, 4 ok, 0 failed" in driver_output

    counted = _submit(cluster, tmp_path, "stats", *common)
    assert counted.returncode == 0, counted.stderr[-4000:]

    for table in (MAINTENANCE_LOG, SEGMENT_STATS):
        rows = read_table(tmp_path / "wh" / table).to_pylist()
        assert rows
        assert {(r["log_dir"], r["cluster_id"], r["node_id"], r["run_id"]) for r in rows} == {
            (str(log_dirs[0]), CLUSTER, 1, "cluster-run"),
            (str(log_dirs[1]), CLUSTER, 2, "cluster-run"),
        }
        assert {r["host"] for r in rows} == {socket.gethostname()}
    statuses = {r["status"] for r in read_table(tmp_path / "wh" / MAINTENANCE_LOG).to_pylist()}
    assert statuses == {"ok"}

    # Both workers ran executors, each with the shipped environment unpacked in its own work dir.
    for work_dir in cluster.work_dirs:
        shipped = list(work_dir.glob("app-*/*/environment/bin/python"))
        assert shipped, f"no executor with the shipped environment under {work_dir}"


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_an_executor_that_sees_another_broker_refuses_the_job(cluster: _Cluster, tmp_path: Path) -> None:
    (mine,) = generate(cluster.shadow / "logs")[:1]
    (theirs,) = generate(cluster.shadow_other / "logs")[:1]
    write_meta_properties(mine / META_PROPERTIES, MetaProperties(1, cluster_id=CLUSTER, node_id=1))
    write_meta_properties(theirs / META_PROPERTIES, MetaProperties(1, cluster_id=CLUSTER, node_id=9))
    before = _files(mine)
    relative = os.path.relpath(mine, tmp_path)
    refused = _submit(cluster, tmp_path, "recover", "--log-dirs", relative, "--warehouse", "wh")
    assert refused.returncode == 2, refused.stdout[-4000:] + refused.stderr[-4000:]
    assert re.search(r"executor on \S+ \(pid \d+\) sees cluster.id=\S+ node.id=9", refused.stdout)
    assert _files(mine) == before  # nothing changed: the crashed dir is still as it was
    assert not (tmp_path / "wh").exists()
