"""`build_segment_indexes`: Kafka's `LogSegment.recover` loop, checked against a plain reference.

The reference below is the loop as `LogSegment.recover` writes it, over batch objects from
`iterate_batches`; the function under test reads well-formed magic-2 batches on a faster path, so
every shape that leaves that path (legacy entries, bad framing, torn tails, CRC mismatches) is
compared here with the reference.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from storage_core.errors import CorruptRecordError, InvalidOffsetError, OffsetOverflowError
from storage_core.fs import LocalFileSystem
from storage_core.index.offset_index import OffsetIndex, OffsetPosition
from storage_core.index.time_index import TimeIndex, TimestampOffset
from storage_core.records.batch import Record, build_batch
from storage_core.records.compression import CompressionType
from storage_core.records.file_records import Batch, iterate_batches
from storage_core.records.legacy import build_legacy_messages
from storage_core.segment import build_segment_indexes

FS = LocalFileSystem()
INTERVAL = 120


@dataclasses.dataclass
class Expected:
    offsets: list[OffsetPosition]
    times: list[TimestampOffset]
    valid_bytes: int
    batches: list[tuple[int, int]]


def reference(data: bytes, base_offset: int) -> Expected:
    """`LogSegment.recover`, line by line, over batch objects."""
    offsets: list[OffsetPosition] = []
    times: list[TimestampOffset] = []
    batches: list[tuple[int, int]] = []
    max_ts, max_ts_offset, valid, last_entry = -1, -1, 0, 0

    def offer_time(timestamp: int, offset: int) -> None:
        if timestamp > (times[-1].timestamp if times else -1):
            times.append(TimestampOffset(timestamp, offset))

    try:
        for batch in iterate_batches(data):
            batch.ensure_valid()
            if batch.max_timestamp > max_ts:
                max_ts, max_ts_offset = batch.max_timestamp, batch.last_offset
            if valid - last_entry > INTERVAL:
                offsets.append(OffsetPosition(batch.last_offset, valid))
                offer_time(max_ts, max_ts_offset)
                last_entry = valid
            batches.append((batch.base_offset, batch.last_offset))
            valid += batch.size_in_bytes
    except CorruptRecordError:
        pass
    offer_time(max_ts, max_ts_offset)
    return Expected(offsets, times, valid, batches)


def rebuild(tmp_path: Path, data: bytes, base_offset: int = 0) -> Expected:
    seen: list[Batch] = []
    rebuilt = build_segment_indexes(
        data,
        offset_index=OffsetIndex.build_in_memory(tmp_path / "a.index", base_offset, max_index_size=4096, fs=FS),
        time_index=TimeIndex.build_in_memory(tmp_path / "a.timeindex", base_offset, max_index_size=4096, fs=FS),
        index_interval_bytes=INTERVAL,
        on_batch=seen.append,
    )
    return Expected(
        rebuilt.offset_index.entries(),
        rebuilt.time_index.entries(),
        rebuilt.valid_bytes,
        [(b.base_offset, b.last_offset) for b in seen],
    )


def v2(offset: int, count: int = 3, *, ts: int = 1_000, codec: CompressionType = CompressionType.NONE) -> bytes:
    records = [Record(offset + i, ts + i, b"k%d" % i, b"v" * 40) for i in range(count)]
    return build_batch(records, base_offset=offset, compression=codec)


def legacy(offset: int, magic: int, *, ts: int = 2_000) -> bytes:
    return build_legacy_messages([Record(offset, ts, b"k", b"legacy value")], magic=magic)


def log_of(*parts: bytes) -> bytes:
    return b"".join(parts)


MIXED = log_of(v2(0), v2(3, ts=5_000), legacy(6, 1), legacy(7, 0), v2(8, codec=CompressionType.ZSTD), v2(11))
SHAPES = {
    "v2 only": log_of(*(v2(3 * i, ts=1_000 + 7 * i) for i in range(20))),
    "legacy and v2 mixed": MIXED,
    "torn tail": MIXED + v2(14)[:-5],
    "17-byte tail": MIXED + v2(14)[:17],
    "zero-filled tail": MIXED + bytes(200),
    "crc mismatch": MIXED[:-1] + bytes([MIXED[-1] ^ 1]) + v2(14),
    "v2 length below its header": MIXED
    + (14).to_bytes(8, "big")
    + (30).to_bytes(4, "big")
    + bytes(4)
    + b"\x02"
    + bytes(30),
    "magic 3": MIXED + (14).to_bytes(8, "big") + (60).to_bytes(4, "big") + bytes(4) + b"\x03" + bytes(59),
    "v2 header cut by the file end": MIXED + v2(14)[:40],
    "timestamps going down": log_of(*(v2(3 * i, ts=10_000 - 100 * i) for i in range(12))),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_matches_logsegment_recover(tmp_path: Path, shape: str) -> None:
    data = SHAPES[shape]
    assert rebuild(tmp_path, data) == reference(data, 0)


def test_valid_prefix_ends_before_the_damage(tmp_path: Path) -> None:
    assert rebuild(tmp_path, SHAPES["torn tail"]).valid_bytes == len(MIXED)
    assert rebuild(tmp_path, SHAPES["crc mismatch"]).valid_bytes == len(MIXED) - len(v2(11))


def test_offset_beyond_int32_of_the_base_raises(tmp_path: Path) -> None:
    with pytest.raises(OffsetOverflowError):
        rebuild(tmp_path, log_of(v2(0), v2(2**31)))


def test_offset_below_the_base_raises(tmp_path: Path) -> None:
    with pytest.raises(OffsetOverflowError):
        rebuild(tmp_path, v2(5), base_offset=10)


def test_offsets_going_backwards_fail_at_the_next_index_entry(tmp_path: Path) -> None:
    """Kafka meets a regression only when it appends an index entry (InvalidOffsetException)."""
    data = log_of(*(v2(3 * i) for i in range(5)), *(v2(3 * i) for i in range(5)))
    with pytest.raises(InvalidOffsetError):
        rebuild(tmp_path, data)
