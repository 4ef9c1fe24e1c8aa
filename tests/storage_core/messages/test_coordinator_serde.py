"""Coordinator records of __consumer_offsets and __transaction_state (CoordinatorRecordSerde)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage_core.errors import CorruptRecordError, UnknownMessageTypeError, UnsupportedMessageVersionError
from storage_core.messages import (
    GROUP_COORDINATOR,
    TRANSACTION_COORDINATOR,
    CoordinatorFamily,
    read_coordinator_record,
    write_coordinator_record,
)
from storage_core.messages.schemas import group_classic, group_consumer
from tests.builders.messages import message_values

RECORD_TYPES = [
    (family, record_type, version)
    for family in (GROUP_COORDINATOR, TRANSACTION_COORDINATOR)
    for record_type, (_, value) in family.record_types.items()
    for version in range(value.valid_versions.lowest, value.valid_versions.highest + 1)
]


@pytest.mark.parametrize(("family", "record_type", "version"), RECORD_TYPES, ids=str)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_record_type_and_value_version_round_trips(
    family: CoordinatorFamily, record_type: int, version: int, data: st.DataObject
) -> None:
    key_spec, value_spec = family.record_types[record_type]
    key = data.draw(message_values(key_spec, record_type))
    value = data.draw(st.none() | message_values(value_spec, version))
    key_bytes, value_bytes = write_coordinator_record(
        family, record_type, key, None if value is None else (version, value)
    )
    assert key_bytes[:2] == struct.pack(">h", record_type)
    decoded = read_coordinator_record(family, key_bytes, value_bytes)
    assert (decoded.record_type, decoded.key_spec, decoded.key) == (record_type, key_spec, key)
    assert decoded.value == value
    assert decoded.value_version == (None if value is None else version)


def test_real_offset_commit_and_group_metadata_bytes() -> None:
    key = bytes.fromhex("0001") + b"\x00\x01g\x00\x01t" + struct.pack(">i", 3)
    value = struct.pack(">hqih", 3, 42, 7, 0) + struct.pack(">q", 1700000000000)
    decoded = read_coordinator_record(GROUP_COORDINATOR, key, value)
    assert decoded.key_spec is group_classic.OFFSET_COMMIT_KEY
    assert dict(decoded.key) == {"group": "g", "topic": "t", "partition": 3}
    assert decoded.value is not None
    assert dict(decoded.value) == {
        "offset": 42,
        "leaderEpoch": 7,
        "metadata": "",
        "commitTimestamp": 1700000000000,
        "expireTimestamp": -1,
        "topicId": decoded.value["topicId"],
    }
    assert str(decoded.value["topicId"]) == "AAAAAAAAAAAAAAAAAAAAAA"  # Kafka 4.4's tag 0, absent: the zero id


def test_unknown_types_short_buffers_and_unknown_value_versions() -> None:
    with pytest.raises(UnknownMessageTypeError) as unknown:
        read_coordinator_record(GROUP_COORDINATOR, struct.pack(">h", 32767) + b"\x00\x01g", None)
    assert unknown.value.type_id == 32767
    with pytest.raises(CorruptRecordError, match="version from the key"):
        read_coordinator_record(GROUP_COORDINATOR, b"\x00", None)
    key = write_coordinator_record(
        GROUP_COORDINATOR, 3, group_consumer.CONSUMER_GROUP_METADATA_KEY.new(GroupId="g"), None
    )[0]
    with pytest.raises(UnsupportedMessageVersionError):
        read_coordinator_record(GROUP_COORDINATOR, key, struct.pack(">h", 1) + b"\x00\x00\x00\x0a\x00")
    with pytest.raises(UnknownMessageTypeError):
        read_coordinator_record(TRANSACTION_COORDINATOR, key, None)  # type 3 is no transaction record
