"""The metadata record frame (MetadataRecordSerde): every declared record type and version written
into a metadata log segment and a snapshot and read back, and Kafka's frame errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage_core.errors import CorruptRecordError, UnknownMessageTypeError, UnsupportedMessageVersionError
from storage_core.messages import METADATA_RECORDS, MessageSpec, read_metadata_record, type_name, write_metadata_record
from storage_core.messages.schemas import metadata_topics
from storage_core.messages.wire import encode_unsigned_varint
from storage_core.records.file_records import iterate_batches
from tests.builders.messages import message_values
from tests.builders.metadata_log import Entry, MetadataLogBuilder

METADATA_VERSIONS = [
    (spec, version)
    for spec in METADATA_RECORDS.values()
    for version in range(spec.valid_versions.lowest, spec.valid_versions.highest + 1)
]


def _read_back(path: Path) -> list[tuple[MessageSpec, int, object]]:
    out = []
    for batch in iterate_batches(path.read_bytes()):
        if batch.magic >= 2 and batch.is_control:
            continue
        for record in batch.records():
            decoded = read_metadata_record(record.value or b"")
            out.append((decoded.spec, decoded.version, decoded.data))
    return out


def test_every_kafka_record_type_of_the_metadata_directory_is_declared() -> None:
    # apache/kafka metadata/src/main/resources/common/metadata at HEAD (+ ClearElrRecord of 4.0).
    assert {spec.api_key: type_name(spec) for spec in METADATA_RECORDS.values()} == {
        0: "REGISTER_BROKER_RECORD",
        1: "UNREGISTER_BROKER_RECORD",
        2: "TOPIC_RECORD",
        3: "PARTITION_RECORD",
        4: "CONFIG_RECORD",
        5: "PARTITION_CHANGE_RECORD",
        7: "FENCE_BROKER_RECORD",
        8: "UNFENCE_BROKER_RECORD",
        9: "REMOVE_TOPIC_RECORD",
        10: "DELEGATION_TOKEN_RECORD",
        11: "USER_SCRAM_CREDENTIAL_RECORD",
        12: "FEATURE_LEVEL_RECORD",
        14: "CLIENT_QUOTA_RECORD",
        15: "PRODUCER_IDS_RECORD",
        17: "BROKER_REGISTRATION_CHANGE_RECORD",
        18: "ACCESS_CONTROL_ENTRY_RECORD",
        19: "REMOVE_ACCESS_CONTROL_ENTRY_RECORD",
        20: "NO_OP_RECORD",
        21: "ZK_MIGRATION_STATE_RECORD",
        22: "REMOVE_USER_SCRAM_CREDENTIAL_RECORD",
        23: "BEGIN_TRANSACTION_RECORD",
        24: "END_TRANSACTION_RECORD",
        25: "ABORT_TRANSACTION_RECORD",
        26: "REMOVE_DELEGATION_TOKEN_RECORD",
        27: "REGISTER_CONTROLLER_RECORD",
        28: "CLEAR_ELR_RECORD",
        29: "UNREGISTER_CONTROLLER_RECORD",
    }


# Written by Kafka 4.4.0's MetadataRecordSerde (its generated RegisterBrokerRecord v4,
# BrokerRegistrationChangeRecord v3 and UnregisterControllerRecord v0): a 4.4.0 broker registers itself
# with a v4 record, which logkeeper 0.1 refused to read (the broker tests, tests/kafka, found it).
D1, D2 = "ASNFZ4mrze8RIjNEVWZ3iA", "fty6mHZUMhABAgMEBQYHCA"
KAFKA_4_4_RECORDS = [
    (
        "RegisterBrokerRecord",
        4,
        "01000400000001007edcba98765432100102030405060708000000000000002a020a504c41494e544558540a3132372e302e302e31"
        "238400000002116d657461646174612e76657273696f6e0007001d00000100020021030123456789abcdef11223344556677887e"
        "dcba987654321001020304050607080111027edcba98765432100102030405060708",
        {"BrokerId": 1, "BrokerEpoch": 42, "Fenced": True, "LogDirs": [D1, D2], "CordonedLogDirs": [D2]},
    ),
    (
        "BrokerRegistrationChangeRecord",
        3,
        "01110300000001000000000000002a030001ff0211020123456789abcdef11223344556677880321030123456789abcdef1122334455"
        "6677887edcba98765432100102030405060708",
        {"BrokerId": 1, "BrokerEpoch": 42, "Fenced": -1, "LogDirs": [D1], "CordonedLogDirs": [D1, D2]},
    ),
    ("UnregisterControllerRecord", 0, "011d0000000bb800", {"ControllerId": 3000}),
    # What a 4.4.0 broker wrote in its own metadata log: an empty (not null) CordonedLogDirs.
    ("BrokerRegistrationChangeRecord", 3, "01110300000001000000000000000d01030101", {"CordonedLogDirs": []}),
]


@pytest.mark.parametrize(("name", "version", "hex_bytes", "expected"), KAFKA_4_4_RECORDS)
def test_kafka_4_4_records_read_and_write_byte_for_byte(
    name: str, version: int, hex_bytes: str, expected: dict[str, object]
) -> None:
    decoded = read_metadata_record(bytes.fromhex(hex_bytes))
    assert (decoded.spec.name, decoded.version) == (name, version)
    got = {
        key: [str(u) for u in v] if key.endswith("LogDirs") else v for key, v in decoded.data.items() if key in expected
    }
    assert got == expected
    assert write_metadata_record(decoded.spec, decoded.data, version) == bytes.fromhex(hex_bytes)


@settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_every_record_type_and_version_round_trips_through_a_segment_and_a_snapshot(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    entries = [
        Entry(spec, version, data.draw(message_values(spec, version), label=f"{spec.name} v{version}"))
        for spec, version in METADATA_VERSIONS
    ]
    builder = MetadataLogBuilder(tmp_path_factory.mktemp("logs"))
    builder.entries.extend(entries)
    segment = builder.write_segment(records_per_batch=7)
    snapshot = builder.write_snapshot(end_offset=builder.next_offset, epoch=1)
    expected = [(e.spec, e.version, e.data) for e in entries]
    assert _read_back(segment) == expected
    assert _read_back(snapshot) == expected


def _frame(frame_version: int, api_key: int, version: int) -> bytes:
    return encode_unsigned_varint(frame_version) + encode_unsigned_varint(api_key) + encode_unsigned_varint(version)


def test_frame_layout_is_three_unsigned_varints_then_the_message() -> None:
    spec = metadata_topics.TOPIC_RECORD
    value = spec.new(Name="t", TopicId="AAAAAAAAAAAAAAAAAAAAAQ")
    raw = write_metadata_record(spec, value, 0)
    assert raw[:3] == b"\x01\x02\x00"
    decoded = read_metadata_record(raw)
    assert (decoded.spec, decoded.version, decoded.data) == (spec, 0, value)


def test_unknown_types_and_versions_are_typed_errors_naming_them() -> None:
    with pytest.raises(UnknownMessageTypeError) as unknown:
        read_metadata_record(_frame(1, 99, 3) + b"\x00")
    assert (unknown.value.family, unknown.value.type_id, unknown.value.version) == ("metadata record", 99, 3)
    with pytest.raises(UnsupportedMessageVersionError) as version:
        read_metadata_record(_frame(1, 3, 9) + b"\x00")
    assert (version.value.message, version.value.type_id, version.value.version) == ("PartitionRecord", 3, 9)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (_frame(0, 2, 0), "frame version 0"),
        (_frame(2, 2, 0), "frame version 2"),
        (encode_unsigned_varint(1) + encode_unsigned_varint(40000), "too large"),
        (b"\x01\x02", "runs past the end"),
        (write_metadata_record(metadata_topics.TOPIC_RECORD, metadata_topics.TOPIC_RECORD.new(), 0) + b"x", "garbage"),
    ],
)
def test_malformed_frames_are_corrupt(raw: bytes, problem: str) -> None:
    with pytest.raises(CorruptRecordError, match=problem):
        read_metadata_record(raw)
