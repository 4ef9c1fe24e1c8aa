"""Every file written by a real Kafka broker under ../shared/realdata parses, with the MANIFEST's facts.

The MANIFEST's facts were computed by two independent implementations (kafka-python and aiokafka);
these tests recompute them with storage_core and compare.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from storage_core import names
from storage_core.checkpoint import read_offset_checkpoint
from storage_core.errors import CorruptCheckpointError
from storage_core.fs import LocalFileSystem
from storage_core.index.offset_index import OffsetIndex
from storage_core.index.time_index import TimeIndex
from storage_core.leader_epoch import read_leader_epoch_checkpoint
from storage_core.meta_properties import read_meta_properties
from storage_core.partition_metadata import read_partition_metadata
from storage_core.producer_snapshot import read_snapshot
from storage_core.records.control import ControlRecordType, parse_control_key
from storage_core.records.file_records import iterate_batches
from tests.realdata.manifest import ManifestRow, rows_of_kind

pytestmark = pytest.mark.both_cores  # CI runs it again on the pure-Python core (./dev test)

FS = LocalFileSystem()


def _ids(rows: list[ManifestRow]) -> list[str]:
    return [row.id for row in rows]


def _control_name(key: bytes) -> str:
    code = parse_control_key(key)
    return ControlRecordType(code).name if code in ControlRecordType._value2member_map_ else "UNKNOWN"


BATCH_ROWS = rows_of_kind("record batches")


@pytest.mark.parametrize("row", BATCH_ROWS, ids=_ids(BATCH_ROWS))
def test_record_batch_files_match_the_peers(row: ManifestRow) -> None:
    data = row.path.read_bytes()
    batches = list(iterate_batches(data))
    records = [(batch, record) for batch in batches for record in batch.records()]
    facts = row.facts()
    codecs = Counter(batch.compression.name.lower() for batch in batches)
    controls = Counter(_control_name(r.key) for b, r in records if b.is_control and r.key is not None)
    offsets = [r.offset for _, r in records]
    valid_end = batches[-1].position + batches[-1].size_in_bytes if batches else 0

    assert len(batches) == int(facts["batches"])
    assert len(records) == int(facts["records"])
    assert {str(b.magic) for b in batches} == {facts["magic"]}
    assert ",".join(f"{c}:{n}" for c, n in sorted(codecs.items())) == facts["comp"]
    assert sum(b.is_transactional for b in batches) == int(facts["txn_batches"])
    ctrl = facts["ctrl_batches"]
    assert sum(b.is_control for b in batches) == int(ctrl.split("(")[0])
    if "(" in ctrl:
        expected = dict(item.split(":") for item in ctrl[ctrl.index("(") + 1 : -1].split(","))
        assert controls == Counter({name: int(n) for name, n in expected.items()})
    assert len({b.producer_id for b in batches if b.producer_id >= 0}) == int(facts["pids"])
    assert sum(r.key is not None for _, r in records) == int(facts["keyed"])
    assert sum(r.value is None for _, r in records) == int(facts["null_values"])
    assert sum(bool(r.headers) for _, r in records) == int(facts["with_headers"])
    assert f"{min(offsets)}..{max(offsets)}" == facts["offsets"]
    assert sum(not b.is_valid() for b in batches) == int(facts["crc_fail"])
    assert len(data) - valid_end == int(facts["tail_bytes"])


OFFSET_INDEX_ROWS = rows_of_kind("offset index")


@pytest.mark.parametrize("row", OFFSET_INDEX_ROWS, ids=_ids(OFFSET_INDEX_ROWS))
def test_offset_index_files_match_the_peers(row: ManifestRow) -> None:
    base_offset = names.offset_from_file_name(row.path.name)
    index = OffsetIndex.open(row.path, base_offset, fs=FS)
    try:
        entries = index.entries()
        count, first, last = _index_summary(row.contents)
        assert len(entries) == count
        assert (entries[0].offset - base_offset, entries[0].position) == first
        assert (entries[-1].offset - base_offset, entries[-1].position) == last
        index.sanity_check()
    finally:
        index.close()


TIME_INDEX_ROWS = rows_of_kind("time index")


@pytest.mark.parametrize("row", TIME_INDEX_ROWS, ids=_ids(TIME_INDEX_ROWS))
def test_time_index_files_match_the_peers(row: ManifestRow) -> None:
    base_offset = names.offset_from_file_name(row.path.name)
    index = TimeIndex.open(row.path, base_offset, fs=FS)
    try:
        entries = index.entries()
        count, first, last = _index_summary(row.contents)
        assert len(entries) == count
        assert (entries[0].timestamp, entries[0].offset - base_offset) == first
        assert (entries[-1].timestamp, entries[-1].offset - base_offset) == last
    finally:
        index.close()


def _index_summary(contents: str) -> tuple[int, tuple[int, int], tuple[int, int]]:
    count = int(contents.split(":", 1)[1].split()[0])
    first = contents.split("first=(", 1)[1].split(")", 1)[0]
    last = contents.split("last=(", 1)[1].split(")", 1)[0]
    pair = lambda text: tuple(int(x) for x in text.split(", "))  # noqa: E731
    return count, pair(first), pair(last)  # type: ignore[return-value]


SNAPSHOT_ROWS = rows_of_kind("producer-state snapshot v1")


@pytest.mark.parametrize("row", SNAPSHOT_ROWS, ids=_ids(SNAPSHOT_ROWS))
def test_producer_snapshots_match_the_peers(row: ManifestRow) -> None:
    entries = read_snapshot(row.path, fs=FS)
    assert len(entries) == int(row.contents.split(":", 1)[1].split()[0])
    if entries:
        facts = row.facts()
        first = entries[0]
        assert (first.producer_id, first.epoch, first.last_sequence, first.last_offset) == (
            int(facts["pid"]),
            int(facts["epoch"]),
            int(facts["lastSeq"]),
            int(facts["lastOffset"]),
        )
        assert (first.offset_delta, first.coordinator_epoch, first.current_txn_first_offset) == (
            int(facts["offsetDelta"]),
            int(facts["coordEpoch"]),
            int(facts["txnFirstOffset"]),
        )


CHECKPOINT_ROWS = rows_of_kind("checkpoint text") + rows_of_kind("text")


@pytest.mark.parametrize("row", CHECKPOINT_ROWS, ids=_ids(CHECKPOINT_ROWS))
def test_checkpoint_files_parse(row: ManifestRow) -> None:
    lines = row.path.read_bytes().decode().splitlines()
    declared = int(lines[1]) if len(lines) > 1 else 0
    if row.path.name == names.LEADER_EPOCH_CHECKPOINT:
        read = lambda: read_leader_epoch_checkpoint(row.path, fs=FS)  # noqa: E731
    else:
        read = lambda: read_offset_checkpoint(row.path, fs=FS)  # noqa: E731
    if declared != len(lines) - 2 and len(lines) > 1:
        # A file cut short by the broker's crash: Kafka's reader rejects a count mismatch too.
        with pytest.raises(CorruptCheckpointError):
            read()
        return
    assert len(read()) == declared


def test_windows_line_endings_are_read() -> None:
    path = next(r.path for r in rows_of_kind("text") if r.path.name == names.LOG_START_OFFSET_CHECKPOINT)
    assert read_offset_checkpoint(path, fs=FS) == {}


META_ROWS = rows_of_kind("meta.properties")


@pytest.mark.parametrize("row", META_ROWS, ids=_ids(META_ROWS))
def test_meta_properties_match_the_peers(row: ManifestRow) -> None:
    meta = read_meta_properties(row.path, fs=FS)
    facts = dict(item.strip().split("=", 1) for item in row.contents.split(":", 1)[1].split("|"))
    assert str(meta.version) == facts["version"].strip()
    if "cluster.id" in facts:
        assert meta.cluster_id == facts["cluster.id"].strip()
    if "node.id" in facts:
        assert str(meta.node_id) == facts["node.id"].strip()
    if "broker.id" in facts:
        assert str(meta.broker_id) == facts["broker.id"].strip()


METADATA_ROWS = rows_of_kind("partition.metadata")


@pytest.mark.parametrize("row", METADATA_ROWS, ids=_ids(METADATA_ROWS))
def test_partition_metadata_matches_the_peers(row: ManifestRow) -> None:
    metadata = read_partition_metadata(row.path, fs=FS)
    assert metadata.topic_id == row.contents.split("topic_id:", 1)[1].strip()


def test_quorum_state_files_are_json() -> None:
    for row in rows_of_kind("quorum-state"):
        assert "leaderEpoch" in json.loads(row.path.read_bytes())


def test_empty_files_are_empty() -> None:
    for row in rows_of_kind("empty"):
        assert row.path.stat().st_size == 0
