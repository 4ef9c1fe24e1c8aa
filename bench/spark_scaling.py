"""Spark scaling of a logkeeper job over 64 partitions, local[1] vs local[2], against a pure-Python peer.

`--job recover` (the default): 64 partitions of --mib MiB each (one-record 16 KiB batches over 4
segments, indexes deleted so that every segment is recovered) are recovered by the real CLI. This
job is light on CPU and makes ~33 fsyncs a partition. `--job compact`: 64 keyed partitions of
--records records each (100 records a batch, 10 segments and an empty active one, --records / 50
keys, the compaction bench's layout: bench/compact_bench.py), loaded by one untimed `recover`
(checkpoints, clean-shutdown marker), are cleaned by the real CLI (`cleanup.policy=compact`, the
log end as high watermark): one pass each, nearly all CPU.

Each run is one fresh process with Spark's event log on, on a fresh copy of the same input, written
back (`os.sync`) and page-cached before it starts, and a fresh warehouse. Per master, best of
--repeat (masters interleaved), two runs:

* one empty partition per core: its Spark job is the fixed cost of a job, mostly starting one
  Python worker per core (the JVM and session start-up lie outside the job);
* the 64 partitions: end to end, outside the Spark job (JVM, session, driver, results), the Spark
  job, and the job minus the first run's job: the 64 partitions alone, the figure that should scale.
  `--result-json` gives the time spent inside the job's storage_core call (`duration_ms`).

The peer, measured per master in its own process after a warm-up job (`--control`): 64 tasks
through the same `run_partition_tasks`, each doing a fixed amount of pure-Python work that takes,
on one core alone, as long as the mean partition of the local[1] run took inside storage_core, and
64 no-op tasks (the per-task overhead of Spark and PySpark). The CPU peer's local[2]/local[1]
speed-up is what two workers give Python tasks of that size here, next to the JVM and the driver;
the job's speed-up is reported as a fraction of it.

Run: `.venv/bin/python bench/spark_scaling.py [--job recover|compact] [--mib 4] [--records 50000] [--repeat 3]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import compact_bench
from timing import timed

from storage_core import names
from storage_core.meta_properties import MetaProperties, write_meta_properties
from storage_core.records.batch import Record, build_batch

PARTITIONS = 64
MASTERS = ("local[1]", "local[2]")
T = TypeVar("T")
TOPIC_CONFIG = '[topics."bench"]\n"cleanup.policy" = "compact"\n'


def broker_log_dir(root: Path) -> None:
    """`root` made a log dir a (ZooKeeper-mode) broker has used: the jobs refuse one without `meta.properties`."""
    root.mkdir(parents=True, exist_ok=True)
    write_meta_properties(root / names.META_PROPERTIES, MetaProperties(0, "bench-cluster-id-000000", broker_id=0))


def build_crashed(root: Path, partitions: int, mib: float, value_bytes: int, segments: int = 4) -> None:
    """`partitions` partitions of about `mib` MiB after an unclean shutdown: `segments` segments of
    one-record batches of a `value_bytes` value, no index file, no checkpoint, no clean-shutdown marker,
    so that recovery recovers every segment. Every partition holds the same bytes (built once)."""
    broker_log_dir(root)
    batch_bytes = len(build_batch([Record(0, 0, None, b"x" * value_bytes)], base_offset=0))
    per_segment = max(1, int(mib * 1024 * 1024) // batch_bytes // segments)
    value = b"x" * value_bytes
    logs = {
        s * per_segment: b"".join(
            build_batch([Record(o, o, None, value)], base_offset=o)
            for o in range(s * per_segment, (s + 1) * per_segment)
        )
        for s in range(segments)
    }
    for p in range(partitions):
        part = root / f"bench-{p}"
        part.mkdir()
        for base, data in logs.items():
            names.log_file(part, base).write_bytes(data)


def build_recover(root: Path, mib: int) -> None:
    """64 partitions of `mib` MiB: 4 segments of one-record 16 KiB batches, no index files."""
    build_crashed(root, PARTITIONS, mib, 16_000)


def build_compact(root: Path, records: int) -> None:
    """64 keyed partitions of `records` records (compact_bench's layout), recovered once by the CLI so
    that the log dir has its checkpoints and clean-shutdown marker, as compaction requires."""
    broker_log_dir(root)
    for p in range(PARTITIONS):
        compact_bench.build(root / f"bench-{p}", records, max(1, records // 50))
    (root.parent / "topics.toml").write_text(TOPIC_CONFIG)
    job_command("recover", root, "local[2]", root.parent / f"{root.name}-prep-wh", None, check=True)


def job_command(
    job: str,
    log_dir: Path,
    master: str,
    warehouse: Path,
    result: Path | None,
    *,
    check: bool,
    env: dict[str, str] | None = None,
    interpreter_args: Sequence[str] = (),
) -> None:
    """Run `logkeeper <job>` over `log_dir` (compact: with the bench topic's config, the log end as
    high watermark); `interpreter_args` go to Python before `-m jobs` (e.g. `-m cProfile -o F`)."""
    args = [sys.executable, *interpreter_args, "-m", "jobs", job, "--log-dirs", str(log_dir), "--master", master]
    args += ["--warehouse", str(warehouse)]
    if result is not None:
        args += ["--result-json", str(result)]
    if job == "compact":
        args += ["--topic-config", str(log_dir.parent / "topics.toml"), "--high-watermark-source", "log-end"]
    subprocess.run(args, check=check, capture_output=True, env=env)


def cores(master: str) -> int:
    """The N of `local[N]`."""
    return int(master.removeprefix("local[").removesuffix("]"))


def spark_phases(event_log_dir: Path, started: float, ended: float) -> dict[str, float]:
    """A run's seconds split by its event log (epoch times `started` and `ended` bound the process);
    the parts add up to the wall time:

    * `to_app`: process start to the application's start (the SparkContext's construction): Python
      imports, the job's driver work before its session (for recover the log-dir checks, locks,
      discovery and task building) and the JVM's launch;
    * `session`: the application's start to the first job's submission: the rest of the
      SparkContext's and SparkSession's start, then the driver's work before its first job;
    * `job`: the summed duration of the Spark jobs (submission to completion: Python worker start-up
      and the tasks); `between_jobs`: the driver's time between them;
    * `after_jobs`: the last job's completion to the process's end (the driver's work after the
      jobs: checkpoints, the Delta maintenance log, the result JSON; then the JVM's exit).
    """
    (log,) = event_log_dir.iterdir()
    events = [json.loads(line) for line in log.read_text().splitlines()]
    submitted = {e["Job ID"]: e["Submission Time"] / 1000 for e in events if e["Event"] == "SparkListenerJobStart"}
    completed = {e["Job ID"]: e["Completion Time"] / 1000 for e in events if e["Event"] == "SparkListenerJobEnd"}
    (app_start,) = (e["Timestamp"] / 1000 for e in events if e["Event"] == "SparkListenerApplicationStart")
    job = sum(completed[j] - submitted[j] for j in submitted)
    first, last = min(submitted.values()), max(completed.values())
    return {
        "to_app": app_start - started,
        "session": first - app_start,
        "job": job,
        "between_jobs": last - first - job,
        "after_jobs": ended - last,
    }


def run_job(
    job: str,
    log_dir: Path,
    master: str,
    extra_env: dict[str, str] | None = None,
    interpreter_args: Sequence[str] = (),
) -> dict[str, float]:
    """One `logkeeper <job>` process over `log_dir`, with Spark's event log on (`extra_env` added,
    `interpreter_args` as :func:`job_command`'s).

    Returns its wall time, the phases of :func:`spark_phases` and the summed `duration_ms` of its
    partitions (inside storage_core).
    """
    events = log_dir.parent / f"{log_dir.name}-events"
    events.mkdir()
    result = log_dir.parent / f"{log_dir.name}.json"
    event_log = f"spark.eventLog.enabled=true --conf spark.eventLog.dir={events.as_uri()}"
    plain_log = "spark.eventLog.compress=false --conf spark.eventLog.rolling.enabled=false"
    env = {**os.environ, **(extra_env or {})}
    env["PYSPARK_SUBMIT_ARGS"] = f"--conf {event_log} --conf {plain_log} pyspark-shell"
    os.sync()  # the copy is written back: no writeback of it competes with the run's fsyncs
    started = time.time()
    warehouse = log_dir.parent / f"{log_dir.name}-wh"
    job_command(job, log_dir, master, warehouse, result, check=True, env=env, interpreter_args=interpreter_args)
    ended = time.time()
    in_fn = sum(row["duration_ms"] for row in json.loads(result.read_text())["partitions"]) / 1000
    return {"wall": ended - started, **spark_phases(events, started, ended), "in_fn": in_fn}


def measure(job: str, scratch: Path, sources: dict[str, Path], master: str, rep: int) -> dict[str, float]:
    """One repetition for one master: a run over one empty partition per core, then the 64 partitions."""
    tag = f"{master.replace('[', '').replace(']', '')}-{rep}"
    figures = {}
    for size in ("tiny", "full"):
        copy = scratch / f"{size}-{tag}" / "logs"
        shutil.copytree(sources[size].parent, copy.parent)
        if size == "tiny":  # one empty partition per core
            for extra in range(cores(master), cores(MASTERS[-1])):
                shutil.rmtree(copy / f"bench-{extra}")
        figures[size] = run_job(job, copy, master)
        shutil.rmtree(copy)
    return {**figures["full"], "first_job": figures["tiny"]["job"]}


def build_sources(job: str, scratch: Path, mib: int, records: int) -> dict[str, Path]:
    """The input log dirs, each alone in its own folder (beside it: compact's topic config)."""
    sources = {size: scratch / f"source-{size}" / "logs" for size in ("tiny", "full")}
    broker_log_dir(sources["tiny"])
    for p in range(cores(MASTERS[-1])):
        (sources["tiny"] / f"bench-{p}").mkdir(parents=True)
    if job == "recover":
        build_recover(sources["full"], mib)
    else:
        build_compact(sources["full"], records)
        (sources["tiny"].parent / "topics.toml").write_text(TOPIC_CONFIG)
        job_command("recover", sources["tiny"], "local[2]", scratch / "tiny-prep-wh", None, check=True)
    return sources


def control(master: str, cpu_ms: float, repeat: int) -> dict[str, float]:
    """The peer: 64 pure-Python tasks and 64 no-op tasks through `run_partition_tasks`, in a child process."""
    out = subprocess.run(
        [sys.executable, __file__, "--control", master, "--cpu-ms", str(cpu_ms), "--repeat", str(repeat)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.splitlines()[-1])


def _noop(task: int) -> int:
    """Executor side: nothing (the task's cost is Spark's and PySpark's alone)."""
    return task


def _burn(iterations: int) -> int:
    """Executor side: a fixed amount of Python work, integer arithmetic in the interpreter loop.

    Fixed work, not fixed CPU time: what slows Python code when two workers run at once (two vCPUs
    sharing a host core, caches, memory) slows it as it slows a job's partitions. (Spinning until
    `thread_time` has advanced is a loop of clock syscalls that two workers run side by side at
    nearly 2x here, where Python code gets ~1.6-1.7x.)
    """
    total = 0
    for i in range(iterations):
        total += i * i & 0xFFFF
    return total


def _iterations_for(cpu_ms: float) -> int:
    """How many `_burn` iterations take `cpu_ms` on this machine, one process alone (best of 5)."""
    sample = 200_000
    seconds = min(timed(lambda: _burn(sample)) for _ in range(5))
    return max(1, round(sample * cpu_ms / 1000 / seconds))


def run_control(master: str, cpu_ms: float, repeat: int) -> None:
    """`--control`: warm a session (one Python worker per core), then time the two 64-task jobs, best of `repeat`."""
    from jobs._spark import get_spark, run_partition_tasks

    iterations = _iterations_for(cpu_ms)  # before the session starts: the machine is otherwise idle
    spark = get_spark(master, "logkeeper spark_scaling control")
    run_partition_tasks(spark, list(range(2 * cores(master))), _noop, description="warm-up", log_progress=False)

    def best(tasks: Sequence[T], fn: Callable[[T], object]) -> float:
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            run_partition_tasks(spark, tasks, fn, description="control", log_progress=False)
            times.append(time.perf_counter() - started)
        return min(times)

    figures = {"cpu": best([iterations] * PARTITIONS, _burn), "noop": best(list(range(PARTITIONS)), _noop)}
    spark.stop()
    print(json.dumps(figures))


def report(
    job: str, input_size: str, runs: dict[str, dict[str, float]], peers: dict[str, dict[str, float]], cpu_ms: float
) -> None:
    """Print the table: best-of figures per master, speed-ups, and the job's speed-up against the peer's."""
    one, two = MASTERS

    def row(label: str, key: str, per_partition: bool = False) -> None:
        a, b = runs[one][key], runs[two][key]
        if per_partition:
            print(f"| {label} | {a:.2f} s ({a / PARTITIONS * 1000:.0f} ms a partition) | ", end="")
            print(f"{b:.2f} s ({b / PARTITIONS * 1000:.0f} ms a partition) | {a / b:.2f}x |")
        else:
            print(f"| {label} | {a:.2f} s | {b:.2f} s | {a / b:.2f}x |")

    print(f"| {job}: {PARTITIONS} partitions x {input_size} | {one} | {two} | speed-up |")
    print("|---|---|---|---|")
    row("end to end (one process)", "wall")
    row("outside the Spark job (JVM, session, driver)", "outside")
    row("Spark job", "job")
    row("first job over one empty partition per core (Python workers start)", "first_job")
    row(f"{PARTITIONS} partitions (Spark job minus first job)", "partitions", per_partition=True)
    print(
        f"| inside storage_core (sum / cores) | {runs[one]['in_fn']:.2f} s | "
        f"{runs[two]['in_fn'] / cores(two):.2f} s | {runs[one]['in_fn'] / (runs[two]['in_fn'] / cores(two)):.2f}x |"
    )
    a, b = peers[one]["cpu"], peers[two]["cpu"]
    ceiling = a / b
    print(f"| peer: {PARTITIONS} pure-Python tasks of {cpu_ms:.0f} ms alone | {a:.2f} s | {b:.2f} s | {ceiling:.2f}x |")
    a, b = peers[one]["noop"], peers[two]["noop"]
    print(
        f"| peer: {PARTITIONS} no-op tasks | {a:.2f} s ({a / PARTITIONS * 1000:.1f} ms a task) | "
        f"{b:.2f} s ({b / PARTITIONS * 1000:.1f} ms a task) | {a / b:.2f}x |"
    )
    speedup = runs[one]["partitions"] / runs[two]["partitions"]
    print(f"{job}'s speed-up {speedup:.2f}x = {speedup / ceiling:.2f} of the pure-Python peer's {ceiling:.2f}x")


def main(job: str, mib: int, records: int, repeat: int) -> None:
    """Build the input, measure both masters and the peer, print the table."""
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        load = os.getloadavg()[0]  # before any work of ours: what the rest of the machine is doing
        sources = build_sources(job, scratch, mib, records)
        samples: dict[str, list[dict[str, float]]] = {master: [] for master in MASTERS}
        for rep in range(repeat):
            for master in MASTERS:
                samples[master].append(measure(job, scratch, sources, master, rep))
        runs = {}
        for master, reps in samples.items():
            best = {key: min(r[key] for r in reps) for key in reps[0]}
            best["outside"] = best["wall"] - best["job"]
            best["partitions"] = best["job"] - best["first_job"]
            runs[master] = best
        cpu_ms = runs[MASTERS[0]]["in_fn"] / PARTITIONS * 1000
        peers = {master: control(master, cpu_ms, repeat) for master in MASTERS}
    print(f"best of {repeat}; 1-minute load average before the run {load:.2f}", end="")
    print(" (the machine was not idle: other work inflates the figures)" if load > 0.5 else "")
    report(job, f"{mib} MiB" if job == "recover" else f"{records} records", runs, peers, cpu_ms)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job", choices=("recover", "compact"), default="recover")
    parser.add_argument("--mib", type=int, default=4, help="MiB per partition (recover)")
    parser.add_argument("--records", type=int, default=50_000, help="records per partition (compact)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions; the best is reported")
    parser.add_argument("--control", metavar="MASTER", help=argparse.SUPPRESS)
    parser.add_argument("--cpu-ms", type=float, default=30.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.control:
        run_control(args.control, args.cpu_ms, args.repeat)
    else:
        main(args.job, args.mib, args.records, args.repeat)
