"""Compaction throughput (records/s, MB/s) and offset-map bytes per key, against a naive compactor.

A partition of --records keyed records (--keys distinct keys, 100-byte values, 100 records per
batch, 10 segments + an empty active one) is compacted by logkeeper's cleaner (one pass, a map big
enough for every key) and by a naive compactor built on kafka-python (decode every record, keep
the last offset per key in a dict, rebuild the kept records with kafka-python's builder). Both run
on a fresh copy; figures are best of --repeat interleaved rounds (bench/timing.py).

Bytes per key: the map's slot at the 0.9 load factor plus the map's superseded bits (one bit per
dirty offset, `--records / --keys` offsets per key here, at most a quarter of the slot).

Run: `.venv/bin/python bench/compact_bench.py [--records 200000] [--keys 10000] [--dedupe-buffer-bytes N]`.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from timing import best_interleaved, timed

from storage_core import names
from storage_core.cleaner.compact import compact_partition
from storage_core.cleaner.offset_map import ENTRY_SIZE, SUPERSEDED_SHARE
from storage_core.config import LogConfig
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


def naive(path: Path, keys: int) -> None:
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--dedupe-buffer-bytes", type=int, help="offset map memory (default: 2 slots a key)")
    args = parser.parse_args()
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
            "naive kafka-python": naive,
        }
        results = best_interleaved({name: run(name, fn) for name, fn in contenders.items()}, args.repeat)
        ours = results["logkeeper"]
        for name, seconds in results.items():
            print(
                f"{name:<20} {args.records / seconds / 1e6:6.3f} M records/s  {size / 1e6 / seconds:7.1f} MB/s"
                f"  ({ours / seconds:4.2f}x logkeeper's speed)"
            )
        slot_bytes = ENTRY_SIZE / 0.9
        bits_bytes = min(args.records / args.keys / 8, slot_bytes / SUPERSEDED_SHARE)  # one bit per dirty offset
        print(
            f"offset map: {ENTRY_SIZE} bytes per key slot (MD5 + int64), {slot_bytes:.1f} bytes per key at the "
            f"0.9 load factor, + {bits_bytes:.2f} of superseded bits = {slot_bytes + bits_bytes:.1f} bytes per key"
        )


if __name__ == "__main__":
    main()
