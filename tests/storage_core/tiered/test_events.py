"""`__remote_log_metadata` records against Kafka 4.4.0's own `RemoteLogMetadataSerde`.

The golden values were made by Kafka 4.4.0 (kafka-storage, kafka-storage-api, kafka-clients and
kafka-server-common 4.4.0 from Maven Central): `serde.serialize(x)` as hex, and
`serde.deserialize(bytes).toString()`, the payload `kafka-dump-log.sh --remote-log-metadata-decoder`
prints, for a RemoteLogSegmentMetadata (COPY_SEGMENT_STARTED, epochs {0=0, 2=150}), its update to
COPY_SEGMENT_FINISHED with 3 bytes of custom metadata, and a RemotePartitionDeleteMetadata.
"""

from __future__ import annotations

import pytest

from storage_core.errors import CorruptRecordError, UnknownMessageTypeError
from storage_core.messages import REMOTE_LOG_METADATA, read_metadata_record, write_metadata_record
from storage_core.messages.schemas.remote_log_metadata import RemoteLogSegmentState
from storage_core.tiered.events import SegmentMetadata, SegmentUpdate, event_text, read_event

SEGMENT = bytes.fromhex(
    "010000076f7264657273e0bea0de74a14fe78c0ad2bef97f3ab30000000300666f6f62617262617a7175787175757800000000000000"
    "006400000000000000c7000000010000018bcfe5687b0000018bcfe56be70300000000000000000000000000000000020000000000"
    "0000960000001000000000"
)
UPDATE = bytes.fromhex(
    "010100076f7264657273e0bea0de74a14fe78c0ad2bef97f3ab30000000300666f6f62617262617a7175787175757800000000010000"
    "018bcfe56be8040102030100"
)
DELETE = bytes.fromhex("010200076f7264657273e0bea0de74a14fe78c0ad2bef97f3ab30000000300000000000000018bcfe56fd00000")
SEGMENT_ID = "RemoteLogSegmentId{topicIdPartition=4L6g3nShT-eMCtK--X86sw:orders-3, id=Zm9vYmFyYmF6cXV4cXV1eA}"
KAFKA_TEXT = {
    SEGMENT: f"RemoteLogSegmentMetadata{{remoteLogSegmentId={SEGMENT_ID}, startOffset=100, endOffset=199, "
    "brokerId=1, maxTimestampMs=1700000000123, eventTimestampMs=1700000000999, segmentLeaderEpochs={0=0, 2=150}, "
    "segmentSizeInBytes=4096, customMetadata=Optional.empty, state=COPY_SEGMENT_STARTED, txnIdxEmpty=false}",
    UPDATE: f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={SEGMENT_ID}, "
    "customMetadata=Optional[CustomMetadata{3 bytes}], state=COPY_SEGMENT_FINISHED, eventTimestampMs=1700000001000, "
    "brokerId=1}",
    DELETE: "RemotePartitionDeleteMetadata{topicPartition=4L6g3nShT-eMCtK--X86sw:orders-3, "
    "state=DELETE_PARTITION_MARKED, eventTimestampMs=1700000002000, brokerId=0}",
}


@pytest.mark.parametrize("value", list(KAFKA_TEXT), ids=["segment", "update", "partition-delete"])
def test_each_record_prints_as_kafkas_dump_tool_prints_it_and_writes_back_to_kafkas_bytes(value: bytes) -> None:
    assert event_text(read_event(value)) == KAFKA_TEXT[value]
    record = read_metadata_record(value, REMOTE_LOG_METADATA)
    assert write_metadata_record(record.spec, record.data, record.version, REMOTE_LOG_METADATA) == value


def test_the_events_carry_the_segment_offsets_and_states() -> None:
    segment, update = read_event(SEGMENT), read_event(UPDATE)
    assert isinstance(segment, SegmentMetadata)
    assert isinstance(update, SegmentUpdate)
    assert (segment.start_offset, segment.end_offset, segment.size_bytes) == (100, 199, 4096)
    assert segment.leader_epochs == ((0, 0), (2, 150))
    assert str(segment.partition) == "4L6g3nShT-eMCtK--X86sw:orders-3"
    assert update.segment_id == segment.segment_id
    assert update.state is RemoteLogSegmentState.COPY_SEGMENT_FINISHED


def test_what_kafkas_serde_refuses_is_an_error() -> None:
    with pytest.raises(UnknownMessageTypeError):
        read_event(bytes.fromhex("010900"))  # api key 9: no such record
    bad_state = bytearray(UPDATE)
    bad_state[-2] = 7  # RemoteLogSegmentState 7
    with pytest.raises(CorruptRecordError, match="RemoteLogSegmentState id 7"):
        read_event(bytes(bad_state))
