"""storage_core at another git revision against this tree: one compaction pass and recovery's index
rebuild on the same inputs, as speed ratios.

The inputs are built once, with this tree: the compaction bench's partition (--records keyed
records, --keys keys) and one `.log` per shape of the recovery bench (--mib MiB each). The other
revision is checked out into a temporary git worktree. Each measurement runs in a fresh Python
process per tree, the two trees alternating for --rounds rounds (best of 5 within a process for
recovery, one pass on a fresh copy for compaction); the best of all rounds counts. The workloads
are the benches' own `compact_bench.logkeeper` and `recover_bench.ours_recover`, run over the other
revision's storage_core: it must have the APIs they call.

`--pure` runs both trees with LOGKEEPER_PURE_PYTHON=1: this tree on storage_core's pure-Python
twins, so that the pure path is compared with a revision from before the native core.

Run: `.venv/bin/python bench/compare_revisions.py b66ff8f [--rounds 5] [--pure]`. Prints, per
workload, each tree's best and this tree's speed as a multiple of the other's.
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

# Runs with the measured tree's storage_core first on the path and this tree's bench/ after it: the
# workloads are the benches' own functions, over the other revision's storage_core.
_CHILD = r"""
import json, shutil, sys
from pathlib import Path
import compact_bench, recover_bench
from timing import timed

inputs, scratch, keys, round_ = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
dedupe_buffer_bytes = int(sys.argv[5]) or None
copy = scratch / f"compact-{round_}" / "t-0"
shutil.copytree(inputs / "compact" / "t-0", copy)
seconds = {"compact": timed(lambda: compact_bench.logkeeper(copy, keys, dedupe_buffer_bytes))}
shutil.rmtree(copy.parent)
for log in sorted((inputs / "recover").glob("*.log")):
    seconds["recover " + log.stem] = min(timed(lambda: recover_bench.ours_recover(log)) for _ in range(5))
print(json.dumps(seconds))
"""


def measure(
    tree: Path, inputs: Path, scratch: Path, keys: int, dedupe: int, round_: int, *, pure: bool
) -> dict[str, float]:
    """One round of every workload with `tree`'s storage_core, in a fresh process."""
    env = {"PYTHONPATH": f"{tree}:{HERE / 'bench'}"} | ({"LOGKEEPER_PURE_PYTHON": "1"} if pure else {})
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(inputs), str(scratch), str(keys), str(round_), str(dedupe)],
        cwd=tree,
        env=env,
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
    parser.add_argument("--dedupe-buffer-bytes", type=int, default=0, help="offset map memory (0: compact_bench's)")
    parser.add_argument("--mib", type=int, default=32)
    parser.add_argument("--pure", action="store_true", help="both trees with LOGKEEPER_PURE_PYTHON=1")
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
                    spent = measure(tree, inputs, scratch, args.keys, args.dedupe_buffer_bytes, round_, pure=args.pure)
                    for workload, seconds in spent.items():
                        best[name][workload] = min(seconds, best[name].get(workload, seconds))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=HERE, check=True)
    print(f"{'workload':<22} {args.revision:>14} {'this tree':>14}   this tree's speed")
    for workload, theirs in best[args.revision].items():
        ours = best["this tree"][workload]
        print(f"{workload:<22} {theirs * 1000:11.1f} ms {ours * 1000:11.1f} ms   {theirs / ours:5.2f}x")


if __name__ == "__main__":
    main()
