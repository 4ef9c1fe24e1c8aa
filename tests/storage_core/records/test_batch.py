"""Magic-2 batches: the layout, Kafka's worked examples byte for byte, the reader's checks, the builder,
and a builder -> reader property. Interop with kafka-python is in test_batch_interop.py."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_core.errors import CorruptRecordError, UnsupportedFormatError
from storage_core.records.batch import (
    FIELD_POSITION,
    FIELDS,
    HEADER,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    BatchHeader,
    Record,
    RecordBatch,
    TimestampType,
    build_batch,
    build_end_txn_marker,
)
from storage_core.records.compression import CompressionType
from storage_core.records.control import ControlRecordType, EndTxnMarker, encode_control_key
from storage_core.records.crc import crc32c

T = 1_700_000_000_000
ONE_RECORD = [Record(0, T, b"key1", b"value1")]
RECORD_17 = "20000000086b6579310c76616c75653100"  # the §4.9 record
EXAMPLE_4_9 = (
    "0000000000000000"
    "00000042"
    "00000000"
    "02"
    "5f81e50e"
    "0000"
    "00000000"
    "0000018bcfe56800"
    "0000018bcfe56800"
    "ffffffffffffffff"
    "ffff"
    "ffffffff"
    "00000001" + RECORD_17
)
EXAMPLE_4_9_TWO_RECORDS = (
    "00000000000000640000005000000003024c38ff0e0000000000010000018bcfe568000000018bcfe56805ffffffffffffffffffffffffffff"
    "0000000220000000086b6579310c76616c756531001a000a02046b3201020468310276"
)
EXAMPLE_4_10_COMMIT = "".join(  # the hexdump of kafka-format.md §4.10, offsets stripped
    line.split(maxsplit=1)[1].replace(" ", "")
    for line in """
    0000  00 00 00 00 00 00 00 0a 00 00 00 42 00 00 00 00
    0010  02 fc 84 b0 34 00 30 00 00 00 00 00 00 01 8b cf
    0020  e5 68 00 00 00 01 8b cf e5 68 00 00 00 00 00 00
    0030  00 03 e8 00 00 ff ff ff ff 00 00 00 01 20 00 00
    0040  00 08 00 00 00 01 0c 00 00 00 00 00 05 00
    """.strip().splitlines()
)
EXAMPLE_4_10_LZ4 = (
    "0000000000000000000000510000000002a449117a0003000000000000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff"
    "0000000104224d186040821100008020000000086b6579310c76616c7565310000000000"
)
# §4.10 snappy: header as §4.9 with length 88, crc 0x15A7E7B6, attributes 2; then the xerial stream.
EXAMPLE_4_10_SNAPPY = (
    "0000000000000000"
    "00000058"
    "00000000"
    "02"
    "15a7e7b6"
    "0002"
    "00000000"
    "0000018bcfe56800"
    "0000018bcfe56800"
    "ffffffffffffffff"
    "ffff"
    "ffffffff"
    "00000001"
    "82534e4150505900"
    "00000001"
    "00000001"
    "00000013"
    "1140" + RECORD_17
)


# -- layout --------------------------------------------------------------------------------------


def test_header_layout_is_kafkas() -> None:
    assert (HEADER.size, RECORD_BATCH_OVERHEAD, LOG_OVERHEAD) == (61, 61, 12)
    assert BatchHeader._fields == tuple(name for name, _ in FIELDS)
    assert list(FIELD_POSITION.values()) == [0, 8, 12, 16, 17, 21, 23, 27, 35, 43, 51, 53, 57]


# -- worked examples (kafka-format.md §4.9, §4.10) -------------------------------------------------


def test_worked_example_4_9_one_record() -> None:
    data = build_batch(ONE_RECORD, base_offset=0, partition_leader_epoch=0)
    assert data.hex() == EXAMPLE_4_9
    batch = RecordBatch(data)
    assert batch.header == BatchHeader(0, 66, 0, 2, 1602348302, 0, 0, T, T, -1, -1, -1, 1)
    assert batch.is_valid()
    assert batch.records() == ONE_RECORD


def test_worked_example_4_9_two_records_header_null_value() -> None:
    records = [Record(100, T, b"key1", b"value1"), Record(101, T + 5, b"k2", None, (("h1", b"v"),))]
    data = build_batch(records, base_offset=100, partition_leader_epoch=3)
    assert data.hex() == EXAMPLE_4_9_TWO_RECORDS
    batch = RecordBatch(data)
    assert (batch.crc, batch.size_in_bytes, batch.last_offset) == (1278803726, 92, 101)
    assert batch.records() == records


def test_worked_example_4_10_commit_marker() -> None:
    data = build_end_txn_marker(
        offset=10, producer_id=1000, producer_epoch=0, commit=True, coordinator_epoch=5, timestamp=T,
        partition_leader_epoch=0,
    )  # fmt: skip
    assert data.hex() == EXAMPLE_4_10_COMMIT
    batch = RecordBatch(data)
    assert (batch.crc, batch.attributes, batch.is_control, batch.is_transactional) == (4236554292, 0x30, True, True)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (1000, 0, -1)
    assert batch.control_type() == ControlRecordType.COMMIT
    assert batch.end_txn_marker() == EndTxnMarker(version=0, coordinator_epoch=5)


@pytest.mark.parametrize(
    ("compression", "expected", "crc"),
    [(CompressionType.LZ4, EXAMPLE_4_10_LZ4, 2756252026), (CompressionType.SNAPPY, EXAMPLE_4_10_SNAPPY, 363325366)],
    ids=["lz4", "snappy"],
)
def test_worked_example_4_10_compressed(compression: CompressionType, expected: str, crc: int) -> None:
    data = build_batch(ONE_RECORD, base_offset=0, partition_leader_epoch=0, compression=compression)
    assert data.hex() == expected
    batch = RecordBatch(data)
    assert (batch.crc, batch.compression, batch.is_valid()) == (crc, compression, True)
    assert batch.records() == ONE_RECORD


# -- reader ------------------------------------------------------------------------------------------


def test_every_header_property() -> None:
    records = [Record(1000, T, b"a", b"1"), Record(1003, T + 7, b"b", None)]
    data = build_batch(
        records, base_offset=1000, compression=CompressionType.GZIP, producer_id=55, producer_epoch=4,
        base_sequence=2**31 - 2, is_transactional=True, partition_leader_epoch=9, delete_horizon_ms=T + 50,
        log_append_time_ms=T + 80, last_offset_delta=5,
    )  # fmt: skip
    batch = RecordBatch(b"junk" + data + b"more", 4)
    assert (batch.position, batch.size_in_bytes, bytes(batch.raw)) == (4, len(data), data)
    assert (batch.base_offset, batch.last_offset, batch.next_offset, batch.records_count) == (1000, 1005, 1006, 2)
    assert (batch.magic, batch.compression, batch.timestamp_type) == (
        2,
        CompressionType.GZIP,
        TimestampType.LOG_APPEND_TIME,
    )
    assert (batch.is_transactional, batch.is_control, batch.has_delete_horizon) == (True, False, True)
    assert (batch.delete_horizon_ms, batch.base_timestamp, batch.max_timestamp) == (T + 50, T + 50, T + 80)
    assert (batch.producer_id, batch.producer_epoch, batch.partition_leader_epoch) == (55, 4, 9)
    assert (batch.base_sequence, batch.last_sequence) == (2**31 - 2, 3)  # wraps past int32 max
    assert batch.attributes == 0x01 | 0x08 | 0x10 | 0x40
    assert batch.crc == batch.compute_crc() == crc32c(data[21:])
    assert [(r.offset, r.timestamp, r.sequence) for r in batch.records()] == [
        (1000, T + 80, 2**31 - 2),
        (1003, T + 80, 1),
    ]
    assert (batch.control_type(), batch.end_txn_marker()) == (None, None)


def test_delete_horizon_makes_timestamps_relative_to_it() -> None:
    records = [Record(0, T, b"k", None), Record(1, T + 9, b"k2", b"v")]
    batch = RecordBatch(build_batch(records, base_offset=0, delete_horizon_ms=T + 1000))
    assert (batch.delete_horizon_ms, batch.timestamp_type, batch.records()) == (
        T + 1000,
        TimestampType.CREATE_TIME,
        records,
    )


def test_crc_excludes_the_leader_epoch_but_covers_the_attributes() -> None:
    data = bytearray(bytes.fromhex(EXAMPLE_4_9))
    data[12:16] = b"\xff\xff\xff\xff"
    assert RecordBatch(bytes(data)).is_valid()
    data[22] ^= 0x08
    buffer = bytes(100) + bytes(data)
    assert not RecordBatch(buffer, 100).is_valid()
    with pytest.raises(CorruptRecordError) as error:
        RecordBatch(buffer, 100).ensure_valid()
    assert error.value.position == 100


@pytest.mark.parametrize(
    ("data", "position"),
    [
        (bytes.fromhex(EXAMPLE_4_9)[:60], 0),  # fewer than 61 bytes left
        (bytes.fromhex(EXAMPLE_4_9)[:-1], 0),  # runs past the buffer
        (struct.pack(">qi", 0, 48) + bytes(80), 0),  # a 60-byte batch
        (bytes(20) + bytes.fromhex(EXAMPLE_4_9)[:-3], 20),
    ],
    ids=["short-buffer", "torn", "below-overhead", "torn-at-position"],
)
def test_a_batch_view_needs_a_whole_batch(data: bytes, position: int) -> None:
    with pytest.raises(CorruptRecordError) as error:
        RecordBatch(data, position)
    assert error.value.position == position


def _patched(data: bytes, *, records_section: bytes | None = None, **fields: int) -> bytes:
    """A batch with header fields or the records section replaced, CRC recomputed."""
    header = RecordBatch(data).header._replace(**fields)
    body = data[RECORD_BATCH_OVERHEAD:] if records_section is None else records_section
    out = bytearray(HEADER.pack(*header._replace(batch_length=RECORD_BATCH_OVERHEAD + len(body) - LOG_OVERHEAD)) + body)
    struct.pack_into(">I", out, FIELD_POSITION["crc"], crc32c(bytes(out[FIELD_POSITION["attributes"] :])))
    return bytes(out)


@pytest.mark.parametrize(
    "damage",
    [
        {"records_count": 2},  # premature end
        {"records_count": 0},  # bytes left after the last record
        {"records_count": -1},
        {"records_section": bytes.fromhex("1e" + RECORD_17[2:])},  # record length 15 instead of 16
        {"records_section": bytes.fromhex(RECORD_17 + "00")},  # a trailing byte
        {"records_section": b"\xff" * 40, "attributes": 1},  # not gzip
        {"records_section": b"\xff" * 40, "attributes": 4},  # not zstd
    ],
    ids=["premature-eof", "records-left", "negative-count", "length-mismatch", "trailing-byte", "bad-gzip", "bad-zstd"],
)
def test_records_are_checked_strictly(damage: dict) -> None:
    data = _patched(bytes.fromhex(EXAMPLE_4_9), **damage)
    batch = RecordBatch(bytes(7) + data, 7)
    assert batch.is_valid()  # the CRC is fine: only decoding finds the problem, as in Kafka
    with pytest.raises(CorruptRecordError) as error:
        batch.records()
    assert error.value.position == 7


def test_unknown_codec_id_is_unsupported() -> None:
    batch = RecordBatch(_patched(bytes.fromhex(EXAMPLE_4_9), attributes=6))
    with pytest.raises(UnsupportedFormatError):
        batch.records()


def test_control_batches_of_every_kind() -> None:
    abort = RecordBatch(
        build_end_txn_marker(offset=3, producer_id=7, producer_epoch=1, commit=False, coordinator_epoch=2, timestamp=T)
    )
    assert (abort.control_type(), abort.end_txn_marker()) == (
        ControlRecordType.ABORT,
        EndTxnMarker(coordinator_epoch=2),
    )
    leader_change = RecordBatch(
        build_batch(
            [Record(5, T, encode_control_key(ControlRecordType.LEADER_CHANGE), b"\x00\x00")],
            base_offset=5,
            is_control=True,
        )
    )
    assert (leader_change.control_type(), leader_change.end_txn_marker()) == (ControlRecordType.LEADER_CHANGE, None)
    unknown = RecordBatch(build_batch([Record(0, T, encode_control_key(99), None)], base_offset=0, is_control=True))
    assert (unknown.control_type(), unknown.end_txn_marker()) == (99, None)
    compacted = RecordBatch(build_batch([], base_offset=3, is_control=True, is_transactional=True, max_timestamp=T))
    assert (compacted.control_type(), compacted.end_txn_marker()) == (None, None)


def test_marker_without_a_value_is_corrupt() -> None:
    batch = RecordBatch(build_batch([Record(0, T, encode_control_key(1), None)], base_offset=0, is_control=True))
    with pytest.raises(CorruptRecordError):
        batch.end_txn_marker()


# -- builder -----------------------------------------------------------------------------------------


def test_empty_batch_as_the_cleaner_keeps_it() -> None:
    data = build_batch(
        [], base_offset=50, compression=CompressionType.ZSTD, last_offset_delta=9, producer_id=7, producer_epoch=1,
        base_sequence=3, is_transactional=True, max_timestamp=T,
    )  # fmt: skip
    batch = RecordBatch(data)
    assert len(data) == 61
    assert batch.header == BatchHeader(50, 49, -1, 2, batch.compute_crc(), 0x10, 9, -1, T, 7, 1, 3, 0)
    assert (batch.last_offset, batch.last_sequence, batch.records()) == (59, 12, [])


def test_cleaned_batch_keeps_offsets_and_sequences_of_the_original() -> None:
    kept = [Record(102, T + 2, b"b", b"2", sequence=7), Record(105, T + 5, b"e", b"5", sequence=10)]
    batch = RecordBatch(
        build_batch(kept, base_offset=100, base_sequence=5, producer_id=1, producer_epoch=0, last_offset_delta=9)
    )
    assert (batch.base_offset, batch.last_offset, batch.records_count, batch.base_timestamp) == (100, 109, 2, T + 2)
    assert batch.records() == kept


def test_log_append_time_needs_its_time() -> None:
    data = build_batch(
        ONE_RECORD, base_offset=0, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time_ms=T + 1
    )
    assert [r.timestamp for r in RecordBatch(data).records()] == [T + 1]
    with pytest.raises(ValueError, match="log_append_time_ms"):
        build_batch(ONE_RECORD, base_offset=0, timestamp_type=TimestampType.LOG_APPEND_TIME)


@pytest.mark.parametrize(
    ("records", "options"),
    [
        ([Record(1, T, None, b"a"), Record(1, T, None, b"b")], {"base_offset": 0}),
        ([Record(5, T, None, b"a")], {"base_offset": 6}),
        ([Record(2**31, T, None, b"a")], {"base_offset": 0}),
        ([Record(3, T, None, b"a")], {"base_offset": 0, "last_offset_delta": 2}),
        ([], {"base_offset": 0, "delete_horizon_ms": T}),
        (ONE_RECORD, {"base_offset": 0, "delete_horizon_ms": T, "base_timestamp": T - 1}),
        (ONE_RECORD, {"base_offset": 0, "timestamp_type": TimestampType.NO_TIMESTAMP_TYPE}),
    ],
    ids=["duplicate", "below-base", "delta-overflow", "short-delta", "empty-horizon", "horizon-vs-base", "no-type"],
)
def test_builder_refuses_what_kafka_would_not_write(records: list[Record], options: dict) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - programmer misuse of the builder
        build_batch(records, **options)


# -- property: builder -> reader -----------------------------------------------------------------------

record_fields = st.tuples(
    st.integers(1, 40),  # offset gap
    st.integers(-5000, 10**6),  # timestamp delta
    st.one_of(st.none(), st.binary(max_size=20)),
    st.one_of(st.none(), st.binary(max_size=300)),
    st.lists(st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=8))), max_size=3),
)


@settings(max_examples=120, deadline=None)
@given(
    raw=st.lists(record_fields, max_size=15),
    compression=st.sampled_from(list(CompressionType)),
    base_offset=st.integers(0, 2**50),
    producer=st.sampled_from([(-1, -1, -1), (17, 2, 0), (9, 0, 2**31 - 3)]),
    flags=st.tuples(st.booleans(), st.booleans(), st.integers(-1, 2**31 - 1)),
    timing=st.sampled_from(["create", "log-append", "horizon"]),
    extra_delta=st.integers(0, 3),
)
def test_build_then_read_round_trip(raw, compression, base_offset, producer, flags, timing, extra_delta) -> None:
    transactional, control, leader_epoch = flags
    offset, records = base_offset - 1, []
    for gap, ts, key, value, headers in raw:
        offset += gap
        records.append(Record(offset, T + ts, key, value, tuple(headers)))
    span = records[-1].offset - base_offset if records else 0
    producer_id, producer_epoch, base_sequence = producer
    horizon = T + 10**7 if timing == "horizon" and records else None
    append_time = T + 99 if timing == "log-append" else None
    data = build_batch(
        records, base_offset=base_offset, compression=compression, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence, is_transactional=transactional,
        is_control=control, partition_leader_epoch=leader_epoch, delete_horizon_ms=horizon,
        log_append_time_ms=append_time, last_offset_delta=span + extra_delta, max_timestamp=T - 1,
    )  # fmt: skip
    batch = RecordBatch(data)
    assert batch.is_valid()
    assert batch.size_in_bytes == len(data)
    assert (batch.base_offset, batch.last_offset, batch.records_count) == (
        base_offset,
        base_offset + span + extra_delta,
        len(records),
    )
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == producer
    assert (batch.is_transactional, batch.is_control, batch.partition_leader_epoch) == (
        transactional,
        control,
        leader_epoch,
    )
    assert batch.compression is (compression if records else CompressionType.NONE)
    assert batch.delete_horizon_ms == horizon
    expected_max = append_time if append_time is not None else max((r.timestamp for r in records), default=T - 1)
    assert batch.max_timestamp == expected_max
    sequences = [-1 if base_sequence < 0 else (base_sequence + r.offset - base_offset) % 2**31 for r in records]
    timestamps = [r.timestamp if append_time is None else append_time for r in records]
    expected = [
        Record(r.offset, t, r.key, r.value, r.headers, s)
        for r, t, s in zip(records, timestamps, sequences, strict=True)
    ]
    assert batch.records() == expected
