"""The cluster's own configs and topology from its KRaft metadata log, end to end.

KRaft log dirs built with a real `__cluster_metadata-0` (tests/builders/metadata_log.py writes it
with storage_core's message writer, as Kafka's controller lays it out) and the real KRaft broker dirs
of ../shared/realdata, copied to tmp; jobs run with no topic file, as on a broker's disk.
"""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from jobs import compact, configs, maintain, recover, retention, stats
from jobs._delta import read_table
from jobs._tables import SEGMENT_STATS
from storage_core import names
from storage_core.checkpoint import write_offset_checkpoint
from storage_core.config_layers import INTERNAL_TOPICS
from storage_core.meta_properties import MetaProperties, write_meta_properties
from storage_core.metadata import load_metadata_image
from storage_core.names import TopicPartition
from storage_core.partition_metadata import PartitionMetadata, write_partition_metadata
from storage_core.records.batch import Record, build_batch
from tests.builders.log_dir import T0, LogDirBuilder
from tests.builders.metadata_log import BROKER, MetadataLogBuilder, random_uuid
from tests.invariants import assert_latest_values_kept, latest_values, records
from tests.jobs.conftest import MASTER
from tests.realdata.manifest import REALDATA

CLUSTER_ID = "4L6g3nShT-eMCtK--X86sw"


def _kraft_log_dir(
    root: Path, *, topics: dict[str, dict[str, str]], node_id: int = 1
) -> tuple[Path, MetadataLogBuilder]:
    """A KRaft broker's log dir: a partition of each topic (4 segments of 10 one-record batches, keys
    repeating every 7 offsets), its partition.metadata, meta.properties of `node_id`, and a metadata
    log registering the broker and the topics (with `configs`) on it. Call `write_segment()` after
    adding more records."""
    builder = LogDirBuilder(root / "logs")
    meta = MetadataLogBuilder(builder.path)
    meta.broker(node_id)
    for topic, topic_configs in topics.items():
        dir_path = builder.partition(topic, 0, segments=4)
        topic_id = meta.topic(topic, replicas=(node_id,), configs=topic_configs)
        write_partition_metadata(dir_path / names.PARTITION_METADATA, PartitionMetadata(0, topic_id))
    builder.checkpoints()
    write_offset_checkpoint(
        builder.path / names.REPLICATION_OFFSET_CHECKPOINT, {TopicPartition(t, 0): 40 for t in topics}
    )
    write_meta_properties(builder.path / names.META_PROPERTIES, MetaProperties(1, CLUSTER_ID, node_id=node_id))
    return builder.path, meta


def _common(log_dir: Path, tmp_path: Path, *extra: str) -> list[str]:
    return ["--log-dirs", str(log_dir), "--master", MASTER, "--warehouse", str(tmp_path / "wh"), *extra]


def _rows(path: Path) -> dict[str, dict]:
    return {p["dir_name"]: p for p in json.loads(path.read_text())["partitions"]}


@pytest.mark.spark
def test_maintain_without_a_topic_file_keeps_what_the_metadata_log_marks_compact(spark, tmp_path: Path) -> None:
    log_dir, meta = _kraft_log_dir(
        tmp_path,
        topics={"accounts": {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"}, "events": {}},
    )
    meta.config(BROKER, "", "log.retention.ms", "86400000")  # a cluster-wide dynamic default
    meta.write_segment()
    before = latest_values(log_dir / "accounts-0")
    records_before = len(records(log_dir / "accounts-0"))
    result = tmp_path / "r.json"
    assert maintain.main(_common(log_dir, tmp_path, "--result-json", str(result))) == 0
    assert_latest_values_kept(before, log_dir / "accounts-0")
    assert len(records(log_dir / "accounts-0")) < records_before  # it was compacted, not deleted
    assert not list((log_dir / "events-0").glob("0000000000000000000[0-9].log"))  # events: deleted by time
    kept = _rows(tmp_path / "retention-r.json")
    assert kept["events-0"]["actions"][0]["reason"] == (
        "cleanup.policy=delete (default), retention.ms=86400000 (dynamic cluster default), retention.bytes=-1 (default)"
    )
    assert kept["accounts-0"]["settings"][0]["source"] == "topic config (metadata log)"
    cleaned = _rows(tmp_path / "compact-r.json")["accounts-0"]
    assert (
        "cleanup.policy=compact (topic config (metadata log)), min.cleanable.dirty.ratio=0.01 (topic config"
        in (cleaned["actions"][0]["reason"])
    )
    assert (log_dir / f"{names.METADATA_TOPIC}-0").is_dir()  # the metadata log itself is never maintained


@pytest.mark.spark
def test_strays_are_reported_renamed_with_handle_strays_and_never_maintained(spark, tmp_path: Path) -> None:
    log_dir, meta = _kraft_log_dir(tmp_path, topics={"accounts": {"cleanup.policy": "compact"}})
    builder = LogDirBuilder(log_dir)
    # A topic deleted from the cluster (its id is nowhere in the metadata) ...
    gone = builder.partition("gone", 0)
    write_partition_metadata(gone / names.PARTITION_METADATA, PartitionMetadata(0, random_uuid()))
    # ... and a partition reassigned to broker 2.
    moved = builder.partition("moved", 0)
    write_partition_metadata(moved / names.PARTITION_METADATA, PartitionMetadata(0, meta.topic("moved", replicas=(2,))))
    meta.write_segment()
    builder.checkpoints()
    reported = tmp_path / "reported.json"
    assert recover.main(_common(log_dir, tmp_path, "--result-json", str(reported))) == 0
    rows = _rows(reported)
    assert "topic 'gone' was deleted" in rows["gone-0"]["actions"][-1]["reason"]
    assert rows["moved-0"]["actions"][-1]["kind"] == "stray_replica"
    assert "replicas [2] of moved-0 do not include this broker (1)" in rows["moved-0"]["actions"][-1]["reason"]
    assert not any(a["kind"] == "stray_replica" for a in rows["accounts-0"]["actions"])
    assert gone.is_dir()
    # Retention and compact leave strays alone (and a stray's unknown configs are no reason to refuse).
    assert retention.main(_common(log_dir, tmp_path, "--result-json", str(tmp_path / "ret.json"))) == 0
    skipped = _rows(tmp_path / "ret.json")["gone-0"]
    assert (skipped["status"], skipped["error_message"][:14]) == ("skipped", "stray replica:")
    # stats: each segment row has its partition's topic id and whether this broker holds it.
    assert stats.main(_common(log_dir, tmp_path)) == 0
    table = {(r["topic"], r["base_offset"]): r for r in read_table(tmp_path / "wh" / SEGMENT_STATS).to_pylist()}
    image = load_metadata_image(log_dir / f"{names.METADATA_TOPIC}-0")
    assert table[("accounts", 0)]["topic_id"] == image.topics["accounts"].topic_id
    assert table[("accounts", 0)]["is_replica_of_this_broker"] is True
    assert table[("moved", 0)]["is_replica_of_this_broker"] is False
    assert table[("gone", 0)]["is_replica_of_this_broker"] is None
    # --handle-strays renames them aside, as Kafka 3.7+ does; nothing inside changes.
    files = sorted(p.name for p in moved.iterdir())
    assert recover.main(_common(log_dir, tmp_path, "--handle-strays", "--result-json", str(reported))) == 0
    renamed = {p.name.split(".")[0]: p for p in log_dir.iterdir() if p.name.endswith("-stray")}
    assert set(renamed) == {"gone-0", "moved-0"}
    assert sorted(p.name for p in renamed["moved-0"].iterdir()) == files
    rename = _rows(reported)["moved-0"]["actions"][-1]
    assert (rename["kind"], rename["change"]) == ("rename_stray", "rename")
    assert (rename["file"], rename["target"]) == ("moved-0", renamed["moved-0"].name)
    assert compact.main(_common(log_dir, tmp_path, "--result-json", str(tmp_path / "c.json"))) == 0
    assert _rows(tmp_path / "c.json")[renamed["gone-0"].name]["status"] == "skipped"


@pytest.mark.spark
def test_rename_stray_goes_through_the_fs_layer_and_its_action_says_rename(spark, tmp_path: Path) -> None:
    log_dir, meta = _kraft_log_dir(tmp_path, topics={"accounts": {"cleanup.policy": "compact"}})
    builder = LogDirBuilder(log_dir)
    moved = builder.partition("moved", 0)
    write_partition_metadata(moved / names.PARTITION_METADATA, PartitionMetadata(0, meta.topic("moved", replicas=(2,))))
    meta.write_segment()
    builder.checkpoints()
    before = {p.name: p.read_bytes() for p in moved.iterdir()}
    dry = tmp_path / "dry.json"
    assert recover.main(_common(log_dir, tmp_path, "--handle-strays", "--dry-run", "--result-json", str(dry))) == 0
    assert {p.name: p.read_bytes() for p in moved.iterdir()} == before  # a dry run renames nothing
    assert not [p for p in log_dir.iterdir() if p.name.endswith("-stray")]
    planned = _rows(dry)["moved-0"]["actions"][-1]
    assert (planned["kind"], planned["change"], planned["file"]) == ("rename_stray", "rename", "moved-0")
    assert planned["target"].startswith("moved-0.")
    assert planned["target"].endswith("-stray")
    real = tmp_path / "real.json"
    assert recover.main(_common(log_dir, tmp_path, "--handle-strays", "--result-json", str(real))) == 0
    (renamed,) = [p for p in log_dir.iterdir() if p.name.endswith("-stray")]
    done = _rows(real)["moved-0"]["actions"][-1]
    assert (done["kind"], done["change"], done["file"], done["target"]) == (
        "rename_stray",
        "rename",
        "moved-0",
        renamed.name,
    )
    assert {p.name: p.read_bytes() for p in renamed.iterdir()} == before


def test_configs_shows_every_layer_of_a_kraft_broker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log_dir, meta = _kraft_log_dir(tmp_path, topics={"accounts": {"cleanup.policy": "compact"}}, node_id=3)
    meta.config(BROKER, "", "log.retention.ms", "1000")
    meta.config(BROKER, "", "log.segment.bytes", "5000000")
    meta.config(BROKER, "3", "log.segment.bytes", "6000000")
    meta.config(BROKER, "4", "log.segment.bytes", "7000000")
    meta.write_segment()
    (tmp_path / "server.properties").write_text("log.retention.bytes=123456\nnode.id=3\n")
    (tmp_path / "topics.toml").write_text('[topics."accounts"]\n"delete.retention.ms" = 5\n')
    argv = ["--log-dirs", str(log_dir), "--server-properties", str(tmp_path / "server.properties")]
    assert configs.main([*argv, "--topic-config", str(tmp_path / "topics.toml"), "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["metadata_log"]["source"].startswith(str(log_dir / f"{names.METADATA_TOPIC}-0"))
    (accounts,) = body["topics"]
    assert (accounts["node_id"], accounts["known"]) == (3, True)
    sources = {name: (v["value"], v["source"]) for name, v in accounts["configs"].items()}
    assert sources["retention.ms"] == ("1000", "dynamic cluster default")
    assert sources["segment.bytes"] == ("6000000", "dynamic broker 3")
    assert sources["retention.bytes"] == ("123456", "server.properties")
    assert sources["cleanup.policy"] == ("compact", "topic config (metadata log)")
    assert sources["delete.retention.ms"] == ("5", "topic-config file")
    assert sources["segment.ms"] == ("604800000", "default")
    assert accounts["partitions"][0]["is_replica_of_this_broker"] is True
    assert configs.main(argv) == 0
    text = capsys.readouterr().out
    assert "  segment.bytes=6000000" in text
    assert "(dynamic broker 3)" in text


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--no-metadata-log"], "accounts, events (--no-metadata-log was given)"),
        (["--metadata-log-dir", "."], "no __cluster_metadata-0 there"),
    ],
)
def test_without_the_metadata_log_the_topics_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    log_dir, meta = _kraft_log_dir(tmp_path, topics={"accounts": {"cleanup.policy": "compact"}, "events": {}})
    meta.write_segment()
    assert maintain.main([*_common(log_dir, tmp_path), *extra]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("broken", ["invalid dynamic value", "record of an unknown type"])
def test_a_metadata_log_that_cannot_be_used_is_exit_2_with_nothing_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], broken: str
) -> None:
    log_dir, meta = _kraft_log_dir(tmp_path, topics={"accounts": {"cleanup.policy": "compact"}})
    if broken == "invalid dynamic value":
        meta.config(BROKER, "", "log.cleanup.policy", "archive")
    segment = meta.write_segment()
    if broken == "record of an unknown type":  # frame version 1, api key 250, version 0: a newer Kafka's
        unknown = Record(meta.next_offset, T0, None, b"\x01\xfa\x01\x00")
        with segment.open("ab") as log:
            log.write(build_batch([unknown], base_offset=meta.next_offset, partition_leader_epoch=1))
    before = {p: p.read_bytes() for p in log_dir.rglob("*") if p.is_file()}
    assert maintain.main(_common(log_dir, tmp_path)) == 2
    err = capsys.readouterr().err
    assert (
        "dynamic cluster default" if broken == "invalid dynamic value" else "cannot read the KRaft metadata log"
    ) in err
    assert {p: p.read_bytes() for p in log_dir.rglob("*") if p.is_file()} == before


KRAFT_DIRS = [
    REALDATA / "Danielowo2000__BigDataTechnologies-Version-2" / "kafka_data",  # _schemas, connect, ksqlDB tables
    REALDATA / "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions" / "kafka-data",  # + transactions
]


@pytest.mark.spark
@pytest.mark.parametrize("source", KRAFT_DIRS, ids=lambda p: p.parent.name.split("__")[0])
def test_maintain_on_a_real_kraft_dir_keeps_every_topic_the_cluster_compacts(
    spark, tmp_path: Path, source: Path
) -> None:
    log_dir = tmp_path / "data"
    shutil.copytree(source, log_dir)
    for path in [log_dir, *log_dir.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    # Which topics the cluster compacts, as its metadata log says (the replay, not the layering under test).
    image = load_metadata_image(log_dir / f"{names.METADATA_TOPIC}-0")
    compacted = {
        name
        for name in image.topics
        if "compact" in image.topic_configs.get(name, {}).get("cleanup.policy", "") or name in INTERNAL_TOPICS
    }
    dirs = [p for p in log_dir.iterdir() if p.is_dir() and p.name.rpartition("-")[0] in compacted]
    assert {d.name.rpartition("-")[0] for d in dirs} & {"_schemas", "docker-connect-configs", "_kafka-connect-configs"}
    before = {d: latest_values(d) for d in dirs}
    assert sum(len(v) for v in before.values()) > 0
    result = tmp_path / "r.json"
    assert maintain.main(_common(log_dir, tmp_path, "--result-json", str(result))) == 0
    for dir_path, latest in before.items():
        assert_latest_values_kept(latest, dir_path)
    retained = _rows(tmp_path / "retention-r.json")
    for dir_path in dirs:
        assert retained[dir_path.name]["segments_deleted"] == 0
        assert retained[dir_path.name]["settings"][0]["value"] in ("compact", "compact,delete")
