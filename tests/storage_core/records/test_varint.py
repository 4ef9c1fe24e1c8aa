"""Varints: Kafka's example table (kafka-format.md §2.2), round trips, and the 5/10-byte limits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_core.errors import CorruptRecordError
from storage_core.records.varint import decode_varint, decode_varlong, encode_varint, encode_varlong, size_of_varint

KAFKA_EXAMPLES = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (-2, "03"),
    (63, "7e"),
    (-64, "7f"),
    (64, "8001"),
    (300, "d804"),
    (2147483647, "feffffff0f"),
    (-2147483648, "ffffffff0f"),
]


@pytest.mark.parametrize(("value", "encoded"), KAFKA_EXAMPLES)
def test_kafka_examples(value: int, encoded: str) -> None:
    assert encode_varint(value).hex() == encoded
    assert encode_varlong(value).hex() == encoded
    assert decode_varint(bytes.fromhex(encoded), 0) == (value, len(encoded) // 2)
    assert decode_varlong(bytes.fromhex(encoded), 0) == (value, len(encoded) // 2)
    assert size_of_varint(value) == len(encoded) // 2


@settings(max_examples=300, deadline=None)
@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_round_trip(value: int) -> None:
    data = b"\xaa" + encode_varint(value) + b"\xbb"
    assert decode_varint(data, 1) == (value, len(data) - 1)
    assert size_of_varint(value) == len(data) - 2


@settings(max_examples=300, deadline=None)
@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(value: int) -> None:
    data = encode_varlong(value)
    assert len(data) <= 10
    assert decode_varlong(memoryview(data), 0) == (value, len(data))


def test_the_longest_legal_encodings() -> None:
    assert decode_varlong(encode_varlong(-(2**63)), 0) == (-(2**63), 10)
    assert len(encode_varlong(2**63 - 1)) == 10


@pytest.mark.parametrize(
    ("decode", "data"),
    [(decode_varint, b"\x80" * 5 + b"\x01"), (decode_varlong, b"\x80" * 10 + b"\x01")],
    ids=["varint-6-bytes", "varlong-11-bytes"],
)
def test_overlong_encodings_are_corrupt(decode, data: bytes) -> None:
    with pytest.raises(CorruptRecordError) as error:
        decode(b"\x00\x00" + data, 2)
    assert error.value.position == 2


def test_a_varint_running_past_the_buffer_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError) as error:
        decode_varint(b"\x80\x80", 0)
    assert error.value.position == 0
