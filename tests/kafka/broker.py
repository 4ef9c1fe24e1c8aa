"""A real Kafka broker for tests: KRaft, one combined broker/controller node, on 127.0.0.1.

Layout (all under the caller's directories, never the repository)::

    <log_dir>/                    log.dirs (also the metadata log dir): meta.properties,
        __cluster_metadata-0/     checkpoints, partition dirs -- what logkeeper maintains
    <work_dir>/
        server-<n>.properties     the n-th start's config (fresh ports every start)
        broker-<n>.log            the n-th start's broker log (tests/kafka/log4j2.properties)

:meth:`KafkaBroker.format` runs Kafka's own storage tool (`kafka.tools.StorageTool format`) on an
empty log dir; a copied log dir is started as it is (its `meta.properties` names the cluster and
node). The ports are free ones picked once, or those of the broker whose log dir was copied, as
a restarted broker keeps its listeners: until the new registration is replayed, its coordinators
know it by the endpoints of the last one in the metadata log. Every start waits for the
broker's "Kafka Server started" line (bounded),
and the JVM runs in its own process group with a bounded heap. :meth:`stop` is a clean shutdown
(SIGTERM: Kafka's shutdown hook flushes, checkpoints and writes `.kafka_cleanshutdown`), bounded,
then SIGKILL; :meth:`kill` is SIGKILL (an unclean shutdown: page-cache writes survive, as after a
process crash). No JVM outlives the test run: the JVM gets SIGKILL when the Python process that
started it dies (PR_SET_PDEATHSIG), and an atexit hook kills every broker still running.
"""

from __future__ import annotations

import atexit
import base64
import ctypes
import os
import re
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tests.kafka.install import lib_dir

LOG4J2 = Path(__file__).with_name("log4j2.properties")
# The JVM of tests: a bounded heap and a quick start (C1 only) on a loaded two-core machine.
TEST_JVM_OPTIONS = ("-Xmx512m", "-Xms128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
# Kafka's own kafka-run-class.sh defaults (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS): the bench's.
KAFKA_JVM_OPTIONS = (
    "-Xmx1G",
    "-Xms1G",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
)
STARTED = "Kafka Server started"
NODE_ID = 1
_RUNNING: set[subprocess.Popen[bytes]] = set()
_PR_SET_PDEATHSIG = 1


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def random_cluster_id() -> str:
    """A cluster id as Kafka's `Uuid.randomUuid()` prints it (22 URL-safe base64 characters, no leading '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def java_command(
    version: str, main_class: str, args: list[str], *, jvm_options: tuple[str, ...], log: Path
) -> list[str]:
    """`java <options> -cp '<jars of version>/*' <main_class> <args>`, logging to `log`."""
    return [
        "java",
        *jvm_options,
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={LOG4J2}",
        f"-Dlogkeeper.kafka.log={log}",
        "-cp",
        f"{lib_dir(version)}/*",
        main_class,
        *args,
    ]


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the test process dies, however it dies."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _kill_all() -> None:
    for process in list(_RUNNING):
        _kill_group(process)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
    _RUNNING.discard(process)


atexit.register(_kill_all)


class KafkaBroker:
    """One KRaft node (broker and controller) of Kafka `version` serving `log_dir`.

    `config` holds server.properties entries added to (and overriding) the base ones at every start;
    :meth:`start` may add more for that start only. `ports` (client, controller) default to free
    ones. The broker's log of the current (or last) start is :attr:`log_path`.
    """

    def __init__(
        self,
        version: str,
        log_dir: Path,
        work_dir: Path,
        config: Mapping[str, str] | None = None,
        ports: tuple[int, int] | None = None,
    ) -> None:
        self.version = version
        self.log_dir = log_dir
        self.work_dir = work_dir
        self.config = dict(config or {})
        self.starts = 0
        self.ports = ports or (free_port(), free_port())
        self.process: subprocess.Popen[bytes] | None = None
        work_dir.mkdir(parents=True, exist_ok=True)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.ports[0]}"

    @property
    def log_path(self) -> Path:
        return self.work_dir / f"broker-{self.starts}.log"

    def _properties(self, extra: Mapping[str, str], name: str = "") -> Path:
        """Write the server.properties of the current start (or `name`); its path."""
        port, controller_port = self.ports
        config = {
            "process.roles": "broker,controller",
            "node.id": str(NODE_ID),
            "controller.quorum.voters": f"{NODE_ID}@127.0.0.1:{controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.log_dir),
            "num.partitions": "1",
            "offsets.topic.num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            **self.config,
            **extra,
        }
        path = self.work_dir / (name or f"server-{self.starts}.properties")
        path.write_text("".join(f"{key}={value}\n" for key, value in config.items()))
        return path

    def properties_for(self, extra: Mapping[str, str] | None = None) -> Path:
        """The server.properties a start with `extra` runs with (`server-next.properties`): the broker's
        static configs for a logkeeper job run before that start (`--server-properties`)."""
        return self._properties(extra or {}, "server-next.properties")

    def _java(self, main_class: str, args: list[str], jvm_options: tuple[str, ...]) -> list[str]:
        return java_command(self.version, main_class, args, jvm_options=jvm_options, log=self.log_path)

    def format(self, cluster_id: str | None = None) -> str:
        """Format the empty `log_dir` with Kafka's storage tool; the cluster id."""
        cluster_id = cluster_id or random_cluster_id()
        self.starts += 1
        properties = self._properties({})
        command = self._java(
            "kafka.tools.StorageTool", ["format", "-t", cluster_id, "-c", str(properties)], TEST_JVM_OPTIONS
        )
        subprocess.run(command, check=True, capture_output=True, timeout=180)
        return cluster_id

    def start(
        self,
        extra: Mapping[str, str] | None = None,
        *,
        timeout: float = 180,
        jvm_options: tuple[str, ...] = TEST_JVM_OPTIONS,
    ) -> float:
        """Start the broker and wait until it logs that it started; the seconds that took."""
        assert self.process is None, "already running"
        self.starts += 1
        properties = self._properties(extra or {})
        began = time.monotonic()
        self.process = subprocess.Popen(
            self._java("kafka.Kafka", [str(properties)], jvm_options),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=(self.work_dir / f"broker-{self.starts}.stderr").open("wb"),
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        _RUNNING.add(self.process)
        try:
            self.wait_for_log(re.escape(STARTED), timeout=timeout)
        except BaseException:
            self.kill()
            raise
        return time.monotonic() - began

    def wait_for_log(self, pattern: str, *, timeout: float = 60, count: int = 1) -> list[str]:
        """Wait until the current start's log has `count` lines matching `pattern`; those lines."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.log_lines(pattern)
            if len(found) >= count:
                return found
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"Kafka {self.version} exited ({self.process.returncode}):\n{self._tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"Kafka {self.version}: no {count} lines /{pattern}/ in {timeout} s:\n{self._tail()}"
                )
            time.sleep(0.1)

    def log_lines(self, pattern: str) -> list[str]:
        """The lines of the current start's log matching `pattern`."""
        if not self.log_path.exists():
            return []
        regex = re.compile(pattern)
        return [line for line in self.log_path.read_text(errors="replace").splitlines() if regex.search(line)]

    def _tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 120) -> None:
        """A clean shutdown (SIGTERM, wait); SIGKILL if it takes longer than `timeout`."""
        process = self.process
        if process is None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        except ProcessLookupError:
            pass
        _kill_group(process)  # the group's leftovers, if any; reaps the JVM
        self.process = None

    def kill(self) -> None:
        """SIGKILL the broker's process group (an unclean shutdown) and reap it."""
        if self.process is not None:
            _kill_group(self.process)
            self.process = None

    @contextmanager
    def running(self, extra: Mapping[str, str] | None = None) -> Iterator[KafkaBroker]:
        """Started for the `with` block, cleanly stopped at its end (killed if the block raised)."""
        self.start(extra)
        try:
            yield self
        except BaseException:
            self.kill()
            raise
        self.stop()
