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
    assert decode_varint(bytes.fromhex(encoded), 0) == (value, len(encoded) // 2)
    assert size_of_varint(value) == len(encoded) // 2


@settings(max_examples=300, deadline=None)
@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_round_trip(value: int) -> None:
    data = b"\xaa" + encode_varint(value)
    assert decode_varint(data, 1) == (value, len(data))


@settings(max_examples=300, deadline=None)
@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(value: int) -> None:
    data = encode_varlong(value)
    assert decode_varlong(data, 0) == (value, len(data))


def test_overlong_varint_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError):
        decode_varint(b"\x80" * 5 + b"\x01", 0)
    with pytest.raises(CorruptRecordError):
        decode_varlong(b"\x80" * 10 + b"\x01", 0)


def test_truncated_varint_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError):
        decode_varint(b"\x80\x80", 0)
