"""Kafka's LogLoaderTest / LogSegmentTest scenarios (kafka-maintenance.md §8.1) run against load_partition."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from storage_core import names
from storage_core.errors import SegmentTooLargeError, StorageError
from storage_core.fs import FaultInjectingFileSystem, LocalFileSystem, SimulatedCrash
from storage_core.index.offset_index import OffsetIndex
from storage_core.index.time_index import TimeIndex
from storage_core.index.txn_index import AbortedTxn, TransactionIndex
from storage_core.leader_epoch import EpochEntry, read_leader_epoch_checkpoint, write_leader_epoch_checkpoint
from storage_core.load_actions import ActionKind
from storage_core.loader import LoadOptions, LoadResult, load_partition
from storage_core.partition_segments import SegmentSettings
from storage_core.producer_snapshot import write_snapshot
from storage_core.records.batch import Record, build_batch, build_end_txn_marker
from storage_core.records.file_records import iterate_batches
from tests.builders.large_segment import write_segment_past_2_gib

T0 = 1_700_000_000_000
FS = LocalFileSystem()


def batch(offset: int, *, key: bytes | None = b"k", value: bytes | None = b"v", ts: int | None = None, **kw) -> bytes:
    stamp = T0 + 10 * offset if ts is None else ts
    return build_batch([Record(offset, stamp, key, value)], base_offset=offset, **kw)


def write_segment(dir_path: Path, base_offset: int, batches: list[bytes]) -> Path:
    path = names.log_file(dir_path, base_offset)
    path.write_bytes(b"".join(batches))
    return path


def single_record_segments(dir_path: Path, count: int, *, per_segment: int, value_size: int = 10) -> None:
    """`count` one-record batches at offsets 0..count-1, rolled every `per_segment` batches."""
    for base in range(0, count, per_segment):
        write_segment(
            dir_path,
            base,
            [
                batch(o, key=f"k{o}".encode(), value=bytes([o % 251]) * value_size)
                for o in range(base, min(count, base + per_segment))
            ],
        )


def load(dir_path: Path, *, clean: bool = False, rp: int = 0, lso: int = 0, fs=None, **kw) -> LoadResult:
    settings = kw.pop("settings", SegmentSettings(index_interval_bytes=kw.pop("interval", 4096)))
    kw.setdefault("quarantine_dir", dir_path.parent / "quarantine" / dir_path.name)
    options = LoadOptions(
        had_clean_shutdown=clean, recovery_point=rp, log_start_offset=lso, now_ms=T0, settings=settings, **kw
    )
    return load_partition(dir_path, options, fs=fs or FS)


def records_in(dir_path: Path) -> list[tuple[int, bytes | None, bytes | None, int]]:
    out = []
    for path in sorted(dir_path.glob("*.log")):
        for b in iterate_batches(path.read_bytes()):
            out += [(r.offset, r.key, r.value, r.timestamp) for r in b.records()]
    return out


def dir_state(dir_path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(dir_path.iterdir())}


@pytest.fixture
def part(tmp_path: Path) -> Path:
    path = tmp_path / "orders-0"
    path.mkdir()
    return path


def test_unclean_load_rebuilds_missing_indexes_and_keeps_every_record(part: Path) -> None:
    # testIndexRebuild: 200 messages, index.interval 1, indexes deleted.
    single_record_segments(part, 200, per_segment=20)
    before = records_in(part)
    result = load(part, interval=1)
    assert result.log_end_offset == 200
    assert records_in(part) == before
    for base in range(0, 200, 20):
        index = OffsetIndex.open(names.offset_index_file(part, base), base, fs=FS)
        assert index.entry_count > 0
        for offset in range(base, base + 20):
            position = index.lookup(offset).position
            first = next(iterate_batches(names.log_file(part, base).read_bytes(), start=position))
            assert first.base_offset <= offset
        index.close()
        time_index = TimeIndex.open(names.time_index_file(part, base), base, fs=FS)
        assert time_index.lookup(T0 + 10 * (base + 5)).offset == base + 5
        time_index.close()


def test_recovery_point_and_unclean_reload_restore_the_same_indexes(part: Path) -> None:
    # testLogRecoversToCorrectOffset: indexes after a reload with rp = 10 equal those of a full rebuild.
    single_record_segments(part, 100, per_segment=30, value_size=100)
    load(part, interval=300)
    expected = dir_state(part)
    for rp in (100, 10):
        result = load(part, rp=rp, interval=300)
        assert result.log_end_offset == 100
        assert {k: v for k, v in dir_state(part).items() if not k.endswith(".snapshot")} == {
            k: v for k, v in expected.items() if not k.endswith(".snapshot")
        }
    last = TimeIndex.open(names.time_index_file(part, 90), 90, fs=FS)
    assert last.last_entry.offset == 99
    last.close()


def test_missing_time_index_below_recovery_point_becomes_empty(part: Path) -> None:
    # testRebuildTimeIndexForOldMessages
    single_record_segments(part, 200, per_segment=20)
    load(part, interval=1)
    for path in part.glob("*.timeindex"):
        path.unlink()
    load(part, rp=201, interval=1)
    for base in range(0, 180, 20):
        assert names.time_index_file(part, base).stat().st_size == 0


def test_corrupt_indexes_are_rebuilt(part: Path) -> None:
    # testCorruptIndexRebuild: each index overwritten with two spaces.
    single_record_segments(part, 200, per_segment=20)
    load(part, interval=1)
    expected = dir_state(part)
    for path in [*part.glob("*.index"), *part.glob("*.timeindex")]:
        path.write_bytes(b"  ")
    result = load(part, interval=1)
    assert result.log_end_offset == 200
    assert {k: v for k, v in dir_state(part).items() if k.endswith(("index", ".log"))} == {
        k: v for k, v in expected.items() if k.endswith(("index", ".log"))
    }


@pytest.mark.parametrize(
    "content",
    [b"\x00" * 8 * 3 + b"\x01", bytes(10 * 1024 * 1024)],
    ids=["length not a multiple of 8", "full-size zero-filled"],
)
def test_corrupt_index_is_rebuilt_even_after_a_clean_shutdown(part: Path, content: bytes) -> None:
    single_record_segments(part, 40, per_segment=20)
    load(part, interval=1)
    expected = names.offset_index_file(part, 0).read_bytes()
    names.offset_index_file(part, 0).write_bytes(content)
    result = load(part, clean=True, interval=1)
    assert [a.base_offset for a in result.actions if a.kind == ActionKind.RECOVER_SEGMENT] == [0]
    assert names.offset_index_file(part, 0).read_bytes() == expected


def test_orphan_index_files_are_deleted(part: Path) -> None:
    # testBogusIndexSegmentsAreRemoved
    write_segment(part, 0, [batch(0)])
    names.offset_index_file(part, 5).write_bytes(b"")
    names.time_index_file(part, 5).write_bytes(b"")
    result = load(part)
    assert not names.offset_index_file(part, 5).exists()
    assert not names.time_index_file(part, 5).exists()
    assert names.offset_index_file(part, 0).exists()
    assert {a.kind for a in result.actions} >= {ActionKind.DELETE_ORPHAN_INDEX}


def test_deleted_files_are_removed(part: Path) -> None:
    # testOpenDeletesObsoleteFiles
    write_segment(part, 0, [batch(0)])
    Path(str(names.log_file(part, 5)) + ".deleted").write_bytes(batch(5))
    Path(str(names.offset_index_file(part, 5)) + ".deleted").write_bytes(b"")
    load(part)
    assert sorted(p.name for p in part.glob("*.deleted")) == []
    assert records_in(part) == [(0, b"k", b"v", T0)]


@pytest.mark.parametrize("seed", range(10))
def test_garbage_tail_is_truncated_and_all_valid_data_kept(part: Path, seed: int) -> None:
    # testCorruptLog: random bytes appended to the active .log and .index.
    rng = random.Random(seed)
    count = rng.randint(50, 99)
    single_record_segments(part, count, per_segment=40)
    load(part, interval=1)
    before = records_in(part)
    active = max(range(0, count, 40))
    garbage = rng.randbytes(rng.randint(1, 1024))
    with names.log_file(part, active).open("ab") as f:
        f.write(garbage)
    with names.offset_index_file(part, active).open("ab") as f:
        f.write(rng.randbytes(rng.randint(1, 1024)))
    result = load(part, rp=50, interval=1)
    assert result.log_end_offset == count
    assert records_in(part) == before


@pytest.mark.parametrize("tail", ["truncated", "zeros", "bitflip"])
def test_torn_tail_in_middle_segment_deletes_later_segments(part: Path, tail: str) -> None:
    single_record_segments(part, 60, per_segment=20)
    load(part)  # indexes in place: Kafka only deletes later segments when recoverLog truncates
    kept = [r for r in records_in(part) if r[0] < 20]
    log = names.log_file(part, 20)
    data = bytearray(log.read_bytes())
    cut = len(data) // 2 + 30  # inside a batch, past its CRC field
    if tail == "truncated":
        data = data[:cut]
    elif tail == "zeros":
        data[cut:] = bytes(len(data) - cut)
    else:
        data[cut] ^= 0xFF
    log.write_bytes(bytes(data))
    result = load(part)
    survivors = records_in(part)
    assert survivors[: len(kept)] == kept
    assert all(r[0] < 40 for r in survivors)
    assert not names.log_file(part, 40).exists()
    assert result.segments_deleted == 1
    assert result.truncated_bytes > 0
    assert result.log_end_offset == survivors[-1][0] + 1


def test_clean_shutdown_skips_recovery(part: Path) -> None:
    # testCleanShutdownFile: a clean load trusts the log and leaves a (hypothetical) torn tail alone.
    single_record_segments(part, 20, per_segment=20)
    load(part, interval=1)
    log = names.log_file(part, 0)
    with log.open("ab") as f:
        f.write(b"\x01" * 30)
    size = log.stat().st_size
    result = load(part, clean=True, interval=1)
    assert result.truncated_bytes == 0
    assert log.stat().st_size == size


def test_transaction_index_is_rebuilt(part: Path) -> None:
    # testRecoverTransactionIndex (segment base 100)
    batches = [
        build_batch(
            [Record(100, T0, b"a", b"1"), Record(101, T0, b"b", b"2")],
            base_offset=100,
            producer_id=5,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
        ),
        build_batch(
            [Record(102, T0, b"c", b"3"), Record(103, T0, b"d", b"4")],
            base_offset=102,
            producer_id=10,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
        ),
        build_batch([Record(104, T0, b"e", b"5"), Record(105, T0, b"f", b"6")], base_offset=104),
        build_end_txn_marker(
            offset=106, producer_id=10, producer_epoch=0, commit=False, coordinator_epoch=0, timestamp=T0
        ),
        build_end_txn_marker(
            offset=107, producer_id=5, producer_epoch=0, commit=True, coordinator_epoch=0, timestamp=T0
        ),
    ]
    write_segment(part, 100, batches)
    result = load(part, lso=100)
    assert result.log_end_offset == 108
    index = TransactionIndex.open(names.txn_index_file(part, 100), 100, fs=FS)
    assert index.all_entries() == [
        AbortedTxn(producer_id=10, first_offset=102, last_offset=106, last_stable_offset=100)
    ]
    index.close()


def test_leader_epoch_cache_is_rebuilt_from_batches(part: Path) -> None:
    # testRecoveryRebuildsEpochCache
    write_segment(
        part,
        104,
        [
            batch(104, partition_leader_epoch=0),
            batch(106, partition_leader_epoch=1),
            batch(108, partition_leader_epoch=1),
            batch(110, partition_leader_epoch=2),
        ],
    )
    load(part, lso=104)
    assert read_leader_epoch_checkpoint(part / names.LEADER_EPOCH_CHECKPOINT, fs=FS) == [
        EpochEntry(0, 104),
        EpochEntry(1, 106),
        EpochEntry(2, 110),
    ]


def test_leader_epochs_beyond_the_log_end_are_truncated(part: Path) -> None:
    write_segment(part, 0, [batch(0, partition_leader_epoch=1)])
    write_leader_epoch_checkpoint(part / names.LEADER_EPOCH_CHECKPOINT, [EpochEntry(1, 0), EpochEntry(7, 5)], fs=FS)
    load(part, clean=True)
    assert read_leader_epoch_checkpoint(part / names.LEADER_EPOCH_CHECKPOINT, fs=FS) == [EpochEntry(1, 0)]


def test_log_end_below_log_start_deletes_everything(part: Path) -> None:
    # testLogEndLessThanStartAfterReopen
    for offset in range(5):
        write_segment(part, offset, [batch(offset)])
    write_segment(part, 5, [])
    load(part)
    names.log_file(part, 1).write_bytes(b"\x00" * 40)
    result = load(part, lso=4)
    assert sorted(p.name for p in part.glob("*.log")) == [names.log_file(part, 4).name]
    assert names.offset_index_file(part, 4).exists()
    assert names.time_index_file(part, 4).exists()
    assert (result.log_start_offset, result.log_end_offset) == (4, 4)


def test_log_start_offset_comes_from_the_first_segment(part: Path) -> None:
    # testLogStartOffsetWhenRemoteStorageIsEnabled (no tiered storage)
    write_segment(part, 5, [batch(5)])
    assert load(part, lso=0).log_start_offset == 5


def test_empty_active_segment_without_index(part: Path) -> None:
    # testRecoverWithEmptyActiveSegment
    single_record_segments(part, 100, per_segment=50)
    write_segment(part, 100, [])
    result = load(part, rp=100)
    assert result.log_end_offset == 100
    assert names.offset_index_file(part, 100).exists()


def test_largest_stray_snapshot_is_kept(part: Path) -> None:
    # testLoadingLogKeepsLargestStrayProducerStateSnapshot
    for offset in range(3):
        write_segment(part, offset, [batch(offset, producer_id=1, producer_epoch=0, base_sequence=offset)])
    load(part)
    for offset in (1, 2, 4, 3):
        if not names.snapshot_file(part, offset).exists():
            write_snapshot(names.snapshot_file(part, offset), [], fs=FS)
    load(part, rp=3)
    assert sorted(int(p.name.split(".")[0]) for p in part.glob("*.snapshot")) == [1, 2, 3]


def test_snapshot_beyond_log_end_is_removed(part: Path) -> None:
    # testLoadingLogDeletesProducerStateSnapshotsPastLogEndOffset
    write_snapshot(names.snapshot_file(part, 42), [], fs=FS)
    load(part)
    assert list(part.glob("*.snapshot")) == []


def test_dry_run_changes_nothing_and_predicts_the_real_run(part: Path) -> None:
    single_record_segments(part, 60, per_segment=20)
    with names.log_file(part, 40).open("ab") as f:
        f.write(b"\x07" * 100)
    Path(str(names.log_file(part, 60)) + ".cleaned").write_bytes(b"x")
    before = dir_state(part)
    plan = load(part, dry_run=True)
    assert dir_state(part) == before
    real = load(part)
    kinds = {
        ActionKind.TRUNCATE_SEGMENT,
        ActionKind.DELETE_SEGMENT,
        ActionKind.DELETE_CLEANED_FILE,
        ActionKind.RECOVER_SEGMENT,
    }

    def keyed(result: LoadResult) -> list[tuple[ActionKind, str, int]]:
        return [(a.kind, a.file, a.bytes) for a in result.actions if a.kind in kinds]

    assert keyed(plan) == keyed(real)
    assert (plan.log_end_offset, plan.log_start_offset) == (real.log_end_offset, real.log_start_offset)


def test_second_load_changes_nothing(part: Path) -> None:
    single_record_segments(part, 60, per_segment=20)
    load(part)
    state = dir_state(part)
    result = load(part, clean=True)
    assert result.actions == ()
    assert dir_state(part) == state


def test_deep_verify_reports_corruption_below_the_recovery_point_and_keeps_it(part: Path) -> None:
    single_record_segments(part, 60, per_segment=20)
    load(part)
    log = names.log_file(part, 0)
    data = bytearray(log.read_bytes())
    data[len(data) // 2 + 30] ^= 0x01
    log.write_bytes(bytes(data))
    result = load(part, rp=40, deep_verify=True)
    assert result.corruption_found
    assert [a.base_offset for a in result.actions if a.kind == ActionKind.CORRUPTION_DETECTED] == [0]
    assert log.read_bytes() == bytes(data)


def test_crash_at_every_mutating_operation_then_reload_matches_an_uninterrupted_load(tmp_path: Path) -> None:
    def fresh(name: str) -> Path:
        path = tmp_path / name / "orders-0"
        path.mkdir(parents=True)
        single_record_segments(path, 60, per_segment=20)
        with names.log_file(path, 20).open("ab") as f:
            f.write(b"\x05" * 33)
        return path

    reference = fresh("reference")
    counting = FaultInjectingFileSystem()
    load(reference, fs=counting)
    expected = dir_state(reference)
    assert len(counting.operations) > 5
    for n in range(1, len(counting.operations) + 1):
        path = fresh(f"crash-{n}")
        with pytest.raises(SimulatedCrash):
            load(path, fs=FaultInjectingFileSystem(fail_at=n))
        load(path)
        assert dir_state(path) == expected, f"crash at operation {n}: {counting.operations[n - 1]}"


def test_a_segment_whose_offsets_overflow_is_split(part: Path) -> None:
    # testRecoveryOfSegmentWithOffsetOverflow (KAFKA-6264): offsets beyond base + 2^31 - 1.
    high = 2**31 + 10
    low_batches = [batch(o) for o in range(3)]
    high_batches = [batch(o) for o in range(high, high + 3)]
    write_segment(part, 0, low_batches + high_batches)
    write_segment(part, high + 3, [batch(high + 3)])
    before = records_in(part)
    result = load(part)
    assert records_in(part) == before
    assert sorted(p.name for p in part.glob("*.log")) == [
        names.log_file(part, 0).name,
        names.log_file(part, high).name,
        names.log_file(part, high + 3).name,
    ]
    assert len({a.reason for a in result.actions if a.kind == ActionKind.SPLIT_SEGMENT}) == 1  # one split
    assert result.log_end_offset == high + 4
    assert not [p for p in part.iterdir() if p.name.endswith((".cleaned", ".swap", ".deleted"))]
    assert all(a.kind != ActionKind.SPLIT_SEGMENT for a in load(part).actions)


def test_recovering_again_rewrites_no_index_that_already_holds_the_rebuilt_bytes(part: Path) -> None:
    single_record_segments(part, 60, per_segment=20)
    load(part, interval=100)
    before = {p.name: p.read_bytes() for p in part.iterdir() if p.suffix in (".index", ".timeindex")}
    counting = FaultInjectingFileSystem()
    load(part, fs=counting, interval=100)
    written = [str(path) for _, path in counting.operations if str(path).endswith((".index.tmp", ".timeindex.tmp"))]
    assert written == []
    assert all(before.values())  # entries every 100 bytes: none of the files is empty
    assert {p.name: p.read_bytes() for p in part.iterdir() if p.suffix in (".index", ".timeindex")} == before
    names.offset_index_file(part, 20).write_bytes(b"\x00" * 8)  # damaged: rewritten with the rebuilt bytes
    load(part, interval=100)
    assert names.offset_index_file(part, 20).read_bytes() == before[names.offset_index_file(part, 20).name]


def test_a_batch_below_the_segment_base_offset_fails_the_partition_unchanged(part: Path) -> None:
    # Found by the fuzz campaign: a damaged base offset (not covered by the CRC) far below the file's
    # base offset. No split can place it; the partition fails with a StorageError, its log untouched.
    write_segment(part, 100, [batch(o) for o in (-(2**40), 101, 102)])
    before = {p.name: p.read_bytes() for p in part.glob("*.log")}
    with pytest.raises(StorageError, match="below the segment's base offset"):
        load(part)
    assert {p.name: p.read_bytes() for p in part.glob("*.log")} == before
    assert not [p for p in part.iterdir() if p.name.endswith((".cleaned", ".swap", ".deleted"))]


def test_a_crash_during_a_split_recovers_to_the_same_keys(tmp_path: Path) -> None:
    # LogLoaderTest testRecoveryAfterCrashDuringSplitPhase1-5, for every operation of the split.
    high = 2**31 + 10

    def fresh(name: str) -> Path:
        path = tmp_path / name / "t-0"
        path.mkdir(parents=True)
        write_segment(path, 0, [batch(o) for o in (0, 1, high, high + 1)])
        return path

    reference = fresh("reference")
    counting = FaultInjectingFileSystem()
    load(reference, fs=counting)
    expected = dir_state(reference)
    for n in range(1, len(counting.operations) + 1):
        path = fresh(f"crash-{n}")
        with pytest.raises(SimulatedCrash):
            load(path, fs=FaultInjectingFileSystem(fail_at=n))
        load(path)
        assert dir_state(path) == expected, f"crash at {counting.operations[n - 1]}"


@pytest.mark.both_cores
def test_a_segment_past_2_gib_fails_the_load_unchanged_as_kafka_refuses_to_open_it(tmp_path: Path) -> None:
    """Kafka's positions in a segment are ints (FileRecords refuses a larger file): before, the
    compiled walk indexed the batch at 2^31 + 8 at a negative position and the recovery passed, the
    twin failed with struct.error. Now both refuse the segment, name it, and change nothing."""
    part = tmp_path / "t-0"
    part.mkdir()
    log = names.log_file(part, 0)
    size = write_segment_past_2_gib(log)
    before = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in part.iterdir())
    with pytest.raises(SegmentTooLargeError, match=f"segment {log} \\({size}\\) is larger than the maximum"):
        load(part)
    assert sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in part.iterdir()) == before
    assert not (tmp_path / "quarantine").exists()
