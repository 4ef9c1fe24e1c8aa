"""The compiled core and its pure-Python twins give identical results on the same input.

Hypothesis feeds both random valid and damaged segments, records sections and key streams; every
result is compared whole: the walk's stop code, its full state array and the index entries it
wrote; the frames of a records section or the error (type, message) and so its position; the
offset map's slots, superseded bits and state after every call. The damage includes what hostile
files carry: sizes near INT32_MAX, negative lengths and counts, truncated headers, overlapping
batches (a size that points into the next batch), negative base offsets; and the three defects
issue 28 found by reading and UBSan, each a test that failed before its fix.
"""

from __future__ import annotations

import hashlib
import struct
from array import array
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import storage_core.native as active
from storage_core.errors import SegmentTooLargeError
from storage_core.fs import LocalFileSystem
from storage_core.native import pure
from storage_core.native.layout import (
    INT64_MIN,
    M_ENTRIES,
    PROBE_LOOKUP,
    PROBE_NONE,
    PROBE_SUPERSEDED,
    REPLAY_EVERY,
    REPLAY_NONE,
    REPLAY_PRODUCER_OR_EPOCH,
    WF_CHECK_OFFSETS,
    WF_CHECK_ORDER,
    WF_INDEX,
    WF_VERIFY_CRC,
)
from storage_core.records.batch import Record, build_batch
from storage_core.records.compression import CompressionType
from tests.builders.large_segment import write_segment_past_2_gib
from tests.storage_core.native.twins import (
    HOSTILE_INTS,
    MapBuffers,
    both,
    compiled_core_required,
    map_pair,
    outcome,
    walk_all,
)

pytestmark = compiled_core_required


# -- segments ------------------------------------------------------------------------------------


@st.composite
def batch_bytes(draw: st.DrawFn, base_offset: int) -> bytes:
    count = draw(st.integers(1, 6))
    keyed = draw(st.booleans())
    records = [
        Record(
            base_offset + i,
            draw(st.integers(1_600_000_000_000, 1_600_000_100_000)),
            b"k%d" % draw(st.integers(0, 5)) if keyed else None,
            draw(st.one_of(st.none(), st.binary(max_size=40))),
        )
        for i in range(count)
    ]
    producer = draw(st.sampled_from([-1, 7]))
    return build_batch(
        records,
        base_offset=base_offset,
        compression=draw(st.sampled_from([CompressionType.NONE, CompressionType.GZIP])),
        producer_id=producer,
        producer_epoch=0 if producer >= 0 else -1,
        base_sequence=0 if producer >= 0 else -1,
        partition_leader_epoch=draw(st.integers(-1, 3)),
    )


@st.composite
def segments(draw: st.DrawFn) -> bytes:
    base = draw(st.sampled_from([0, 100, 2**31 - 10, 2**62]))
    out, offset = bytearray(), base
    for _ in range(draw(st.integers(0, 6))):
        delta = draw(st.sampled_from([0, 1, 5, -3]))  # -3: offsets going backwards
        batch = draw(batch_bytes(max(0, offset + delta)))
        out += batch
        offset = max(0, offset + delta) + 6
    for _ in range(draw(st.integers(0, 3))):
        if not out:
            break
        kind = draw(st.sampled_from(["flip", "int32", "int64", "truncate", "append", "magic"]))
        at = draw(st.integers(0, len(out) - 1))
        if kind == "flip":
            out[at] ^= draw(st.integers(1, 255))
        elif kind == "int32" and at + 4 <= len(out):
            out[at : at + 4] = struct.pack(">I", draw(st.sampled_from(HOSTILE_INTS)) % 2**32)
        elif kind == "int64" and at + 8 <= len(out):
            out[at : at + 8] = struct.pack(">q", draw(st.sampled_from([0, -1, 2**63 - 1, -(2**63), 2**31, 2**62])))
        elif kind == "truncate":
            del out[at:]
        elif kind == "append":
            out += draw(st.binary(max_size=80))
        elif kind == "magic" and at + 17 <= len(out):
            out[at + 16] = draw(st.sampled_from([0, 1, 3, 255]))
    return bytes(out)


walk_params = st.fixed_dictionaries(
    {
        "end": st.one_of(st.just(-1), st.integers(0, 2000)),
        "flags": st.integers(0, WF_VERIFY_CRC | WF_CHECK_OFFSETS | WF_INDEX | WF_CHECK_ORDER),
        "segment_base": st.sampled_from([0, 100, 2**31 - 10, 2**62, 2**31 + 200, -1, -(2**31), -(2**63)]),
        "interval": st.sampled_from([0, 1, 100, 4096]),
        "replay": st.sampled_from([REPLAY_NONE, REPLAY_EVERY, REPLAY_PRODUCER_OR_EPOCH]),
        "oi_capacity": st.sampled_from([0, 1, 2, 1000]),
        "ti_capacity": st.sampled_from([0, 1, 2, 3, 1000]),
        "epoch_floor": st.integers(-1, 3),
        "position": st.sampled_from([0, 0, 0, 1, -1, 61, 10**6]),
    }
)


@settings(max_examples=400, deadline=None)
@given(segments(), walk_params)
def test_the_walk_stops_at_the_same_place_with_the_same_state_and_entries(data: bytes, params) -> None:
    assert walk_all(active.walk, data, params) == walk_all(pure.walk, data, params)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000))
def test_crc32c_and_md5_agree(data: bytes) -> None:
    assert active.crc32c(data) == pure.crc32c(data)
    assert active.md5(data) == pure.md5(data)


# -- records sections ----------------------------------------------------------------------------


@st.composite
def records_sections(draw: st.DrawFn) -> tuple[bytes, int]:
    """A batch's records section (uncompressed), possibly damaged, and the count to frame."""
    count = draw(st.integers(0, 8))
    records = [
        Record(
            i,
            1_600_000_000_000 + i,
            draw(st.one_of(st.none(), st.binary(max_size=20))),
            draw(st.one_of(st.none(), st.binary(max_size=40))),
            tuple(
                draw(st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=8))), max_size=2))
            ),
        )
        for i in range(count)
    ]
    section = bytearray(build_batch(records, base_offset=0)[61:]) if count else bytearray()
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["byte", "varint", "truncate", "append"]))
        if kind == "append" or not section:
            section += draw(st.binary(min_size=1, max_size=12))
            continue
        at = draw(st.integers(0, len(section) - 1))
        if kind == "byte":
            section[at] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, section[at] ^ 0x02]))
        elif kind == "varint":  # a long, negative or 64-bit-wide varint
            section[at:at] = draw(
                st.sampled_from([b"\xff" * 9 + b"\x01", b"\x01", b"\xfe\xff\xff\xff\x0f", b"\x80" * 10])
            )
        else:
            del section[at:]
    delta = draw(st.sampled_from([0, 0, 0, -1, 1, -(count + 1), 2**31]))
    return bytes(section), count + delta


@settings(max_examples=500, deadline=None)
@given(records_sections())
def test_framing_gives_the_same_frames_or_the_same_error(case) -> None:
    data, count = case
    assert outcome(lambda: active.frame_records(data, count)) == outcome(lambda: pure.frame_records(data, count))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.integers(-2, 20))
def test_framing_random_bytes_agrees(data: bytes, count: int) -> None:
    assert outcome(lambda: active.frame_records(data, count)) == outcome(lambda: pure.frame_records(data, count))


# -- the offset map ------------------------------------------------------------------------------


keys = st.lists(st.binary(max_size=6), min_size=1, max_size=8)


@st.composite
def key_streams(draw: st.DrawFn) -> list[tuple[list[int], list[bytes]]]:
    """Chunks of (offsets, keys): mostly increasing offsets, sometimes repeats or backwards."""
    pool = draw(keys)
    chunks, offset = [], draw(st.sampled_from([0, 5, 2**40]))
    for _ in range(draw(st.integers(1, 5))):
        n = draw(st.integers(0, 12))
        offsets = []
        for _ in range(n):
            offset += draw(st.sampled_from([1, 1, 1, 2, 9, 0, -4]))
            offsets.append(offset)
        chunks.append((offsets, [draw(st.sampled_from(pool)) for _ in range(n)]))
    return chunks


map_shapes = st.tuples(st.integers(1, 24), st.sampled_from([0, 1, 2, 8, 64]), st.integers(0, 30))


@settings(max_examples=400, deadline=None)
@given(key_streams(), map_shapes, keys)
def test_puts_and_gets_leave_the_same_map(chunks, shape, probes) -> None:
    slots, bits_bytes, max_entries = shape
    maps = map_pair(slots, bits_bytes)
    for offsets, chunk_keys in chunks:
        both("map_put_keys", maps, offsets, chunk_keys, max_entries)
    for key in probes:
        both("map_get", maps, key)


@settings(max_examples=400, deadline=None)
@given(st.lists(records_sections(), min_size=1, max_size=4), map_shapes, st.integers(-1, 6), st.data())
def test_records_put_and_probed_alike(sections, shape, start, data) -> None:
    slots, bits_bytes, max_entries = shape
    maps = map_pair(slots, bits_bytes)
    origin = data.draw(st.sampled_from([0, 0, -5, INT64_MIN]))  # negative base offsets: a damaged base offset
    for base, (section, count) in enumerate(sections):
        base_offset = origin + 10 * base
        last_offset = base_offset + data.draw(st.sampled_from([max(count - 1, 0), 0, 100]))
        start_offset = max(INT64_MIN, start + base_offset)
        both("map_put_records", maps, section, count, base_offset, last_offset, start_offset, max_entries)
    latest = max(INT64_MIN, origin + data.draw(st.integers(-1, 10 * len(sections))))
    for base, (section, count) in enumerate(sections):
        for probe in (PROBE_NONE, PROBE_LOOKUP, PROBE_SUPERSEDED):
            both("map_retained", maps, section, count, origin + 10 * base, origin + 10 * base + 20, latest, probe)


# -- the defects found by reading and UBSan (issue 28) ------------------------------------------


def test_a_segment_past_2_gib_is_refused_by_both_walks_before_they_read(tmp_path: Path) -> None:
    """Kafka's positions in a segment are ints: walk.c stored the batch at 2^31 + 8 as a negative
    index position (a uint32 cast), where the twin raised struct.error. Both refuse it alike."""
    path = tmp_path / "00000000000000000000.log"
    size = write_segment_past_2_gib(path)
    buffer = LocalFileSystem().mmap(path)
    params = {"end": -1, "flags": WF_INDEX, "segment_base": 0, "interval": 0, "replay": REPLAY_NONE}
    params |= {"oi_capacity": 10, "ti_capacity": 10, "epoch_floor": -1, "position": 0}
    refused = ("error", ("SegmentTooLargeError", str(SegmentTooLargeError(size))))
    assert outcome(lambda: walk_all(active.walk, buffer, params)) == refused
    assert outcome(lambda: walk_all(pure.walk, buffer, params)) == refused
    assert outcome(lambda: walk_all(active.walk, memoryview(buffer)[: 2**31 - 1], params))[0] == "ok"


def test_records_at_the_lowest_base_offset_are_in_order_for_both() -> None:
    """module.c computed `base - 1` (undefined at INT64_MIN) and called such records out of order,
    where the twin finds them in order."""
    records = [Record(INT64_MIN + i, 1_700_000_000_000, b"k%d" % i, b"v") for i in range(3)]
    section = build_batch(records, base_offset=INT64_MIN)[61:]
    maps = map_pair(64, 8)
    both("map_put_records", maps, section, 3, INT64_MIN, INT64_MIN + 2, INT64_MIN, 10)
    assert active.map_put_records(*_fresh(), section, 3, INT64_MIN, INT64_MIN + 2, INT64_MIN, 10)[1] is True


def _fresh() -> tuple[bytearray, bytearray, array]:
    buffers = MapBuffers(64, 8)
    return buffers.slots, buffers.bits, buffers.state


def test_the_linear_probes_visit_every_slot_so_a_map_with_one_empty_slot_finds_it() -> None:
    """Kafka adds the attempt to the hash's last int before its absolute value: from an int within
    `slots` below zero the linear probes fold back at zero and never reach the highest slots, so a
    map with its one free slot up there called itself full. Every slot is visited now."""
    slots = 2**20
    key, digest = next(
        (k, d)
        for k, d in ((b"k%d" % i, hashlib.md5(b"k%d" % i).digest()) for i in range(10**6))
        if -(3 * slots) // 4 < int.from_bytes(d[12:], "big", signed=True) < -slots // 4
        and slots - 1 not in {abs(int.from_bytes(d[i : i + 4], "big", signed=True)) % slots for i in range(13)}
    )
    for module in (active, pure):
        buffers = MapBuffers(slots, 0)
        buffers.slots[:] = (b"\x01" * 16 + bytes(8)) * slots  # every slot taken by another digest ...
        buffers.slots[-24:] = bytes(24)  # ... but the last
        buffers.state[M_ENTRIES] = slots - 1
        assert module.map_get(buffers.slots, buffers.bits, buffers.state, key) == -1
        assert module.map_put_keys(buffers.slots, buffers.bits, buffers.state, [7], [key], slots) == 1
        assert bytes(buffers.slots[-24:]) == digest + (7).to_bytes(8, "big")
