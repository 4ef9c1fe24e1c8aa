"""One broker run per stage, shared by every test of a Kafka release (session-scoped, per version).

The stages, each on its own copy of the log dir (copies are cheap; broker starts are not):

    crashed              a fresh broker takes the workload (tests/kafka/workload.py), then SIGKILL
                         mid-write                                             (read only from here)
    broker_recovered     copy of crashed; the broker starts on it (its own recovery), clean stop
    logkeeper_recovered  copy of crashed; `logkeeper recover`                  (read only)
    round_trip           copy of logkeeper_recovered; the broker starts on it (its log read), both
                         consumers read everything, then retention and compaction are made due
                         (topic configs altered), `kafka-configs --describe --all`, clean stop
    due                  = round_trip's dir after that stop                    (read only)
    broker_maintained    copy of due; the broker's own cleaner and retention run, clean stop
    logkeeper_maintained copy of due; `logkeeper retention` then `logkeeper compact`, same now
    maintain_round_trip  copy of due; `logkeeper maintain`; the broker starts on it with its
                         cleaner and retention on (its log read), consumers, clean stop

Nothing of the broker is left running after a stage; the release's whole tree is removed at the end.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from storage_core import names
from storage_core.config import LogConfig
from storage_core.records.file_records import iterate_batches
from tests.jobs import conftest as jobs_conftest
from tests.kafka import workload
from tests.kafka.broker import KafkaBroker
from tests.kafka.compare import partition_dirs, segment_bases
from tests.kafka.install import KAFKA_VERSIONS, is_installed, lib_dir
from tests.kafka.tools import describe_configs, dump_log
from tests.kafka.workload import Acked

# Every start: deletions take effect at once (as `--file-delete-delay-ms 0`), a small cleaner buffer.
BASE_CONFIG = {"log.segment.delete.delay.ms": "0", "log.cleaner.dedupe.buffer.size": "16777216"}
# The broker changes nothing on its own: no cleaning, no retention pass, no abort of old transactions.
QUIET = {
    "log.cleaner.enable": "false",
    "log.retention.check.interval.ms": "3600000",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "3600000",
}
# The broker does its own maintenance at once.
ACTIVE = {
    "log.initial.task.delay.ms": "0",  # the first retention pass at once, not 30 s after the start
    "log.cleaner.enable": "true",
    "log.cleaner.backoff.ms": "200",
    "log.retention.check.interval.ms": "500",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}
# What makes compaction and retention due once the workload is in (workload.AGED_HOURS).
DUE_CONFIGS = {
    "keyed": {"min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": "0"},
    "aged": {"retention.ms": str(int(5.5 * workload.HOUR_MS))},
    "sized": {"retention.bytes": str(workload.SEGMENT_BYTES)},
}
TOPICS = tuple(workload.TOPICS)
MASTER = jobs_conftest.MASTER
spark = jobs_conftest.spark  # the test run's one SparkSession, for the logkeeper jobs run in this process


@dataclass
class Stage:
    """A stage's log dir, its broker's run (if any) and what was observed there."""

    version: str
    log_dir: Path
    broker: KafkaBroker | None = None
    acked: list[Acked] | None = None
    now_ms: int = 0
    log: list[str] | None = None
    read: dict[str, dict[tuple[str, int], list[workload.Read]]] | None = None
    configs: str = ""
    dumps: dict[str, str] = field(default_factory=dict)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/kafka/" in str(item.path):
            item.add_marker(pytest.mark.kafka)


@pytest.fixture(scope="session", params=KAFKA_VERSIONS)
def kafka_version(request: pytest.FixtureRequest) -> str:
    version: str = request.param
    if not is_installed(version):
        pytest.fail(f"Kafka {version}'s jars are not in {lib_dir(version)}: run `python -m tests.kafka.install`")
    return version


@pytest.fixture(scope="session")
def kafka_root(kafka_version: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp(f"kafka-{kafka_version}")
    yield root
    shutil.rmtree(root, ignore_errors=True)


def copy_stage(source: Stage, target: Path) -> Path:
    shutil.copytree(source.log_dir, target, ignore=shutil.ignore_patterns(names.LOCK_FILE))
    return target


def new_broker(stage_dir: Path, log_dir: Path, version: str, source: Stage | None = None) -> KafkaBroker:
    """The broker of a stage; on the ports of `source`'s broker, whose log dir this stage copied."""
    ports = source.broker.ports if source is not None and source.broker is not None else None
    return KafkaBroker(version, log_dir, stage_dir / "broker", BASE_CONFIG, ports)


@pytest.fixture(scope="session")
def crashed(kafka_version: str, kafka_root: Path) -> Stage:
    broker = new_broker(kafka_root / "crashed", kafka_root / "crashed" / "logs", kafka_version)
    broker.format()
    broker.start(QUIET)
    try:
        now_ms = int(time.time() * 1000)
        acked = workload.write_workload(broker.bootstrap, now_ms)
        acked += workload.write_until_killed(broker.bootstrap, broker.kill)
    finally:
        broker.kill()
    return Stage(kafka_version, broker.log_dir, broker, acked=acked, now_ms=now_ms)


@pytest.fixture(scope="session")
def broker_recovered(crashed: Stage, kafka_root: Path) -> Stage:
    log_dir = copy_stage(crashed, kafka_root / "broker_recovered" / "logs")
    broker = new_broker(kafka_root / "broker_recovered", log_dir, crashed.version, crashed)
    with broker.running(QUIET):
        pass
    return Stage(crashed.version, log_dir, broker, log=broker.log_lines(""))


def run_job(module: object, log_dir: Path, work: Path, *options: str) -> int:
    """A logkeeper Spark job in this process (the session's SparkSession), its exit code."""
    argv = ["--log-dirs", str(log_dir), "--master", MASTER, "--warehouse", str(work / "warehouse")]
    return module.main([*argv, "--quarantine-dir", str(work / "quarantine"), *options])  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def logkeeper_recovered(crashed: Stage, kafka_root: Path, spark: object) -> Stage:
    from jobs import recover

    log_dir = copy_stage(crashed, kafka_root / "logkeeper_recovered" / "logs")
    assert run_job(recover, log_dir, kafka_root / "logkeeper_recovered") == 0
    return Stage(crashed.version, log_dir)


@pytest.fixture(scope="session")
def round_trip(crashed: Stage, logkeeper_recovered: Stage, kafka_root: Path) -> Stage:
    log_dir = copy_stage(logkeeper_recovered, kafka_root / "round_trip" / "logs")
    broker = new_broker(kafka_root / "round_trip", log_dir, crashed.version, crashed)
    stage = Stage(crashed.version, log_dir, broker, acked=crashed.acked)
    with broker.running(QUIET):
        stage.log = broker.log_lines("")
        # Not by its timeout: a coordinator that times a transaction out while it loads, before this
        # broker leads the partitions, drops the markers ("partitions are likely deleted").
        workload.fence_open_transaction(broker.bootstrap)
        deadline = time.monotonic() + 60
        while not workload.last_stable_offsets_caught_up(broker.bootstrap, TOPICS):
            assert time.monotonic() < deadline, "the open transaction was not aborted"
            time.sleep(0.2)
        stage.read = {
            iso: workload.read_all(broker.bootstrap, TOPICS, iso) for iso in ("read_committed", "read_uncommitted")
        }
        workload.alter_topic_configs(broker.bootstrap, DUE_CONFIGS)
        time.sleep(1)  # the brokers' config listeners
        stage.configs = describe_configs(crashed.version, broker.bootstrap, "topics", "--all")
    return stage


@pytest.fixture(scope="session")
def due(round_trip: Stage) -> Stage:
    """The log dir round_trip's broker stopped cleanly, with compaction and retention due."""
    return round_trip


def server_properties(broker: KafkaBroker) -> Path:
    """The server.properties of `broker`'s last start (logkeeper's --server-properties: the same
    static broker configs)."""
    return broker.work_dir / f"server-{broker.starts}.properties"


def wait_quiet(broker: KafkaBroker, pattern: str, seconds: float) -> None:
    """Wait until no new line matching `pattern` has come for `seconds`."""
    seen, since = len(broker.log_lines(pattern)), time.monotonic()
    while time.monotonic() - since < seconds:
        time.sleep(0.2)
        now = len(broker.log_lines(pattern))
        if now != seen:
            seen, since = now, time.monotonic()


CLEANED = r"cleaned log {}-\d+ "
DELETED_BY_RETENTION = r"Deleting segment .*due to log retention (time|size)"


@pytest.fixture(scope="session")
def broker_maintained(due: Stage, kafka_root: Path) -> Stage:
    """The broker's own cleaner and retention over a copy of `due` (ACTIVE), then a clean stop."""
    log_dir = copy_stage(due, kafka_root / "broker_maintained" / "logs")
    broker = new_broker(kafka_root / "broker_maintained", log_dir, due.version, due)
    with broker.running(ACTIVE):
        now_ms = int(time.time() * 1000)
        broker.wait_for_log(CLEANED.format("keyed"), timeout=120)
        for topic in ("aged", "sized"):
            broker.wait_for_log(rf"partition={topic}-0.*Deleting segment .*due to log retention", timeout=120)
        wait_quiet(broker, f"{CLEANED.format('keyed')}|{DELETED_BY_RETENTION}", 1.5)
        log = broker.log_lines("")
    return Stage(due.version, log_dir, broker, now_ms=now_ms, log=log)


def cleaner_clock(partition_dir: Path) -> int:
    """The clock of the cleaner's pass that wrote `partition_dir`'s delete horizons (KIP-534: the
    first batch with a tombstone cleaned gets the cleaner's now + delete.retention.ms)."""
    for base in segment_bases(partition_dir):
        for batch in iterate_batches(names.log_file(partition_dir, base).read_bytes()):
            if batch.delete_horizon_ms is not None:
                return batch.delete_horizon_ms - LogConfig().delete_retention_ms
    raise AssertionError(f"no delete horizon in {partition_dir}")


@pytest.fixture(scope="session")
def logkeeper_maintained(due: Stage, broker_maintained: Stage, kafka_root: Path, spark: object) -> Stage:
    """`logkeeper retention`, then `logkeeper compact`, over a copy of `due` with the broker's
    static configs and its clock (`--now-ms`: the broker cleaner's, read from its delete horizons;
    retention's outcome is the same for any minute around it, DUE_CONFIGS)."""
    from jobs import compact, retention

    work = kafka_root / "logkeeper_maintained"
    log_dir = copy_stage(due, work / "logs")
    assert broker_maintained.broker is not None
    now_ms = cleaner_clock(broker_maintained.log_dir / "keyed-0")
    options = ["--server-properties", str(server_properties(broker_maintained.broker)), "--now-ms", str(now_ms)]
    assert run_job(retention, log_dir, work, *options) == 0
    assert run_job(compact, log_dir, work, *options) == 0
    return Stage(due.version, log_dir, now_ms=now_ms)


@pytest.fixture(scope="session")
def maintain_round_trip(due: Stage, kafka_root: Path, spark: object) -> Stage:
    """`logkeeper maintain` over a copy of `due`, then the broker on it with its own cleaner and
    retention on (ACTIVE) for a few of their passes, consumers, a clean stop."""
    from jobs import maintain

    work = kafka_root / "maintain_round_trip"
    log_dir = copy_stage(due, work / "logs")
    broker = new_broker(work, log_dir, due.version, due)
    properties = broker.properties_for(ACTIVE)
    now_ms = int(time.time() * 1000)
    assert run_job(maintain, log_dir, work, "--server-properties", str(properties), "--now-ms", str(now_ms)) == 0
    indexes = [
        p for d in partition_dirs(log_dir) for p in sorted((log_dir / d).glob("*index")) if p.suffix != ".txnindex"
    ]
    dumps = {check: dump_log(due.version, indexes, check) for check in ("--verify-index-only", "--index-sanity-check")}
    with broker.running(ACTIVE):
        broker.wait_for_log("Starting the log cleaner", timeout=60)
        time.sleep(2)  # 10 cleaner backoffs, 4 retention checks
        read = {"read_committed": workload.read_all(broker.bootstrap, TOPICS, "read_committed")}
        log = broker.log_lines("")
    return Stage(due.version, log_dir, broker, now_ms=now_ms, log=log, read=read, dumps=dumps)
