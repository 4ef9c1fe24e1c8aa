"""Magic-2 batches: Kafka's worked examples byte for byte, round trips, and interop with kafka-python."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from storage_core.errors import CorruptRecordError
from storage_core.records.batch import RecordBatch, build_batch, build_end_txn_marker
from storage_core.records.compression import CompressionType
from storage_core.records.control import ControlRecordType, EndTxnMarker, parse_control_key
from storage_core.records.crc import crc32c
from storage_core.records.record import Record, TimestampType

T = 1_700_000_000_000
EXAMPLE_49 = (
    "00000000000000000000004200000000025f81e50e0000000000000000018bcfe568000000018bcfe56800"
    "ffffffffffffffffffffffffffff0000000120000000086b6579310c76616c75653100"
)


def test_worked_example_4_9_one_record() -> None:
    data = build_batch([Record(0, T, b"key1", b"value1")], base_offset=0, partition_leader_epoch=0)
    assert data.hex() == EXAMPLE_49
    batch = RecordBatch(data)
    assert batch.crc == 1602348302
    assert batch.is_valid()
    assert batch.records() == [Record(0, T, b"key1", b"value1")]


def test_worked_example_4_9_two_records_header_null_value() -> None:
    records = [Record(100, T, b"key1", b"value1"), Record(101, T + 5, b"k2", None, (("h1", b"v"),))]
    data = build_batch(records, base_offset=100, partition_leader_epoch=3)
    assert data.hex() == (
        "00000000000000640000005000000003024c38ff0e0000000000010000018bcfe568000000018bcfe56805ff"
        "ffffffffffffffffffffffffff0000000220000000086b6579310c76616c756531001a000a02046b3201020468310276"
    )
    assert RecordBatch(data).records() == records


def test_worked_example_4_10_commit_marker() -> None:
    data = build_end_txn_marker(
        offset=10,
        producer_id=1000,
        producer_epoch=0,
        commit=True,
        coordinator_epoch=5,
        timestamp=T,
        partition_leader_epoch=0,
    )
    assert len(data) == 78
    batch = RecordBatch(data)
    assert batch.crc == 4236554292
    assert (batch.attributes, batch.is_control, batch.is_transactional) == (0x30, True, True)
    record = batch.records()[0]
    assert parse_control_key(record.key) == ControlRecordType.COMMIT
    assert EndTxnMarker.decode(record.value) == EndTxnMarker(coordinator_epoch=5)


def test_worked_example_4_10_lz4_and_snappy() -> None:
    record = [Record(0, T, b"key1", b"value1")]
    lz4 = build_batch(record, base_offset=0, partition_leader_epoch=0, compression=CompressionType.LZ4)
    assert lz4.hex() == (
        "0000000000000000000000510000000002a449117a0003000000000000018bcfe568000000018bcfe56800ffffff"
        "ffffffffffffffffffffff0000000104224d186040821100008020000000086b6579310c76616c7565310000000000"
    )
    snappy = build_batch(record, base_offset=0, partition_leader_epoch=0, compression=CompressionType.SNAPPY)
    assert (len(snappy), RecordBatch(snappy).crc) == (100, 363325366)
    assert RecordBatch(snappy).records() == record


def test_crc_does_not_cover_leader_epoch_but_covers_attributes() -> None:
    data = bytearray(bytes.fromhex(EXAMPLE_49))
    data[12:16] = b"\xff\xff\xff\xff"
    assert RecordBatch(bytes(data)).is_valid()
    data[22] ^= 0x08
    with pytest.raises(CorruptRecordError) as error:
        RecordBatch(bytes(data)).ensure_valid()
    assert error.value.position == 0


def test_empty_batch_keeps_offsets_and_sequence() -> None:
    data = build_batch(
        [], base_offset=50, last_offset_delta=9, producer_id=7, producer_epoch=1, base_sequence=3, max_timestamp=T
    )
    batch = RecordBatch(data)
    assert (len(data), batch.records_count, batch.last_offset, batch.last_sequence) == (61, 0, 59, 12)
    assert (batch.base_timestamp, batch.max_timestamp, batch.records()) == (-1, T, [])


def test_delete_horizon_and_log_append_time() -> None:
    records = [Record(0, T, b"k", None), Record(3, T + 9, b"k2", b"v")]
    data = build_batch(records, base_offset=0, delete_horizon_ms=T + 1000, log_append_time_ms=T + 50)
    batch = RecordBatch(data)
    assert batch.delete_horizon_ms == T + 1000
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in batch.records()] == [T + 50, T + 50]


def test_record_length_mismatch_is_corrupt() -> None:
    data = bytearray(bytes.fromhex(EXAMPLE_49))
    data[61] = 0x1E  # record length 15 instead of 16
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    with pytest.raises(CorruptRecordError):
        RecordBatch(bytes(data)).records()


headers = st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))), max_size=3)
records_strategy = st.lists(
    st.tuples(
        st.integers(0, 50),
        st.integers(0, 10**6),
        st.one_of(st.none(), st.binary(max_size=30)),
        st.one_of(st.none(), st.binary(max_size=200)),
        headers,
    ),
    min_size=1,
    max_size=20,
)


@settings(max_examples=150, deadline=None)
@given(
    records_strategy,
    st.sampled_from(list(CompressionType)),
    st.integers(-1, 2**40),
    st.sampled_from([(-1, -1, -1), (17, 2, 0), (9, 0, 2**31 - 3)]),
    st.booleans(),
)
def test_batch_round_trip(raw, compression, base_offset_seed, producer, transactional) -> None:
    base = max(base_offset_seed, 0)
    offset, records = base, []
    for gap, ts, key, value, hdrs in raw:
        offset += gap
        records.append(Record(offset, T + ts, key, value, tuple(hdrs)))
    pid, epoch, seq = producer
    data = build_batch(
        records,
        base_offset=base,
        compression=compression,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=transactional,
    )
    batch = RecordBatch(data)
    assert batch.is_valid()
    decoded = batch.records()
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded] == [
        (r.offset, r.timestamp, r.key, r.value, r.headers) for r in records
    ]
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == producer
    assert batch.is_transactional is transactional


# -- interop with kafka-python (an independent implementation) ----------------------------------

CODECS = list(CompressionType)


def _peer_batch(compression: CompressionType, *, base_offset: int, pid=-1, epoch=-1, seq=-1, txn=False) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=int(compression),
        is_transactional=int(txn),
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        batch_size=1 << 30,
    )
    for i in range(25):
        key = None if i % 5 == 0 else b"key-%d" % i
        value = None if i % 7 == 3 else (b"payload %d " % i) * 20
        hdrs = [("trace", b"%08x" % i), ("empty", None)] if i % 3 == 0 else []
        builder.append(i, timestamp=T + i, key=key, value=value, headers=hdrs)
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, base_offset)
    struct.pack_into(">i", data, 12, 4)
    return bytes(data)


@pytest.mark.parametrize("compression", CODECS, ids=[c.kafka_name for c in CODECS])
@pytest.mark.parametrize("producer", [(-1, -1, -1, False), (42, 0, 10, False), (1000, 3, 0, True)])
def test_kafka_python_batches_read_identically(compression, producer) -> None:
    pid, epoch, seq, txn = producer
    data = _peer_batch(compression, base_offset=500, pid=pid, epoch=epoch, seq=seq, txn=txn)
    peer = MemoryRecords(data).next_batch()
    assert peer.validate_crc()
    peer_records = list(peer)
    batch = RecordBatch(data)
    assert batch.is_valid()
    assert (batch.base_offset, batch.last_offset, batch.crc, batch.producer_id, batch.producer_epoch) == (
        peer.base_offset,
        peer.base_offset + peer.last_offset_delta,
        peer.crc,
        peer.producer_id,
        peer.producer_epoch,
    )
    assert (batch.base_sequence, batch.is_transactional, batch.compression) == (
        peer.base_sequence,
        bool(peer.is_transactional),
        compression,
    )
    assert batch.partition_leader_epoch == 4
    ours = batch.records()
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in ours] == [
        (r.offset, r.timestamp, r.key, r.value, [(k, v) for k, v in r.headers]) for r in peer_records
    ]
    assert [r.sequence for r in ours] == [-1 if seq < 0 else seq + i for i in range(25)]


@pytest.mark.parametrize("compression", CODECS, ids=[c.kafka_name for c in CODECS])
def test_our_batches_are_read_by_kafka_python(compression) -> None:
    records = [
        Record(
            1000 + 2 * i,
            T + i,
            None if i % 4 == 0 else b"k%d" % i,
            None if i % 6 == 1 else b"v" * (i * 10),
            (("h", b"x"),) if i % 2 else (),
        )
        for i in range(30)
    ]
    stream = b"".join(
        [
            build_batch(
                records,
                base_offset=1000,
                compression=compression,
                producer_id=77,
                producer_epoch=2,
                base_sequence=5,
                partition_leader_epoch=9,
            ),
            build_batch([], base_offset=1059, last_offset_delta=3, max_timestamp=T),
            build_batch(records[:2], base_offset=1000, compression=compression, delete_horizon_ms=T + 1),
            build_end_txn_marker(
                offset=1063, producer_id=77, producer_epoch=2, commit=False, coordinator_epoch=1, timestamp=T
            ),
        ]
    )
    memory = MemoryRecords(stream)
    peer = memory.next_batch()
    assert peer.validate_crc()
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in peer] == [
        (r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in records
    ]
    empty = memory.next_batch()
    assert empty.validate_crc()
    assert list(empty) == []
    horizon = memory.next_batch()
    assert horizon.validate_crc()
    marker = memory.next_batch()
    assert marker.validate_crc()
    assert marker.is_control_batch
    assert next(iter(marker)).type == 0  # ABORT
    assert memory.next_batch() is None
