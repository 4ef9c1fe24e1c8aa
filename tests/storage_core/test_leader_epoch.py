"""leader-epoch-checkpoint and LeaderEpochCache (storage_core/leader_epoch.py, kafka-maintenance.md §2.8)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_core import names
from storage_core.errors import CorruptCheckpointError
from storage_core.fs import LocalFileSystem
from storage_core.leader_epoch import (
    EpochEntry,
    LeaderEpochCache,
    format_leader_epoch_checkpoint,
    read_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)
from tests.realdata.manifest import REALDATA

FS = LocalFileSystem()
SPEC_EXAMPLE = [EpochEntry(0, 0), EpochEntry(2, 1500), EpochEntry(5, 98000)]
REAL_EPOCH_CHECKPOINTS = sorted(REALDATA.rglob(names.LEADER_EPOCH_CHECKPOINT))


def test_spec_example_bytes_and_round_trip(tmp_path: Path) -> None:
    path = tmp_path / names.LEADER_EPOCH_CHECKPOINT
    write_leader_epoch_checkpoint(path, SPEC_EXAMPLE, fs=FS)
    assert path.read_bytes() == b"0\n3\n0 0\n2 1500\n5 98000\n"
    assert format_leader_epoch_checkpoint(SPEC_EXAMPLE) == path.read_bytes()
    assert read_leader_epoch_checkpoint(path, fs=FS) == SPEC_EXAMPLE
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


@pytest.mark.parametrize("content", [None, b"", b"0\n", b"0\n0\n"], ids=["missing", "empty", "version only", "zero"])
def test_no_entries(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / names.LEADER_EPOCH_CHECKPOINT
    if content is not None:
        path.write_bytes(content)
    assert read_leader_epoch_checkpoint(path, fs=FS) == []


@pytest.mark.parametrize(
    ("content", "line"),
    [
        (b"1\n0\n", 1),
        (b"0\n1\n0 0 0\n", 3),
        (b"0\n1\n0\n", 3),
        (b"0\n1\n2147483648 0\n", 3),
        (b"0\n1\n-1 0\n", 3),
        (b"0\n2\n0 0\n1 -5\n", 4),
        (b"0\n1\n0 0\n\n", 4),
    ],
    ids=["version", "three fields", "one field", "epoch over int32", "negative epoch", "negative start", "blank line"],
)
def test_malformed(tmp_path: Path, content: bytes, line: int) -> None:
    path = tmp_path / names.LEADER_EPOCH_CHECKPOINT
    path.write_bytes(content)
    with pytest.raises(CorruptCheckpointError) as error:
        read_leader_epoch_checkpoint(path, fs=FS)
    assert (error.value.path, error.value.line) == (path, line)


def test_assign_appends_newer_epochs() -> None:
    cache = LeaderEpochCache()
    assert cache.latest_epoch is None
    assert cache.latest_entry is None
    assert cache.assign(2, 10)
    assert cache.assign(3, 20)
    assert cache.entries == [EpochEntry(2, 10), EpochEntry(3, 20)]
    assert cache.latest_entry == EpochEntry(3, 20)


def test_the_latest_epoch_at_a_later_start_is_ignored_but_an_earlier_start_replaces_it() -> None:
    cache = LeaderEpochCache(SPEC_EXAMPLE)
    assert not cache.assign(5, 99000)
    assert not cache.assign(5, 98000)
    assert cache.entries == SPEC_EXAMPLE
    assert cache.assign(5, 97000)
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(2, 1500), EpochEntry(5, 97000)]


def test_a_lower_epoch_or_an_earlier_start_truncates_the_conflicting_tail() -> None:
    cache = LeaderEpochCache(SPEC_EXAMPLE)
    assert cache.assign(4, 50000)  # removes epoch 5 (epoch >= 4)
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(2, 1500), EpochEntry(4, 50000)]
    assert cache.assign(6, 1000)  # removes 4 and 2 (start >= 1000)
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(6, 1000)]
    assert cache.assign(1, 0)  # removes everything (0 >= 0 and 6 >= 1)
    assert cache.entries == [EpochEntry(1, 0)]


def test_negative_assignments_are_refused() -> None:
    cache = LeaderEpochCache()
    with pytest.raises(ValueError, match="invalid leader epoch"):
        cache.assign(-1, 0)
    with pytest.raises(ValueError, match="invalid leader epoch"):
        cache.assign(0, -1)


def test_loading_replays_the_file_through_assign() -> None:
    cache = LeaderEpochCache([EpochEntry(1, 0), EpochEntry(2, 5), EpochEntry(3, 4), EpochEntry(3, 9)])
    assert cache.entries == [EpochEntry(1, 0), EpochEntry(3, 4)]


def test_truncate_from_end() -> None:
    cache = LeaderEpochCache([EpochEntry(1, 0), EpochEntry(2, 10), EpochEntry(3, 20)])
    assert cache.truncate_from_end(-1) == []
    assert cache.truncate_from_end(21) == []
    assert cache.truncate_from_end(10) == [EpochEntry(3, 20), EpochEntry(2, 10)]
    assert cache.entries == [EpochEntry(1, 0)]
    assert cache.truncate_from_end(0) == [EpochEntry(1, 0)]
    assert cache.entries == []


def test_truncate_from_start_keeps_the_epoch_covering_the_new_start() -> None:
    cache = LeaderEpochCache([EpochEntry(1, 5), EpochEntry(2, 10), EpochEntry(3, 20)])
    assert cache.truncate_from_start(4) == []
    assert cache.truncate_from_start(15) == [EpochEntry(1, 5), EpochEntry(2, 10)]
    assert cache.entries == [EpochEntry(2, 15), EpochEntry(3, 20)]
    # Exclusive: an entry starting exactly at the new start is rewritten to itself.
    assert cache.truncate_from_start(20) == [EpochEntry(2, 15), EpochEntry(3, 20)]
    assert cache.entries == [EpochEntry(3, 20)]
    assert cache.truncate_from_start(100) == [EpochEntry(3, 20)]
    assert cache.entries == [EpochEntry(3, 100)]


def test_clear() -> None:
    cache = LeaderEpochCache(SPEC_EXAMPLE)
    cache.clear()
    assert cache.entries == []


operations = st.lists(
    st.one_of(
        st.tuples(st.just("assign"), st.integers(0, 20), st.integers(0, 200)),
        st.tuples(st.just("end"), st.integers(-1, 200), st.just(0)),
        st.tuples(st.just("start"), st.integers(0, 200), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(operations)
def test_both_columns_always_strictly_increase(ops: list[tuple[str, int, int]]) -> None:
    cache = LeaderEpochCache()
    for op, a, b in ops:
        if op == "assign":
            changed = cache.assign(a, b)
            latest = cache.latest_entry
            assert latest is not None
            assert latest == EpochEntry(a, b) if changed else (latest.epoch == a and latest.start_offset <= b)
        elif op == "end":
            cache.truncate_from_end(a)
            assert all(e.start_offset < a for e in cache.entries) or a < 0
        else:
            cache.truncate_from_start(a)
            assert all(e.start_offset >= a for e in cache.entries)
        entries = cache.entries
        assert all(x.epoch < y.epoch and x.start_offset < y.start_offset for x, y in pairwise(entries))
        assert LeaderEpochCache(entries).entries == entries


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**63 - 1)), max_size=20))
def test_file_round_trip(tmp_path_factory: pytest.TempPathFactory, pairs: list[tuple[int, int]]) -> None:
    entries = [EpochEntry(*pair) for pair in pairs]
    path = tmp_path_factory.mktemp("epochs") / names.LEADER_EPOCH_CHECKPOINT
    write_leader_epoch_checkpoint(path, entries, fs=FS)
    assert read_leader_epoch_checkpoint(path, fs=FS) == entries


def test_every_real_file_parses_is_monotonic_and_reformats_to_its_own_bytes() -> None:
    assert len(REAL_EPOCH_CHECKPOINTS) >= 100
    for path in REAL_EPOCH_CHECKPOINTS:
        entries = read_leader_epoch_checkpoint(path, fs=FS)
        assert LeaderEpochCache(entries).entries == entries, path
        if b"\r" not in path.read_bytes():
            assert format_leader_epoch_checkpoint(entries) == path.read_bytes(), path


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        (
            "ArthurArutunyan04__Backend_labs/kafka-data/oms_order_created-1/leader-epoch-checkpoint",
            [(10, 81908), (12, 91078), (14, 94005)],
        ),
        (
            "JY-GIEGIEGIE__Stock-Sys-Integration/kafka-logs/__cluster_metadata-0/leader-epoch-checkpoint",
            [(1, 0), (2, 6347), (3, 7454), (4, 31831)],
        ),
        ("mscaldas2012__kafka-connect-spooldir/kafka-data/__consumer_offsets-0/leader-epoch-checkpoint", [(0, 0)]),
    ],
)
def test_manifest_facts(relative: str, expected: list[tuple[int, int]]) -> None:
    assert read_leader_epoch_checkpoint(REALDATA / relative, fs=FS) == [EpochEntry(*pair) for pair in expected]


def test_manifest_multi_entry_file() -> None:
    path = REALDATA / "ArthurArutunyan04__Backend_labs/kafka-data/__cluster_metadata-0/leader-epoch-checkpoint"
    entries = read_leader_epoch_checkpoint(path, fs=FS)
    assert len(entries) == 8
    assert entries[:4] == [EpochEntry(1, 0), EpochEntry(2, 255), EpochEntry(3, 1944), EpochEntry(4, 3178)]
