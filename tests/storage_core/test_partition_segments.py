"""`PartitionSegments.read_next_offset`: Kafka's walk from the offset index's last entry, and its fallbacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage_core.fs import LocalFileSystem
from storage_core.index.offset_index import OffsetPosition, encode_offset_index
from storage_core.partition_segments import PartitionSegments, SegmentSettings
from storage_core.records.batch import Record, build_batch

FS = LocalFileSystem()
BASE = 100


def write_segment(part: Path) -> list[int]:
    """Ten 3-record batches from offset 100; returns the batch positions."""
    part.mkdir()
    positions, data = [], b""
    for i in range(10):
        positions.append(len(data))
        offset = BASE + 3 * i
        data += build_batch([Record(offset + j, 1_000, b"k", b"v" * 30) for j in range(3)], base_offset=offset)
    (part / f"{BASE:020d}.log").write_bytes(data)
    return positions


def next_offset(part: Path) -> int:
    return PartitionSegments(part, SegmentSettings(), fs=FS).read_next_offset(BASE)


@pytest.mark.parametrize(
    "entries",
    [
        pytest.param(lambda p: None, id="no index"),
        pytest.param(lambda p: [], id="empty index"),
        pytest.param(lambda p: [OffsetPosition(105, p[1]), OffsetPosition(117, p[5])], id="sound index"),
        pytest.param(lambda p: [OffsetPosition(117, p[5] + 7)], id="entry inside a batch"),
        pytest.param(lambda p: [OffsetPosition(117, 1 << 20)], id="entry past the end"),
        pytest.param(lambda p: [OffsetPosition(101, p[5])], id="entry below the batch's base offset"),
    ],
)
def test_next_offset_follows_the_last_batch_whatever_the_index(tmp_path: Path, entries) -> None:
    part = tmp_path / "t-0"
    positions = write_segment(part)
    index = entries(positions)
    if index is not None:
        (part / f"{BASE:020d}.index").write_bytes(encode_offset_index(index, base_offset=BASE))
    assert next_offset(part) == BASE + 30


def test_an_empty_segment_ends_at_its_base_offset(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    part.mkdir()
    (part / f"{BASE:020d}.log").write_bytes(b"")
    assert next_offset(part) == BASE
