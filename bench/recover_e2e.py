"""`logkeeper recover` end to end through Spark local[2]: where a job's time goes besides storage_core.

Two crashed log dirs (no index, checkpoint or clean-shutdown marker: every segment is recovered):

* `small`: --small-partitions partitions (2,000) of --small-kib KiB of 200-byte one-record batches
  in 2 segments, the shape of many low-throughput topics: per-task costs dominate;
* `large`: --large-partitions partitions (32) of --large-mib MiB of one-record 16 KiB batches in 4
  segments: the batch walk, CRC-32C and the index and snapshot writes dominate.

Each is recovered by the real CLI (`python -m jobs recover --master local[2] --warehouse W
--result-json F`), one fresh process a run with Spark's event log on, by both storage_core
implementations in interleaved rounds: the native core and the pure-Python twins
(`LOGKEEPER_PURE_PYTHON=1`), the peer measured in the same run. Between runs the log dir is crashed
again in place: every file but the `.log` segments and `meta.properties` is deleted (recovery
changes no `.log` byte of these inputs), then `os.sync`; the segments stay page-cached for every run.

A run's wall time is split with the event log (`spark_scaling.spark_phases`): process start to the
Spark application (imports, JVM, SparkContext), the Spark jobs (Python workers' start, the tasks),
and the driver's own work after the session is up (log-dir checks, locks, discovery, checkpoints,
Delta result tables, stop). Inside storage_core is the partitions' summed `duration_ms` over the
2 cores (the tasks overlap); the share outside storage_core is 1 minus that over the wall time.

Run: `.venv/bin/python bench/recover_e2e.py [--repeat 3] [--large-mib 16]`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from spark_scaling import build_crashed, run_job

from storage_core import names

MASTER = "local[2]"
CORES = 2
CONTENDERS = {"native": {}, "pure": {"LOGKEEPER_PURE_PYTHON": "1"}}


def crash_again(log_dir: Path) -> None:
    """Delete every file of `log_dir` but its `.log` segments and `meta.properties` (and every other
    directory: a quarantine, if one was made), so that the next recovery starts from the same crash."""
    for entry in log_dir.iterdir():
        if entry.is_dir() and entry.name.startswith("bench-"):
            for file in entry.iterdir():
                if file.suffix != names.LOG_SUFFIX:
                    file.unlink()
        elif entry.is_dir():
            shutil.rmtree(entry)
        elif entry.name != names.META_PROPERTIES:
            entry.unlink()


def one_run(scratch: Path, source: Path, tag: str, env: dict[str, str]) -> dict[str, float]:
    """Recover `source` once by the CLI (moved into a fresh folder so that the run's warehouse, event
    log and result are its own), crash it again and move it back."""
    run_dir = scratch / tag
    run_dir.mkdir()
    log_dir = run_dir / "logs"
    source.rename(log_dir)
    try:
        figures = run_job("recover", log_dir, MASTER, env)
    finally:
        crash_again(log_dir)
        log_dir.rename(source)
        shutil.rmtree(run_dir)
    figures["storage_core"] = figures["in_fn"] / CORES
    figures["outside_share"] = 1 - figures["storage_core"] / figures["wall"]
    return figures


COLUMNS = (
    ("wall", "end to end"),
    ("to_session", "start to Spark session (imports, JVM)"),
    ("job", "Spark jobs (workers' start, tasks)"),
    ("session_to_end", "driver's own work (checks, checkpoints, Delta, stop)"),
    ("storage_core", "inside storage_core (sum / 2 cores)"),
)


def report(shape: str, samples: dict[str, list[dict[str, float]]]) -> None:
    """One table per shape: each figure's median and range per contender, the outside share."""
    print(f"\n{shape}: recover, {MASTER}, {len(samples['native'])} interleaved rounds (median, range)\n")
    print("| seconds | " + " | ".join(samples) + " | pure / native (medians) |")
    print("|---|" + "---|" * (len(samples) + 1))
    for key, label in (*COLUMNS, ("outside_share", "share of the wall time outside storage_core")):
        fmt = "{:.0%}" if key == "outside_share" else "{:.2f}"
        medians = {name: statistics.median(r[key] for r in runs) for name, runs in samples.items()}
        cells = []
        for name, runs in samples.items():
            low, high = (fmt.format(f(r[key] for r in runs)) for f in (min, max))
            cells.append(f"{fmt.format(medians[name])} ({low}-{high})")
        print(f"| {label} | " + " | ".join(cells) + f" | {medians['pure'] / medians['native']:.2f}x |")


def main(args: argparse.Namespace) -> None:
    """Build both crashed log dirs, run the rounds, print the tables."""
    print(f"1-minute load average before the run: {os.getloadavg()[0]:.2f}")
    shapes = {
        f"small: {args.small_partitions} partitions x {args.small_kib} KiB of 200 B batches": (
            args.small_partitions,
            args.small_kib / 1024,
            200,
            2,
        ),
        f"large: {args.large_partitions} partitions x {args.large_mib} MiB of 16 KiB batches": (
            args.large_partitions,
            args.large_mib,
            16_000,
            4,
        ),
    }
    with tempfile.TemporaryDirectory(dir=args.scratch) as scratch_name:
        scratch = Path(scratch_name)
        for n, (shape, (partitions, mib, value_bytes, segments)) in enumerate(shapes.items()):
            source = scratch / f"source-{n}"
            build_crashed(source, partitions, mib, value_bytes, segments)
            samples: dict[str, list[dict[str, float]]] = {name: [] for name in CONTENDERS}
            for rep in range(args.repeat):
                for name, env in CONTENDERS.items():
                    samples[name].append(one_run(scratch, source, f"{n}-{name}-{rep}", env))
            report(shape, samples)
            shutil.rmtree(source)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--small-partitions", type=int, default=2000)
    parser.add_argument("--small-kib", type=int, default=64, help="KiB per small partition")
    parser.add_argument("--large-partitions", type=int, default=32)
    parser.add_argument("--large-mib", type=int, default=64, help="MiB per large partition")
    parser.add_argument("--scratch", help="folder for the log dirs (default: the system's temp dir)")
    main(parser.parse_args())
