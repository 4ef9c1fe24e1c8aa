"""Compaction throughput (records/s, MB/s) and offset-map bytes per key, against naive compactors.

A partition of --records keyed records (--keys distinct keys, 100-byte values, 100 records per
batch, 10 segments + an empty active one) is compacted by logkeeper's cleaner (one whole pass: map
phase, filtering, re-batching, indexes, swap; a map big enough for every key), by the same cleaner
on storage_core's pure-Python twins (`pure`), and by two naive compactors (decode every record,
keep the last offset per key in a dict, rebuild the kept records with the library's builder; no
index, every record held in memory): one on kafka-python, one on aiokafka's C reader and builder.
All run on a fresh copy, one process, one thread; figures are best of --repeat interleaved rounds
(bench/timing.py), with their range over the rounds and logkeeper's speed against each contender
round by round.

Bytes per key, measured (`--memory-keys`, 0 to skip): in a fresh process, how much the resident
anonymous memory (RssAnon) grew once the map phase of a pass has filled a map sized to fit a
partition of that many distinct keys, divided by the keys: the map's 24-byte slots at Kafka's 0.9
load factor, the superseded bits' pages that got touched, and anything else the phase left behind.

Run: `.venv/bin/python bench/compact_bench.py [--records 200000] [--keys 10000] [--dedupe-buffer-bytes N]
[--memory-keys 1000000]`.
"""

from __future__ import annotations

import argparse
import gc
import math
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from timing import interleaved, round_ratios, timed

from storage_core import names
from storage_core.cleaner.clean import CleanerStats, build_offset_map
from storage_core.cleaner.compact import compact_partition
from storage_core.cleaner.offset_map import ENTRY_SIZE, OffsetMap
from storage_core.config import LogConfig
from storage_core.fs import LocalFileSystem
from storage_core.loader import LoadOptions, load_partition
from storage_core.records.batch import Record, build_batch

NOW = 1_800_000_000_000


def build(path: Path, records: int, keys: int) -> None:
    path.mkdir(parents=True)
    per_segment = records // 10
    value = b"x" * 100
    for base in range(0, records, per_segment):
        batches = [
            build_batch(
                [
                    Record(o, NOW + o, b"key-%d" % (o * 7919 % keys), value)
                    for o in range(b, min(b + 100, base + per_segment))
                ],
                base_offset=b,
            )
            for b in range(base, base + per_segment, 100)
        ]
        names.log_file(path, base).write_bytes(b"".join(batches))
    names.log_file(path, records).write_bytes(b"")
    load_partition(path, LoadOptions(had_clean_shutdown=False, recovery_point=0, log_start_offset=0, now_ms=NOW))


def logkeeper(path: Path, keys: int, dedupe_buffer_bytes: int | None = None) -> None:
    """One cleaner pass; the offset map gets `dedupe_buffer_bytes` (default: two slots per key)."""
    compact_partition(
        path,
        config=LogConfig(cleanup_policy=frozenset({"compact"}), min_cleanable_dirty_ratio=0.0),
        cleaner_checkpoint=None,
        log_start_offset=0,
        high_watermark=10**12,
        now_ms=NOW,
        dedupe_buffer_bytes=dedupe_buffer_bytes or ENTRY_SIZE * keys * 2,
        max_passes=1,
    )


def logkeeper_pure(path: Path, keys: int, dedupe_buffer_bytes: int | None = None) -> None:
    """:func:`logkeeper` on storage_core's pure-Python twins."""
    from storage_core.native import use_twins  # this tree only (compare_revisions imports this module)

    with use_twins():
        logkeeper(path, keys, dedupe_buffer_bytes)


def naive(path: Path, keys: int, *, library: str = "kafka-python") -> None:
    """Decode everything, keep each key's last offset in a dict, rebuild the kept records."""
    if library == "aiokafka":  # its C reader and builder
        from aiokafka.record.default_records import DefaultRecordBatchBuilder
        from aiokafka.record.memory_records import MemoryRecords
    else:
        from kafka.record.default_records import DefaultRecordBatchBuilder
        from kafka.record.memory_records import MemoryRecords
    logs = sorted(path.glob("*.log"))[:-1]
    latest: dict[bytes, int] = {}
    decoded = []
    for log in logs:
        memory = MemoryRecords(log.read_bytes())
        while (batch := memory.next_batch()) is not None:
            for record in batch:
                latest[record.key] = record.offset
                decoded.append(record)
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    for record in decoded:
        if latest[record.key] == record.offset:
            builder.append(record.offset, timestamp=record.timestamp, key=record.key, value=record.value, headers=[])
    (path / "naive.out").write_bytes(bytes(builder.build()))


def _rss_anon() -> int:
    """This process's resident anonymous memory, bytes (the page cache of mapped segments left out)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no RssAnon in /proc/self/status")


def _map_phase_growth(path: Path, keys: int) -> int:
    """Bytes the resident anonymous memory grows by when the map phase has filled a map sized to fit
    the `keys` distinct keys of the partition at `path` (the map still alive; the segments' mapped
    pages, which are the page cache's, left out)."""
    bases = names.log_base_offsets(p.name for p in path.iterdir())
    for log in path.glob("*.log"):
        log.read_bytes()
    offset_map = OffsetMap(math.ceil(keys / 0.9) * ENTRY_SIZE)
    gc.collect()
    before = _rss_anon()
    build_offset_map(
        path,
        bases[:-1],
        start=0,
        end=keys,
        offset_map=offset_map,
        load_factor=0.9,
        log_start_offset=0,
        stats=CleanerStats(),
        fs=LocalFileSystem(),
    )
    assert offset_map.entries == keys, offset_map.entries
    gc.collect()
    return _rss_anon() - before


def bytes_per_key(keys: int) -> float:
    """`_map_phase_growth` per key, over a partition of `keys` records with distinct keys, in a
    fresh process (so the peak is this measurement's alone, not the partition builder's)."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "t-0"
        build(path, keys, keys)
        out = subprocess.run(
            [sys.executable, __file__, "--measure-memory", str(path), str(keys)],
            capture_output=True,
            text=True,
            check=True,
        )
    return int(out.stdout) / keys


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--dedupe-buffer-bytes", type=int, help="offset map memory (default: 2 slots a key)")
    parser.add_argument("--memory-keys", type=int, default=1_000_000, help="keys of the bytes-per-key measurement")
    parser.add_argument("--measure-memory", nargs=2, help=argparse.SUPPRESS)  # the child of bytes_per_key
    args = parser.parse_args()
    if args.measure_memory:
        print(_map_phase_growth(Path(args.measure_memory[0]), int(args.measure_memory[1])))
        return
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "source" / "t-0"
        build(source, args.records, args.keys)
        size = sum(p.stat().st_size for p in source.glob("*.log"))

        def run(name: str, fn: Callable[[Path, int], None]) -> Callable[[int], float]:
            def on_a_fresh_copy(round_: int) -> float:
                copy = Path(scratch) / f"{name}-{round_}" / "t-0"
                shutil.copytree(source, copy)
                return timed(lambda: fn(copy, args.keys))

            return on_a_fresh_copy

        contenders = {
            "logkeeper": partial(logkeeper, dedupe_buffer_bytes=args.dedupe_buffer_bytes),
            "logkeeper pure": partial(logkeeper_pure, dedupe_buffer_bytes=args.dedupe_buffer_bytes),
            "naive kafka-python": naive,
            "naive aiokafka (C)": partial(naive, library="aiokafka"),
        }
        results = interleaved({name: run(name, fn) for name, fn in contenders.items()}, args.repeat)
        ours = min(results["logkeeper"])
        for name, spent in results.items():
            low, high = round_ratios(results, name, "logkeeper")
            print(
                f"{name:<20} {args.records / min(spent) / 1e6:6.3f} M records/s"
                f" ({args.records / max(spent) / 1e6:.3f}-{args.records / min(spent) / 1e6:.3f})"
                f"  {size / 1e6 / min(spent):7.1f} MB/s  ({ours / min(spent):4.2f}x logkeeper's speed;"
                f" logkeeper {low:.2f}-{high:.2f}x its speed round by round)"
            )
        if args.memory_keys:
            measured = bytes_per_key(args.memory_keys)
            print(f"offset map, measured over {args.memory_keys:,} keys: {measured:.1f} bytes per key")


if __name__ == "__main__":
    main()
