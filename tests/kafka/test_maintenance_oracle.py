"""Kafka as the oracle of retention and compaction: the same cleanly stopped log dir, with retention
and compaction due (`aged` retention.ms 5.5 h over records on hour marks 10 h ... 1 h old, `sized`
retention.bytes 2 MiB, `keyed` min.cleanable.dirty.ratio 0.01 and no compaction lag), maintained by
the broker's own retention and cleaner threads, and by `logkeeper retention` + `logkeeper compact`
with the broker's static configs and its clock (`--now-ms`).
"""

from __future__ import annotations

import pytest

from storage_core import names
from storage_core.checkpoint import read_offset_checkpoint
from storage_core.index_rebuild import rebuild_indexes
from storage_core.names import TopicPartition
from storage_core.records.compression import CompressionType
from storage_core.records.file_records import iterate_batches
from tests.kafka.compare import control_batches, partition_dirs, segment_bases, stored_records, tree
from tests.kafka.conftest import Stage

KEYED = "keyed-0"


def _log_start_offsets(stage: Stage) -> dict[str, int]:
    entries = read_offset_checkpoint(stage.log_dir / names.LOG_START_OFFSET_CHECKPOINT)
    return {f"{tp.topic}-{tp.partition}": offset for tp, offset in entries.items()}


def test_retention_deletes_the_segments_the_broker_deletes(
    due: Stage, broker_maintained: Stage, logkeeper_maintained: Stage
) -> None:
    for partition in partition_dirs(due.log_dir):
        kafka = segment_bases(broker_maintained.log_dir / partition)
        ours = segment_bases(logkeeper_maintained.log_dir / partition)
        if partition.startswith(("aged", "sized")):
            assert len(kafka) < len(segment_bases(due.log_dir / partition)), f"{partition}: nothing was due"
        if not partition.startswith("keyed"):  # the cleaner regroups keyed's segments
            assert ours == kafka, partition
    assert _log_start_offsets(logkeeper_maintained) == _log_start_offsets(broker_maintained)


def test_compaction_keeps_the_records_the_broker_keeps(
    due: Stage, broker_maintained: Stage, logkeeper_maintained: Stage
) -> None:
    """The same surviving records (offsets, keys, values, headers) and transaction markers,
    tombstones inside the delete horizon kept, aborted transactions' records removed from the
    cleaned segments (the active one is never cleaned)."""
    before = stored_records(due.log_dir / KEYED)
    kafka = stored_records(broker_maintained.log_dir / KEYED)
    ours = stored_records(logkeeper_maintained.log_dir / KEYED)
    assert len(kafka) < len(before)
    assert [(r.offset, r.key, r.value, r.headers) for r in ours] == [
        (r.offset, r.key, r.value, r.headers) for r in kafka
    ]
    assert control_batches(logkeeper_maintained.log_dir / KEYED) == control_batches(broker_maintained.log_dir / KEYED)
    assert any(r.value is None for r in ours)  # tombstones within delete.retention.ms
    active = segment_bases(due.log_dir / KEYED)[-1]
    aborted = {r.offset for r in before if r.offset < active and r.headers[:1] == (("txn", b"aborted"),)}
    assert aborted
    assert not aborted & {r.offset for r in ours}


def _zstd_recompressed(kafka: bytes, ours: bytes) -> bool:
    """Whether two `.log`s hold the same batches, those whose bytes differ all zstd batches that
    hold the same records (the rewritten batches of the known difference: zstd-jni and the
    zstandard package compress the same records into other bytes)."""
    pairs = list(zip(iterate_batches(kafka), iterate_batches(ours), strict=True))
    for k, o in pairs:
        if bytes(k.raw) == bytes(o.raw):
            continue
        if k.header.attributes & 0x07 != CompressionType.ZSTD or k.header.attributes != o.header.attributes:
            return False
        if (k.base_offset, k.last_offset, k.delete_horizon_ms) != (o.base_offset, o.last_offset, o.delete_horizon_ms):
            return False
        if [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in k.records()] != [
            (r.offset, r.timestamp, r.key, r.value, r.headers) for r in o.records()
        ]:
            return False
    return True


def test_cleaned_segments_are_the_brokers_byte_for_byte(broker_maintained: Stage, logkeeper_maintained: Stage) -> None:
    """Every `.log` (batches the cleaner rewrote, with the delete horizon of the broker's clock, and
    recompressed: none, gzip, snappy, lz4 byte for byte; zstd the same records in other bytes),
    `.txnindex`, `.snapshot`; `.index`/`.timeindex` too on Kafka 4.4, whose LogSegment.append
    indexes batch by batch as logkeeper does, where the `.log` is the broker's byte for byte (else
    logkeeper's are those recovery rebuilds from its `.log`)."""
    kafka = {p: b for p, b in tree(broker_maintained.log_dir).items() if p.startswith(KEYED + "/")}
    ours = {p: b for p, b in tree(logkeeper_maintained.log_dir).items() if p.startswith(KEYED + "/")}
    assert kafka.keys() == ours.keys()
    assert any(p.endswith(names.TXN_INDEX_SUFFIX) for p in kafka)
    horizons = [b.delete_horizon_ms for p in kafka if p.endswith(names.LOG_SUFFIX) for b in iterate_batches(kafka[p])]
    assert any(h is not None for h in horizons)  # batches with tombstones were rewritten and compared
    logs = {p for p in kafka if p.endswith(names.LOG_SUFFIX)}
    recompressed = {p for p in logs if kafka[p] != ours[p]}
    assert all(_zstd_recompressed(kafka[p], ours[p]) for p in recompressed), recompressed
    indexes = (names.INDEX_SUFFIX, names.TIME_INDEX_SUFFIX)
    skipped = {p for p in kafka if p.endswith(names.LEADER_EPOCH_CHECKPOINT)} | logs  # leader epochs: recovery
    skipped |= {p for p in kafka if p.endswith(indexes) and p.rsplit(".", 1)[0] + names.LOG_SUFFIX in recompressed}
    if broker_maintained.version.startswith("4.0."):
        skipped |= {p for p in kafka if p.endswith(indexes)}  # the next test
    assert {p for p in kafka.keys() - skipped if ours[p] != kafka[p]} == set()
    checked = rebuild_indexes(logkeeper_maintained.log_dir / KEYED, verify_only=True)
    assert [a.file for a in checked.actions if not a.file.endswith(names.TXN_INDEX_SUFFIX)] == []


@pytest.mark.parametrize("kafka_version", ["4.0.0"], indirect=True)
def test_kafka_4_0_indexes_a_cleaned_segment_once_per_read_chunk(
    broker_maintained: Stage, logkeeper_maintained: Stage
) -> None:
    """Kafka 4.0's cleaner added at most one offset/time index entry per 256 KiB read chunk (its
    LogSegment.append indexed per append): a sparser index than logkeeper's, which is the one
    recovery rebuilds (and Kafka 4.4's cleaner writes). Both are valid for both versions."""
    fewer = 0
    for base in segment_bases(broker_maintained.log_dir / KEYED):
        kafka = names.offset_index_file(broker_maintained.log_dir / KEYED, base).stat().st_size
        ours = names.offset_index_file(logkeeper_maintained.log_dir / KEYED, base).stat().st_size
        assert kafka <= ours
        fewer += kafka < ours
    assert fewer  # the cleaned segment
    checked = rebuild_indexes(logkeeper_maintained.log_dir / KEYED, verify_only=True)
    assert [a.file for a in checked.actions if not a.file.endswith(names.TXN_INDEX_SUFFIX)] == []


def test_verify_only_flags_the_txn_index_a_cleaner_kept(broker_maintained: Stage, logkeeper_maintained: Stage) -> None:
    """Known difference (docs/kafka-differences.md): the cleaner removes an aborted transaction's
    records but keeps its marker and its `.txnindex` entry; `rebuild-indexes --verify-only` compares
    with what recovery would build from the `.log` (no entry: the records are gone) and reports the
    broker's own file as differing. Harmless for readers: the entry covers records no longer there."""
    for stage in (broker_maintained, logkeeper_maintained):
        flagged = {a.file for a in rebuild_indexes(stage.log_dir / KEYED, verify_only=True).actions}
        assert flagged
        assert all(name.endswith(names.TXN_INDEX_SUFFIX) for name in flagged)


def test_the_cleaner_checkpoint_has_the_brokers_offsets(broker_maintained: Stage, logkeeper_maintained: Stage) -> None:
    """The same cleaned-up-to offsets; logkeeper also records 0 for the compacted topics it found
    nothing to clean in (`__consumer_offsets`, `__transaction_state`), which Kafka reads as no entry
    (the first dirty offset is then the log start offset, 0 here)."""
    kafka = read_offset_checkpoint(broker_maintained.log_dir / names.CLEANER_OFFSET_CHECKPOINT)
    ours = read_offset_checkpoint(logkeeper_maintained.log_dir / names.CLEANER_OFFSET_CHECKPOINT)
    assert {tp: offset for tp, offset in ours.items() if tp in kafka} == kafka
    assert {tp: offset for tp, offset in ours.items() if tp not in kafka} == {
        TopicPartition("__consumer_offsets", 0): 0,
        TopicPartition("__transaction_state", 0): 0,
    }
