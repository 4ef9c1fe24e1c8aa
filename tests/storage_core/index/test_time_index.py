from __future__ import annotations

import bisect
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_core.errors import CorruptIndexError, InvalidOffsetError, StorageError
from storage_core.fs import LocalFileSystem
from storage_core.index.time_index import TimeIndex, TimestampOffset, encode_time_index

FS = LocalFileSystem()


def test_maybe_append_keeps_strictly_increasing_timestamps(tmp_path: Path) -> None:
    path = tmp_path / "x.timeindex"
    index = TimeIndex.open(path, 100, max_index_size=12 * 4, writable=True, fs=FS)
    index.maybe_append(-1, 100)  # no timestamp: nothing written
    assert index.entry_count == 0
    index.maybe_append(1700000000000, 137)
    index.maybe_append(1700000000000, 140)  # same timestamp: skipped
    index.maybe_append(1700000000005, 141)
    with pytest.raises(InvalidOffsetError):
        index.maybe_append(1700000000009, 120)
    with pytest.raises(StorageError):
        index.maybe_append(1, 150)
    index.maybe_append(1700000000009, 150)
    with pytest.raises(ValueError, match="full"):
        index.maybe_append(1700000000010, 151)
    index.maybe_append(1700000000010, 151, skip_full_check=True)
    index.trim_to_valid_size()
    index.close()
    assert path.read_bytes()[:12] == bytes.fromhex("0000018bcfe5680000000025")
    assert TimeIndex.open(path, 100, fs=FS).last_entry == TimestampOffset(1700000000010, 151)


@pytest.mark.parametrize(
    "entries",
    [
        [TimestampOffset(10, 5), TimestampOffset(5, 6)],
        [TimestampOffset(10, -1)],
    ],
    ids=["last timestamp below first", "last offset below base"],
)
def test_sanity_check(tmp_path: Path, entries) -> None:
    path = tmp_path / "x.timeindex"
    path.write_bytes(encode_time_index(entries, base_offset=0))
    with pytest.raises(CorruptIndexError):
        TimeIndex.open(path, 0, fs=FS).sanity_check()
    path.write_bytes(b" " * 13)
    with pytest.raises(CorruptIndexError):
        TimeIndex.open(path, 0, fs=FS).sanity_check()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 500), max_size=50), st.lists(st.integers(0, 30_000), max_size=20))
def test_lookup_matches_a_bisect_oracle(tmp_path_factory, gaps: list[int], targets: list[int]) -> None:
    stamps = []
    stamp = 0
    for gap in gaps:
        stamp += gap
        stamps.append(stamp)
    path = tmp_path_factory.mktemp("ti") / "x.timeindex"
    path.write_bytes(encode_time_index([TimestampOffset(t, 10 + i) for i, t in enumerate(stamps)], base_offset=10))
    index = TimeIndex.open(path, 10, fs=FS)
    for target in targets:
        slot = bisect.bisect_right(stamps, target) - 1
        expected = TimestampOffset(-1, 10) if slot < 0 else TimestampOffset(stamps[slot], 10 + slot)
        assert index.lookup(target) == expected
