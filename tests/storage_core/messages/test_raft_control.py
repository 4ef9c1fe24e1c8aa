"""KRaft control record values, read by the message codec and printed as Kafka's generated
JsonConverters print them (formerly storage_core.dump.kraft_control, now declarations)."""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_core.errors import CorruptRecordError
from storage_core.messages import MessageSpec, read_message, to_json
from storage_core.messages.schemas.raft_control import (
    CONTROL_RECORD_VERSION,
    KRAFT_VERSION_RECORD,
    LEADER_CHANGE_MESSAGE,
    SNAPSHOT_FOOTER_RECORD,
    SNAPSHOT_HEADER_RECORD,
    VOTERS_RECORD,
)


def _decoder(spec: MessageSpec) -> Callable[[bytes], object]:
    """Read as Kafka's ControlRecordUtils does (version 0), print with the value's own version."""

    def decode(value: bytes) -> object:
        message, _ = read_message(spec, value, CONTROL_RECORD_VERSION)
        return to_json(spec, message, int(message["Version"]))  # type: ignore[call-overload]

    return decode


decode_leader_change = _decoder(LEADER_CHANGE_MESSAGE)
decode_snapshot_header = _decoder(SNAPSHOT_HEADER_RECORD)
decode_snapshot_footer = _decoder(SNAPSHOT_FOOTER_RECORD)
decode_kraft_version = _decoder(KRAFT_VERSION_RECORD)
decode_voters = _decoder(VOTERS_RECORD)

# Values of real control records (ArthurArutunyan04 and ronem123 __cluster_metadata-0).
LEADER_CHANGE = bytes.fromhex("00000000000102000000010002000000010000")
KRAFT_VERSION = bytes.fromhex("0000000100")
VOTERS = bytes.fromhex(
    "00000200000001c98b8cac5455415497d155503dc312ac020b434f4e54524f4c4c45520a6c6f63616c686f737423850000000001000000"
)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes([*out, n])


def _tags(tags: list[bytes]) -> bytes:
    return _uvarint(len(tags)) + b"".join(_uvarint(i) + _uvarint(len(t)) + t for i, t in enumerate(tags))


def _string(text: str) -> bytes:
    raw = text.encode()
    return _uvarint(len(raw) + 1) + raw


def test_real_values_print_as_kafka_prints_them() -> None:
    assert decode_leader_change(LEADER_CHANGE) == {
        "version": 0,
        "leaderId": 1,
        "voters": [{"voterId": 1}],
        "grantingVoters": [{"voterId": 1}],
    }
    assert decode_kraft_version(KRAFT_VERSION) == {"version": 0, "kRaftVersion": 1}
    assert decode_voters(VOTERS) == {
        "version": 0,
        "voters": [
            {
                "voterId": 1,
                "voterDirectoryId": "yYuMrFRVQVSX0VVQPcMSrA",
                "endpoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}],
                "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1},
            }
        ],
    }
    assert decode_snapshot_header(bytes.fromhex("0000" + "0000019b4ef53fc1" + "00")) == {
        "version": 0,
        "lastContainedLogTimestamp": 1766556254145,
    }
    assert decode_snapshot_footer(bytes.fromhex("000000")) == {"version": 0}


@settings(max_examples=40, deadline=None)
@given(
    voter_id=st.integers(0, 2**31 - 1),
    directory_id=st.binary(min_size=16, max_size=16),
    endpoints=st.lists(st.tuples(st.text(max_size=12), st.text(max_size=20), st.integers(0, 65535)), max_size=3),
    tags=st.lists(st.binary(max_size=8), max_size=3),
)
def test_voters_decode_with_any_tagged_fields(
    voter_id: int, directory_id: bytes, endpoints: list[tuple[str, str, int]], tags: list[bytes]
) -> None:
    encoded_endpoints = _uvarint(len(endpoints) + 1) + b"".join(
        _string(name) + _string(host) + struct.pack(">H", port) + _tags(tags) for name, host, port in endpoints
    )
    voter = (
        struct.pack(">i", voter_id)
        + directory_id
        + encoded_endpoints
        + struct.pack(">hh", 0, 1)
        + _tags(tags)
        + _tags(tags)
    )
    value = struct.pack(">h", 0) + _uvarint(2) + voter + _tags(tags)
    assert decode_voters(value) == {
        "version": 0,
        "voters": [
            {
                "voterId": voter_id,
                "voterDirectoryId": base64.urlsafe_b64encode(directory_id).decode().rstrip("="),
                "endpoints": [{"name": n, "host": h, "port": p} for n, h, p in endpoints],
                "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1},
            }
        ],
    }


@pytest.mark.parametrize(
    ("decode", "value"),
    [
        (decode_leader_change, LEADER_CHANGE[:-3]),
        (decode_voters, VOTERS[:30]),
        (decode_snapshot_header, b"\x00\x00\x00"),
        (decode_kraft_version, b""),
        (decode_leader_change, bytes.fromhex("0000000000010000")),  # a null voters array
    ],
)
def test_truncated_or_null_values_are_corrupt(decode: Callable[[bytes], object], value: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode(value)
