"""Partition dirs against the cluster's metadata image: LogManager.isStrayKraftReplica and the -stray rename."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage_core import names
from storage_core.fs import FaultInjectingFileSystem, SimulatedCrash
from storage_core.metadata import MetadataImage, PartitionImage, TopicImage
from storage_core.names import DirKind, TopicPartition
from storage_core.partition_metadata import PartitionMetadata, write_partition_metadata
from storage_core.topology import ReplicaTopology, check_replica, rename_stray

ORDERS = "0CM0rYlfQiqSTCH-x54Zhw"
OLD_ORDERS = "LJ-0nObETNu9zQf653GiTA"
UNIQUE = "0123456789abcdef0123456789abcdef"
IMAGE = MetadataImage(
    topics={"orders": TopicImage("orders", ORDERS, {0: PartitionImage(0, (1, 2), (1,), 1, 4, 7)})},
    brokers={},
    topic_configs={},
    cluster_broker_config={},
    broker_configs={},
    features={},
    last_offset=10,
    source="test",
)


def _dir(root: Path, name: str, topic_id: str | None) -> Path:
    path = root / name
    path.mkdir()
    (path / "00000000000000000000.log").write_bytes(b"")
    if topic_id is not None:
        write_partition_metadata(path / names.PARTITION_METADATA, PartitionMetadata(0, topic_id))
    return path


@pytest.mark.parametrize(
    ("name", "topic_id", "node_id", "expected"),
    [
        ("orders-0", ORDERS, 1, ReplicaTopology(ORDERS, ORDERS, True)),
        ("orders-0", ORDERS, None, ReplicaTopology(ORDERS, ORDERS, None)),
        ("orders-0", ORDERS, 3, ReplicaTopology(ORDERS, ORDERS, False, "replicas [1, 2] of orders-0 do not include")),
        ("orders-0", OLD_ORDERS, 1, ReplicaTopology(OLD_ORDERS, ORDERS, None, "deleted and re-created")),
        ("orders-5", ORDERS, 1, ReplicaTopology(ORDERS, ORDERS, None, "has no partition 5")),
        ("gone-0", OLD_ORDERS, 1, ReplicaTopology(OLD_ORDERS, "", None, "topic 'gone' was deleted")),
        ("orders-0", None, 1, ReplicaTopology("", ORDERS, None, "no topic id (partition.metadata missing)")),
    ],
)
def test_stray_as_kafka_decides_it(
    tmp_path: Path, name: str, topic_id: str | None, node_id: int | None, expected: ReplicaTopology
) -> None:
    path = _dir(tmp_path, name, topic_id)
    tp = names.parse_partition_dir_name(name).topic_partition
    got = check_replica(path, tp, image=IMAGE, node_id=node_id)
    assert (got.topic_id, got.cluster_topic_id, got.is_replica_of_this_broker) == (
        expected.topic_id,
        expected.cluster_topic_id,
        expected.is_replica_of_this_broker,
    )
    assert expected.stray_reason in got.stray_reason
    assert got.is_stray == bool(expected.stray_reason)


def test_without_an_image_only_the_topic_id_is_known(tmp_path: Path) -> None:
    path = _dir(tmp_path, "orders-0", ORDERS)
    assert check_replica(path, TopicPartition("orders", 0), image=None, node_id=1) == ReplicaTopology(ORDERS)


def test_an_unreadable_partition_metadata_is_a_problem_not_a_stray(tmp_path: Path) -> None:
    path = _dir(tmp_path, "orders-0", None)
    (path / names.PARTITION_METADATA).write_text("version: 0\ntopic_id: nope")
    got = check_replica(path, TopicPartition("orders", 0), image=IMAGE, node_id=1)
    assert not got.is_stray
    assert got.problem.startswith("unreadable partition.metadata")


def test_rename_stray_names_it_as_kafka(tmp_path: Path) -> None:
    path = _dir(tmp_path, "orders-0", OLD_ORDERS)
    target = rename_stray(path, UNIQUE)
    assert target.name == f"orders-0.{UNIQUE}-stray"
    parsed = names.parse_partition_dir_name(target.name)
    assert (parsed.topic_partition, parsed.kind) == (TopicPartition("orders", 0), DirKind.STRAY)
    assert sorted(p.name for p in target.iterdir()) == ["00000000000000000000.log", "partition.metadata"]
    assert not path.exists()


def test_a_long_topic_is_cut_to_fit_255_characters() -> None:
    name = names.stray_dir_name(TopicPartition("t" * 249, 12), UNIQUE)
    assert len(name) == 255
    assert name.endswith(f"-12.{UNIQUE}-stray")
    assert names.parse_partition_dir_name(name).kind == DirKind.STRAY


@pytest.mark.parametrize("fail_at", [1, 2])
def test_a_crash_leaves_the_old_or_the_new_name(tmp_path: Path, fail_at: int) -> None:
    path = _dir(tmp_path, "orders-0", OLD_ORDERS)
    fs = FaultInjectingFileSystem(fail_at=fail_at)
    with pytest.raises(SimulatedCrash):
        rename_stray(path, UNIQUE, fs=fs)
    left = [p.name for p in tmp_path.iterdir()]
    assert left == (["orders-0"] if fail_at == 1 else [f"orders-0.{UNIQUE}-stray"])
    assert len(list((tmp_path / left[0]).iterdir())) == 2
