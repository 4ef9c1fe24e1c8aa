"""Magic-2 interop with kafka-python, an independent implementation, in both directions:
every header field and every record (offset, timestamp, key, value, headers, sequence) must agree."""

from __future__ import annotations

import pytest

from storage_core.records.batch import Record, RecordBatch, TimestampType, build_batch, build_end_txn_marker
from storage_core.records.compression import CompressionType
from storage_core.records.file_records import iterate_batches
from tests.storage_core.records.peer import PeerRecord, peer_batch, peer_marker, peer_read

pytestmark = pytest.mark.both_cores  # CI runs it again on the pure-Python core (./dev test)

T = 1_700_000_000_000
CODECS = list(CompressionType)
CODEC_IDS = [c.kafka_name for c in CODECS]


def _wrap_add(sequence: int, delta: int) -> int:
    """kafka-format.md §4.4: sequences wrap past 2^31-1 to 0."""
    return (sequence + delta) % 2**31


def _peer_header(peer) -> tuple:
    """kafka-python's view of the 13 header fields, in Kafka's order."""
    return (
        peer.base_offset, peer.size_in_bytes - 12, peer.leader_epoch, peer.magic, peer.crc, peer.attributes,
        peer.last_offset_delta, peer.first_timestamp, peer.max_timestamp, peer.producer_id, peer.producer_epoch,
        peer.base_sequence, peer.records_count,
    )  # fmt: skip


def _peer_records(peer) -> list[Record]:
    """kafka-python's records as ours; it has no per-record sequence, so derive it from the batch."""
    return [
        Record(
            r.offset,
            r.timestamp,
            r.key,
            r.value,
            tuple(r.headers),
            -1 if peer.base_sequence < 0 else _wrap_add(peer.base_sequence, r.offset - peer.base_offset),
        )
        for r in peer
    ]


def _assert_same(data: bytes) -> None:
    """Every batch of `data` reads the same through kafka-python and through us."""
    peers = peer_read(data)
    ours = list(iterate_batches(data))
    assert len(ours) == len(peers)
    for batch, peer in zip(ours, peers, strict=True):
        assert isinstance(batch, RecordBatch)
        assert batch.is_valid()
        assert tuple(batch.header) == _peer_header(peer)
        assert (batch.compression, batch.timestamp_type) == (peer.compression_type, peer.timestamp_type)
        assert (batch.is_transactional, batch.is_control) == (peer.is_transactional, peer.is_control_batch)
        assert (batch.last_offset, batch.next_offset, batch.last_sequence) == (
            peer.last_offset,
            peer.next_offset,
            peer.last_sequence,
        )
        assert batch.records() == _peer_records(peer)


def _records(count: int, *, gap: int = 1) -> list[PeerRecord]:
    """Compressible records with null keys, tombstones and headers mixed in."""
    return [
        (
            i * gap,
            T + 3 * i,
            None if i % 5 == 0 else b"key-%d" % i,
            None if i % 7 == 3 else b"payload %d " % i * 20,
            [("trace", b"%08x" % i), ("empty", None)] if i % 3 == 0 else [],
        )
        for i in range(count)
    ]


SCENARIOS = {
    "plain": {},
    "idempotent": {"producer": (42, 0, 10)},
    "wrapping-sequence": {"producer": (42, 0, 2**31 - 5)},
    "transactional": {"producer": (1000, 3, 0), "transactional": True},
    "log-append-time": {"log_append_time": T + 10_000},
}


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_kafka_python_batches_read_identically(codec: CompressionType, scenario: str) -> None:
    data = peer_batch(_records(25), codec=int(codec), base_offset=500, leader_epoch=4, **SCENARIOS[scenario])
    assert RecordBatch(data).compression is codec  # compressible values: the peer did compress
    _assert_same(data)


def test_kafka_python_segment_with_markers_gaps_and_tombstones_reads_identically() -> None:
    segment = b"".join(
        [
            peer_batch(_records(4), codec=0, base_offset=0),
            peer_batch(_records(6, gap=3), codec=3, base_offset=4, leader_epoch=1),  # offset deltas 0, 3, ... 15
            peer_batch(_records(3), codec=0, base_offset=20, producer=(1000, 3, 0), transactional=True),
            peer_marker(offset=23, producer_id=1000, producer_epoch=3, commit=True, coordinator_epoch=7),
            peer_batch(_records(2), codec=4, base_offset=24, producer=(1001, 0, 0), transactional=True),
            peer_marker(offset=26, producer_id=1001, producer_epoch=0, commit=False, coordinator_epoch=7),
            peer_batch([(0, T, b"gone", None, [])], codec=0, base_offset=27),
        ]
    )
    _assert_same(segment)
    batches = list(iterate_batches(segment))
    assert [b.control_type() for b in batches] == [None, None, None, 1, None, 0, None]
    assert [m.coordinator_epoch for b in batches if (m := b.end_txn_marker()) is not None] == [7, 7]
    assert batches[1].last_offset == 19


# -- ours -> kafka-python ----------------------------------------------------------------------------


def _our_records(count: int, *, first: int) -> list[Record]:
    return [
        Record(
            first + 2 * i,  # gaps, as after compaction
            T + i,
            None if i % 4 == 0 else b"k%d" % i,
            None if i % 6 == 1 else b"v" * (i * 10),
            (("h", b"x"), ("n", None)) if i % 2 else (),
        )
        for i in range(count)
    ]


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
def test_our_batches_are_read_by_kafka_python(codec: CompressionType) -> None:
    records = _our_records(30, first=1000)
    idempotent = {"producer_id": 77, "producer_epoch": 2}
    segment = b"".join(
        [
            build_batch(
                records,
                base_offset=1000,
                compression=codec,
                base_sequence=5,
                partition_leader_epoch=9,
                last_offset_delta=60,
                **idempotent,
            ),
            build_batch([], base_offset=1061, last_offset_delta=3, base_sequence=66, max_timestamp=T, **idempotent),
            build_batch(_our_records(3, first=1065), base_offset=1065, compression=codec, delete_horizon_ms=T + 1),
            build_batch(
                _our_records(3, first=1071),
                base_offset=1071,
                compression=codec,
                timestamp_type=TimestampType.LOG_APPEND_TIME,
                log_append_time_ms=T + 5,
            ),
            build_end_txn_marker(offset=1080, commit=False, coordinator_epoch=1, timestamp=T, **idempotent),
        ]
    )
    _assert_same(segment)
    peers = peer_read(segment)
    assert [r.offset for r in peers[0]] == [r.offset for r in records]
    assert peers[1].records_count == 0
    assert list(peers[1]) == []
    assert [(r.type, r.abort) for r in peers[4]] == [(0, True)]
