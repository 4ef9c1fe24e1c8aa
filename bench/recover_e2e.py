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
SparkContext (imports, the driver's log-dir checks, locks, discovery and tasks, the JVM's launch),
the context's and session's start up to the first job, the Spark job (Python workers' start, the
tasks), and the driver's work after it (checkpoints, the Delta maintenance log, the result JSON, the
JVM's exit). Inside storage_core is the partitions' summed `duration_ms` over the 2 cores (the tasks
overlap); the share outside storage_core is 1 minus that over the wall time.

`--profile N`: instead of the Spark runs, cProfile `load_partition` (the executor's storage_core
call, native core) over N partitions of each shape in this process, top functions by own time: where
the time inside storage_core goes.

`--driver-profile`: after each shape's rounds, one more (untimed) native run with the CLI's process
under cProfile, the job's functions by cumulative time: where the driver's share goes.

Run: `.venv/bin/python bench/recover_e2e.py [--repeat 3] [--large-mib 16] [--driver-profile] [--profile N]`.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

from spark_scaling import build_crashed, run_job

from storage_core import names
from storage_core.loader import LoadOptions, load_partition

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


def one_run(
    scratch: Path, source: Path, tag: str, env: dict[str, str], interpreter_args: Sequence[str] = ()
) -> dict[str, float]:
    """Recover `source` once by the CLI (moved into a fresh folder so that the run's warehouse, event
    log and result are its own), crash it again and move it back."""
    run_dir = scratch / tag
    run_dir.mkdir()
    log_dir = run_dir / "logs"
    source.rename(log_dir)
    try:
        figures = run_job("recover", log_dir, MASTER, env, interpreter_args)
    finally:
        crash_again(log_dir)
        log_dir.rename(source)
        shutil.rmtree(run_dir)
    figures["storage_core"] = figures["in_fn"] / CORES
    figures["outside_share"] = 1 - figures["storage_core"] / figures["wall"]
    return figures


COLUMNS = (
    ("wall", "end to end"),
    ("to_app", "process start to SparkContext (imports, log-dir checks, discovery, tasks, JVM launch)"),
    ("session", "SparkContext to the first job (context and session start)"),
    ("job", "Spark jobs (workers' start, tasks)"),
    ("after_jobs", "after the jobs (checkpoints, Delta maintenance log, result JSON, JVM exit)"),
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


def driver_profile(shape: str, scratch: Path, source: Path) -> None:
    """One more run of the native contender with the CLI's process under cProfile (wall clock: the
    driver's waits on the JVM count), untimed; print the job's own functions by cumulative time: where
    the driver's share of the wall time goes (the JVM's exit after Python's is outside the profile)."""
    stats = scratch / "driver.prof"
    figures = one_run(scratch, source, "driver-profile", CONTENDERS["native"], ("-m", "cProfile", "-o", str(stats)))
    print(f"\n{shape}: the driver under cProfile (one run, {figures['wall']:.1f} s wall), jobs/ by cumulative time")
    pstats.Stats(str(stats)).sort_stats("cumulative").print_stats(r"jobs/|deltalake/table|session\.py.*getOrCreate", 25)
    stats.unlink()


def profile(shape: str, source: Path) -> None:
    """cProfile `load_partition` over every partition of `source`, as the job's executors call it
    after an unclean shutdown without checkpoints; print the top functions by own time."""
    profiler = cProfile.Profile()
    options = LoadOptions(had_clean_shutdown=False, recovery_point=0, log_start_offset=0, now_ms=0)
    for part in sorted(p for p in source.iterdir() if p.is_dir()):
        profiler.runcall(load_partition, part, options)
    print(f"\n{shape}: load_partition over {sum(1 for p in source.iterdir() if p.is_dir())} partitions")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


def main(args: argparse.Namespace) -> None:
    """Build both crashed log dirs, run the rounds (or the profile), print the tables."""
    print(f"1-minute load average before the run: {os.getloadavg()[0]:.2f}")
    if args.profile:
        args.small_partitions = args.large_partitions = args.profile
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
            if args.profile:
                profile(shape, source)
                continue
            samples: dict[str, list[dict[str, float]]] = {name: [] for name in CONTENDERS}
            for rep in range(args.repeat):
                for name, env in CONTENDERS.items():
                    samples[name].append(one_run(scratch, source, f"{n}-{name}-{rep}", env))
            report(shape, samples)
            if args.driver_profile:
                driver_profile(shape, scratch, source)
            shutil.rmtree(source)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--small-partitions", type=int, default=2000)
    parser.add_argument("--small-kib", type=int, default=64, help="KiB per small partition")
    parser.add_argument("--large-partitions", type=int, default=32)
    parser.add_argument("--large-mib", type=int, default=64, help="MiB per large partition")
    parser.add_argument("--scratch", help="folder for the log dirs (default: the system's temp dir)")
    parser.add_argument("--driver-profile", action="store_true", help="also profile the driver of one more run a shape")
    parser.add_argument("--profile", type=int, metavar="N", help="profile load_partition over N partitions a shape")
    main(parser.parse_args())
