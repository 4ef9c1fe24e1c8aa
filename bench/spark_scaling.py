"""Spark scaling of `logkeeper recover`: 64 partitions with local[1] vs local[2], against a CPU-only peer.

64 partitions of --mib MiB each (one-record 16 KiB batches over 4 segments, indexes deleted so that
every segment is recovered) are recovered by the real CLI, one fresh process per run, with Spark's
event log on. Every run gets a fresh copy of the same input, written back (`os.sync`) and
page-cached before it starts, and a fresh warehouse. Per master, best of --repeat (masters
interleaved), two runs:

* one empty partition per core: its Spark job is the fixed cost of a job, mostly starting one
  Python worker per core (the JVM and session start-up lie outside the job);
* the 64 partitions: end to end, outside the Spark job (JVM, session, driver, results), the Spark
  job, and the job minus the first run's job: the 64 partitions alone, the figure that should scale.
  `--result-json` gives the time spent inside `recover_partition`.

The peer, measured per master in its own process after a warm-up job (`--control`): 64 tasks
through the same `run_partition_tasks`, each burning as much CPU as the mean `recover_partition`
of the local[1] run lasted, and 64 no-op tasks (the per-task overhead of Spark and PySpark). The
CPU peer's local[2]/local[1] speed-up is the most two cores give tasks of that size here, next to
the JVM and the driver; recovery's speed-up is reported as a fraction of it.

Run: `.venv/bin/python bench/spark_scaling.py [--mib 4] [--repeat 3]`.
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

from storage_core import names
from storage_core.records.batch import Record, build_batch

PARTITIONS = 64
MASTERS = ("local[1]", "local[2]")
T = TypeVar("T")


def build(root: Path, mib: int) -> None:
    """64 partitions of `mib` MiB: 4 segments of one-record 16 KiB batches, no index files."""
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


def cores(master: str) -> int:
    """The N of `local[N]`."""
    return int(master.removeprefix("local[").removesuffix("]"))


def spark_job_seconds(event_log_dir: Path) -> float:
    """The summed duration of the Spark jobs in a run's event log (submission to completion)."""
    (log,) = event_log_dir.iterdir()
    events = [json.loads(line) for line in log.read_text().splitlines()]
    submitted = {e["Job ID"]: e["Submission Time"] for e in events if e["Event"] == "SparkListenerJobStart"}
    ended = {e["Job ID"]: e["Completion Time"] for e in events if e["Event"] == "SparkListenerJobEnd"}
    return sum(ended[job] - submitted[job] for job in submitted) / 1000


def run_recover(log_dir: Path, master: str) -> dict[str, float]:
    """One `logkeeper recover` process over `log_dir`, with Spark's event log on.

    Returns its wall time, the time of its Spark job (from the event log: Python worker start-up
    and the tasks) and the summed `duration_ms` of its partitions (inside `recover_partition`).
    """
    events = log_dir.parent / f"{log_dir.name}-events"
    events.mkdir()
    result = log_dir.parent / f"{log_dir.name}.json"
    event_log = f"spark.eventLog.enabled=true --conf spark.eventLog.dir={events.as_uri()}"
    plain_log = "spark.eventLog.compress=false --conf spark.eventLog.rolling.enabled=false"
    env = {**os.environ, "PYSPARK_SUBMIT_ARGS": f"--conf {event_log} --conf {plain_log} pyspark-shell"}
    os.sync()  # the copy is written back: no writeback of it competes with the run's fsyncs
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
            str(log_dir.parent / f"{log_dir.name}-wh"),
            "--result-json",
            str(result),
        ],
        check=True,
        capture_output=True,
        env=env,
    )
    wall = time.perf_counter() - started
    in_fn = sum(row["duration_ms"] for row in json.loads(result.read_text())["partitions"]) / 1000
    return {"wall": wall, "job": spark_job_seconds(events), "in_fn": in_fn}


def measure(scratch: Path, source: Path, master: str, rep: int) -> dict[str, float]:
    """One repetition for one master: a run over one empty partition per core, then the 64 partitions."""
    tag = f"{master.replace('[', '').replace(']', '')}-{rep}"
    tiny = scratch / f"tiny-{tag}"
    for p in range(cores(master)):
        (tiny / f"bench-{p}").mkdir(parents=True)
    full = scratch / f"full-{tag}"
    shutil.copytree(source, full)
    first_job = run_recover(tiny, master)["job"]
    figures = run_recover(full, master)
    shutil.rmtree(full)
    return {**figures, "first_job": first_job}


def control(master: str, cpu_ms: float, repeat: int) -> dict[str, float]:
    """The peer: 64 CPU-only tasks and 64 no-op tasks through `run_partition_tasks`, in a child process."""
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


def _burn(cpu_ms: float) -> float:
    """Executor side: spin until this thread has used `cpu_ms` of CPU (contention stretches only the wall time)."""
    end = time.thread_time() + cpu_ms / 1000
    while time.thread_time() < end:
        pass
    return cpu_ms


def run_control(master: str, cpu_ms: float, repeat: int) -> None:
    """`--control`: warm a session (one Python worker per core), then time the two 64-task jobs, best of `repeat`."""
    from jobs._spark import get_spark, run_partition_tasks

    spark = get_spark(master, "logkeeper spark_scaling control")
    run_partition_tasks(spark, list(range(2 * cores(master))), _noop, description="warm-up", log_progress=False)

    def best(tasks: Sequence[T], fn: Callable[[T], object]) -> float:
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            run_partition_tasks(spark, tasks, fn, description="control", log_progress=False)
            times.append(time.perf_counter() - started)
        return min(times)

    figures = {"cpu": best([cpu_ms] * PARTITIONS, _burn), "noop": best(list(range(PARTITIONS)), _noop)}
    spark.stop()
    print(json.dumps(figures))


def report(runs: dict[str, dict[str, float]], peers: dict[str, dict[str, float]], cpu_ms: float, mib: int) -> None:
    """Print the table: best-of figures per master, speed-ups, and recovery's speed-up against the peer's."""
    one, two = MASTERS

    def row(label: str, key: str, per_partition: bool = False) -> None:
        a, b = runs[one][key], runs[two][key]
        if per_partition:
            print(f"| {label} | {a:.2f} s ({a / PARTITIONS * 1000:.0f} ms a partition) | ", end="")
            print(f"{b:.2f} s ({b / PARTITIONS * 1000:.0f} ms a partition) | {a / b:.2f}x |")
        else:
            print(f"| {label} | {a:.2f} s | {b:.2f} s | {a / b:.2f}x |")

    print(f"| {PARTITIONS} partitions x {mib} MiB | {one} | {two} | speed-up |")
    print("|---|---|---|---|")
    row("end to end (one process)", "wall")
    row("outside the Spark job (JVM, session, driver)", "outside")
    row("Spark job", "job")
    row("first job over one empty partition per core (Python workers start)", "first_job")
    row(f"{PARTITIONS} partitions (Spark job minus first job)", "partitions", per_partition=True)
    print(
        f"| inside recover_partition (sum / cores) | {runs[one]['in_fn']:.2f} s | "
        f"{runs[two]['in_fn'] / cores(two):.2f} s | {runs[one]['in_fn'] / (runs[two]['in_fn'] / cores(two)):.2f}x |"
    )
    a, b = peers[one]["cpu"], peers[two]["cpu"]
    ceiling = a / b
    print(f"| peer: {PARTITIONS} CPU-only tasks of {cpu_ms:.0f} ms | {a:.2f} s | {b:.2f} s | {ceiling:.2f}x |")
    a, b = peers[one]["noop"], peers[two]["noop"]
    print(
        f"| peer: {PARTITIONS} no-op tasks | {a:.2f} s ({a / PARTITIONS * 1000:.1f} ms a task) | "
        f"{b:.2f} s ({b / PARTITIONS * 1000:.1f} ms a task) | {a / b:.2f}x |"
    )
    speedup = runs[one]["partitions"] / runs[two]["partitions"]
    print(f"recovery's speed-up {speedup:.2f}x = {speedup / ceiling:.2f} of the CPU-only peer's {ceiling:.2f}x")


def main(mib: int, repeat: int) -> None:
    """Build the input, measure both masters and the peer, print the table."""
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        load = os.getloadavg()[0]  # before any work of ours: what the rest of the machine is doing
        source = scratch / "source"
        build(source, mib)
        samples: dict[str, list[dict[str, float]]] = {master: [] for master in MASTERS}
        for rep in range(repeat):
            for master in MASTERS:
                samples[master].append(measure(scratch, source, master, rep))
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
    report(runs, peers, cpu_ms, mib)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=4, help="MiB per partition")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions; the best is reported")
    parser.add_argument("--control", metavar="MASTER", help=argparse.SUPPRESS)
    parser.add_argument("--cpu-ms", type=float, default=30.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.control:
        run_control(args.control, args.cpu_ms, args.repeat)
    else:
        main(args.mib, args.repeat)
