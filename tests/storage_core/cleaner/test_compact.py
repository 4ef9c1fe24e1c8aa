"""Kafka's LogCleanerTest scenarios (kafka-maintenance.md §8.4), a model check, and crash safety."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.memory_records import MemoryRecords

from storage_core import names
from storage_core.cleaner.compact import CompactResult, compact_partition
from storage_core.cleaner.offset_map import OffsetMap
from storage_core.config import LogConfig
from storage_core.errors import CorruptRecordError
from storage_core.fs import FaultInjectingFileSystem, LocalFileSystem, SimulatedCrash
from storage_core.index_rebuild import rebuild_indexes
from storage_core.records.batch import ATTRIBUTES_POSITION, CRC_POSITION, Record, build_batch, build_end_txn_marker
from storage_core.records.compression import CompressionType
from storage_core.records.crc import crc32c
from storage_core.records.file_records import iterate_batches
from tests.builders.log_dir import recover_unclean
from tests.storage_core.native.twins import pure_python

pytestmark = pytest.mark.both_cores  # CI runs it again on the pure-Python core (./dev test)

NOW = 1_800_000_000_000
COMPACT = LogConfig(cleanup_policy=frozenset({"compact"}), min_cleanable_dirty_ratio=0.0, delete_retention_ms=1000)
FS = LocalFileSystem()


def write_log(path: Path, batches: list[bytes], *, per_segment: int) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for i in range(0, len(batches), per_segment):
        base = next(iterate_batches(batches[i])).base_offset
        names.log_file(path, base).write_bytes(b"".join(batches[i : i + per_segment]))
    recover_unclean(path, now_ms=NOW)


def keyed(offset: int, key: bytes, value: bytes | None, **kw) -> bytes:
    return build_batch([Record(offset, NOW - 10_000 + offset, key, value)], base_offset=offset, **kw)


def records(path: Path) -> list[tuple[int, bytes | None, bytes | None]]:
    return [
        (r.offset, r.key, r.value)
        for log in sorted(path.glob("*.log"))
        for b in iterate_batches(log.read_bytes())
        for r in b.records()
    ]


def compact(
    path: Path,
    *,
    config: LogConfig = COMPACT,
    now: int = NOW,
    checkpoint: int | None = None,
    buffer: int = 1 << 20,
    fs=FS,
    dry_run: bool = False,
):
    return compact_partition(
        path,
        config=config,
        cleaner_checkpoint=checkpoint,
        log_start_offset=0,
        high_watermark=10**12,
        now_ms=now,
        dedupe_buffer_bytes=buffer,
        dry_run=dry_run,
        fs=fs,
    )


def test_latest_value_per_key_survives_with_original_offsets(tmp_path: Path) -> None:
    batches = [keyed(o, b"k%d" % (o % 5), b"v%d" % o) for o in range(50)]
    write_log(tmp_path / "t-0", batches, per_segment=10)
    result = compact(tmp_path / "t-0")
    kept = records(tmp_path / "t-0")
    # The active segment (offsets 40..49) is never cleaned; below it only each key's last value stays.
    assert [o for o, _, _ in kept] == list(range(35, 50))
    assert result.cleaner_offset == 40
    assert len(result.passes) == 1
    stats = result.passes[0].stats
    assert (stats.messages_read, stats.messages_written) == (40, 5)
    assert result.passes[0].summary[-1] == "87.5% size reduction (87.5% fewer messages)"


def test_keys_not_superseded_stay_and_segments_are_grouped(tmp_path: Path) -> None:
    batches = [keyed(o, b"k%d" % o if o < 20 else b"hot", b"v%d" % o) for o in range(40)]
    write_log(tmp_path / "t-0", batches, per_segment=10)
    compact(tmp_path / "t-0")
    kept = records(tmp_path / "t-0")
    assert [o for o, _, _ in kept] == [*range(20), 29, *range(30, 40)]
    # All the cleaned segments fit one segment.bytes group: one output segment at base 0.
    assert [names.offset_from_file_name(p.name) for p in sorted((tmp_path / "t-0").glob("*.log"))] == [0, 30]


def test_tombstones_are_kept_until_the_delete_horizon(tmp_path: Path) -> None:
    batches = [keyed(0, b"a", b"1"), keyed(1, b"b", b"2"), keyed(2, b"a", None), keyed(3, b"c", b"3")]
    write_log(tmp_path / "t-0", [*batches, keyed(4, b"x", b"active")], per_segment=4)
    compact(tmp_path / "t-0")
    assert records(tmp_path / "t-0")[:3] == [(1, b"b", b"2"), (2, b"a", None), (3, b"c", b"3")]
    horizon_batch = next(
        b for b in iterate_batches(names.log_file(tmp_path / "t-0", 0).read_bytes()) if b.base_offset == 2
    )
    assert horizon_batch.delete_horizon_ms == NOW + 1000
    compact(tmp_path / "t-0", checkpoint=0, now=NOW + 999)
    assert (2, b"a", None) in records(tmp_path / "t-0")
    compact(tmp_path / "t-0", checkpoint=0, now=NOW + 1000)
    assert (2, b"a", None) not in records(tmp_path / "t-0")


def test_aborted_transactions_go_committed_stay(tmp_path: Path) -> None:
    txn = {"producer_epoch": 0, "is_transactional": True}
    batches = [
        build_batch([Record(0, NOW, b"a", b"committed")], base_offset=0, producer_id=1, base_sequence=0, **txn),
        build_batch([Record(1, NOW, b"b", b"aborted")], base_offset=1, producer_id=2, base_sequence=0, **txn),
        build_end_txn_marker(
            offset=2, producer_id=2, producer_epoch=0, commit=False, coordinator_epoch=0, timestamp=NOW
        ),
        build_end_txn_marker(
            offset=3, producer_id=1, producer_epoch=0, commit=True, coordinator_epoch=0, timestamp=NOW
        ),
        keyed(4, b"c", b"plain"),
        keyed(5, b"z", b"active"),
    ]
    write_log(tmp_path / "t-0", batches, per_segment=5)
    compact(tmp_path / "t-0")
    kept = records(tmp_path / "t-0")
    assert (0, b"a", b"committed") in kept
    assert all(value != b"aborted" for _, _, value in kept)
    assert (4, b"c", b"plain") in kept


def test_a_full_offset_map_makes_several_passes_with_the_same_result(tmp_path: Path) -> None:
    batches = [keyed(o, b"k%d" % (o % 30), b"v%d" % o) for o in range(200)]
    write_log(tmp_path / "small" / "t-0", batches, per_segment=20)
    write_log(tmp_path / "large" / "t-0", batches, per_segment=20)
    small = compact(tmp_path / "small" / "t-0", buffer=24 * 20)
    compact(tmp_path / "large" / "t-0")
    assert len(small.passes) > 1
    assert small.passes[0].end_offset < 180
    assert records(tmp_path / "small" / "t-0") == records(tmp_path / "large" / "t-0")
    assert OffsetMap(24 * 20).slots == 20  # 24 bytes per key slot


@pytest.mark.parametrize("buffer", [24 * 7, 24 * 20, 1 << 20], ids=["map-fills-often", "map-fills-once", "large-map"])
def test_the_native_core_and_its_twins_compact_to_the_same_bytes(tmp_path: Path, buffer: int) -> None:
    # Keys repeat inside and across batches; batches of 1-9 records; the map may fill mid-batch.
    batches, offset = [], 0
    for size in [1, 4, 9, 2, 7, 3, 9, 5, 1, 8] * 4:
        records_ = [Record(o, NOW + o, b"k%d" % (o * 7 % 23), b"v%d" % o) for o in range(offset, offset + size)]
        batches.append(build_batch(records_, base_offset=offset))
        offset += size
    batches.append(keyed(offset, b"active", b"x"))
    results = {}
    for name, mode in (("active", contextlib.nullcontext), ("pure", pure_python)):
        path = tmp_path / name / "t-0"
        write_log(path, batches, per_segment=6)
        with mode():
            result = compact(path, buffer=buffer)
        results[name] = (
            [(p.end_offset, p.stats.map_messages_read, p.stats.messages_written) for p in result.passes],
            {p.name: p.read_bytes() for p in path.iterdir()},
        )
    assert results["active"] == results["pure"]
    assert len(results["pure"][0]) > (1 if buffer < 1 << 20 else 0)


@pytest.mark.parametrize("codec", list(CompressionType), ids=[c.kafka_name for c in CompressionType])
def test_kept_records_are_recompressed_with_the_batch_codec_and_read_by_kafka_python(tmp_path: Path, codec) -> None:
    batches = [
        build_batch(
            [Record(o + i, NOW, b"k%d" % ((o + i) % 7), b"value %d" % (o + i) * 10) for i in range(10)],
            base_offset=o,
            compression=codec,
        )
        for o in range(0, 100, 10)
    ]
    write_log(tmp_path / "t-0", batches, per_segment=5)
    compact(tmp_path / "t-0")
    for log in sorted((tmp_path / "t-0").glob("*.log")):
        memory = MemoryRecords(log.read_bytes())
        while (batch := memory.next_batch()) is not None:
            assert batch.validate_crc()
            assert batch.compression_type == int(codec)
            list(batch)


def test_dry_run_changes_nothing_and_reports_every_pass_of_a_real_run(tmp_path: Path) -> None:
    def run(part: Path, *, dry_run: bool) -> CompactResult:
        write_log(part, [keyed(o, b"k", b"v%d" % o) for o in range(20)], per_segment=5)
        return compact(part, dry_run=dry_run)

    plan = run(tmp_path / "dry" / "t-0", dry_run=True)
    before = {p.name: p.read_bytes() for p in (tmp_path / "dry" / "t-0").iterdir()}
    real = run(tmp_path / "real" / "t-0", dry_run=False)
    assert {p.name: p.read_bytes() for p in (tmp_path / "dry" / "t-0").iterdir()} == before
    assert plan.initial_plan.is_candidate
    assert plan.passes
    assert [(p.end_offset, p.groups, p.actions) for p in plan.passes] == [
        (p.end_offset, p.groups, p.actions) for p in real.passes
    ]
    assert (plan.cleaner_offset, plan.log_end_offset) == (real.cleaner_offset, real.log_end_offset)


def test_not_a_candidate_below_the_dirty_ratio(tmp_path: Path) -> None:
    write_log(tmp_path / "t-0", [keyed(o, b"k%d" % o, b"v") for o in range(20)], per_segment=5)
    result = compact(tmp_path / "t-0", config=replace(COMPACT, min_cleanable_dirty_ratio=0.99), checkpoint=10)
    assert (result.initial_plan.is_candidate, result.passes) == (False, ())


ops = st.lists(
    st.tuples(st.integers(0, 6), st.one_of(st.none(), st.binary(min_size=1, max_size=4))), min_size=1, max_size=60
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops)
def test_model_last_value_per_key_minus_expired_tombstones(tmp_path_factory, writes) -> None:
    path = tmp_path_factory.mktemp("model") / "t-0"
    batches = [keyed(o, b"k%d" % k, v) for o, (k, v) in enumerate(writes)]
    batches.append(keyed(len(writes), b"active", b"x"))
    write_log(path, batches, per_segment=7)
    active_base = max(names.offset_from_file_name(p.name) for p in path.glob("*.log"))
    compact(path)
    compact(path, checkpoint=0, now=NOW + 10_000)  # past every delete horizon
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    for o, (k, v) in enumerate(writes):
        if o < active_base:
            latest[b"k%d" % k] = (o, v)
    expected = sorted(
        [(o, k, v) for k, (o, v) in latest.items() if v is not None]
        + [(o, b"k%d" % k, v) for o, (k, v) in enumerate(writes) if o >= active_base]
        + [(len(writes), b"active", b"x")]
    )
    assert records(path) == expected


def test_crash_at_every_mutating_operation_leaves_old_or_new_keys(tmp_path: Path) -> None:
    batches = [keyed(o, b"k%d" % (o % 4), b"v%d" % o) for o in range(30)]

    def fresh(name: str) -> Path:
        path = tmp_path / name / "t-0"
        write_log(path, batches, per_segment=10)
        return path

    old = records(fresh("old"))
    reference = fresh("reference")
    counting = FaultInjectingFileSystem()
    compact(reference, fs=counting)
    new = records(reference)
    assert new != old
    for n in range(1, len(counting.operations) + 1):
        path = fresh(f"crash-{n}")
        with pytest.raises(SimulatedCrash):
            compact(path, fs=FaultInjectingFileSystem(fail_at=n))
        recover_unclean(path, now_ms=NOW)
        after = records(path)
        assert after in (old, new), f"crash at operation {n}: {counting.operations[n - 1]}"
        assert not [p for p in path.iterdir() if p.name.endswith((".cleaned", ".swap", ".deleted"))]


def test_segments_are_grouped_by_segment_bytes_and_cleaned_indexes_verify(tmp_path: Path) -> None:
    from storage_core.cleaner.clean import group_segments

    batches = [keyed(o, b"k%d" % o, b"v" * 50) for o in range(60)]
    write_log(tmp_path / "t-0", batches, per_segment=10)
    segment_size = names.log_file(tmp_path / "t-0", 10).stat().st_size  # the largest (keys k10..k59)
    bases = [0, 10, 20, 30, 40]
    groups = group_segments(
        tmp_path / "t-0", bases, max_size=2 * segment_size, max_index_size=10 * 1024 * 1024, first_uncleanable=50, fs=FS
    )
    assert groups == [[0, 10], [20, 30], [40]]
    compact(tmp_path / "t-0", config=replace(COMPACT, segment_bytes=2 * segment_size))
    assert [names.offset_from_file_name(p.name) for p in sorted((tmp_path / "t-0").glob("*.log"))] == [0, 20, 40, 50]
    assert records(tmp_path / "t-0") == [(o, b"k%d" % o, b"v" * 50) for o in range(60)]
    assert rebuild_indexes(tmp_path / "t-0", verify_only=True).actions == ()


def test_a_batch_is_dropped_kept_byte_for_byte_or_rebuilt_around_its_kept_records(tmp_path: Path) -> None:
    def batch(base: int, keys: list[bytes]) -> bytes:
        return build_batch(
            [Record(base + i, NOW + base + i, k, b"v%d" % (base + i)) for i, k in enumerate(keys)], base_offset=base
        )

    superseded, partly, latest = (
        batch(0, [b"a", b"b", b"c"]),
        batch(3, [b"d", b"a", b"e"]),
        batch(6, [b"a", b"b", b"c"]),
    )
    write_log(tmp_path / "t-0", [superseded, partly, latest, keyed(9, b"z", b"active")], per_segment=3)
    compact(tmp_path / "t-0")
    rebuilt = build_batch(
        [Record(3, NOW + 3, b"d", b"v3"), Record(5, NOW + 5, b"e", b"v5")], base_offset=3, last_offset_delta=2
    )
    assert names.log_file(tmp_path / "t-0", 0).read_bytes() == rebuilt + latest


def test_an_offset_met_twice_is_looked_up_not_taken_from_the_superseded_bits(tmp_path: Path) -> None:
    # Offset 5 is both y's (in the clean section) and k's (dirty, superseded by offset 6): only k's goes.
    path = tmp_path / "t-0"
    path.mkdir()
    names.log_file(path, 0).write_bytes(keyed(0, b"a", b"a0") + keyed(5, b"y", b"y5"))
    names.log_file(path, 3).write_bytes(keyed(5, b"k", b"k5") + keyed(6, b"k", b"k6"))
    names.log_file(path, 7).write_bytes(keyed(7, b"z", b"active"))
    # Indexes without recovery: recovery cuts segment 0 at offset 5, which is not below segment 3's base.
    rebuild_indexes(path, verify_only=False)
    compact(path, checkpoint=3)
    assert [(o, k) for o, k, _ in records(path)] == [(0, b"a"), (5, b"y"), (6, b"k"), (7, b"z")]


def test_a_malformed_record_stops_the_pass_before_anything_is_written(tmp_path: Path) -> None:
    damaged = bytearray(keyed(1, b"b", b"1"))
    damaged[-1] = 0x7F  # the header count of the record: -64
    damaged[CRC_POSITION : CRC_POSITION + 4] = crc32c(bytes(damaged[ATTRIBUTES_POSITION:])).to_bytes(4, "big")
    write_log(tmp_path / "t-0", [keyed(0, b"a", b"0"), bytes(damaged), keyed(2, b"z", b"active")], per_segment=2)
    before = {p.name: p.read_bytes() for p in (tmp_path / "t-0").iterdir()}
    with pytest.raises(CorruptRecordError, match="invalid number of record headers"):
        compact(tmp_path / "t-0")
    assert {p.name: p.read_bytes() for p in (tmp_path / "t-0").iterdir()} == before


def test_a_cleaned_segment_is_indexed_batch_by_batch_as_kafka_4_4_does(tmp_path: Path) -> None:
    """One cleaner chunk of 60 kB kept: an index entry per 4 KiB (index.interval.bytes), the entries
    recovery rebuilds, as Kafka 4.4's LogSegment.append writes (4.0 wrote one per chunk; the broker
    tests, tests/kafka, compare with both)."""
    batches = [keyed(o, b"k%d" % (o % 199), b"v" * 300) for o in range(200)] + [keyed(200, b"k", b"active")]
    write_log(tmp_path / "t-0", batches, per_segment=200)
    compact(tmp_path / "t-0")
    assert records(tmp_path / "t-0")[0][0] == 1  # k0's first value is gone: segment 0 was cleaned
    entries = len(names.offset_index_file(tmp_path / "t-0", 0).read_bytes()) // 8
    assert entries == sum(len(b) for b in batches[1:200]) // 4096 - 1
    assert rebuild_indexes(tmp_path / "t-0", verify_only=True).actions == ()
