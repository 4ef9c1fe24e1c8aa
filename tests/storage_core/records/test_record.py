"""The magic-2 record codec (kafka-format.md §4.4): layout, derived fields and Kafka's strict checks."""

from __future__ import annotations

import pytest

from storage_core.errors import CorruptRecordError
from storage_core.records.record import (
    Record,
    TimestampType,
    encode_record,
    frame_record,
    increment_sequence,
    record_of_frame,
)

T = 1_700_000_000_000
# Record 2 of kafka-format.md §4.9: offset delta 1, timestamp delta 5, key "k2", null value, header h1=v.
RECORD_2 = bytes.fromhex("1a000a02046b3201020468310276")
BASE = {"base_offset": 100, "base_timestamp": T, "base_sequence": -1, "log_append_time": None}


def decode_record(data: bytes, pos: int, **base: object) -> tuple[Record, int]:
    """The record at `pos` and the position after it: a frame, then the record built from it."""
    frame = frame_record(data, pos)
    return record_of_frame(data, frame, **base), frame[0]


def test_worked_example_record_encodes_and_decodes() -> None:
    out = bytearray()
    encode_record(out, Record(101, T + 5, b"k2", None, (("h1", b"v"),)), offset_delta=1, timestamp_delta=5)
    assert bytes(out) == RECORD_2
    record, end = decode_record(RECORD_2, 0, **BASE)
    assert (record, end) == (Record(101, T + 5, b"k2", None, (("h1", b"v"),)), len(RECORD_2))
    assert frame_record(RECORD_2, 0)[:3] == (len(RECORD_2), 5, 1)  # end, timestamp delta, offset delta


def test_sequence_and_log_append_time_are_derived_from_the_batch() -> None:
    record, _ = decode_record(RECORD_2, 0, **{**BASE, "base_sequence": 2**31 - 1, "log_append_time": T + 99})
    assert (record.sequence, record.timestamp) == (0, T + 99)  # the sequence wraps past int32 max


@pytest.mark.parametrize(
    ("sequence", "increment", "expected"),
    [(0, 5, 5), (2**31 - 1, 1, 0), (2**31 - 3, 5, 2), (2**31 - 5, 4, 2**31 - 1)],
)
def test_increment_sequence_wraps_like_kafka(sequence: int, increment: int, expected: int) -> None:
    assert increment_sequence(sequence, increment) == expected


def test_any_negative_key_length_is_null() -> None:
    # length 6, attributes, timestamp delta 0, offset delta 0, key length -2, value length 0, no headers
    record, _ = decode_record(bytes.fromhex("0c000000030000"), 0, **BASE)
    assert (record.key, record.value) == (None, b"")


def test_invalid_utf8_header_keys_survive_a_round_trip() -> None:
    original = Record(100, T, None, b"v", (("\udcff\udcfe", None),))
    out = bytearray()
    encode_record(out, original, offset_delta=0, timestamp_delta=0)
    assert b"\xff\xfe" in out
    assert decode_record(bytes(out), 0, **BASE)[0] == original


@pytest.mark.parametrize(
    "data",
    [
        bytes.fromhex("1c000a02046b3201020468310276"),  # declares 14 bytes, its fields take 13
        bytes.fromhex("18000a02046b3201020468310276"),  # declares 12
        bytes.fromhex("1a000a02046b320103"),  # runs past the section
        bytes.fromhex("0c000a00010103"),  # header count -2
        bytes.fromhex("0e000a0001010201"),  # header key length -1
    ],
    ids=["too-long", "too-short", "past-the-end", "negative-header-count", "negative-header-key"],
)
def test_malformed_records_are_rejected(data: bytes) -> None:
    with pytest.raises((CorruptRecordError, IndexError)):
        decode_record(data, 0, **BASE)


def test_timestamp_type_names_are_kafkas() -> None:
    assert [t.kafka_name for t in TimestampType] == ["NoTimestampType", "CreateTime", "LogAppendTime"]
