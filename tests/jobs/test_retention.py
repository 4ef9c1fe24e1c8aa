"""`logkeeper retention` end to end on a real local SparkSession."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs import retention
from storage_core import names
from storage_core.checkpoint import read_offset_checkpoint, write_offset_checkpoint
from storage_core.clean_shutdown import read_clean_shutdown, write_clean_shutdown
from storage_core.names import TopicPartition
from tests.builders.log_dir import T0, LogDirBuilder
from tests.jobs.conftest import MASTER

pytestmark = pytest.mark.spark
NOW = T0 + 10 * 86_400_000  # every record is ten days old


@pytest.fixture
def clean_log_dir(tmp_path: Path) -> Path:
    builder = LogDirBuilder(tmp_path / "logs")
    builder.partition("events", 0, segments=4)
    builder.partition("accounts", 0, segments=3)
    builder.checkpoints()
    write_offset_checkpoint(
        builder.path / names.REPLICATION_OFFSET_CHECKPOINT,
        {TopicPartition("events", 0): 40, TopicPartition("accounts", 0): 30},
    )
    write_clean_shutdown(builder.path)
    (tmp_path / "topics.toml").write_text(
        '[topics."accounts"]\n"cleanup.policy" = "compact"\n[topics."events"]\n"cleanup.policy" = "delete"\n'
    )
    (tmp_path / "server.properties").write_text(f"log.dirs={builder.path}\nlog.retention.hours=168\nnum.partitions=3\n")
    return builder.path


def _args(log_dir: Path, *extra: str) -> list[str]:
    root = log_dir.parent
    return [
        "--server-properties",
        str(root / "server.properties"),
        "--topic-config",
        str(root / "topics.toml"),
        "--master",
        MASTER,
        "--now-ms",
        str(NOW),
        *extra,
    ]


def _bases(dir_path: Path) -> list[int]:
    return sorted(names.offset_from_file_name(p.name) for p in dir_path.glob("*.log"))


def test_dry_run_lists_exactly_what_the_run_deletes(spark, clean_log_dir: Path, tmp_path: Path) -> None:
    plan_json, run_json = tmp_path / "plan.json", tmp_path / "run.json"
    assert retention.main(_args(clean_log_dir, "--dry-run", "--result-json", str(plan_json))) == 0
    assert _bases(clean_log_dir / "events-0") == [0, 10, 20, 30]
    assert retention.main(_args(clean_log_dir, "--result-json", str(run_json))) == 0
    planned = {p["dir_name"]: p for p in json.loads(plan_json.read_text())["partitions"]}
    done = {p["dir_name"]: p for p in json.loads(run_json.read_text())["partitions"]}
    deleted = lambda rows, name: [a["file"] for a in rows[name]["actions"] if a["kind"] == "delete_segment"]  # noqa: E731
    assert deleted(planned, "events-0") == deleted(done, "events-0")
    assert done["events-0"]["segments_deleted"] == 4
    reasons = [a["reason"] for a in done["events-0"]["actions"] if a["kind"] == "delete_segment"]
    assert all(r.startswith("retention_ms_breach") for r in reasons)
    assert done["events-0"]["log_start_offset"] == 40
    # Each row names the settings it was decided with and where each came from.
    assert done["events-0"]["actions"][0] == {
        "kind": "retention_plan",
        "file": "",
        "base_offset": -1,
        "bytes": 0,
        "reason": "cleanup.policy=delete (topic-config file), retention.ms=604800000 (server.properties), "
        "retention.bytes=-1 (default)",
        "change": "none",  # a decision, not a file change
        "target": "",
        "sha256": "",
        "first_offset": -1,
        "last_offset": -1,
        "code": "",
        "dirty_ratio": None,
        "min_cleanable_ratio": None,
        "cleanable_bytes": None,
        "first_uncleanable_offset": None,
    }
    assert {t["topic"]: t["settings"]["cleanup.policy"] for t in json.loads(plan_json.read_text())["topics"]} == {
        "accounts": {"value": "compact", "source": "topic-config file"},
        "events": {"value": "delete", "source": "topic-config file"},
    }
    assert _bases(clean_log_dir / "events-0") == [40]
    assert _bases(clean_log_dir / "accounts-0") == [0, 10, 20]  # compact only: no time retention
    assert read_clean_shutdown(clean_log_dir) is not None
    # The new start equals the first segment's base, so Kafka leaves it out of the checkpoint.
    assert read_offset_checkpoint(clean_log_dir / names.LOG_START_OFFSET_CHECKPOINT) == {}
    second = tmp_path / "second.json"
    assert retention.main(_args(clean_log_dir, "--result-json", str(second))) == 0
    assert all(p["segments_deleted"] == 0 for p in json.loads(second.read_text())["partitions"])


def test_high_watermark_gates_deletion(spark, clean_log_dir: Path) -> None:
    write_offset_checkpoint(clean_log_dir / names.REPLICATION_OFFSET_CHECKPOINT, {TopicPartition("events", 0): 25})
    assert retention.main(_args(clean_log_dir)) == 0
    assert _bases(clean_log_dir / "events-0") == [20, 30]
    assert retention.main(_args(clean_log_dir, "--high-watermark-source", "log-end")) == 0
    assert _bases(clean_log_dir / "events-0") == [40]


def test_an_unclean_log_dir_is_refused(spark, clean_log_dir: Path) -> None:
    (clean_log_dir / names.CLEAN_SHUTDOWN_FILE).unlink()
    result_json = clean_log_dir.parent / "r.json"
    assert retention.main(_args(clean_log_dir, "--result-json", str(result_json))) == 1
    rows = json.loads(result_json.read_text())["partitions"]
    assert {r["error_type"] for r in rows} == {"UncleanLogDir"}
    assert _bases(clean_log_dir / "events-0") == [0, 10, 20, 30]


def test_bad_topic_config_exits_2(clean_log_dir: Path) -> None:
    (clean_log_dir.parent / "topics.toml").write_text('[topics."x"]\n"retention.ms" = "soon"\n')
    assert retention.main(_args(clean_log_dir)) == 2
