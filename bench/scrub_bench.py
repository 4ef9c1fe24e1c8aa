"""Scrub benchmarks: throughput against the read+CRC32C limit, throttle accuracy, page cache kept.

    .venv/bin/python bench/scrub_bench.py [--work DIR] [--mib 256] [--rounds 5] [--window-s 30]

1. **Throughput.** A partition of 16 KiB batches (16 records of ~1000 bytes, uncompressed) in
   64 MiB segments. Contenders, in interleaved rounds, each reading the same closed segments with
   the same I/O pattern (4 MiB preads, each chunk's pages dropped from the page cache after it, so
   every round reads from the disk or its cache alike):
   * `limit`: pread + CRC-32C of every batch's CRC range at its known position (no framing, no
     parsing, no digest): the least work any scrub must do;
   * `scrub`: :func:`storage_core.live.scrub.scrub_partition`, unthrottled (framing, CRC, offsets,
     SHA-256 of the verified bytes, offset and time index checks).
   Reported: MB/s of each and scrub/limit per round (range).
2. **Throttle accuracy.** Two processes scrub in a loop through one host bucket file
   (:class:`jobs._throttle.HostTokenBucket`) at a target rate for `--window-s`; the bytes admitted
   inside the window over the window, against the target (goal: within 10 %).
3. **Page cache kept.** A broker-like process keeps a 256 MiB "hot" file resident (it reads it,
   then holds it mapped). Resident pages (`mincore`) of the hot file and of the scrubbed segments,
   and `/proc/meminfo` Cached, before and after (a) a scrub and (b) a plain read of the same bytes.
"""

from __future__ import annotations

import argparse
import ctypes
import mmap
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.timing import timed
from jobs._throttle import HostTokenBucket
from storage_core import names
from storage_core.live.reader import CHUNK_BYTES, list_segments
from storage_core.live.scrub import scrub_partition
from storage_core.live.scrub_cursor import ScrubCursor
from storage_core.records.batch import ATTRIBUTES_POSITION, CRC_POSITION, Record, build_batch
from storage_core.records.crc import crc32c

SEGMENT_BYTES = 64 * 1024 * 1024
RECORDS_PER_BATCH = 16
VALUE_BYTES = 985  # 16 records of ~1000 bytes: 16 KiB batches


def build_partition(dir_path: Path, total_bytes: int) -> list[int]:
    """Closed segments of 16 KiB batches up to `total_bytes` (indexes empty: valid, sparse), then an
    empty active segment; reused when it exists. Returns the base offsets."""
    if dir_path.is_dir() and list_segments(dir_path):
        return list(list_segments(dir_path))
    dir_path.mkdir(parents=True, exist_ok=True)
    value = (bytes(range(256)) * 4)[:VALUE_BYTES]
    offset = written = 0
    while written < total_bytes:
        base = offset
        with names.log_file(dir_path, base).open("wb") as log:
            while log.tell() < SEGMENT_BYTES:
                records = [
                    Record(offset + i, 1_700_000_000_000 + offset + i, b"k%012d" % (offset + i), value)
                    for i in range(RECORDS_PER_BATCH)
                ]
                log.write(build_batch(records, base_offset=offset))
                offset += RECORDS_PER_BATCH
            written += log.tell()
        for index in (names.offset_index_file(dir_path, base), names.time_index_file(dir_path, base)):
            index.write_bytes(b"")
    names.log_file(dir_path, offset).write_bytes(b"")
    return list(list_segments(dir_path))


def _batch_size(dir_path: Path) -> int:
    first = names.log_file(dir_path, 0).read_bytes()[:12]
    return 12 + int.from_bytes(first[8:12], "big")


def read_crc_limit(dir_path: Path, bases: list[int], batch_size: int) -> int:
    """pread 4 MiB chunks, CRC-32C of each batch's CRC range, DONTNEED after each chunk."""
    total = 0
    per_chunk = CHUNK_BYTES // batch_size * batch_size
    for base in bases[:-1]:
        fd = os.open(names.log_file(dir_path, base), os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            position = 0
            while position < size:
                data = os.pread(fd, per_chunk, position)
                view = memoryview(data)
                for start in range(0, len(data) - batch_size + 1, batch_size):
                    stored = int.from_bytes(view[start + CRC_POSITION : start + CRC_POSITION + 4], "big")
                    if crc32c(view[start + ATTRIBUTES_POSITION : start + batch_size]) != stored:
                        raise AssertionError("bench data damaged")
                os.posix_fadvise(fd, position, len(data), os.POSIX_FADV_DONTNEED)
                position += len(data)
                total += len(data)
        finally:
            os.close(fd)
    return total


def scrub_once(dir_path: Path, throttle=None, keep_going=lambda: True) -> int:
    result = scrub_partition(
        dir_path,
        cursor=ScrubCursor("bench", dir_path.name),
        now_ms=0,
        recheck_ms=0,
        recovery_point=None,
        live=True,
        throttle=throttle,
        keep_going=keep_going,
    )
    if result.findings:
        raise AssertionError(result.findings)
    return result.bytes_read


def throughput(dir_path: Path, bases: list[int], rounds: int) -> None:
    batch_size = _batch_size(dir_path)
    total = sum(names.log_file(dir_path, b).stat().st_size for b in bases[:-1])
    print(f"## throughput: {total / 2**20:.0f} MiB of {batch_size}-byte batches, {len(bases) - 1} closed segments")
    ratios, limits, scrubs = [], [], []
    for round_ in range(rounds):
        limit_s = timed(lambda: read_crc_limit(dir_path, bases, batch_size))
        scrub_s = timed(lambda: scrub_once(dir_path))
        limits.append(total / limit_s / 1e6)
        scrubs.append(total / scrub_s / 1e6)
        ratios.append(limit_s / scrub_s)
        print(f"round {round_}: limit {limits[-1]:.0f} MB/s, scrub {scrubs[-1]:.0f} MB/s, scrub/limit {ratios[-1]:.2f}")
    print(
        f"limit {min(limits):.0f}-{max(limits):.0f} MB/s; scrub {min(scrubs):.0f}-{max(scrubs):.0f} MB/s; "
        f"scrub/limit {min(ratios):.2f}-{max(ratios):.2f} (median {statistics.median(ratios):.2f})"
    )


class _Counting:
    """A throttle that records when each admission returned and how many bytes it admitted."""

    def __init__(self, bucket: HostTokenBucket) -> None:
        self.bucket = bucket
        self.admitted: list[tuple[float, int]] = []

    def acquire(self, size: int) -> None:
        self.bucket.acquire(size)
        self.admitted.append((time.monotonic(), size))


def _throttled_worker(dir_path: str, bucket_path: str, rate: int, start: float, window: float, out) -> None:
    chunk = max(64 * 1024, min(CHUNK_BYTES, rate // 10))
    counting = _Counting(HostTokenBucket(Path(bucket_path), rate_bytes_per_s=rate, burst_bytes=chunk))
    while time.monotonic() < start:
        time.sleep(0.001)
    end = start + window
    while time.monotonic() < end:
        scrub_partition(
            Path(dir_path),
            cursor=ScrubCursor("bench", "p"),
            now_ms=0,
            recheck_ms=0,
            recovery_point=None,
            live=True,
            throttle=counting,
            chunk_bytes=chunk,
            keep_going=lambda: time.monotonic() < end,
        )
    out.put(sum(size for at, size in counting.admitted if at <= end))


def throttle_accuracy(dir_path: Path, work: Path, rate: int, window: float, processes: int = 2) -> float:
    bucket = work / f"bench-{rate}.bucket"
    bucket.unlink(missing_ok=True)
    queue: multiprocessing.Queue[int] = multiprocessing.Queue()
    start = time.monotonic() + 1.0
    workers = [
        multiprocessing.Process(target=_throttled_worker, args=(str(dir_path), str(bucket), rate, start, window, queue))
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    admitted = sum(queue.get() for _ in workers)
    for worker in workers:
        worker.join()
    achieved = admitted / window
    print(
        f"throttle: target {rate / 1e6:.1f} MB/s, {processes} processes, {window:.0f} s: "
        f"achieved {achieved / 1e6:.2f} MB/s = {achieved / rate:.3f} of target"
    )
    return achieved / rate


_libc = ctypes.CDLL(None, use_errno=True)


_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]


def resident_fraction(path: Path) -> float:
    """Resident pages of a file (`fincore`: `mincore` over a read-only map that touches no page), as a fraction."""
    size = path.stat().st_size
    if size == 0:
        return 0.0
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    vector = (ctypes.c_ubyte * pages)()
    fd = os.open(path, os.O_RDONLY)
    try:
        address = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap")
        try:
            if _libc.mincore(address, size, vector) != 0:
                raise OSError(ctypes.get_errno(), "mincore")
        finally:
            _libc.munmap(address, size)
    finally:
        os.close(fd)
    return sum(v & 1 for v in vector) / pages


def cached_mib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Cached:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _drop(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def page_cache(dir_path: Path, bases: list[int], work: Path) -> None:
    hot = work / "hot.bin"
    if not hot.exists() or hot.stat().st_size != 256 * 2**20:
        hot.write_bytes(os.urandom(256 * 2**20))
    with hot.open("rb") as f:
        while f.read(CHUNK_BYTES):
            pass  # the broker's hot data, in the page cache
    logs = [names.log_file(dir_path, b) for b in bases[:-1]]
    total = sum(p.stat().st_size for p in logs)
    for label, reader in (
        ("scrub", lambda: scrub_once(dir_path)),
        ("plain read", lambda: [p.read_bytes() for p in logs]),
    ):
        for log in logs:
            _drop(log)
        hot_before, cached_before = resident_fraction(hot), cached_mib()
        reader()
        hot_after, cached_after = resident_fraction(hot), cached_mib()
        scrubbed = sum(resident_fraction(p) * p.stat().st_size for p in logs) / total
        print(
            f"page cache, {label} of {total / 2**20:.0f} MiB: hot file resident {hot_before:.3f} -> {hot_after:.3f}; "
            f"read bytes left resident {scrubbed:.3f}; Cached {cached_before:.0f} -> {cached_after:.0f} MiB "
            f"({cached_after - cached_before:+.0f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/logkeeper-scrub-bench"))
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--window-s", type=float, default=30.0)
    parser.add_argument("--rates", default="20000000,5000000")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: throughput,throttle,cache")
    args = parser.parse_args()
    skip = set(args.skip.split(","))
    dir_path = args.work / "bench-0"
    bases = build_partition(dir_path, args.mib * 2**20)
    if "throughput" not in skip:
        throughput(dir_path, bases, args.rounds)
    if "throttle" not in skip:
        for rate in map(int, args.rates.split(",")):
            throttle_accuracy(dir_path, args.work, rate, args.window_s)
    if "cache" not in skip:
        page_cache(dir_path, bases, args.work)


if __name__ == "__main__":
    main()
