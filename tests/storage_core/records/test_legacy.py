"""Legacy v0/v1 messages: Kafka's worked examples, and interop with kafka-python's legacy records."""

from __future__ import annotations

import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from storage_core.records.compression import CompressionType
from storage_core.records.file_records import iterate_batches
from storage_core.records.legacy import LegacyBatch, build_legacy_messages
from storage_core.records.record import Record, TimestampType

T = 1_700_000_000_000


def test_worked_examples_5_5() -> None:
    v1 = build_legacy_messages([Record(0, T, b"key1", b"value1")], magic=1)
    assert v1.hex() == "0000000000000000000000203052e67001000000018bcfe56800000000046b6579310000000676616c756531"
    v0 = build_legacy_messages([Record(0, -1, b"key1", b"value1")], magic=0)
    assert v0.hex() == "00000000000000000000001875f0f41d0000000000046b6579310000000676616c756531"
    assert LegacyBatch(v1).crc == 810739312
    assert LegacyBatch(v0).crc == 1978725405
    assert LegacyBatch(v0).timestamp_type is TimestampType.NO_TIMESTAMP_TYPE


LEGACY_CODECS = [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("compression", LEGACY_CODECS, ids=[c.kafka_name for c in LEGACY_CODECS])
def test_kafka_python_legacy_messages_read_identically(magic: int, compression: CompressionType) -> None:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=int(compression), batch_size=1 << 30)
    for i in range(6):
        inner = 100 + i if (magic == 0 and compression is not CompressionType.NONE) else i
        builder.append(inner, timestamp=T + i if magic else None, key=b"k%d" % i, value=b"value %d" % i * 10)
    data = bytes(builder.build())
    memory = MemoryRecords(data)
    peer = [r for batch in iter(memory.next_batch, None) for r in batch]
    ours = [r for batch in iterate_batches(data) for r in batch.records()]
    assert all(batch.is_valid() for batch in iterate_batches(data))
    assert [(r.key, r.value) for r in ours] == [(r.key, r.value) for r in peer]
    if magic == 1:
        assert [r.timestamp for r in ours] == [T + i for i in range(6)]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("compression", LEGACY_CODECS, ids=[c.kafka_name for c in LEGACY_CODECS])
def test_our_legacy_messages_are_read_by_kafka_python(magic: int, compression: CompressionType) -> None:
    records = [Record(40 + i, T + i if magic else -1, b"k%d" % i, b"v" * (20 + i)) for i in range(5)]
    data = build_legacy_messages(records, magic=magic, compression=compression)
    memory = MemoryRecords(data)
    peer = []
    while (batch := memory.next_batch()) is not None:
        assert batch.validate_crc()
        peer += list(batch)
    assert [(r.offset, r.key, r.value) for r in peer] == [(r.offset, r.key, r.value) for r in records]
    ours = [r for batch in iterate_batches(data) for r in batch.records()]
    assert [(r.offset, r.timestamp, r.key, r.value) for r in ours] == [
        (r.offset, r.timestamp, r.key, r.value) for r in records
    ]
