"""kafka-dump-log's decoders: --offsets-decoder, --transaction-log-decoder, --cluster-metadata-decoder,
--remote-log-metadata-decoder.

Expected texts come from Kafka's own DumpLogSegmentsTest where it has them; the realdata tests decode
every metadata, consumer-offsets and transaction-state file of ../shared/realdata.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from storage_core import names
from storage_core.dump import DumpOptions, RecordDecoder, dump_files, render_json, render_text
from storage_core.dump.decoders import parse_record
from storage_core.dump.render import JsonText
from storage_core.messages import GROUP_COORDINATOR, TRANSACTION_COORDINATOR, write_coordinator_record, write_message
from storage_core.messages.schemas import group_classic, group_consumer, transaction_log
from storage_core.messages.schemas import metadata_topics as topics
from storage_core.messages.schemas.remote_log_metadata import RemoteLogSegmentState
from storage_core.messages.wire import encode_unsigned_varint
from storage_core.records.batch import Record, build_batch
from storage_core.tiered.events import TopicIdPartition
from tests.builders.metadata_log import T0, MetadataLogBuilder
from tests.builders.remote_log_metadata import RemoteLogMetadataWriter
from tests.realdata.manifest import REALDATA
from tests.storage_core.dump.conftest import DumpRun


def _record(key: bytes | None, value: bytes | None, offset: int = 0) -> Record:
    return Record(offset, T0, key, value)


def _offsets(key: bytes | None, value: bytes | None) -> tuple[str | None, str | None]:
    parsed = parse_record(RecordDecoder.OFFSETS, _record(key, value))
    return tuple(None if v is None else str(v) for v in parsed)  # type: ignore[return-value]


def _group_metadata(subscription: bytes, assignment: bytes) -> tuple[bytes, bytes | None]:
    member = group_classic.MEMBER_METADATA.new(
        memberId="member",
        groupInstanceId="instance",
        clientId="client",
        clientHost="host",
        rebalanceTimeout=1000,
        sessionTimeout=100,
        subscription=subscription,
        assignment=assignment,
    )
    value = group_classic.GROUP_METADATA_VALUE.new(
        protocolType="consumer", generation=10, protocol="range", leader="member", members=(member,)
    )
    return write_coordinator_record(
        GROUP_COORDINATOR, 2, group_classic.GROUP_METADATA_KEY.new(group="group"), (4, value)
    )


def _versioned(spec: object, value: object, version: int) -> bytes:
    return struct.pack(">h", version) + write_message(spec, value, version)  # type: ignore[arg-type]


def test_offsets_decoder_prints_as_kafkas_dump_log_segments_test_expects() -> None:
    key = group_consumer.CONSUMER_GROUP_METADATA_KEY.new(GroupId="group")
    assert _offsets(
        *write_coordinator_record(
            GROUP_COORDINATOR, 3, key, (0, group_consumer.CONSUMER_GROUP_METADATA_VALUE.new(Epoch=10))
        )
    ) == ('{"type":"3","data":{"groupId":"group"}}', '{"version":"0","data":{"epoch":10}}')

    subscription_spec = group_classic.CONSUMER_PROTOCOL_SUBSCRIPTION
    owned = subscription_spec.struct.field("OwnedPartitions").type.element  # type: ignore[union-attr]
    subscription = subscription_spec.new(
        Topics=("foo",), OwnedPartitions=(owned.new(Topic="foo", Partitions=(0,)),), GenerationId=0, RackId="rack"
    )
    assignment_spec = group_classic.CONSUMER_PROTOCOL_ASSIGNMENT
    assigned = assignment_spec.struct.field("AssignedPartitions").type.element  # type: ignore[union-attr]
    assignment = assignment_spec.new(AssignedPartitions=(assigned.new(Topic="foo", Partitions=(0,)),))
    assert _offsets(
        *_group_metadata(_versioned(subscription_spec, subscription, 3), _versioned(assignment_spec, assignment, 3))
    ) == (
        '{"type":"2","data":{"group":"group"}}',
        '{"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range",'
        '"leader":"member","currentStateTimestamp":-1,"members":[{"memberId":"member",'
        '"groupInstanceId":"instance","clientId":"client","clientHost":"host",'
        '"rebalanceTimeout":1000,"sessionTimeout":100,"subscription":{"topics":["foo"],'
        '"userData":null,"ownedPartitions":[{"topic":"foo","partitions":[0]}],'
        '"generationId":0,"rackId":"rack"},"assignment":{"assignedPartitions":'
        '[{"topic":"foo","partitions":[0]}],"userData":null}}]}}',
    )
    # A malformed embedded protocol keeps its bytes (base64).
    assert _offsets(*_group_metadata(b"Subscription", b"Assignment"))[1] == (
        '{"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range",'
        '"leader":"member","currentStateTimestamp":-1,"members":[{"memberId":"member",'
        '"groupInstanceId":"instance","clientId":"client","clientHost":"host",'
        '"rebalanceTimeout":1000,"sessionTimeout":100,"subscription":"U3Vic2NyaXB0aW9u",'
        '"assignment":"QXNzaWdubWVudA=="}]}}'
    )
    assert _offsets(*write_coordinator_record(GROUP_COORDINATOR, 3, key, None)) == (
        '{"type":"3","data":{"groupId":"group"}}',
        "<DELETE>",
    )
    unknown_key = struct.pack(">h", 32767) + b"\x00\x05group"
    assert _offsets(unknown_key, b"\x00\x00") == ("Unknown record type 32767 at offset 0, skipping.", None)
    bad_value = struct.pack(">h", 0) + b"\x00\x00\x00\x00\x7f"  # a member value read for a metadata key
    key_bytes = write_coordinator_record(
        GROUP_COORDINATOR, 5, group_consumer.CONSUMER_GROUP_MEMBER_METADATA_KEY.new(GroupId="g", MemberId="m"), None
    )[0]
    printed_key, payload = _offsets(key_bytes, bad_value)
    assert printed_key is not None
    assert printed_key.startswith("Error at offset 0, skipping. ")
    assert payload is None
    assert _offsets(None, b"x")[0].startswith("Error at offset 0, skipping. Failed to decode")  # type: ignore[union-attr]


def test_transaction_log_decoder(tmp_path: Path, dump: DumpRun) -> None:
    """As Kafka 4.4.0's kafka-dump-log prints it (the state by name; tests/kafka compares with it)."""
    value_spec = transaction_log.TRANSACTION_LOG_VALUE
    partition = value_spec.struct.field("TransactionPartitions").type.element  # type: ignore[union-attr]
    ongoing = value_spec.new(
        ProducerId=7,
        PreviousProducerId=6,
        ProducerEpoch=2,
        TransactionTimeoutMs=60000,
        TransactionStatus=1,
        TransactionPartitions=(partition.new(Topic="orders", PartitionIds=(0, 1)),),
        TransactionLastUpdateTimestampMs=T0 + 5,
        TransactionStartTimestampMs=T0,
        ClientTransactionVersion=2,
    )
    empty = value_spec.new(ProducerId=7, ProducerEpoch=3, TransactionTimeoutMs=60000, TransactionStartTimestampMs=-1)
    key = transaction_log.TRANSACTION_LOG_KEY.new(TransactionalId="tx-1")
    records = []
    for offset, value in enumerate([(1, ongoing), (0, empty), None]):
        key_bytes, value_bytes = write_coordinator_record(TRANSACTION_COORDINATOR, 0, key, value)
        records.append(Record(offset, T0, key_bytes, value_bytes))
    partition_dir = tmp_path / "__transaction_state-7"
    partition_dir.mkdir()
    path = names.log_file(partition_dir, 0)
    path.write_bytes(build_batch(records, base_offset=0))
    out, err = dump(path, decoder=RecordDecoder.TRANSACTION_LOG, skip_record_metadata=True)
    assert err == []
    assert out[3:] == [
        '| key: {"type":"0","data":{"transactionalId":"tx-1"}} payload: {"version":"1","data":{"producerId":7,'
        '"previousProducerId":6,"producerEpoch":2,"transactionTimeoutMs":60000,"transactionStatus":"Ongoing",'
        '"transactionPartitions":[{"topic":"orders","partitionIds":[0,1]}],'
        f'"transactionLastUpdateTimestampMs":{T0 + 5},"transactionStartTimestampMs":{T0},'
        '"clientTransactionVersion":2}}',
        '| key: {"type":"0","data":{"transactionalId":"tx-1"}} payload: {"version":"0","data":{"producerId":7,'
        '"producerEpoch":3,"transactionTimeoutMs":60000,"transactionStatus":"Empty","transactionPartitions":[],'
        '"transactionLastUpdateTimestampMs":0,"transactionStartTimestampMs":-1}}',
        '| key: {"type":"0","data":{"transactionalId":"tx-1"}} payload: <DELETE>',
    ]


def test_cluster_metadata_decoder_on_a_built_log_with_a_bogus_record(tmp_path: Path, dump: DumpRun) -> None:
    meta = MetadataLogBuilder(tmp_path / "logs")
    topic_id = meta.topic("orders", configs={"cleanup.policy": "compact"})
    path = meta.write_segment(records_per_batch=10)
    offset = meta.next_offset
    bogus = encode_unsigned_varint(10000) + encode_unsigned_varint(10000)  # DumpLogSegmentsTest's bogus record
    with path.open("ab") as f:
        f.write(build_batch([Record(offset, T0, None, bogus)], base_offset=offset))
        valid = write_message(topics.REMOVE_TOPIC_RECORD, topics.REMOVE_TOPIC_RECORD.new(TopicId=topic_id), 0)
        f.write(build_batch([Record(offset + 1, T0, None, b"\x01\x09\x00" + valid)], base_offset=offset + 1))
    out, err = dump(path, decoder=RecordDecoder.CLUSTER_METADATA)
    assert err == []
    records = [line for line in out if line.startswith("| ")]
    assert records[0].endswith(
        'headerKeys: [] LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],"grantingVoters":[]}'
    )
    topic_json = f'{{"type":"TOPIC_RECORD","version":0,"data":{{"name":"orders","topicId":"{topic_id}"}}}}'
    assert records[1].endswith(f"headerKeys: [] payload: {topic_json}")
    assert records[2].endswith(
        'payload: {"type":"CONFIG_RECORD","version":0,"data":{"resourceType":2,"resourceName":"orders",'
        '"name":"cleanup.policy","value":"compact"}}'
    )
    assert f"payload: Error at {offset}, skipping. " in records[4]
    assert records[5].endswith(
        f'payload: {{"type":"REMOVE_TOPIC_RECORD","version":0,"data":{{"topicId":"{topic_id}"}}}}'
    )
    json_lines = [
        json.loads(render_json(line))
        for line in dump_files([path], DumpOptions(decoder=RecordDecoder.CLUSTER_METADATA))
    ]
    payloads = [line["payload"] for line in json_lines if line["type"] == "record" and "payload" in line]
    assert payloads[0] == {"type": "TOPIC_RECORD", "version": 0, "data": {"name": "orders", "topicId": topic_id}}


def test_kafka_snapshot_output_with_and_without_record_metadata(tmp_path: Path, dump: DumpRun) -> None:
    meta = MetadataLogBuilder(tmp_path / "logs")
    meta.topic("test-topic")
    snapshot = meta.write_snapshot(end_offset=0, epoch=0)
    out, _ = dump(snapshot, decoder=RecordDecoder.CLUSTER_METADATA)
    text = "\n".join(out)
    assert "Snapshot end offset: 0, epoch: 0" in text
    assert "TOPIC_RECORD" in text
    assert '"lastContainedLogTimestamp":1700000000000' in text
    assert "SnapshotFooter" in text
    out, _ = dump(snapshot, decoder=RecordDecoder.CLUSTER_METADATA, skip_record_metadata=True)
    text = "\n".join(out)
    assert "TOPIC_RECORD" in text
    assert "SnapshotHeader" not in text
    assert "SnapshotFooter" not in text


def _realdata(pattern: str) -> list[Path]:
    return sorted(p for p in REALDATA.glob(pattern) if p.is_file() and p.stat().st_size > 0)


METADATA_FILES = _realdata("**/__cluster_metadata-0/*.log") + _realdata("**/*.checkpoint")
OFFSETS_FILES = _realdata("**/__consumer_offsets-*/*.log")
TRANSACTION_FILES = _realdata("**/__transaction_state-*/*.log")


def _decoded_record_lines(files: list[Path], decoder: RecordDecoder) -> list[dict[str, object]]:
    """The fields of every record line; fails on any stderr line but the offset gaps of compacted logs."""
    lines = []
    for line in dump_files(files, DumpOptions(decoder=decoder)):
        assert not line.stderr or line.kind.startswith("non_consecutive_offsets"), render_text(line)
        if line.kind == "record":
            lines.append(line)
    return [{field.name: field.value for field in line.fields} for line in lines]


def test_realdata_files_are_there() -> None:
    assert len([p for p in METADATA_FILES if p.name == names.BOOTSTRAP_SNAPSHOT]) >= 5
    assert len([p for p in METADATA_FILES if p.suffix == ".log"]) >= 9
    assert len(OFFSETS_FILES) >= 30
    assert TRANSACTION_FILES


@pytest.mark.slow
def test_every_realdata_metadata_segment_and_snapshot_decodes(dump: DumpRun) -> None:
    records = [r for r in _decoded_record_lines(METADATA_FILES, RecordDecoder.CLUSTER_METADATA) if "payload" in r]
    assert len(records) > 100_000
    for record in records:
        assert isinstance(record["payload"], JsonText), record
        assert record.get("key") is None


@pytest.mark.slow
def test_every_realdata_consumer_offsets_segment_decodes() -> None:
    records = [r for r in _decoded_record_lines(OFFSETS_FILES, RecordDecoder.OFFSETS) if "key" in r]
    assert len(records) > 20_000
    types = set()
    for record in records:
        assert isinstance(record["key"], JsonText), record
        assert isinstance(record["payload"], JsonText) or record["payload"] == "<DELETE>", record
        types.add(record["key"].data["type"])  # type: ignore[union-attr]
    assert types == {"1", "2"}  # offset commits (key v1) and classic group metadata


def test_realdata_transaction_state_decodes() -> None:
    records = [r for r in _decoded_record_lines(TRANSACTION_FILES, RecordDecoder.TRANSACTION_LOG) if "key" in r]
    assert records
    for record in records:
        assert isinstance(record["key"], JsonText), record
        assert isinstance(record["payload"], JsonText), record
    assert records[0]["payload"].data["data"]["transactionStatus"] == "Empty"  # type: ignore[union-attr]


def test_remote_log_metadata_decoder_prints_each_event_as_kafka_does(tmp_path: Path, dump: DumpRun) -> None:
    """`--remote-log-metadata-decoder`: no key, the payload is the Java object's `toString()`
    (tests/storage_core/tiered/test_events.py holds Kafka 4.4.0's own texts); a record that does not
    decode prints `Error at offset O, skipping.` and the dump goes on."""
    writer = RemoteLogMetadataWriter(tmp_path / "logs", partitions=1)
    tp = TopicIdPartition("4L6g3nShT-eMCtK--X86sw", "orders", 3)
    segment = writer.copy(tp, 100, 199)
    writer.update(tp, segment, RemoteLogSegmentState.DELETE_SEGMENT_STARTED)
    (dir_path,) = writer.write()
    path = names.log_file(dir_path, 0)
    with path.open("ab") as f:
        f.write(build_batch([Record(3, T0, None, b"\x01\x09\x00")], base_offset=3))
    out, err = dump(path, decoder=RecordDecoder.REMOTE_LOG_METADATA)
    assert err == []
    payloads = [line.split(" payload: ", 1)[1] for line in out if line.startswith("| ")]
    segment_id = f"RemoteLogSegmentId{{topicIdPartition={tp}, id={segment}}}"
    assert payloads[0].startswith(f"RemoteLogSegmentMetadata{{remoteLogSegmentId={segment_id}, startOffset=100, ")
    assert payloads[0].endswith("state=COPY_SEGMENT_STARTED, txnIdxEmpty=false}")
    assert payloads[1] == (
        f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={segment_id}, customMetadata=Optional.empty, "
        f"state=COPY_SEGMENT_FINISHED, eventTimestampMs={T0}, brokerId=1}}"
    )
    assert "state=DELETE_SEGMENT_STARTED" in payloads[2]
    assert payloads[3].startswith("Error at offset 3, skipping. ")
    assert all(" key: " not in line for line in out if line.startswith("| "))
