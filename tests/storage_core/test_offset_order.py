"""Keep the valid prefix: a flipped bit in a base offset (outside the CRC) cuts the segment there, not all of it."""

from __future__ import annotations

import contextlib
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_core import names
from storage_core.errors import CorruptDataError
from storage_core.load_actions import FileChange
from storage_core.loader import LoadOptions, LoadResult, load_partition
from storage_core.native import use_twins
from storage_core.offset_order import _first_break, _in_order, _spans, first_out_of_order
from storage_core.partition_segments import SegmentSettings
from storage_core.records.file_records import iterate_batches
from tests.storage_core.native.test_equivalence import segments
from tests.storage_core.records.peer import peer_batch, peer_legacy, peer_read

T0 = 1_700_000_000_000


def _batches(first: int, count: int) -> list[bytes]:
    return [
        peer_batch([(0, T0 + o, b"k%d" % o, b"v" * 40, [])], codec=0, base_offset=o)
        for o in range(first, first + count)
    ]


def _flip(batches: list[bytes], index: int, bit: int) -> bytes:
    """The batches with bit `bit` of batch `index`'s base offset flipped (the CRC stays valid)."""
    damaged = bytearray(batches[index])
    (offset,) = struct.unpack_from(">q", damaged)
    struct.pack_into(">q", damaged, 0, offset ^ (1 << bit))
    return b"".join([*batches[:index], bytes(damaged), *batches[index + 1 :]])


def _position(batches: list[bytes], index: int) -> int:
    return sum(map(len, batches[:index]))


def _peer_offsets(data: bytes) -> list[int]:
    """The record offsets kafka-python reads, every batch's CRC checked."""
    return [record.offset for batch in peer_read(data) for record in batch]


def _load(part: Path, *, interval: int = 4096) -> LoadResult:
    options = LoadOptions(
        had_clean_shutdown=False,
        recovery_point=0,
        log_start_offset=0,
        now_ms=T0,
        settings=SegmentSettings(index_interval_bytes=interval),
        quarantine_dir=part.parent / "quarantine",
    )
    return load_partition(part, options)


@pytest.mark.parametrize(
    ("index", "bit", "cut_at"),
    [
        (8, 2, 8),  # 8 -> 12: batch 8 jumped ahead (batch 9 is below it, above batch 7)
        (8, 20, 8),
        (8, 40, 8),  # far beyond int32 of the base offset: today a failed split, or an emptied segment
        (13, 2, 13),  # 13 -> 9: batch 13 went back
        (3, 0, 3),  # 3 -> 2: equal to batch 2's offset
    ],
)
@pytest.mark.parametrize("interval", [4096, 100], ids=["default-interval", "index-every-batch"])
def test_a_flipped_base_offset_bit_cuts_the_segment_at_that_batch_and_keeps_every_earlier_one(
    tmp_path: Path, index: int, bit: int, cut_at: int, interval: int
) -> None:
    batches = _batches(0, 15)
    part = tmp_path / "t-0"
    part.mkdir()
    damaged = _flip(batches, index, bit)
    names.log_file(part, 0).write_bytes(damaged)
    result = _load(part, interval=interval)
    kept = names.log_file(part, 0).read_bytes()
    assert kept == b"".join(batches[:cut_at])
    assert _peer_offsets(kept) == list(range(cut_at))  # every earlier batch, valid to kafka-python
    (piece,) = result.records_quarantined
    assert Path(piece.target).read_bytes() == damaged[_position(batches, cut_at) :]
    assert piece.change == FileChange.QUARANTINE
    assert "offsets not increasing" in piece.reason
    assert result.log_end_offset == cut_at


def test_the_last_batch_of_a_segment_is_bounded_by_the_next_segment(tmp_path: Path) -> None:
    first, second = _batches(0, 10), _batches(10, 10)
    part = tmp_path / "t-0"
    part.mkdir()
    names.log_file(part, 0).write_bytes(_flip(first, 9, 5))  # 9 -> 41, above the next segment's base 10
    names.log_file(part, 10).write_bytes(b"".join(second))
    result = _load(part)
    assert names.log_file(part, 0).read_bytes() == b"".join(first[:9])
    # The segments had no index, so both were recovered for that first (Kafka's loadSegmentFiles), which
    # keeps the next segment: its offsets follow the cut one's.
    assert names.log_file(part, 10).read_bytes() == b"".join(second)
    quarantined = [a for a in result.actions if a.change == FileChange.QUARANTINE]
    assert [Path(a.target).read_bytes() for a in quarantined] == [_flip(first, 9, 5)[_position(first, 9) :]]


def test_offsets_that_increase_are_never_cut() -> None:
    assert first_out_of_order(b"".join(_batches(0, 15))) is None
    assert first_out_of_order(b"".join(_batches(0, 15)), next_segment_base=15) is None
    gaps = b"".join(b for i, b in enumerate(_batches(0, 15)) if i % 3)  # a compacted segment
    assert first_out_of_order(gaps) is None


def test_legacy_entries_are_ordered_by_their_offsets() -> None:
    entries = [peer_legacy([(o, T0, b"k", b"v")], magic=1, codec=0) for o in (0, 1, 2, 1, 4)]
    found = first_out_of_order(b"".join(entries))
    assert found is not None
    assert found[0] == sum(map(len, entries[:3]))  # offset 1 after offset 2: that entry went back


def _spans_by_iterate_batches(buffer: bytes) -> list[tuple[int, int, int]]:
    """The oracle of the check's own framing: `iterate_batches`, a batch object per entry, stopping
    at its first CorruptDataError."""
    spans = []
    try:
        for batch in iterate_batches(buffer):
            first = batch.base_offset if batch.magic >= 2 else batch.last_offset
            spans.append((batch.position, first, batch.last_offset))
    except CorruptDataError:
        pass
    return spans


@settings(max_examples=400, deadline=None)
@given(segments())
def test_the_order_check_frames_entries_as_iterate_batches_does(data: bytes) -> None:
    assert [tuple(span) for span in _spans(data, None)] == _spans_by_iterate_batches(data)


@settings(max_examples=400, deadline=None)
@given(segments(), st.one_of(st.none(), st.sampled_from([0, 6, 100, 2**31, 2**62]), st.integers(0, 2**62 + 50)))
def test_a_segment_the_native_walk_proves_in_order_has_no_break_batch_by_batch(
    data: bytes, next_segment_base: int | None
) -> None:
    for core in (contextlib.nullcontext, use_twins):
        with core():
            if _in_order(data, next_segment_base):
                assert _first_break(data, next_segment_base) is None
    assert _in_order(b"".join(_batches(0, 15)), 15)  # the fast path is taken where it applies
