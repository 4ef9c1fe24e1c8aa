"""The metadata partition of a topic partition, against Kafka 4.4.0's `RemoteLogMetadataTopicPartitioner`.

The table was printed by Kafka 4.4.0 (`new RemoteLogMetadataTopicPartitioner(n).metadataPartition(
new TopicIdPartition(Uuid.fromString(id), new TopicPartition("t", p)))`) for 50 and 7 partitions.
"""

from __future__ import annotations

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from storage_core.tiered.partitioner import metadata_partition, murmur2

KAFKA = [
    ("4L6g3nShT-eMCtK--X86sw", 0, 21, 4),
    ("4L6g3nShT-eMCtK--X86sw", 1, 9, 2),
    ("4L6g3nShT-eMCtK--X86sw", 17, 36, 4),
    ("4L6g3nShT-eMCtK--X86sw", 2147483647, 21, 5),
    ("AAAAAAAAAAAAAAAAAAAAAQ", 0, 35, 0),
    ("AAAAAAAAAAAAAAAAAAAAAQ", 17, 22, 6),
    ("AAAAAAAAAAAAAAAAAAAAAQ", 2147483647, 45, 6),
    ("_____________________w", 1, 30, 2),
    ("_____________________w", 17, 1, 2),
    ("Zm9vYmFyYmF6cXV4cXV1eA", 0, 32, 4),
    ("Zm9vYmFyYmF6cXV4cXV1eA", 2147483647, 34, 6),
]


@pytest.mark.parametrize(("topic_id", "partition", "of_50", "of_7"), KAFKA)
def test_the_metadata_partition_is_kafkas(topic_id: str, partition: int, of_50: int, of_7: int) -> None:
    assert metadata_partition(topic_id, partition, 50) == of_50
    assert metadata_partition(topic_id, partition, 7) == of_7


@pytest.mark.parametrize("data", [b"", b"a", b"ab", b"abc", b"abcd", b"\xff\x00\x80\x7f\x01", bytes(range(37))])
def test_murmur2_is_kafka_pythons(data: bytes) -> None:
    assert murmur2(data) == kafka_python_murmur2(data)
