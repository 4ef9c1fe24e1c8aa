"""Control record keys and end-transaction markers (kafka-format.md §4.7)."""

from __future__ import annotations

import pytest

from storage_core.errors import CorruptRecordError
from storage_core.records.control import (
    ControlRecordType,
    EndTxnMarker,
    control_type_name,
    encode_control_key,
    parse_control_key,
)


def test_kafka_type_codes() -> None:
    assert [(t.name, int(t)) for t in ControlRecordType] == [
        ("ABORT", 0),
        ("COMMIT", 1),
        ("LEADER_CHANGE", 2),
        ("SNAPSHOT_HEADER", 3),
        ("SNAPSHOT_FOOTER", 4),
        ("KRAFT_VERSION", 5),
        ("KRAFT_VOTERS", 6),
    ]


def test_keys_encode_and_parse_including_unknown_types() -> None:
    assert encode_control_key(ControlRecordType.COMMIT).hex() == "00000001"
    assert parse_control_key(bytes.fromhex("00000001")) == ControlRecordType.COMMIT
    assert parse_control_key(encode_control_key(42)) == 42
    assert control_type_name(42) == "UNKNOWN"
    assert control_type_name(ControlRecordType.KRAFT_VOTERS) == "KRAFT_VOTERS"


def test_higher_versions_read_as_version_0() -> None:
    assert parse_control_key(encode_control_key(ControlRecordType.ABORT, version=3) + b"extra") == 0
    assert EndTxnMarker.decode(bytes.fromhex("0002000000070000")) == EndTxnMarker(version=2, coordinator_epoch=7)


def test_marker_round_trip() -> None:
    marker = EndTxnMarker(coordinator_epoch=5)
    assert marker.encode().hex() == "000000000005"
    assert EndTxnMarker.decode(marker.encode()) == marker


@pytest.mark.parametrize("data", [b"\x00\x00\x00", bytes.fromhex("ffff0001")], ids=["short", "negative-version"])
def test_bad_keys_are_corrupt(data: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        parse_control_key(data)


@pytest.mark.parametrize(
    "data", [b"\x00\x00\x00\x05", bytes.fromhex("ffff00000005")], ids=["short", "negative-version"]
)
def test_bad_markers_are_corrupt(data: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        EndTxnMarker.decode(data)
