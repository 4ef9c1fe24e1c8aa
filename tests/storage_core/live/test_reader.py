"""The consumer-style reader: chunked reads agree with a whole-file scan; live tails, deletions,
replacements and truncations under the reader are reported, never raised."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from storage_core import names
from storage_core.live.reader import Chunk, ReadStatus, is_live, read_partition, read_segment
from storage_core.records.batch import Record, build_batch
from storage_core.records.file_records import iterate_batches, scan_valid_prefix
from tests.builders.log_dir import T0, LogDirBuilder
from tests.lock_holder import hold_log_dir_lock


def _batches(sizes: list[int], *, first_offset: int = 0) -> bytes:
    out, offset = [], first_offset
    for size in sizes:
        out.append(build_batch([Record(offset, T0 + offset, b"k", b"v" * size)], base_offset=offset))
        offset += 1
    return b"".join(out)


def _segment(tmp_path: Path, data: bytes, base_offset: int = 0) -> Path:
    dir_path = tmp_path / "t-0"
    dir_path.mkdir(exist_ok=True)
    names.log_file(dir_path, base_offset).write_bytes(data)
    return dir_path


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=0, max_size=12),
    chunk_bytes=st.integers(1, 5000),
    cut=st.integers(0, 200),
    flip=st.one_of(st.none(), st.integers(0, 10**6)),
)
def test_chunked_reads_agree_with_a_whole_file_scan(tmp_path_factory, sizes, chunk_bytes, cut, flip) -> None:
    data = bytearray(_batches(sizes))
    if flip is not None and data:
        data[flip % len(data)] ^= 0x10
    data = bytes(data[: max(0, len(data) - cut)])
    dir_path = _segment(tmp_path_factory.mktemp("chunks"), data)
    seen: list[int] = []

    def on_chunk(chunk: Chunk) -> None:
        seen.extend(chunk.position + b.position for b in iterate_batches(chunk.buffer, end=chunk.end))

    read = read_segment(dir_path, 0, is_active=False, live=False, on_chunk=on_chunk, chunk_bytes=chunk_bytes)
    whole = scan_valid_prefix(data)
    assert (read.valid_bytes, read.batch_count, read.last_offset) == (
        whole.valid_bytes,
        whole.batch_count,
        whole.last_offset,
    )
    assert seen == [b.position for b in iterate_batches(data, end=whole.valid_bytes)]
    assert read.invalid_position == whole.invalid_position
    assert read.status is (ReadStatus.OK if whole.invalid_reason is None else ReadStatus.INVALID)


def test_a_live_active_segment_ends_in_flight_a_closed_one_is_invalid(tmp_path: Path) -> None:
    whole = _batches([100, 100, 100])
    dir_path = _segment(tmp_path, whole[:-7])
    active = read_segment(dir_path, 0, is_active=True, live=True)
    assert (active.status, active.batch_count, active.invalid_position) == (
        ReadStatus.IN_FLIGHT,
        2,
        2 * len(whole) // 3,
    )
    assert read_segment(dir_path, 0, is_active=False, live=True).status is ReadStatus.INVALID
    assert read_segment(dir_path, 0, is_active=True, live=False).status is ReadStatus.INVALID
    # log.preallocate=true: the active segment runs on zero-filled; a CRC error is never in flight
    names.log_file(dir_path, 0).write_bytes(whole + bytes(4096))
    assert read_segment(dir_path, 0, is_active=True, live=True).status is ReadStatus.IN_FLIGHT
    flipped = bytearray(whole)
    flipped[-5] ^= 1
    names.log_file(dir_path, 0).write_bytes(bytes(flipped))
    assert read_segment(dir_path, 0, is_active=True, live=True).status is ReadStatus.INVALID


def test_segments_deleted_or_replaced_during_the_read_are_changed_not_failed(tmp_path: Path) -> None:
    dir_path = LogDirBuilder(tmp_path / "logs").partition("t", 0, segments=3, batches_per_segment=50)
    bases = names.log_base_offsets(os.listdir(dir_path))

    def broker(base_offset: int, is_active: bool):
        def on_chunk(chunk: Chunk) -> None:
            log = names.log_file(dir_path, base_offset)
            if chunk.position > 0:
                return  # act once, after the first chunk
            if base_offset == bases[0]:  # retention: renamed to .deleted while we read it
                log.rename(log.with_name(log.name + names.DELETED_SUFFIX))
            elif base_offset == bases[1]:  # the cleaner: a .swap renamed over the .log
                swap = log.with_name(log.name + ".swap")
                swap.write_bytes(log.read_bytes())
                swap.rename(log)

        return on_chunk

    snapshot = read_partition(dir_path, live=True, visit=broker, chunk_bytes=512)
    assert [r.status for r in snapshot.reads] == [
        ReadStatus.CHANGED_DURING_READ,
        ReadStatus.CHANGED_DURING_READ,
        ReadStatus.OK,
    ]
    assert snapshot.segments_before == tuple(bases)
    assert snapshot.segments_after == tuple(bases[1:])
    assert not snapshot.consistent
    assert read_partition(dir_path, live=True).consistent
    gone = read_segment(dir_path, bases[0], is_active=False, live=True)
    assert (gone.status, gone.file_bytes) == (ReadStatus.CHANGED_DURING_READ, 0)


def test_a_truncation_under_the_reader_is_cut_short_not_a_crash(tmp_path: Path) -> None:
    data = _batches([1000] * 20)
    dir_path = _segment(tmp_path, data)

    def truncate(chunk: Chunk) -> None:
        os.truncate(names.log_file(dir_path, 0), len(data) // 2)

    read = read_segment(dir_path, 0, is_active=True, live=True, on_chunk=truncate, chunk_bytes=2048)
    assert read.status is ReadStatus.IN_FLIGHT
    assert read.valid_bytes <= len(data) // 2 + 2048


def test_is_live_asks_without_locking_and_creates_nothing(tmp_path: Path) -> None:
    assert not is_live(tmp_path)
    assert list(tmp_path.iterdir()) == []
    holder = hold_log_dir_lock(tmp_path)
    try:
        assert is_live(tmp_path)
    finally:
        holder.kill()
        holder.wait()
    assert not is_live(tmp_path)
