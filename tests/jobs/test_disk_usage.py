"""`logkeeper disk-usage`: every byte of a log dir in one class, adding up to `du` to the byte.

Three kinds of log dir: one with every class planted (a KRaft broker's, with its metadata log,
retention-eligible, tiered-uploaded and compactable data, a stray, `-future`, `-delete` and `-stray`
dirs, leftovers of interrupted work, a remote index cache, a file Kafka did not write, quarantined
pieces), the demo's two crashed log dirs, and every real broker's log dir of ../shared/realdata. For
each, the rows of a log dir add up to `du -sb` (bytes) and `du -sB1` (allocated bytes) of it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from jobs import demo, disk_usage
from jobs._delta import read_table
from jobs._tables import DISK_USAGE
from storage_core import names
from storage_core.partition_metadata import PartitionMetadata, write_partition_metadata
from storage_core.records.batch import Record, build_batch
from tests.builders.log_dir import T0
from tests.builders.remote_log_metadata import RemoteLogMetadataWriter
from tests.jobs.conftest import MASTER
from tests.jobs.test_tiered_retention import DAY, NOW, TIERED, tiered_log_dir
from tests.realdata.manifest import broker_log_dirs, writable_copy

pytestmark = pytest.mark.spark


def du(path: Path, *flags: str) -> int:
    return int(
        subprocess.run(["du", "-s", *flags, str(path)], check=True, capture_output=True, text=True).stdout.split()[0]
    )


def _usage(log_dirs: list[Path], tmp_path: Path, *extra: str) -> dict[str, dict[str, int]]:
    """Run disk-usage; per log dir, bytes and disk bytes per class (from the Delta table)."""
    warehouse = tmp_path / "wh"
    argv = ["--log-dirs", ",".join(map(str, log_dirs)), "--master", MASTER, "--warehouse", str(warehouse)]
    assert disk_usage.main([*argv, "--now-ms", str(NOW), "--run-id", "du", *extra]) in (0, 1)
    out: dict[str, dict[str, int]] = {}
    for row in read_table(warehouse / DISK_USAGE).to_pylist():
        per = out.setdefault(row["log_dir"], {})
        per[row["usage_class"]] = per.get(row["usage_class"], 0) + row["bytes"]
        per["_bytes"] = per.get("_bytes", 0) + row["bytes"]
        per["_disk"] = per.get("_disk", 0) + row["disk_bytes"]
    return out


def _assert_adds_up_to_du(usage: dict[str, dict[str, int]], log_dirs: list[Path]) -> None:
    for log_dir in log_dirs:
        assert usage[str(log_dir)]["_bytes"] == du(log_dir, "-b"), log_dir
        assert usage[str(log_dir)]["_disk"] == du(log_dir, "-B1"), log_dir


def _planted(tmp_path: Path) -> Path:
    log_dir, parts = tiered_log_dir(
        tmp_path,
        {
            "events": {"retention.ms": str(DAY)},
            "orders": TIERED,
            "accounts": {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"},
        },
    )
    rlmm = RemoteLogMetadataWriter(log_dir, partitions=3, topic_id=parts[""].topic_id)
    rlmm.copy(parts["orders"], 0, 19)
    rlmm.write()
    # A stray (its topic id is not the cluster's), and -future, -delete and -stray dirs.
    for name, topic_id in (
        ("gone-0", "AAAAAAAAAAAAAAAAAAAAAQ"),
        ("events-0.0123456789abcdef0123456789abcdef-future", None),
    ):
        (log_dir / name).mkdir()
        names.log_file(log_dir / name, 0).write_bytes(build_batch([Record(0, T0, b"k", b"v" * 500)], base_offset=0))
        if topic_id:
            write_partition_metadata(log_dir / name / names.PARTITION_METADATA, PartitionMetadata(0, topic_id))
    for name in ("old-0.0123456789abcdef0123456789abcdef-delete", "old-1.0123456789abcdef0123456789abcdef-stray"):
        (log_dir / name).mkdir()
        (log_dir / name / "00000000000000000000.log").write_bytes(b"x" * 700)
    # Leftovers of interrupted work, a remote index cache, and a file Kafka did not write.
    (log_dir / "events-0" / "00000000000000000000.log.deleted").write_bytes(b"d" * 300)
    (log_dir / "accounts-0" / "00000000000000000010.log.cleaned").write_bytes(b"c" * 200)
    (log_dir / "accounts-0" / "00000000000000000010.index.swap").write_bytes(b"s" * 16)
    (log_dir / "events-0" / "00000000000000000030.snapshot.tmp").write_bytes(b"t" * 10)
    (log_dir / "recovery-point-offset-checkpoint.tmp").write_bytes(b"0\n0\n")
    (log_dir / names.REMOTE_INDEX_CACHE_DIR).mkdir()
    (log_dir / names.REMOTE_INDEX_CACHE_DIR / "0_abc.index").write_bytes(b"i" * 80)
    (log_dir / "core.12345").write_bytes(b"?" * 123)
    with (log_dir / "events-0" / "00000000000000000030.index").open("r+b") as f:
        f.truncate(10 * 1024 * 1024)  # a preallocated (sparse) active index, as a running broker leaves it
    return log_dir


def test_every_planted_class_is_found_and_the_classes_add_up_to_du(spark, tmp_path: Path) -> None:
    log_dir = _planted(tmp_path)
    quarantine = tmp_path / "wh" / "quarantine" / "an-old-run" / "x" / "events-0"
    quarantine.mkdir(parents=True)
    (quarantine / "00000000000000000000.log.0-99.log").write_bytes(b"q" * 999)
    result = tmp_path / "du.json"
    usage = _usage([log_dir], tmp_path, "--plan", "--result-json", str(result))
    _assert_adds_up_to_du(usage, [log_dir])
    mine = usage[str(log_dir)]
    for cls in (
        "live_data", "retention_eligible", "tiered_uploaded", "compaction_reclaimable", "indexes", "snapshots",
        "partition_files", "log_dir_files", "temporary", "stray_replica", "future_replica", "delete_pending",
        "cluster_metadata", "remote_index_cache", "directories", "other",
    ):  # fmt: skip
        assert mine.get(cls, 0) > 0, cls
    assert mine["temporary"] == 300 + 200 + 16 + 10 + 4
    assert mine["other"] == 123
    _assert_adds_up_to_du(usage, [tmp_path / "wh" / "quarantine"])
    assert usage[str(tmp_path / "wh" / "quarantine")]["quarantine"] > 999
    # --plan: the dry runs of the jobs that free what was found, each with its own JSON.
    plans = {
        job: json.loads(result.with_name(f"du.plan-{job}.json").read_text())
        for job in ("retention", "compact", "recover")
    }
    # The files retention would delete are those counted as eligible (the plan's load first creates a
    # missing index and trims a preallocated one: here they count as they are on disk).
    rules = ("retention_ms_breach", "retention_size_breach", "log_start_offset_breach")
    planned = {
        p["dir_name"]: sum(
            1
            for a in p["actions"]
            if a["code"] in rules and a["change"] == "delete" and (log_dir / p["dir_name"] / a["file"]).exists()
        )
        for p in plans["retention"]["partitions"]
    }
    counted: dict[str, int] = {}
    for r in read_table(tmp_path / "wh" / DISK_USAGE).to_pylist():
        if r["usage_class"] in ("retention_eligible", "tiered_uploaded"):
            counted[r["dir_name"]] = counted.get(r["dir_name"], 0) + r["files"]
    assert counted == {d: n for d, n in planned.items() if n}
    assert counted["orders-0"] == 7  # two uploaded segments (log, index, timeindex) and a snapshot
    assert plans["compact"]["dry_run"]
    assert plans["recover"]["dry_run"]


def test_the_demo_log_dirs_add_up_to_du(spark, tmp_path: Path) -> None:
    dirs = demo.generate(tmp_path / "demo")
    usage = _usage(dirs, tmp_path)
    _assert_adds_up_to_du(usage, dirs)
    assert usage[str(dirs[1])]["temporary"] > 0  # the demo's .cleaned and .swap leftovers


def test_every_real_broker_log_dir_adds_up_to_du(spark, tmp_path: Path) -> None:
    dirs = [
        writable_copy(source, tmp_path / "real" / f"{i}-{source.name}") for i, source in enumerate(broker_log_dirs())
    ]
    usage = _usage(dirs, tmp_path, "--allow-missing-meta-properties")
    _assert_adds_up_to_du(usage, dirs)
