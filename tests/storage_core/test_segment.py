"""`build_segment_indexes`: Kafka's `LogSegment.recover` loop, checked against a plain reference.

The reference below is the loop as `LogSegment.recover` writes it, over batch objects from
`iterate_batches`; the function under test reads well-formed magic-2 batches on a faster path, so
every shape that leaves that path (legacy entries, bad framing, torn tails, CRC mismatches) is
compared here with the reference. A property test then compares random segments (v2 batches
small and large, none and zstd, legacy entries, damaged bytes, torn tails, offsets out of int32,
offsets going back, small indexes, any index interval) with a batch-by-batch oracle writing into
real indexes, down to the index bytes, the exception raised and the batches handed to `on_batch`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_core.errors import CorruptRecordError, InvalidOffsetError, OffsetOverflowError, StorageError
from storage_core.fs import LocalFileSystem
from storage_core.index.offset_index import OffsetIndex, OffsetPosition
from storage_core.index.time_index import TimeIndex, TimestampOffset
from storage_core.records.batch import Record, build_batch
from storage_core.records.compression import CompressionType
from storage_core.records.file_records import Batch, iterate_batches
from storage_core.records.legacy import build_legacy_messages
from storage_core.segment import RebuiltIndexes, build_segment_indexes

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


def recover_batch_by_batch(
    data: bytes,
    *,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    index_interval_bytes: int,
    on_batch: Callable[[Batch], None] | None = None,
) -> RebuiltIndexes:
    """The oracle: `LogSegment.recover` one batch at a time over `iterate_batches`, into real indexes."""
    max_ts, max_ts_offset, position, last_entry = -1, -1, 0, 0
    try:
        for batch in iterate_batches(data):
            batch.ensure_valid()
            if not offset_index.can_append_offset(batch.last_offset):
                raise OffsetOverflowError(
                    "offset cannot be stored relative to the segment's base offset",
                    segment=offset_index.path,
                    offset=batch.last_offset,
                )
            if batch.max_timestamp > max_ts:
                max_ts, max_ts_offset = batch.max_timestamp, batch.last_offset
            if position - last_entry > index_interval_bytes:
                offset_index.append(batch.last_offset, position)
                time_index.maybe_append(max_ts, max_ts_offset)
                last_entry = position
            if on_batch is not None:
                on_batch(batch)
            position += batch.size_in_bytes
    except CorruptRecordError:
        pass
    time_index.maybe_append(max_ts, max_ts_offset, skip_full_check=True)
    return RebuiltIndexes(offset_index, time_index, position)


@dataclasses.dataclass
class Outcome:
    """Everything a recovery shows: indexes (bytes), valid prefix, error, batches handed over."""

    offset_index: bytes | None
    time_index: bytes | None
    valid_bytes: int | None
    error: tuple[str, str] | None
    handed: list[tuple[str, int, int, int]]


def outcome_of(recover: Callable[..., RebuiltIndexes], data: bytes, case: dict, *, with_callback: bool) -> Outcome:
    """Run `recover` over `data` into fresh in-memory indexes; the callback fails at batch `callback_fails_at`."""
    handed: list[tuple[str, int, int, int]] = []

    def on_batch(batch: Batch) -> None:
        handed.append((type(batch).__name__, batch.position, batch.size_in_bytes, batch.last_offset))
        if len(handed) == case["callback_fails_at"]:
            raise CorruptRecordError("the callback found a bad record", position=batch.position)

    try:  # built in memory: nothing is written, and the paths show in error messages
        rebuilt = recover(
            data,
            offset_index=OffsetIndex.build_in_memory(
                Path("s.index"), case["base"], max_index_size=case["index_size"], fs=FS
            ),
            time_index=TimeIndex.build_in_memory(
                Path("s.timeindex"), case["base"], max_index_size=case["index_size"], fs=FS
            ),
            index_interval_bytes=case["interval"],
            on_batch=on_batch if with_callback else None,
        )
    except (StorageError, ValueError) as exc:
        return Outcome(None, None, None, (type(exc).__name__, str(exc)), handed)
    return Outcome(rebuilt.offset_index.encoded(), rebuilt.time_index.encoded(), rebuilt.valid_bytes, None, handed)


_INT32_MAX = 2**31 - 1
entry_kinds = st.sampled_from(["small", "small", "small", "small", "large", "zstd", "v0", "v1"])
offset_moves = st.sampled_from(["back", "edge", "over", "under"])
damages = st.one_of(
    st.tuples(st.just("crc"), st.integers(0, 10**6), st.integers(1, 255)),  # a byte the CRC covers, or the CRC
    st.tuples(st.just("frame"), st.integers(0, 16), st.integers(1, 255)),  # offset, length, epoch or magic
)


@st.composite
def segments(draw: st.DrawFn) -> tuple[bytes, dict]:
    """A `.log`'s bytes and how to recover it (base offset, index interval and size, failing callback)."""
    base = draw(st.sampled_from([0, 1_000, 2**40]))
    parts: list[bytes] = []
    offset = base
    for _ in range(draw(st.integers(0, 60))):
        kind = draw(entry_kinds)
        move = draw(offset_moves) if draw(st.integers(0, 39)) == 0 else "next"  # each about 1 batch in 160
        damage = draw(damages) if draw(st.integers(0, 39)) == 0 else None
        count = {"small": draw(st.integers(1, 3)), "large": draw(st.integers(20, 80)), "zstd": 30}.get(kind, 1)
        offset = {
            "next": offset,
            "back": offset - draw(st.integers(1, 50)),
            "edge": base + _INT32_MAX - count + 1,  # last offset = the largest one the base allows
            "over": base + _INT32_MAX + draw(st.integers(1, 5)),
            "under": base - draw(st.integers(1, 5)),
        }[move]
        ts = draw(st.integers(-1, 5_000))
        if kind in ("v0", "v1"):
            part = legacy(offset, int(kind[1]), ts=ts)
        else:
            codec = CompressionType.ZSTD if kind == "zstd" else CompressionType.NONE
            part = v2(offset, count, ts=ts, codec=codec)
        if damage is not None:
            where, at, flip = damage
            at = 17 + at % (len(part) - 17) if where == "crc" else at
            part = part[:at] + bytes([part[at] ^ flip]) + part[at + 1 :]
        parts.append(part)
        offset += count
    data = b"".join(parts)
    tail = draw(st.sampled_from(["none", "torn", "zeros", "garbage"]))
    if tail == "torn" and data:
        data = data[: -draw(st.integers(1, min(len(data), 200)))]
    elif tail == "zeros":
        data += bytes(draw(st.integers(1, 100)))
    elif tail == "garbage":
        data += draw(st.binary(min_size=1, max_size=80))
    case = {
        "base": base,
        "interval": draw(st.one_of(st.just(0), st.integers(1, 300), st.integers(300, 5_000))),
        "index_size": draw(st.sampled_from([10 << 20, 10 << 20, 96])),  # 96: 12 offset / 8 time entries
        "callback_fails_at": draw(st.one_of(st.none(), st.integers(1, 40))),
    }
    return data, case


@settings(max_examples=300, deadline=None)
@given(segments())
def test_matches_batch_by_batch_recovery(segment: tuple[bytes, dict]) -> None:
    data, case = segment
    for with_callback in (False, True):
        expected = outcome_of(recover_batch_by_batch, data, case, with_callback=with_callback)
        assert outcome_of(build_segment_indexes, data, case, with_callback=with_callback) == expected
