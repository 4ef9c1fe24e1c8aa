"""Read-only jobs beside a live broker: no lock taken, nothing in the log dir changed, exit 0; jobs
that write still refuse (exit 3). Then a broker-like writer appends, rolls and deletes segments while
the read-only jobs and scrub run: no crash, no false corruption, every row true for the snapshot it names."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from jobs import compact, rebuild_indexes, recover, retention, scrub, stats
from jobs._delta import read_table
from jobs._tables import SEGMENT_STATS
from storage_core import names
from tests.builders.log_dir import LogDirBuilder
from tests.jobs.conftest import MASTER, REPO

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def tree(log_dir: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of a log dir: its bytes and mtime (a byte-identical dir has the same tree)."""
    return {
        str(p.relative_to(log_dir)): (p.read_bytes(), p.stat().st_mtime_ns) for p in log_dir.rglob("*") if p.is_file()
    }


@pytest.fixture
def live_log_dir(tmp_path: Path, hold_lock: Callable[[Path], None]) -> tuple[Path, list[str]]:
    """A broker's log dir as it looks while the broker runs: `.lock` held, no `.kafka_cleanshutdown`,
    checkpoints behind the log, the active segment ending in half a batch."""
    builder = LogDirBuilder(tmp_path / "logs")
    orders = builder.partition("orders", 0, segments=3, batches_per_segment=20)
    builder.partition("accounts", 0, segments=2, batches_per_segment=20)
    builder.checkpoints()
    active = names.log_file(orders, 40)
    with active.open("ab") as log:
        log.write(active.read_bytes()[:150])  # the batch being written
    (tmp_path / "topics.toml").write_text('[topics."accounts"]\n"cleanup.policy" = "compact"\n[topics."orders"]\n')
    hold_lock(builder.path)
    common = [
        "--log-dirs",
        str(builder.path),
        "--master",
        MASTER,
        "--warehouse",
        str(tmp_path / "warehouse"),
        "--topic-config",
        str(tmp_path / "topics.toml"),
    ]
    return builder.path, common


def test_read_only_jobs_run_beside_a_live_broker_and_change_nothing(spark, live_log_dir, tmp_path: Path) -> None:
    log_dir, common = live_log_dir
    before = tree(log_dir)
    out = tmp_path / "result.json"
    assert stats.main([*common, "--result-json", str(out)]) == 0
    rows = read_table(tmp_path / "warehouse" / SEGMENT_STATS).to_pylist()
    assert {(r["topic"], r["base_offset"], r["status"], r["live"], r["snapshot_consistent"]) for r in rows} == {
        ("orders", 0, "ok", True, True),
        ("orders", 20, "ok", True, True),
        ("orders", 40, "in_flight", True, True),
        ("accounts", 0, "ok", True, True),
        ("accounts", 20, "ok", True, True),
    }
    assert {r["invalid_bytes"] for r in rows} == {0}
    assert rebuild_indexes.main([*common, "--verify-only", "--result-json", str(out)]) == 0
    actions = [a for p in json.loads(out.read_text())["partitions"] for a in p["actions"]]
    assert sorted((a["kind"], a["file"]) for a in actions) == [
        ("in_flight", "00000000000000000020.log"),
        ("in_flight", "00000000000000000040.log"),
    ]
    assert retention.main([*common, "--dry-run", "--result-json", str(out)]) == 0
    assert {p["status"] for p in json.loads(out.read_text())["partitions"]} == {"ok"}
    assert compact.main([*common, "--dry-run", "--result-json", str(out)]) == 0
    assert {(p["topic"], p["status"]) for p in json.loads(out.read_text())["partitions"]} == {
        ("accounts", "ok"),
        ("orders", "skipped"),
    }
    dump = subprocess.run(
        [sys.executable, "-m", "jobs", "dump", "--files", str(log_dir / "orders-0" / "00000000000000000000.log")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert dump.returncode == 0
    assert "baseOffset: 19" in dump.stdout
    assert scrub.main(common) == 0
    assert tree(log_dir) == before


@pytest.mark.parametrize(
    ("job", "extra"),
    [(recover, []), (retention, []), (compact, []), (rebuild_indexes, [])],
    ids=["recover", "retention", "compact", "rebuild-indexes"],
)
def test_jobs_that_write_still_refuse_a_live_broker(spark, live_log_dir, job, extra: list[str]) -> None:
    log_dir, common = live_log_dir
    before = tree(log_dir)
    assert job.main([*common, *extra]) == 3
    assert tree(log_dir) == before


BATCHES_PER_SEGMENT = 30


@pytest.fixture
def broker(tmp_path: Path):
    """A broker-like process writing `events-0` of a log dir (appends, rolls, deletes), beside a quiet partition."""
    builder = LogDirBuilder(tmp_path / "logs")
    builder.partition("quiet", 0, segments=2, batches_per_segment=20)
    builder.checkpoints()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.builders.live_broker",
            str(builder.path),
            "events-0",
            "--batches-per-segment",
            str(BATCHES_PER_SEGMENT),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    yield builder.path
    (tmp_path / "stop").touch()
    process.wait(timeout=30)
    assert process.returncode == 0


def _assert_rows_true(rows: list[dict]) -> None:
    """Each row holds what the writer wrote into its segment, as far as the row says it read it."""
    assert rows
    for row in rows:
        assert row["status"] in ("ok", "in_flight", "changed_during_read"), row
        assert row["invalid_bytes"] == 0
        assert row["next_offset"] == row["base_offset"] + row["record_count"], row
        if row["topic"] == "events":
            assert row["base_offset"] % BATCHES_PER_SEGMENT == 0
            if row["status"] == "ok" and not row["is_active"]:
                assert row["record_count"] == BATCHES_PER_SEGMENT, row
    by_run: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        by_run.setdefault((row["run_id"], row["topic"]), []).append(row)
    for (_, topic), partition in by_run.items():
        if topic == "quiet":
            assert all(r["snapshot_consistent"] for r in partition)
        if partition[0]["snapshot_consistent"]:  # a snapshot: the segments follow each other
            partition.sort(key=lambda r: r["base_offset"])
            for row, following in itertools.pairwise(partition):
                assert (row["status"], row["next_offset"]) == ("ok", following["base_offset"])


def test_live_jobs_beside_a_writing_broker_report_no_false_corruption(spark, broker: Path, tmp_path: Path) -> None:
    common = ["--log-dirs", str(broker), "--master", MASTER, "--warehouse", str(tmp_path / "warehouse")]
    out = tmp_path / "result.json"
    for _ in range(3):
        assert stats.main(common) == 0
        assert rebuild_indexes.main([*common, "--verify-only", "--result-json", str(out)]) == 0
        partitions = json.loads(out.read_text())["partitions"]
        kinds = {a["kind"] for p in partitions for a in p["actions"]}
        assert kinds <= {"in_flight", "changed_during_read"}, partitions
        dry = ["--dry-run", "--assume-broker-defaults", "--result-json", str(out)]
        assert retention.main([*common, *dry]) == 0
        assert {p["status"] for p in json.loads(out.read_text())["partitions"]} <= {"ok", "changed_during_read"}
        assert scrub.main([*common, "--max-bytes-per-second", "20000000", "--result-json", str(out)]) == 0
        kinds = {a["kind"] for p in json.loads(out.read_text())["partitions"] for a in p["actions"]}
        assert kinds <= {"scrub_summary", "changed_during_read"}, out.read_text()
        time.sleep(0.5)
    _assert_rows_true(read_table(tmp_path / "warehouse" / SEGMENT_STATS).to_pylist())
    assert not os.path.exists(broker / "events-0" / names.CLEAN_SHUTDOWN_FILE)
