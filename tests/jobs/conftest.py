from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from jobs._common import get_spark
from tests.lock_holder import hold_log_dir_lock

MASTER = "local[2]"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """The one SparkSession of the test run (local[2], UI off, few shuffle partitions from
    conf/spark-defaults.conf); jobs reuse it through getOrCreate.

    Python workers inherit PYTHONPATH from the JVM this starts: the repo root on it lets them
    import module-level executor functions defined in test modules (`tests.jobs...`).
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    session = get_spark(MASTER, "logkeeper-tests")
    session.conf.set("spark.sql.shuffle.partitions", "2")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _run_in_tmp(tmp_path, monkeypatch) -> None:
    """Jobs write their Delta tables under ./warehouse by default: keep them in the test's tmp dir."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def hold_lock() -> Iterator[Callable[[Path], None]]:
    """`hold_lock(log_dir)`: a second process takes the log dir's `.lock` as a running broker does."""
    holders: list[subprocess.Popen[str]] = []
    yield lambda log_dir: holders.append(hold_log_dir_lock(log_dir))
    for holder in holders:
        holder.kill()
        holder.wait()


def locked_by_another_process(log_dir: Path) -> bool:
    """Probe the lock from a fresh process (a process never conflicts with its own fcntl locks)."""
    probe = "import sys; from storage_core.lock import is_log_dir_locked; print(is_log_dir_locked(sys.argv[1]))"
    result = subprocess.run(
        [sys.executable, "-c", probe, str(log_dir)], capture_output=True, text=True, check=True, cwd=REPO
    )
    return result.stdout.strip() == "True"


@pytest.fixture(scope="session")
def audit_warehouse(tmp_path_factory, spark) -> Path:
    """A warehouse with rows in every table and every audit query, made by real jobs over two copies
    of the demo's crashed log dirs. The first: recover, retention (eight days after the data),
    compact, stats, then a scrub that finds a flipped bit. The second: recover, a compact dry run
    (its plans are due, and nothing cleaned them), `compact --explain` (so they are stuck) and
    disk-usage. Read it, never write it."""
    from jobs import compact, disk_usage, recover, retention, scrub, stats
    from jobs.demo import T0, TOPIC_CONFIG, generate

    root = tmp_path_factory.mktemp("audit")
    (root / "topics.toml").write_text(TOPIC_CONFIG)
    warehouse = root / "warehouse"
    options = ["--master", MASTER, "--warehouse", str(warehouse), "--topic-config", str(root / "topics.toml")]
    options += ["--now-ms", str(T0 + 8 * 86_400_000), "--high-watermark-source", "log-end"]
    first, second = generate(root / "first"), generate(root / "second")
    common = ["--log-dirs", ",".join(map(str, first)), *options]
    assert recover.main(common[:-2]) == 0
    assert retention.main(common) == 0
    assert compact.main(common) == 0
    assert stats.main(common[:-2]) == 0
    closed = sorted((first[0] / "orders-0").glob("*.log"))[0]
    data = bytearray(closed.read_bytes())
    data[100] ^= 0x01  # inside the first batch's records: a CRC mismatch
    closed.write_bytes(bytes(data))
    assert scrub.main(common[:-2]) == 1
    planned = ["--log-dirs", ",".join(map(str, second)), *options]
    assert recover.main(planned[:-2]) == 0
    assert compact.main([*planned, "--dry-run"]) == 0
    assert compact.main([*planned, "--explain"]) == 0
    assert disk_usage.main(planned) == 0
    return warehouse
