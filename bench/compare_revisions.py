"""storage_core at another git revision against this tree: one compaction pass and recovery's index
rebuild on the same inputs, as speed ratios.

The inputs are built once, with this tree: the compaction bench's partition (--records keyed
records, --keys keys) and one `.log` per shape of the recovery bench (--mib MiB each). The other
revision is checked out into a temporary git worktree. Each measurement runs in a fresh Python
process per tree, the two trees alternating for --rounds rounds (best of 5 within a process for
recovery, one pass on a fresh copy for compaction); the best of all rounds counts. Only APIs both
revisions have are called (`compact_partition`, `build_segment_indexes`).

Run: `.venv/bin/python bench/compare_revisions.py b66ff8f [--rounds 5]`. Prints, per workload, each
tree's best and this tree's speed as a multiple of the other's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import compact_bench
import recover_bench

HERE = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, shutil, sys, time
from pathlib import Path
from storage_core.cleaner.compact import compact_partition
from storage_core.config import LogConfig
from storage_core.fs import LocalFileSystem
from storage_core.index.offset_index import OffsetIndex
from storage_core.index.time_index import TimeIndex
from storage_core.segment import build_segment_indexes

inputs, scratch, keys, round_ = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
fs, seconds = LocalFileSystem(), {}
copy = scratch / f"compact-{round_}" / "t-0"
shutil.copytree(inputs / "compact" / "t-0", copy)
started = time.perf_counter()
compact_partition(
    copy,
    config=LogConfig(cleanup_policy=frozenset({"compact"}), min_cleanable_dirty_ratio=0.0),
    cleaner_checkpoint=None, log_start_offset=0, high_watermark=10**12, now_ms=1_800_000_000_000,
    dedupe_buffer_bytes=24 * keys * 2, max_passes=1,
)
seconds["compact"] = time.perf_counter() - started
shutil.rmtree(copy.parent)
for log in sorted((inputs / "recover").glob("*.log")):
    best = float("inf")
    for _ in range(5):
        data = fs.mmap(log)
        offsets = OffsetIndex.build_in_memory(log.with_suffix(".index"), 0, max_index_size=10 << 20, fs=fs)
        times = TimeIndex.build_in_memory(log.with_suffix(".timeindex"), 0, max_index_size=10 << 20, fs=fs)
        started = time.perf_counter()
        build_segment_indexes(data, offset_index=offsets, time_index=times, index_interval_bytes=4096)
        best = min(best, time.perf_counter() - started)
    seconds["recover " + log.stem] = best
print(json.dumps(seconds))
"""


def measure(tree: Path, inputs: Path, scratch: Path, keys: int, round_: int) -> dict[str, float]:
    """One round of every workload with `tree`'s storage_core, in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(inputs), str(scratch), str(keys), str(round_)],
        cwd=tree,
        env={"PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("revision", help="the git revision to compare this tree with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--mib", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        inputs = scratch / "inputs"
        compact_bench.build(inputs / "compact" / "t-0", args.records, args.keys)
        (inputs / "recover").mkdir()
        for shape, (per_batch, values, codec) in recover_bench.SHAPES.items():
            recover_bench.build(inputs / "recover" / f"{shape}.log", per_batch, values, codec, args.mib)
        other = scratch / "other"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(other), args.revision], cwd=HERE, check=True)
        try:
            trees = {args.revision: other, "this tree": HERE}
            best: dict[str, dict[str, float]] = {name: {} for name in trees}
            for round_ in range(args.rounds):
                for name, tree in trees.items():
                    for workload, spent in measure(tree, inputs, scratch, args.keys, round_).items():
                        best[name][workload] = min(spent, best[name].get(workload, spent))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=HERE, check=True)
    print(f"{'workload':<22} {args.revision:>14} {'this tree':>14}   this tree's speed")
    for workload, theirs in best[args.revision].items():
        ours = best["this tree"][workload]
        print(f"{workload:<22} {theirs * 1000:11.1f} ms {ours * 1000:11.1f} ms   {theirs / ours:5.2f}x")


if __name__ == "__main__":
    main()
