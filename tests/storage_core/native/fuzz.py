"""The sanitizer fuzz campaign of the native core: `./dev fuzz` (its own CI step, bounded in time).

`./dev fuzz` compiles storage_core/native/*.c with AddressSanitizer and UndefinedBehaviorSanitizer
(`-fno-sanitize-recover=all`: the first finding aborts the process, which fails the step) and runs
this module with that build in place of the ordinary one, gcc's libasan preloaded and
PYTHONMALLOC=malloc (so every Python buffer is its own allocation, and a read one byte past a
buffer is a finding). Inputs reach the native side in buffers allocated at their exact size.

Each case mutates a seed (valid segments of every codec, records sections with headers, and the
hostile shapes: batch sizes near INT32_MAX, negative and zero sizes, truncated headers,
overlapping batches, negative key/value/header lengths, varints of 10 bytes, negative base offsets
down to INT64_MIN) and calls every native function on it — the walk with random flags and state,
framing with counts off by one and absurd, the offset map's record puts and probes (negative base
offsets too), CRC-32C and MD5 — and compares each result with the pure-Python twin's
(tests/storage_core/native/twins.py). One case in eight walks at the largest positions a segment
has: its bytes end a sparse anonymous mapping of 2^31 - 1 bytes (Kafka's largest segment; nothing
but the case's pages is ever touched) where the walk starts, and a mapping one byte longer must be
refused by both (SegmentTooLargeError). A difference prints the seed and case and exits 1; the case
count is printed at the end.

Usage: `python -m tests.storage_core.native.fuzz --seconds 120 [--seed N]`.
"""

from __future__ import annotations

import argparse
import ctypes
import mmap
import random
import struct
import sys
import time

from storage_core import native
from storage_core.native import pure
from storage_core.native.layout import (
    INT64_MIN,
    PROBE_LOOKUP,
    PROBE_NONE,
    PROBE_SUPERSEDED,
    REPLAY_EVERY,
    REPLAY_NONE,
    REPLAY_PRODUCER_OR_EPOCH,
    WF_VERIFY_CRC,
    walk_state,
)
from storage_core.records.batch import Record, build_batch
from storage_core.records.compression import CompressionType
from storage_core.records.legacy import build_legacy_messages
from tests.storage_core.native.twins import HOSTILE_INTS, both, map_pair, outcome, walk_all

INT64S = [0, -1, 1, 2**63 - 1, -(2**63), 2**31, 2**31 - 1, 2**62, -(2**31)]
NEGATIVE_BASES = [-1, -2, -(2**31), -(2**31) - 1, -(2**62), -(2**63), -(2**63) + 1]
INT32_MAX = 2**31 - 1
VARINTS = [b"\xff" * 9 + b"\x01", b"\x80" * 10, b"\xfe\xff\xff\xff\x0f", b"\x01", b"\x03", b"\xff\xff\xff\xff\x0f"]


def _batches(rng: random.Random) -> list[bytes]:
    out, offset = [], 0
    for codec in list(CompressionType) * 2:
        n = rng.randint(1, 5)
        records = [
            Record(
                offset + i,
                1_700_000_000_000 + i,
                rng.choice([None, b"k%d" % rng.randint(0, 3)]),
                rng.choice([None, b"v" * rng.randint(0, 40)]),
                tuple((f"h{j}", rng.choice([None, b"x"])) for j in range(rng.randint(0, 2))),
            )
            for i in range(n)
        ]
        producer = rng.choice([-1, 3])
        out.append(
            build_batch(
                records,
                base_offset=offset,
                compression=codec,
                producer_id=producer,
                producer_epoch=0 if producer >= 0 else -1,
                base_sequence=0 if producer >= 0 else -1,
                partition_leader_epoch=rng.randint(-1, 2),
            )
        )
        offset += n
    return out


def seeds(rng: random.Random) -> list[bytes]:
    """Segments, valid and hostile (each a starting point for mutation)."""
    batches = _batches(rng)
    log = b"".join(batches)
    first = bytearray(batches[0])
    hostile = []
    for size in (2**31 - 1, 2**31 - 12, -1, -(2**31), 0, 13, 48, 49):
        damaged = bytearray(first)
        damaged[8:12] = struct.pack(">i", size)
        hostile.append(bytes(damaged) + log)
    overlap = bytearray(log)
    overlap[8:12] = struct.pack(">i", len(batches[0]) - 12 + 30)  # runs 30 bytes into the next batch
    shorter = bytearray(log)
    shorter[8:12] = struct.pack(">i", len(batches[0]) - 12 - 20)  # the next batch starts inside this one
    legacy = build_legacy_messages([Record(0, 1_700_000_000_000, b"k", b"v")], magic=1)
    negative = []  # every batch's base offset moved below zero, in order and not (its CRC does not cover it)
    for base in NEGATIVE_BASES:
        moved, position = bytearray(log), 0
        for batch in batches:
            moved[position : position + 8] = struct.pack(">q", base + position % 7)
            position += len(batch)
        negative.append(bytes(moved))
    shapes = [bytes(overlap), bytes(shorter), log[:16], log[:60], log[:61], legacy + log]
    return [log, *batches, *hostile, *negative, *shapes]


def sections(rng: random.Random) -> list[tuple[bytes, int]]:
    """Records sections (uncompressed) with their counts, valid and hostile."""
    out = []
    for batch in _batches(rng)[:1] + [b for b in _batches(rng) if b[22] & 7 == 0]:
        count = struct.unpack_from(">i", batch, 57)[0]
        out.append((batch[61:], count))
    for varint in VARINTS:  # a record length, then a key length, of every hostile width
        out.append((varint + b"\x00" * 12, 1))
        out.append((b"\x14\x00\x00\x00" + varint + b"\x00" * 12, 1))
    out.append((b"\x10\x00\x00\x00\x03" + b"\x00" * 12, 1))  # key length -2
    out.append((b"\x10\x00\x00\x00\x00\x00\x09" + b"\x00" * 10, 1))  # header count -5
    out.append((b"\x10\x00\x00\x00\x00\x00\xfe\xff\xff\xff\x0f", 1))  # header count INT32_MAX
    return out


def mutate(rng: random.Random, data: bytes, pool: list[bytes]) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(9)
        at = rng.randrange(len(out)) if out else 0
        if kind == 0 and out:
            out[at] ^= 1 << rng.randrange(8)
        elif kind == 1 and out:
            out[at] = rng.choice([0, 1, 2, 0x7F, 0x80, 0xFF])
        elif kind == 2:
            out[at : at + 4] = struct.pack(">I", rng.choice(HOSTILE_INTS) % 2**32)
        elif kind == 3:
            out[at : at + 8] = struct.pack(">Q", rng.choice(INT64S) % 2**64)
        elif kind == 4:
            del out[at:]
        elif kind == 5 and out:  # a region repeated: overlapping and duplicated batches
            end = min(len(out), at + rng.randint(1, 200))
            out[at:at] = out[at:end]
        elif kind == 6:
            other = rng.choice(pool)
            cut = rng.randrange(len(other) + 1)
            out[at:] = other[cut:]
        elif kind == 7:
            out[at:at] = rng.choice(VARINTS)
        else:
            out[at:at] = rng.randbytes(rng.randint(1, 16))
    return bytes(out)


def exact(data: bytes) -> ctypes.Array:
    """`data` in a buffer malloc'd at its exact size (under PYTHONMALLOC=malloc; ctypes keeps 16
    bytes or fewer inside the object). bytes, bytearray and array over-allocate or add a NUL, so
    a read just past their end would go unseen."""
    return (ctypes.c_ubyte * len(data)).from_buffer_copy(data)


def check(name: str, left: object, right: object, context: object) -> None:
    if left != right:
        print(f"fuzz: {name} differs between the native core and its twin\n  case: {context!r}", file=sys.stderr)
        print(f"  native: {left!r}\n  pure:   {right!r}", file=sys.stderr)
        raise SystemExit(1)


class LargeSegments:
    """Sparse anonymous mappings for walks at the largest positions: `largest` is 2^31 - 1 bytes long
    (a case is written at its end, so a read past the end faults), `too_large` one byte longer.
    Only the pages a case writes are ever backed by memory."""

    def __init__(self) -> None:
        self.largest = mmap.mmap(-1, INT32_MAX, flags=mmap.MAP_PRIVATE)
        self.too_large = mmap.mmap(-1, INT32_MAX + 1, flags=mmap.MAP_PRIVATE)

    def place(self, segment: bytes) -> int:
        """Write `segment` at the end of `largest`; where it starts."""
        at = INT32_MAX - len(segment)
        self.largest[at:] = segment
        return at


def walk_case(rng: random.Random, segment: bytes, large: LargeSegments) -> None:
    """The walk over `segment` with random flags and state, natively and by its twin: in a buffer of
    its exact size, or (one case in eight) at the end of the largest segment Kafka has."""
    at = large.place(segment) if rng.random() < 0.125 else 0
    params = {
        "end": rng.choice([-1, -1, at + rng.randint(0, len(segment) + 8)]),
        "flags": rng.randrange(16) | rng.choice([0, WF_VERIFY_CRC]),
        "segment_base": rng.choice([0, 0, 5, 2**31 - 3, 2**62, -1, rng.choice(NEGATIVE_BASES)]),
        "interval": rng.choice([0, 1, 64, 4096]),
        "replay": rng.choice([REPLAY_NONE, REPLAY_EVERY, REPLAY_PRODUCER_OR_EPOCH]),
        "oi_capacity": rng.choice([0, 1, 3, 1000]),
        "ti_capacity": rng.choice([0, 1, 2, 1000]),
        "epoch_floor": rng.randint(-1, 2),
        "position": at + rng.choice([0, 0, 0, rng.randint(-2, len(segment) + 2), 2**62]),
    }
    if at:
        params["last_index_entry"] = rng.choice([0, at, at - 4096])
        check(
            "walk (2^31 - 1 bytes)",
            walk_all(native.walk, large.largest, params),
            walk_all(pure.walk, large.largest, params),
            (params, segment),
        )
        check(
            "walk (2^31 bytes)",
            outcome(lambda: native.walk(large.too_large, walk_state(end=-1, flags=params["flags"]), *_entries())),
            outcome(lambda: pure.walk(large.too_large, walk_state(end=-1, flags=params["flags"]), *_entries())),
            params,
        )
        return
    check("walk", walk_all(native.walk, exact(segment), params), walk_all(pure.walk, segment, params), params)


def _entries() -> tuple[bytearray, bytearray]:
    return bytearray(), bytearray()


def one_case(
    rng: random.Random, segment_pool: list[bytes], section_pool: list[tuple[bytes, int]], large: LargeSegments
) -> None:
    segment = mutate(rng, rng.choice(segment_pool), segment_pool)
    walk_case(rng, segment, large)
    check("crc32c", native.crc32c(exact(segment)), pure.crc32c(segment), len(segment))
    check("md5", native.md5(exact(segment[:64])), pure.md5(segment[:64]), len(segment))

    section, count = rng.choice(section_pool)
    section = mutate(rng, section, [s for s, _ in section_pool]) if rng.random() < 0.8 else section
    count = rng.choice([count, count, count + 1, count - 1, 0, -1, 2**31 - 1, rng.randint(0, 40)])
    check(
        "frame_records",
        outcome(lambda: native.frame_records(exact(section), count)),
        outcome(lambda: pure.frame_records(section, count)),
        (section, count),
    )
    maps = map_pair(rng.choice([1, 2, 7, 64]), rng.choice([0, 1, 8]))
    base = rng.choice([0, 3, 2**31 - 2, 2**62, rng.choice(NEGATIVE_BASES)])
    last = max(INT64_MIN, base + rng.choice([0, max(count - 1, 0), 100, -1]))
    try:
        start, max_entries = max(INT64_MIN, base + rng.randint(-1, 3)), rng.randint(0, 70)
        both("map_put_records", maps, section, count, base, last, start, max_entries, native_buffer=exact)
        for probe in (PROBE_NONE, PROBE_LOOKUP, PROBE_SUPERSEDED):
            both(
                "map_retained",
                maps,
                section,
                count,
                base,
                last,
                max(INT64_MIN, base + rng.randint(-1, 5)),
                probe,
                native_buffer=exact,
            )
    except AssertionError as exc:
        check("offset map", "see case", str(exc), (section, count, base, last))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    if native.IMPLEMENTATION != "native":
        print(f"fuzz: the compiled core is not active: {native.describe()}", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    segment_pool, section_pool, large = seeds(rng), sections(rng), LargeSegments()
    deadline, cases = time.monotonic() + args.seconds, 0
    module = native.implementation._native.__file__  # type: ignore[union-attr]
    print(f"fuzz: seed {seed}, {native.describe()} from {module}, {args.seconds:.0f} s", flush=True)
    while time.monotonic() < deadline:
        one_case(rng, segment_pool, section_pool, large)
        cases += 1
    print(f"fuzz: {cases} cases, no difference between the core and its twins (seed {seed})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
