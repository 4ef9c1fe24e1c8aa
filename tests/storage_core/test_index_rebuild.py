"""`rebuild_indexes`: which on-disk indexes are valid, and the rebuild that replaces the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage_core import names
from storage_core.fs import LocalFileSystem
from storage_core.index.offset_index import OffsetPosition, encode_offset_index
from storage_core.index.time_index import TimestampOffset, encode_time_index
from storage_core.index_rebuild import rebuild_indexes
from storage_core.load_actions import ActionKind
from storage_core.partition_segments import SegmentSettings
from storage_core.records.batch import Record, build_batch

FS = LocalFileSystem()
SETTINGS = SegmentSettings(index_interval_bytes=200)
# Batches of 3 records at offsets 0, 3, ..., 27 with a gap after 14 (a compacted log): 0-2, ..., 12-14, 20-22, ...
BASES = [0, 3, 6, 9, 12, 20, 23, 26]


def write_partition(part: Path) -> list[int]:
    """The segment at offset 0; returns the batch positions."""
    part.mkdir()
    positions, data = [], b""
    for base in BASES:
        positions.append(len(data))
        records = [Record(base + i, 1_000 + base + i, b"k%d" % i, b"v" * 40) for i in range(3)]
        data += build_batch(records, base_offset=base)
    names.log_file(part, 0).write_bytes(data)
    return positions


def verify(part: Path) -> dict[str, str]:
    result = rebuild_indexes(part, settings=SETTINGS, verify_only=True, fs=FS)
    return {a.file: a.reason for a in result.actions if a.kind == ActionKind.INDEX_MISMATCH}


@pytest.fixture
def part(tmp_path: Path) -> Path:
    return tmp_path / "t-0"


def test_a_rebuild_leaves_indexes_that_verify(part: Path) -> None:
    write_partition(part)
    assert set(verify(part)) == {"00000000000000000000.index", "00000000000000000000.timeindex"}
    rebuilt = rebuild_indexes(part, settings=SETTINGS, verify_only=False, fs=FS)
    assert {a.kind for a in rebuilt.actions} == {ActionKind.REBUILD_INDEX}
    assert names.offset_index_file(part, 0).stat().st_size > 0
    assert verify(part) == {}


def write_indexes(part: Path, offsets: list[OffsetPosition], times: list[TimestampOffset]) -> None:
    names.offset_index_file(part, 0).write_bytes(encode_offset_index(offsets, base_offset=0))
    names.time_index_file(part, 0).write_bytes(encode_time_index(times, base_offset=0))


def test_a_sparser_append_path_index_is_valid(part: Path) -> None:
    """Kafka's append path indexes a chunk by its last offset: (8, start of batch 3-5) is valid."""
    p = write_partition(part)
    write_indexes(part, [OffsetPosition(8, p[1]), OffsetPosition(28, p[6])], [TimestampOffset(1_014, 14)])
    assert verify(part) == {}


@pytest.mark.parametrize(
    ("offsets", "problem"),
    [
        (lambda p: [OffsetPosition(5, p[1] + 3)], "does not point at a batch"),
        (lambda p: [OffsetPosition(4, p[2])], "does not point at a batch"),  # batch 6-8 does not end by 4
        (lambda p: [OffsetPosition(40, p[7])], "does not point at a batch"),  # beyond the log's last offset
        (lambda p: [OffsetPosition(5, 1 << 16)], "does not point at a batch"),  # beyond the log's end
        (lambda p: [OffsetPosition(8, p[2]), OffsetPosition(5, p[3])], "do not increase"),
    ],
)
def test_invalid_offset_index_entries(part: Path, offsets, problem: str) -> None:
    p = write_partition(part)
    write_indexes(part, offsets(p), [])
    assert problem in verify(part)["00000000000000000000.index"]


@pytest.mark.parametrize(
    ("times", "problem"),
    [
        ([TimestampOffset(1_016, 16)], "is not a timestamp"),  # offset 16 is in the compacted gap
        ([TimestampOffset(1_010, 5)], "is not a timestamp"),  # no batch up to offset 5 reaches 1010
        ([TimestampOffset(1_050, 40)], "is not a timestamp"),  # beyond the log
        ([TimestampOffset(1_010, 11), TimestampOffset(1_005, 12), TimestampOffset(1_013, 13)], "do not increase"),
    ],
)
def test_invalid_time_index_entries(part: Path, times: list[TimestampOffset], problem: str) -> None:
    write_partition(part)
    write_indexes(part, [], times)
    assert problem in verify(part)["00000000000000000000.timeindex"]


def test_a_missing_index_is_reported_missing(part: Path) -> None:
    write_partition(part)
    write_indexes(part, [], [])
    names.time_index_file(part, 0).unlink()
    assert verify(part) == {"00000000000000000000.timeindex": "missing"}
