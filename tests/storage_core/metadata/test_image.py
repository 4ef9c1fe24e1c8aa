"""Replaying built metadata logs and snapshots into the image, as Kafka's metadata loader does."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from storage_core import names
from storage_core.errors import MetadataLogError, UnknownMessageTypeError
from storage_core.messages.schemas import metadata_cluster as cluster
from storage_core.messages.schemas import metadata_topics as topics
from storage_core.messages.wire import encode_unsigned_varint
from storage_core.metadata import PartitionImage, find_metadata_log_dir, load_metadata_image
from storage_core.records.batch import Record, build_batch
from tests.builders.metadata_log import BROKER, T0, TOPIC, MetadataLogBuilder


@pytest.fixture
def meta(tmp_path: Path) -> MetadataLogBuilder:
    return MetadataLogBuilder(tmp_path / "logs")


def test_topics_partitions_configs_brokers_and_features(meta: MetadataLogBuilder) -> None:
    meta.feature("metadata.version", 25).feature("group.version", 1)
    log_dir_id = meta.broker(1, rack="r1")
    meta.broker(2)
    orders = meta.topic("orders", partitions=3, replicas=(1, 2), configs={"cleanup.policy": "compact"})
    meta.topic("clicks", configs={"retention.ms": "1000"})
    meta.config(BROKER, "", "log.retention.ms", "5000")
    meta.config(BROKER, "2", "log.cleaner.threads", "2")
    meta.write_segment()
    image = load_metadata_image(meta.dir)

    assert set(image.topics) == {"orders", "clicks"}
    topic = image.topics["orders"]
    assert topic.topic_id == orders
    assert image.topic_by_id(orders) is topic
    assert image.topic_by_id("AAAAAAAAAAAAAAAAAAAAAQ") is None
    assert list(topic.partitions) == [0, 1, 2]
    partition = topic.partitions[1]
    assert (partition.replicas, partition.isr, partition.leader, partition.leader_epoch, partition.partition_epoch) == (
        (1, 2),
        (1, 2),
        1,
        0,
        0,
    )
    assert dict(image.topic_configs) == {"orders": {"cleanup.policy": "compact"}, "clicks": {"retention.ms": "1000"}}
    assert dict(image.cluster_broker_config) == {"log.retention.ms": "5000"}
    assert dict(image.broker_configs) == {2: {"log.cleaner.threads": "2"}}
    assert dict(image.features) == {"metadata.version": 25, "group.version": 1}
    broker = image.brokers[1]
    assert (broker.broker_id, broker.fenced, broker.rack, broker.log_dirs) == (1, False, "r1", (log_dir_id,))
    assert broker.endpoints[0].port == 9092
    assert image.last_offset == meta.next_offset - 1
    assert "no snapshot" in image.source
    assert f"log offsets 0..{meta.next_offset - 1}" in image.source


def test_changes_removals_and_config_deletes(meta: MetadataLogBuilder) -> None:
    meta.broker(1, epoch=7)
    meta.broker(2, epoch=8)
    orders = meta.topic("orders", replicas=(1, 2), configs={"cleanup.policy": "compact", "retention.ms": "9"})
    gone = meta.topic("gone", configs={"retention.ms": "1"})
    meta.add(topics.PARTITION_CHANGE_RECORD, PartitionId=0, TopicId=orders, Isr=(2,))
    meta.add(topics.PARTITION_CHANGE_RECORD, PartitionId=0, TopicId=orders, Leader=2)
    meta.add(topics.PARTITION_CHANGE_RECORD, PartitionId=0, TopicId=orders, Replicas=(2, 3), Isr=(2, 3))
    meta.config(TOPIC, "orders", "retention.ms", None)
    meta.add(topics.REMOVE_TOPIC_RECORD, TopicId=gone)
    meta.add(cluster.FENCE_BROKER_RECORD, Id=1, Epoch=7)
    meta.add(cluster.BROKER_REGISTRATION_CHANGE_RECORD, BrokerId=2, BrokerEpoch=8, InControlledShutdown=1)
    meta.add(cluster.UNREGISTER_BROKER_RECORD, BrokerId=5, BrokerEpoch=1)
    meta.feature("group.version", 1).feature("group.version", 0)
    meta.write_segment()
    image = load_metadata_image(meta.dir)

    assert image.topics["orders"].partitions[0] == PartitionImage(
        partition=0,
        replicas=(2, 3),
        isr=(2, 3),
        leader=2,
        leader_epoch=1,  # one leader change
        partition_epoch=3,  # three changes
        directories=image.topics["orders"].partitions[0].directories,
    )
    assert "gone" not in image.topics
    assert image.topic_by_id(gone) is None
    assert dict(image.topic_configs) == {"orders": {"cleanup.policy": "compact"}}
    assert image.brokers[1].fenced
    assert image.brokers[2].in_controlled_shutdown
    assert not image.brokers[2].fenced
    assert "group.version" not in image.features


def test_snapshot_then_the_log_after_it(meta: MetadataLogBuilder) -> None:
    meta.topic("old-only")  # in the first segment but not in the snapshot: below its end offset, never read
    meta.write_segment()
    end = meta.next_offset
    snapshot_entries = list(meta.entries)
    meta.entries.clear()
    meta.written = 0
    orders = meta.topic("orders", configs={"cleanup.policy": "compact"})
    meta.write_snapshot(end_offset=end, epoch=1, entries=list(meta.entries))
    meta.config(TOPIC, "orders", "cleanup.policy", "delete")
    meta.written = len(meta.entries) - 1  # the next segment holds only the config change
    segment = meta.write_segment(leader_change=False)
    assert snapshot_entries
    image = load_metadata_image(meta.dir)
    assert set(image.topics) == {"orders"}
    assert image.topics["orders"].topic_id == orders
    assert dict(image.topic_configs["orders"]) == {"cleanup.policy": "delete"}
    assert image.last_offset == end
    assert f"snapshot {names.kraft_snapshot_file(meta.dir, end, 1).name}" in image.source
    assert f"log offsets {end}..{end}" in image.source
    assert segment.exists()


def test_an_unfinished_newest_snapshot_falls_back_to_an_older_one(meta: MetadataLogBuilder) -> None:
    meta.topic("a")
    meta.write_segment()
    meta.write_snapshot(end_offset=meta.next_offset, epoch=1)
    meta.topic("b")
    meta.write_segment(leader_change=False)
    meta.write_snapshot(end_offset=meta.next_offset, epoch=1, footer=False)
    image = load_metadata_image(meta.dir)
    assert set(image.topics) == {"a", "b"}  # the older snapshot plus the log after it
    assert "does not end with a SnapshotFooter" in image.source


def test_no_usable_snapshot_and_a_log_not_from_zero_is_refused(meta: MetadataLogBuilder) -> None:
    meta.topic("a")
    meta.next_offset = 100
    meta.write_segment()
    meta.write_snapshot(end_offset=50, epoch=1)  # a gap between offset 50 and the log at 100
    with pytest.raises(MetadataLogError, match="starts at offset 100") as info:
        load_metadata_image(meta.dir)
    assert info.value.path == meta.dir
    assert "log starts after it" in str(info.value)


def test_metadata_transactions_commit_abort_and_stay_open(meta: MetadataLogBuilder) -> None:
    meta.add(cluster.BEGIN_TRANSACTION_RECORD, Name="create")
    meta.topic("committed")
    meta.add(cluster.END_TRANSACTION_RECORD)
    meta.add(cluster.BEGIN_TRANSACTION_RECORD)
    meta.topic("aborted")
    meta.add(cluster.ABORT_TRANSACTION_RECORD, Reason="controller failover")
    meta.topic("plain")
    begin = meta.next_offset + 1 + len(meta.entries)  # the leader change batch comes first
    meta.add(cluster.BEGIN_TRANSACTION_RECORD)
    meta.topic("open")
    meta.write_segment(records_per_batch=2)
    image = load_metadata_image(meta.dir)
    assert set(image.topics) == {"committed", "plain"}
    assert image.last_offset == begin - 1
    assert f"transaction open since offset {begin}" in image.source


def test_transaction_records_out_of_order_are_refused(meta: MetadataLogBuilder) -> None:
    meta.add(cluster.END_TRANSACTION_RECORD)
    meta.write_segment()
    with pytest.raises(MetadataLogError, match="EndTransactionRecord without a BeginTransactionRecord"):
        load_metadata_image(meta.dir)


@pytest.mark.parametrize(
    ("spec", "fields", "problem"),
    [
        (topics.PARTITION_RECORD, {"TopicId": "AAAAAAAAAAAAAAAAAAAAAQ"}, "unknown topic id"),
        (topics.REMOVE_TOPIC_RECORD, {"TopicId": "AAAAAAAAAAAAAAAAAAAAAQ"}, "unknown topic id"),
        (cluster.FENCE_BROKER_RECORD, {"Id": 9, "Epoch": 1}, "unknown broker 9"),
    ],
)
def test_records_that_contradict_the_image_are_refused(
    meta: MetadataLogBuilder, spec: object, fields: dict[str, object], problem: str
) -> None:
    meta.add(spec, **fields)  # type: ignore[arg-type]
    meta.write_segment()
    with pytest.raises(MetadataLogError, match=problem):
        load_metadata_image(meta.dir)


def test_an_unknown_record_type_is_an_error_naming_it_and_its_offset(meta: MetadataLogBuilder) -> None:
    meta.topic("a")
    path = meta.write_segment(leader_change=False)
    bogus = encode_unsigned_varint(1) + encode_unsigned_varint(99) + encode_unsigned_varint(0) + b"\x00"
    offset = meta.next_offset
    with path.open("ab") as f:
        f.write(build_batch([Record(offset, T0, None, bogus)], base_offset=offset))
    with pytest.raises(UnknownMessageTypeError) as info:
        load_metadata_image(meta.dir)
    assert (info.value.type_id, info.value.version) == (99, 0)
    assert f"offset {offset}" in " ".join(info.value.__notes__)


def test_replay_stops_at_a_batch_failing_its_crc_as_recovery_truncates_there(meta: MetadataLogBuilder) -> None:
    meta.topic("kept")
    path = meta.write_segment(leader_change=False)
    good = path.stat().st_size
    meta.topic("after-corruption")
    meta.write_segment(leader_change=False)
    second = names.log_file(meta.dir, meta.next_offset - 2)  # the second segment: base offset = its first record
    assert second.exists()
    data = bytearray(second.read_bytes())
    data[-1] ^= 0xFF
    second.write_bytes(bytes(data))
    image = load_metadata_image(meta.dir)
    assert set(image.topics) == {"kept"}
    assert "failing its CRC" in image.source
    assert good > 0


def test_high_watermark_caps_the_replay(meta: MetadataLogBuilder) -> None:
    meta.topic("a")
    cap = len(meta.entries)
    meta.topic("b")
    meta.write_segment(leader_change=False, records_per_batch=1)
    image = load_metadata_image(meta.dir, high_watermark=cap)
    assert set(image.topics) == {"a"}
    assert image.last_offset == cap - 1


def test_loading_changes_nothing_on_disk(meta: MetadataLogBuilder) -> None:
    meta.topic("a")
    meta.write_segment()
    meta.write_snapshot(end_offset=meta.next_offset, epoch=1)

    def state() -> dict[str, tuple[str, int]]:
        return {
            p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(meta.dir.iterdir())
        }

    before = state()
    load_metadata_image(meta.dir)
    assert state() == before


def test_find_metadata_log_dir(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    (second / "__cluster_metadata-0").mkdir(parents=True)
    assert find_metadata_log_dir([first, second]) == second / "__cluster_metadata-0"
    assert find_metadata_log_dir([first]) is None
