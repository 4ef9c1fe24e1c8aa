"""Which `__remote_log_metadata` partition holds a topic partition's events (`RemoteLogMetadataTopicPartitioner`).

`toPositive(murmur2(toBytes(Objects.hash(lsb, msb, partition)))) % numPartitions`, where lsb and msb
are the two longs of the topic id (`Uuid.getLeastSignificantBits`, `getMostSignificantBits`),
`Objects.hash` is Java's `31 * h + hashCode` over them (`Long.hashCode(v)`: `(int) (v ^ (v >>> 32))`),
`toBytes` its big-endian 4 bytes, and `murmur2` Kafka's (`Utils.murmur2`, the producer's default
partitioner hash). The partition count is the topic's (`remote.log.metadata.topic.num.partitions`
when it was created, 50 by default): take it from the cluster's metadata, never assume it.
"""

from __future__ import annotations

from storage_core.partition_metadata import decode_uuid

_MASK32 = 0xFFFFFFFF


def _int32(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2` as an unsigned 32-bit value."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK32
    for i in range(length // 4):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & _MASK32
        k ^= k >> r
        k = (k * m) & _MASK32
        h = ((h * m) & _MASK32) ^ k
    rest = length % 4
    tail = length & ~3
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & _MASK32
    h ^= h >> 13
    h = (h * m) & _MASK32
    h ^= h >> 15
    return h


def _long_hash(value: int) -> int:
    unsigned = value & 0xFFFFFFFFFFFFFFFF
    return _int32(unsigned ^ (unsigned >> 32))


def metadata_partition(topic_id: str, partition: int, partitions: int) -> int:
    """The `__remote_log_metadata` partition of `topic_id` (Kafka Uuid text) partition `partition`.

    Raises:
        ValueError: `partitions` is not positive.
    """
    if partitions < 1:
        raise ValueError("the metadata topic has at least one partition")
    raw = decode_uuid(topic_id)
    msb = int.from_bytes(raw[:8], "big", signed=True)
    lsb = int.from_bytes(raw[8:], "big", signed=True)
    h = 1
    for part in (_long_hash(lsb), _long_hash(msb), _int32(partition)):
        h = _int32(31 * h + part)
    return (murmur2((h & _MASK32).to_bytes(4, "big")) & 0x7FFFFFFF) % partitions
