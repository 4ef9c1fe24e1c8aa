"""Spark scaling of `logkeeper recover`: 64 partitions with local[1] vs local[2], and per-task overhead.

64 partitions of --mib MiB each (one-record 16 KiB batches over 4 segments, indexes deleted so that
every segment is recovered) are recovered by the real CLI in a fresh process per run; the JVM and
SparkSession start-up is measured separately (a run over an empty log dir) and subtracted.

Run: `.venv/bin/python bench/spark_scaling.py [--mib 4]`.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from storage_core import names
from storage_core.records.batch import Record, build_batch

PARTITIONS = 64


def build(root: Path, mib: int) -> None:
    value = b"x" * 16_000
    per_segment = mib * 1024 * 1024 // 16_100 // 4
    for p in range(PARTITIONS):
        part = root / f"bench-{p}"
        part.mkdir(parents=True)
        for s in range(4):
            base = s * per_segment
            names.log_file(part, base).write_bytes(
                b"".join(
                    build_batch([Record(o, o, None, value)], base_offset=o) for o in range(base, base + per_segment)
                )
            )


def run(log_dir: Path, master: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "jobs",
            "recover",
            "--log-dirs",
            str(log_dir),
            "--master",
            master,
            "--warehouse",
            str(log_dir.parent / "wh"),
        ],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "source"
        build(source, args.mib)
        empty = Path(scratch) / "empty"
        empty.mkdir()
        startup = min(run(empty, "local[1]") for _ in range(2))
        times = {}
        for master in ("local[1]", "local[2]"):
            copy = Path(scratch) / master.replace("[", "").replace("]", "")
            shutil.copytree(source, copy)
            times[master] = run(copy, master) - startup
        print(f"start-up (JVM + session, empty log dir): {startup:.1f} s")
        for master, seconds in times.items():
            print(f"{master}: {seconds:.1f} s for {PARTITIONS} partitions ({seconds / PARTITIONS * 1000:.0f} ms each)")
        print(f"speed-up local[2] / local[1]: {times['local[1]'] / times['local[2]']:.2f}x")


if __name__ == "__main__":
    main()
