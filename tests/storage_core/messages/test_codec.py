"""One reader and one writer for every declaration and version: round trips, Kafka's wire rules."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage_core.errors import CorruptRecordError, UnsupportedMessageVersionError
from storage_core.messages import MessageSpec, read_message, write_message
from storage_core.messages.schema import INT32, STRING, array, field, message
from storage_core.messages.schemas import group_classic, metadata_cluster, metadata_topics, transaction_log
from storage_core.messages.wire import encode_unsigned_varint, read_unsigned_varint
from tests.builders.messages import message_values
from tests.storage_core.messages.conftest import ALL_VERSIONS


@pytest.mark.parametrize(("spec", "version"), ALL_VERSIONS, ids=lambda v: getattr(v, "name", str(v)))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_declared_version_round_trips(spec: MessageSpec, version: int, data: st.DataObject) -> None:
    value = data.draw(message_values(spec, version))
    encoded = write_message(spec, value, version)
    decoded, end = read_message(spec, encoded, version)
    assert end == len(encoded)
    assert decoded == value
    assert write_message(spec, decoded, version) == encoded


@given(st.integers(0, 2**32 - 1))
def test_unsigned_varints_round_trip(value: int) -> None:
    encoded = encode_unsigned_varint(value)
    assert len(encoded) == max(1, (value.bit_length() + 6) // 7)
    assert read_unsigned_varint(encoded + b"\xff", 0) == (value, len(encoded))


def _uvarint(n: int) -> bytes:
    return encode_unsigned_varint(n)


def test_flexible_layout_compact_arrays_and_the_tag_buffer() -> None:
    spec = metadata_topics.PARTITION_CHANGE_RECORD
    value = spec.new(PartitionId=3, TopicId="AAAAAAAAAAAAAAAAAAAAAQ", Isr=(1, 2), Leader=2)
    isr = _uvarint(3) + struct.pack(">ii", 1, 2)  # compact array: count + 1, then the elements
    leader = struct.pack(">i", 2)
    expected = (
        struct.pack(">i", 3)
        + bytes(15)
        + b"\x01"  # the uuid
        + _uvarint(2)  # two tagged fields, in tag order: Isr (0) and Leader (1); defaults are left out
        + _uvarint(0)
        + _uvarint(len(isr))
        + isr
        + _uvarint(1)
        + _uvarint(len(leader))
        + leader
    )
    assert write_message(spec, value, 0) == expected
    assert read_message(spec, expected, 0)[0] == value


def test_non_flexible_layout_int16_strings_and_int32_arrays() -> None:
    spec = group_classic.OFFSET_COMMIT_VALUE
    value = spec.new(offset=7, leaderEpoch=4, metadata="m", commitTimestamp=9)
    assert write_message(spec, value, 3) == struct.pack(">qih", 7, 4, 1) + b"m" + struct.pack(">q", 9)
    assert write_message(spec, value, 4).endswith(b"\x00")  # flexible: compact string and an empty tag buffer
    key = group_classic.OFFSET_COMMIT_KEY.new(group="g", topic="t", partition=2)
    assert write_message(group_classic.OFFSET_COMMIT_KEY, key, 1) == b"\x00\x01g\x00\x01t" + struct.pack(">i", 2)


def test_fields_absent_from_a_version_read_as_their_defaults() -> None:
    spec = metadata_cluster.REGISTER_BROKER_RECORD
    value = spec.new(BrokerId=1, BrokerEpoch=5, Rack=None, Fenced=False)
    decoded, _ = read_message(spec, write_message(spec, value, 0), 0)
    assert decoded["IsMigratingZkBroker"] is False
    assert decoded["InControlledShutdown"] is False
    assert decoded["LogDirs"] == ()


def test_unknown_tags_are_kept_and_written_back_in_tag_order() -> None:
    spec = metadata_topics.TOPIC_RECORD
    raw = _uvarint(2) + b"t" + bytes(16) + _uvarint(2) + _uvarint(7) + _uvarint(2) + b"xy" + _uvarint(9) + _uvarint(0)
    value, end = read_message(spec, raw, 0)
    assert end == len(raw)
    assert value["Name"] == "t"
    assert value.unknown_tags == ((7, b"xy"), (9, b""))
    assert write_message(spec, value, 0) == raw


def test_a_declared_tag_outside_its_versions_is_corrupt() -> None:
    spec = metadata_topics.PARTITION_CHANGE_RECORD  # tag 8 (Directories) exists from version 1
    raw = struct.pack(">i", 0) + bytes(16) + _uvarint(1) + _uvarint(8) + _uvarint(1) + _uvarint(0)
    assert read_message(spec, raw, 1)[0]["Directories"] is None
    with pytest.raises(CorruptRecordError, match="tag 8"):
        read_message(spec, raw, 0)


@pytest.mark.parametrize(
    ("spec", "version", "raw", "problem"),
    [
        (metadata_topics.TOPIC_RECORD, 0, _uvarint(0) + bytes(16) + b"\x00", "non-nullable field Name"),
        (metadata_topics.TOPIC_RECORD, 0, _uvarint(5) + b"ab", "runs past the end"),
        (metadata_topics.TOPIC_RECORD, 0, _uvarint(1) + bytes(10), "uuid"),
        (metadata_topics.PARTITION_RECORD, 0, struct.pack(">i", 0) + bytes(16) + _uvarint(200), "longer than"),
        (group_classic.OFFSET_COMMIT_KEY, 0, struct.pack(">h", 0x7FFF + 1 - 2**16), "non-nullable"),
        (
            metadata_topics.TOPIC_RECORD,
            0,
            _uvarint(1) + bytes(16) + _uvarint(1) + _uvarint(50) + _uvarint(9) + b"x",
            "runs past the end",
        ),
    ],
)
def test_malformed_values_are_corrupt_and_name_the_message(
    spec: MessageSpec, version: int, raw: bytes, problem: str
) -> None:
    with pytest.raises(CorruptRecordError, match=problem) as info:
        read_message(spec, raw, version)
    assert spec.name in str(info.value)


def test_a_string_longer_than_32767_bytes_is_corrupt() -> None:
    raw = _uvarint(0x8000 + 1) + b"x" * 0x8000 + bytes(16) + b"\x00"
    with pytest.raises(CorruptRecordError, match="invalid length 32768"):
        read_message(metadata_topics.TOPIC_RECORD, raw, 0)


def test_tagged_field_with_a_wrong_declared_size_is_corrupt() -> None:
    spec = metadata_topics.PARTITION_CHANGE_RECORD
    raw = struct.pack(">i", 0) + bytes(16) + _uvarint(1) + _uvarint(1) + _uvarint(5) + struct.pack(">i", 2) + b"z"
    with pytest.raises(CorruptRecordError, match="declares 5 bytes"):
        read_message(spec, raw, 0)


def test_versions_outside_the_declaration_are_refused_unless_lenient() -> None:
    spec = group_classic.CONSUMER_PROTOCOL_SUBSCRIPTION
    value = spec.new(Topics=("a",), GenerationId=4, RackId="r")
    raw = write_message(spec, value, 3)
    with pytest.raises(UnsupportedMessageVersionError) as info:
        read_message(spec, raw, 4)
    assert (info.value.message, info.value.version) == ("ConsumerProtocolSubscription", 4)
    assert read_message(spec, raw + b"future", 9, lenient_version=True)[0] == value


def test_writer_refuses_what_the_version_cannot_carry() -> None:
    spec = transaction_log.TRANSACTION_LOG_VALUE
    with pytest.raises(ValueError, match="PreviousProducerId"):
        write_message(spec, spec.new(PreviousProducerId=5), 0)  # tagged from version 1 only
    with pytest.raises(ValueError, match="not nullable"):
        write_message(metadata_topics.TOPIC_RECORD, metadata_topics.TOPIC_RECORD.new(Name=None), 0)
    with pytest.raises(ValueError, match="no version 3"):
        write_message(metadata_topics.PARTITION_RECORD, metadata_topics.PARTITION_RECORD.new(), 3)


def test_declarations_reject_duplicate_names_and_tags() -> None:
    with pytest.raises(ValueError, match="twice"):
        message("X", field("A", INT32), field("A", STRING), valid="0", flexible="0+")
    with pytest.raises(ValueError, match="twice"):
        message(
            "X",
            field("A", INT32, tagged="0+", tag=1),
            field("B", array(INT32), tagged="0+", tag=1),
            valid="0",
            flexible="0+",
        )
