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
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.jobs import conftest as jobs_conftest
from tests.kafka import workload
from tests.kafka.broker import KafkaBroker
from tests.kafka.install import KAFKA_VERSIONS, is_installed, lib_dir
from tests.kafka.tools import describe_configs
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
    "log.cleaner.enable": "true",
    "log.cleaner.backoff.ms": "200",
    "log.retention.check.interval.ms": "500",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}
# What makes compaction and retention due once the workload is in (`aged`'s records sit on hour
# marks 10 h ... 1 h old: 5.5 h deletes the six oldest marks whatever the minute of the pass).
DUE_CONFIGS = {
    "keyed": {"min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": "0"},
    "aged": {"retention.ms": str(int(5.5 * workload.HOUR_MS))},
    "sized": {"retention.bytes": str(2 * workload.SEGMENT_BYTES)},
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
    shutil.copytree(source.log_dir, target, ignore=shutil.ignore_patterns(".lock"))
    return target


def new_broker(stage_dir: Path, version: str, log_dir: Path) -> KafkaBroker:
    return KafkaBroker(version, log_dir, stage_dir / "broker", BASE_CONFIG)


@pytest.fixture(scope="session")
def crashed(kafka_version: str, kafka_root: Path) -> Stage:
    broker = new_broker(kafka_root / "crashed", kafka_version, kafka_root / "crashed" / "logs")
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
    broker = new_broker(kafka_root / "broker_recovered", crashed.version, log_dir)
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
    broker = new_broker(kafka_root / "round_trip", crashed.version, log_dir)
    stage = Stage(crashed.version, log_dir, broker, acked=crashed.acked)
    with broker.running({**QUIET, "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}):
        stage.log = broker.log_lines("")
        deadline = time.monotonic() + 60
        while not workload.last_stable_offsets_caught_up(broker.bootstrap, TOPICS):  # the open txn aborted
            assert time.monotonic() < deadline, "the coordinator did not abort the open transaction"
            time.sleep(0.5)
        stage.read = {
            iso: workload.read_all(broker.bootstrap, TOPICS, iso) for iso in ("read_committed", "read_uncommitted")
        }
        workload.alter_topic_configs(broker.bootstrap, DUE_CONFIGS)
        time.sleep(1)  # the brokers' config listeners
        stage.configs = describe_configs(crashed.version, broker.bootstrap, "topics", "--all")
    return stage


@pytest.fixture(scope="session")
def due(round_trip: Stage) -> Stage:
    return Stage(round_trip.version, round_trip.log_dir, round_trip.broker)
