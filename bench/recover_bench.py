"""Recovery throughput on page-cached segments against the read+CRC limit and two peer readers.

For each batch shape (uncompressed 200 B, 16 KiB and 1 MiB batches; zstd batches of 16 KiB of
records; and `zstd-peer`, the zstd file of ../shared/spec/peer-bench.md: 100 records a batch, null
keys, 100-byte values drawn by a seeded RNG from a pool of 256 order-like texts, which zstd
compresses about 3x into ~3.5 KiB batches) a ~64 MiB `.log` is written with storage_core's builder,
read once into the page cache, then timed (best of --repeat rounds, each round running every
contender once in turn, so that a slow spell of the VM falls on all of them alike):

* limit: the file mapped (page cache, no copy) and CRC-32C over all its bytes in one C call (the
  `crc32c` package, SSE4.2): the hardware's read+CRC32C limit, which no CRC-checking recovery can
  pass; logkeeper maps its files the same way, the peers read them into `bytes` (their API);
* logkeeper scan: `scan_valid_prefix` (framing + CRC of every batch: what recovery validates);
* logkeeper recover: `build_segment_indexes` (validation + Kafka's index rebuild, in memory);
* logkeeper load: `load_partition` of the segment as a partition after an unclean shutdown (the
  above plus producer-state replay, leader epochs, and the index and snapshot files written and
  fsynced): the `recover` job's own path;
* `load (pure)`: the same on storage_core's pure-Python twins (`storage_core.native.use_twins`),
  interleaved with the rest; without the compiled core every logkeeper column is the pure one;
* kafka-python / aiokafka: `MemoryRecords` iteration with `validate_crc()` per batch.

Run: `.venv/bin/python bench/recover_bench.py [--mib 64] [--repeat 3]`. Prints each contender's best
MB/s with its ratio to the limit and its range over the rounds, and load's ratio to aiokafka and to
the limit: best against best, and the lowest and highest of the rounds' own ratios.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
from collections.abc import Callable
from pathlib import Path

from crc32c import crc32c
from timing import interleaved, round_ratios, timed

from storage_core.fs import LocalFileSystem
from storage_core.index.offset_index import OffsetIndex
from storage_core.index.time_index import TimeIndex
from storage_core.loader import LoadOptions, load_partition
from storage_core.records.batch import Record, build_batch
from storage_core.records.compression import CompressionType
from storage_core.records.file_records import scan_valid_prefix
from storage_core.segment import build_segment_indexes

LIMIT = "limit (read+crc32c)"
VALUE = (b"order status shipped customer amount EUR " * 10)[:100]


def text_values(size: int, *, count: int = 256, seed: int = 1) -> list[bytes]:
    """`count` values of `size` bytes, words and numbers drawn as ../shared/tools/peer_build.py draws them."""
    rng = random.Random(seed)
    words = b"order status shipped customer id amount EUR true false null 2024-01-01T00:00:00Z warehouse sku".split()
    values = []
    for _ in range(count):
        value = bytearray()
        while len(value) < size:
            value += rng.choice(words) + b" " + str(rng.randrange(100_000)).encode() + b","
        values.append(bytes(value[:size]))
    return values


SHAPES = {  # records per batch, the values records draw from, codec
    "200B": (1, [VALUE], CompressionType.NONE),
    "16KiB": (160, [VALUE], CompressionType.NONE),
    "1MiB": (10_000, [VALUE], CompressionType.NONE),
    "zstd-16KiB": (160, [VALUE], CompressionType.ZSTD),
    "zstd-peer": (100, text_values(100), CompressionType.ZSTD),
}


def build(path: Path, records_per_batch: int, values: list[bytes], codec: CompressionType, mib: int) -> int:
    """A `.log` of about `mib` MiB of batches, each record's value drawn from `values` by a seeded RNG."""
    rng = random.Random(1)
    offset, written = 0, 0
    with path.open("wb") as out:
        while written < mib * 1024 * 1024:
            records = [
                Record(offset + i, 1_700_000_000_000 + offset + i, None, values[rng.randrange(len(values))])
                for i in range(records_per_batch)
            ]
            data = build_batch(records, base_offset=offset, compression=codec)
            out.write(data)
            written += len(data)
            offset += records_per_batch
    return written


def limit(path: Path) -> None:
    crc32c(LocalFileSystem().mmap(path))


def ours_scan(path: Path) -> None:
    scan_valid_prefix(LocalFileSystem().mmap(path))


def ours_recover(path: Path) -> None:
    fs = LocalFileSystem()
    build_segment_indexes(
        fs.mmap(path),
        offset_index=OffsetIndex.build_in_memory(path.with_suffix(".index"), 0, max_index_size=10 << 20, fs=fs),
        time_index=TimeIndex.build_in_memory(path.with_suffix(".timeindex"), 0, max_index_size=10 << 20, fs=fs),
        index_interval_bytes=4096,
    )


def ours_load(path: Path) -> None:
    partition = path.parent / f"{path.stem}-0"
    if not partition.exists():
        partition.mkdir()
        (partition / "00000000000000000000.log").hardlink_to(path)
    load_partition(partition, LoadOptions(had_clean_shutdown=False, recovery_point=0, log_start_offset=0, now_ms=0))


def on_twins(fn: Callable[[Path], None]) -> Callable[[Path], None]:
    """`fn` run on storage_core's pure-Python twins."""

    def run(path: Path) -> None:
        from storage_core.native import use_twins  # this tree only (compare_revisions imports this module)

        with use_twins():
            fn(path)

    return run


def peer(module: str):
    def run(path: Path) -> None:
        if module == "kafka-python":
            from kafka.record.memory_records import MemoryRecords
        else:
            from aiokafka.record.memory_records import MemoryRecords
        records = MemoryRecords(path.read_bytes())
        while (batch := records.next_batch()) is not None:
            batch.validate_crc()

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    contenders = {
        LIMIT: limit,
        "logkeeper scan": ours_scan,
        "logkeeper recover": ours_recover,
        "logkeeper load": ours_load,
        "load (pure)": on_twins(ours_load),
        "kafka-python": peer("kafka-python"),
        "aiokafka": peer("aiokafka"),
    }
    with tempfile.TemporaryDirectory() as scratch:
        print(f"{'shape':<12} " + " ".join(f"{name:>20}" for name in contenders) + "   (MB/s; ratio to limit)")
        for shape, (per_batch, values, codec) in SHAPES.items():
            path = Path(scratch) / f"{shape}.log"
            size = build(path, per_batch, values, codec, args.mib)
            path.read_bytes()  # into the page cache
            os.sync()  # on disk, as a crashed broker's segment is: no round's fsync writes the build back
            seconds = interleaved(
                {name: lambda _, fn=fn, path=path: timed(lambda: fn(path)) for name, fn in contenders.items()},
                args.repeat,
            )
            rates = {name: size / 1e6 / min(spent) for name, spent in seconds.items()}
            base = rates[LIMIT]
            print(f"{shape:<12} " + " ".join(f"{rate:>11.0f} ({rate / base:>5.2f}x)" for rate in rates.values()))
            print(
                f"{'':<12} MB/s ranges: "
                + ", ".join(
                    f"{name} {size / 1e6 / max(spent):.0f}-{rates[name]:.0f}" for name, spent in seconds.items()
                )
            )
            for slow in ("aiokafka", LIMIT):
                low, high = round_ratios(seconds, slow, "logkeeper load")
                best = rates["logkeeper load"] / rates[slow]
                print(f"{'':<12} load/{slow}: {best:.2f}x best against best, {low:.2f}-{high:.2f}x round by round")


if __name__ == "__main__":
    main()
