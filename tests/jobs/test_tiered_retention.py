"""`logkeeper retention` on a KRaft broker's log dir with tiered topics, end to end on Spark.

The log dir has a real `__cluster_metadata-0` (topics, their configs, and `__remote_log_metadata`
with 3 partitions) and the `__remote_log_metadata` partitions the uploads' events went to, with
their high watermarks; `orders` is uploaded up to offset 19 and half-uploaded to 29, `outage` has no
upload at all, `frozen` has remote.log.copy.disable. Every segment is past the one-day local
retention; nothing un-uploaded may go.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jobs import report, retention
from storage_core import names
from storage_core.checkpoint import write_offset_checkpoint
from storage_core.clean_shutdown import write_clean_shutdown
from storage_core.meta_properties import MetaProperties, write_meta_properties
from storage_core.names import TopicPartition
from storage_core.partition_metadata import PartitionMetadata, write_partition_metadata
from storage_core.tiered.events import TopicIdPartition
from storage_core.tiered.uploads import REMOTE_LOG_METADATA_TOPIC
from tests.builders.log_dir import T0, LogDirBuilder
from tests.builders.metadata_log import MetadataLogBuilder
from tests.builders.remote_log_metadata import RemoteLogMetadataWriter
from tests.jobs.conftest import MASTER

pytestmark = pytest.mark.spark
DAY = 86_400_000
NOW = T0 + 10 * DAY
TIERED = {"remote.storage.enable": "true", "local.retention.ms": str(DAY), "retention.ms": str(30 * DAY)}


def tiered_log_dir(root: Path, topics: dict[str, dict[str, str]], *, metadata_partitions: int = 3) -> tuple[Path, dict]:
    """A KRaft log dir (node 1) with one 4-segment partition per topic; returns it and the TopicIdPartitions
    (`""`: the metadata topic's id)."""
    builder = LogDirBuilder(root / "logs")
    meta = MetadataLogBuilder(builder.path)
    meta.broker(1)
    parts = {"": TopicIdPartition(meta.topic(REMOTE_LOG_METADATA_TOPIC, partitions=metadata_partitions), "", 0)}
    for topic, configs in topics.items():
        dir_path = builder.partition(topic, 0, segments=4)
        topic_id = meta.topic(topic, replicas=(1,), configs=configs)
        write_partition_metadata(dir_path / names.PARTITION_METADATA, PartitionMetadata(0, topic_id))
        parts[topic] = TopicIdPartition(topic_id, topic, 0)
    meta.write_segment()
    builder.checkpoints()
    write_offset_checkpoint(
        builder.path / names.REPLICATION_OFFSET_CHECKPOINT, {TopicPartition(t, 0): 40 for t in topics}
    )
    write_meta_properties(builder.path / names.META_PROPERTIES, MetaProperties(1, "4L6g3nShT-eMCtK--X86sw", node_id=1))
    write_clean_shutdown(builder.path)
    return builder.path, parts


def _run(log_dir: Path, tmp_path: Path, *extra: str) -> dict[str, dict]:
    out = tmp_path / "result.json"
    argv = ["--log-dirs", str(log_dir), "--master", MASTER, "--warehouse", str(tmp_path / "wh")]
    assert retention.main([*argv, "--now-ms", str(NOW), "--result-json", str(out), *extra]) == 0
    return {p["dir_name"]: p for p in json.loads(out.read_text())["partitions"]}


def _kept(row: dict) -> dict[int, str]:
    return {a["base_offset"]: a["code"] for a in row["actions"] if a["kind"] == "tiered_keep"}


def _deleted(row: dict) -> list[int]:
    return sorted({a["base_offset"] for a in row["actions"] if a["kind"] == "delete_segment"})


def test_retention_deletes_only_uploaded_segments_and_says_why_the_rest_stay(spark, tmp_path: Path) -> None:
    log_dir, parts = tiered_log_dir(
        tmp_path, {"orders": TIERED, "outage": TIERED, "frozen": {**TIERED, "remote.log.copy.disable": "true"}}
    )
    rlmm = RemoteLogMetadataWriter(log_dir, partitions=3, topic_id=parts[""].topic_id)
    rlmm.copy(parts["orders"], 0, 9)
    rlmm.copy(parts["orders"], 10, 19)
    rlmm.copy(parts["orders"], 20, 29, finish=False)
    rlmm.write()
    plan = _run(log_dir, tmp_path, "--dry-run")
    rows = _run(log_dir, tmp_path)
    assert _deleted(plan["orders-0"]) == _deleted(rows["orders-0"]) == [0, 10]
    assert _kept(rows["orders-0"]) == {20: "not_uploaded", 30: "active_segment"}
    assert sorted(p.name for p in (log_dir / "orders-0").glob("*.log"))[0] == "00000000000000000020.log"
    assert _deleted(rows["outage-0"]) == []  # an outage: nothing uploaded, nothing deleted
    assert set(_kept(rows["outage-0"]).values()) == {"not_uploaded", "active_segment"}
    assert _kept(rows["frozen-0"])[0] == "copy_disabled"
    settings = {s["name"]: s for s in rows["orders-0"]["settings"]}
    assert settings["local.retention.ms"]["value"] == str(DAY)
    assert settings["local.retention.ms"]["source"] == "topic config (metadata log)"
    assert rows[f"{REMOTE_LOG_METADATA_TOPIC}-0"]["status"] == "ok"  # an ordinary topic to retention
    page = report.render(tmp_path / "wh")  # the report's tiered-storage section shows the reasons
    assert re.search(r'<section id="tiered-retention" data-rows="[1-9]', page)
    assert "not_uploaded" in page


def test_a_missing_metadata_partition_or_an_uncommitted_event_keeps_everything(spark, tmp_path: Path) -> None:
    log_dir, parts = tiered_log_dir(tmp_path, {"orders": TIERED})
    rlmm = RemoteLogMetadataWriter(log_dir, partitions=3, topic_id=parts[""].topic_id)
    rlmm.copy(parts["orders"], 0, 29)
    rlmm.write(committed=False)  # the events are above the high watermark: not committed
    rows = _run(log_dir, tmp_path, "--dry-run")
    assert _deleted(rows["orders-0"]) == []
    for dir_path in log_dir.glob(f"{REMOTE_LOG_METADATA_TOPIC}-*"):
        for path in dir_path.iterdir():
            path.unlink()
        dir_path.rmdir()
    rows = _run(log_dir, tmp_path, "--dry-run")
    assert set(_kept(rows["orders-0"]).values()) == {"upload_state_unknown", "active_segment"}
    reason = next(a["reason"] for a in rows["orders-0"]["actions"] if a["code"] == "upload_state_unknown")
    assert f"{REMOTE_LOG_METADATA_TOPIC}-" in reason
    assert "not on these log dirs" in reason
