from __future__ import annotations

import bisect
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_core.errors import CorruptIndexError, InvalidOffsetError, OffsetOverflowError
from storage_core.fs import LocalFileSystem
from storage_core.index.offset_index import OffsetIndex, OffsetPosition, encode_offset_index

FS = LocalFileSystem()


def test_new_index_is_preallocated_and_trims(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex.open(path, 100, max_index_size=1000, writable=True, fs=FS)
    assert path.stat().st_size == 1000 // 8 * 8
    index.append(137, 4178)
    index.append(150, 9000)
    index.trim_to_valid_size()
    index.close()
    assert path.read_bytes() == bytes.fromhex("00000025000010520000003200002328")
    reopened = OffsetIndex.open(path, 100, fs=FS)
    assert reopened.entries() == [OffsetPosition(137, 4178), OffsetPosition(150, 9000)]
    assert reopened.lookup(149) == OffsetPosition(137, 4178)
    assert reopened.lookup(99) == OffsetPosition(100, 0)


def test_append_rules(tmp_path: Path) -> None:
    index = OffsetIndex.open(tmp_path / "x.index", 0, max_index_size=16, writable=True, fs=FS)
    index.append(5, 10)
    with pytest.raises(InvalidOffsetError):
        index.append(5, 20)
    with pytest.raises(OffsetOverflowError):
        index.append(2**31, 30)
    index.append(6, 30)
    with pytest.raises(ValueError, match="full"):
        index.append(7, 40)


def test_truncate_to(tmp_path: Path) -> None:
    index = OffsetIndex.open(tmp_path / "x.index", 0, writable=True, fs=FS)
    for offset in (10, 20, 30):
        index.append(offset, offset * 10)
    index.truncate_to(20)
    assert index.entries() == [OffsetPosition(10, 100)]
    index.truncate_to(5)
    assert index.entries() == []


@pytest.mark.parametrize(
    "data",
    [b"\x00\x00\x00\x01\x00", b"\xff\xff\xff\xfe\x00\x00\x00\x10"],
    ids=["length not a multiple of 8", "last offset below base"],
)
def test_sanity_check(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "x.index"
    path.write_bytes(data)
    with pytest.raises(CorruptIndexError):
        OffsetIndex.open(path, 0, fs=FS).sanity_check()


def test_full_size_zero_filled_index_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "x.index"
    path.write_bytes(encode_offset_index([OffsetPosition(5, 100)], base_offset=0) + bytes(8 * 100))
    index = OffsetIndex.open(path, 0, fs=FS)
    assert index.entry_count == 101  # Kafka counts every slot of an existing file
    assert index.has_zero_tail()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 1000), min_size=0, max_size=60), st.lists(st.integers(-5, 60_000), max_size=30))
def test_lookup_matches_a_bisect_oracle(tmp_path_factory, gaps: list[int], targets: list[int]) -> None:
    base = 7
    offsets = []
    offset = base
    for gap in gaps:
        offset += gap
        offsets.append(offset)
    path = tmp_path_factory.mktemp("idx") / "x.index"
    path.write_bytes(encode_offset_index([OffsetPosition(o, i * 3) for i, o in enumerate(offsets)], base_offset=base))
    index = OffsetIndex.open(path, base, fs=FS)
    for target in targets:
        slot = bisect.bisect_right(offsets, target) - 1
        expected = OffsetPosition(base, 0) if slot < 0 else OffsetPosition(offsets[slot], slot * 3)
        assert index.lookup(target) == expected
