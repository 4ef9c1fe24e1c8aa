"""The metadata image of every KRaft log dir of ../shared/realdata against the partition dirs beside it.

Every partition dir there belongs to a topic of the image, with the topic id its `partition.metadata`
holds, a partition the image knows, and this broker (meta.properties' node.id) among its replicas.
The other way round, the image names more partitions of this broker than there are dirs: the
realdata extraction kept only some partition dirs of each broker (the MANIFEST lists the files it
kept, e.g. "Only oms_order_created-0/-1 of the 5 big partitions were kept"), and none of the
missing ones has a single file in the MANIFEST. No dir is stray: no topic id differs, no dir is
of a deleted topic.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from storage_core import names
from storage_core.meta_properties import read_meta_properties
from storage_core.metadata import find_metadata_log_dir, load_metadata_image
from storage_core.partition_metadata import read_partition_metadata
from tests.realdata.manifest import REALDATA, manifest_rows

KRAFT_LOG_DIRS = sorted(path.parent for path in REALDATA.rglob("__cluster_metadata-0"))


def test_the_realdata_kraft_log_dirs_are_found() -> None:
    assert len(KRAFT_LOG_DIRS) >= 12


@pytest.mark.parametrize("log_dir", KRAFT_LOG_DIRS, ids=lambda p: str(p.relative_to(REALDATA)))
def test_image_matches_the_partition_dirs_and_their_topic_ids(log_dir: Path) -> None:
    metadata_dir = find_metadata_log_dir([log_dir])
    assert metadata_dir is not None
    image = load_metadata_image(metadata_dir)
    assert image.last_offset >= 0
    assert "skipped" not in image.source, image.source
    assert "stopped" not in image.source, image.source
    assert image.features["metadata.version"] > 0
    node_id = read_meta_properties(log_dir / names.META_PROPERTIES).node_id

    dirs = {}
    for child in log_dir.iterdir():
        if child.is_dir() and names.is_partition_dir_candidate(child.name):
            parsed = names.parse_partition_dir_name(child.name)
            assert parsed.kind is names.DirKind.LIVE, child
            dirs[str(parsed.topic_partition)] = (parsed.topic_partition, child)
    for topic_partition, path in dirs.values():
        topic = image.topics.get(topic_partition.topic)
        assert topic is not None, f"{path.name}: topic not in the image"
        assert read_partition_metadata(path / names.PARTITION_METADATA).topic_id == topic.topic_id
        assert image.topic_by_id(topic.topic_id) is topic
        assert node_id in topic.partitions[topic_partition.partition].replicas

    kept = {row.path.parent.name for row in manifest_rows() if row.path.parent.parent == log_dir}
    hosted_here = {
        f"{topic.name}-{partition.partition}"
        for topic in image.topics.values()
        for partition in topic.partitions.values()
        if node_id in partition.replicas
    }
    assert set(dirs) <= hosted_here
    assert not dirs or node_id in image.brokers
    assert not (hosted_here - set(dirs)) & kept  # every missing dir is one the extraction did not keep


def test_configs_of_real_clusters() -> None:
    confluent = load_metadata_image(
        REALDATA / "Danielowo2000__BigDataTechnologies-Version-2/kafka_data/__cluster_metadata-0"
    )
    assert confluent.topic_configs["_schemas"]["cleanup.policy"] == "compact"
    assert confluent.topic_configs["__consumer_offsets"]["cleanup.policy"] == "compact"
    streams = load_metadata_image(REALDATA / "Yashasvi960__kafka-service/kafka-data/__cluster_metadata-0")
    changelog = "my-kafka-streams-app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog"
    assert streams.topic_configs[changelog]["cleanup.policy"] == "compact,delete"
    assert dict(streams.cluster_broker_config) == {"min.insync.replicas": "1"}
    assert streams.features["metadata.version"] == 27
