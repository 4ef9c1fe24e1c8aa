"""`logkeeper compact` end to end on a real local SparkSession."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka.record.memory_records import MemoryRecords

from jobs import compact
from storage_core import names
from storage_core.checkpoint import read_offset_checkpoint, write_offset_checkpoint
from storage_core.clean_shutdown import read_clean_shutdown, write_clean_shutdown
from storage_core.names import TopicPartition
from tests.builders.log_dir import LogDirBuilder
from tests.jobs.conftest import MASTER

pytestmark = pytest.mark.spark


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    builder = LogDirBuilder(tmp_path / "logs")
    builder.partition("accounts", 0, segments=4)  # keys repeat every 7 offsets
    builder.partition("events", 0, segments=2)
    builder.checkpoints()
    write_offset_checkpoint(
        builder.path / names.REPLICATION_OFFSET_CHECKPOINT,
        {TopicPartition("accounts", 0): 40, TopicPartition("events", 0): 20},
    )
    write_clean_shutdown(builder.path)
    (tmp_path / "topics.toml").write_text(
        '[topics."accounts"]\n"cleanup.policy" = "compact"\n"min.cleanable.dirty.ratio" = 0.1\n'
        '[topics."events"]\n"cleanup.policy" = "delete"\n'
    )
    return builder.path


def test_compact_cleans_compacted_topics_and_checkpoints(spark, log_dir: Path, tmp_path: Path) -> None:
    result_json = tmp_path / "r.json"
    args = ["--log-dirs", str(log_dir), "--topic-config", str(tmp_path / "topics.toml"), "--master", MASTER]
    plan_json = tmp_path / "plan.json"
    before = sorted(p.name for p in (log_dir / "accounts-0").iterdir())
    assert compact.main([*args, "--dry-run", "--result-json", str(plan_json)]) == 0
    assert sorted(p.name for p in (log_dir / "accounts-0").iterdir()) == before
    assert compact.main([*args, "--result-json", str(result_json)]) == 0
    rows = {p["dir_name"]: p for p in json.loads(result_json.read_text())["partitions"]}
    assert rows["events-0"]["status"] == "skipped"
    assert rows["events-0"]["error_message"] == "cleanup.policy=delete (topic-config file) has no compact"
    accounts = rows["accounts-0"]
    assert accounts["status"] == "ok"
    assert [a["kind"] for a in accounts["actions"]][:2] == ["clean_plan", "clean_pass"]
    assert "size reduction" in accounts["actions"][1]["reason"]
    assert (
        "settings: cleanup.policy=compact (topic-config file), min.cleanable.dirty.ratio=0.1 (topic-config file)"
        in (accounts["actions"][0]["reason"])
    )
    assert accounts["bytes_deleted"] > 0
    assert read_offset_checkpoint(log_dir / names.CLEANER_OFFSET_CHECKPOINT) == {TopicPartition("accounts", 0): 30}
    assert read_offset_checkpoint(log_dir / names.RECOVERY_POINT_CHECKPOINT)[TopicPartition("events", 0)] == 20
    assert read_clean_shutdown(log_dir) is not None
    for log in (log_dir / "accounts-0").glob("*.log"):
        memory = MemoryRecords(log.read_bytes())
        while (batch := memory.next_batch()) is not None:
            assert batch.validate_crc()
    again = tmp_path / "again.json"
    assert compact.main([*args, "--result-json", str(again)]) == 0
    second = {p["dir_name"]: p for p in json.loads(again.read_text())["partitions"]}["accounts-0"]
    assert [a["kind"] for a in second["actions"]] == ["clean_plan"]
