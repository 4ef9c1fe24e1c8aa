"""F12 job-wide: a crash (or a power loss) at the operations of a whole Spark job, driver and executors.

Each case runs tests/reliability/sweep.py in its own process: one `local[1]` Spark session for all
its runs, with the job-wide fault control set before Spark starts; the job runs in-process through
`jobs.cli.main` (its own driver code and executor function on Spark's Python workers), and a few
crash points run it as the `python -m jobs.cli` command, killed at the operation. The sweep counts the
operations of an uninterrupted run first, then crashes at them and checks that each crash came at
that very operation, and that recovering and running again ends where the uninterrupted run did.
Here the sweep must reach every operation of its plan and find no mismatch; the session summary
prints how many operations each job has and how many the sweep reached.

Two plans (measured times in tests/RELIABILITY.md):

- sampled, in the default run: in crash mode every K-th operation of the whole run (K per job below)
  and the last one, plus every driver operation of recover, retention and compact (the lock, the
  clean-shutdown marker, the checkpoints: the operations the per-instance count of old never
  reached), plus the command-line plan; in power-loss mode every 2K-th and the last one;
- full (`-m full_sweep`, its own CI step `.ci/full-sweep`, bounded in time there): every operation
  of every job in both modes, and the test asserts that the sweep reached each one; the plan is shared
  by `LOGKEEPER_SWEEP_SHARDS` processes (default: one per CPU), each with its own Spark session.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.reliability.sweep import memory_dir

REPO = Path(__file__).resolve().parents[2]
SAMPLED_STRIDES = {"recover": 16, "retention": 6, "compact": 5, "maintain": 32, "move": 8}
JOBS = pytest.mark.parametrize("job", ["recover", "retention", "compact", "maintain", "move"])
DRIVER_ONLY = frozenset({"move"})  # no Spark: every operation is the driver's

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _sweep(work: Path, job: str, plans: list[str], *, timeout_s: int, shards: int = 1) -> dict:
    """Run the sweep in `shards` processes at once, each with its share of the plans; their merged
    report, after the checks every plan shares."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    env.pop("LOGKEEPER_FAULT_DIR", None)
    command = [sys.executable, "-m", "tests.reliability.sweep", "--job", job]
    command += [argument for plan in plans for argument in ("--plan", plan)]
    running = []
    scratch = Path(tempfile.mkdtemp(prefix="logkeeper-sweep-", dir=memory_dir()))  # the corpus copies
    try:
        for index in range(1, shards + 1):
            out, log = work / f"report-{index}.json", work / f"sweep-{index}.log"
            shard = ["--shard", f"{index}/{shards}", "--out", str(out), "--work", str(scratch / f"work-{index}")]
            with log.open("w") as sink:
                process = subprocess.Popen(command + shard, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT)
            running.append((process, out, log))
        deadline = time.monotonic() + timeout_s
        for process, _, log in running:
            assert process.wait(timeout=max(1.0, deadline - time.monotonic())) == 0, log.read_text()[-3000:]
    finally:
        for process, _, _ in running:
            process.kill()
            process.wait()
        shutil.rmtree(scratch)
    parts = [json.loads(out.read_text()) for _, out, _ in running]
    report = {**parts[0], "seconds": max(part["seconds"] for part in parts)}
    for part in parts:
        assert (part["operations"], part["driver_points"]) == (report["operations"], report["driver_points"])
    merged = []
    for index, plan in enumerate(report["plans"]):
        plan = {**plan}
        for key in ("planned", "reached", "planned_by_command", "reached_by_command", "mismatches"):
            plan[key] = sorted(value for part in parts for value in part["plans"][index][key])
        assert plan["mismatches"] == []
        assert plan["reached"] == plan["planned"]
        assert plan["reached_by_command"] == plan["planned_by_command"]
        merged.append(plan)
    report["plans"] = merged
    assert report["driver_operations"] > 0
    assert report["executor_operations"] > 0 or job in DRIVER_ONLY
    return report


def _summary(report: dict, shards: int = 1) -> str:
    """One line for the session summary: the job's operations and what each plan reached."""
    plans = "; ".join(
        f"{plan['mode']} {len(plan['reached'])}/{report['operations']} in-process"
        + (f" + {len(plan['reached_by_command'])} as the command" if plan["planned_by_command"] else "")
        + f" in {plan['seconds']} s"
        for plan in report["plans"]
    )
    where = f", {shards} shards" if shards > 1 else ""
    return (
        f"{report['job']}: {report['operations']} operations ({report['driver_operations']} driver + "
        f"{report['executor_operations']} executor); reached {plans} ({report['seconds']} s in all{where})"
    )


@JOBS
def test_the_sampled_sweep_reaches_every_planned_operation_and_every_rerun_ends_where_one_run_does(
    tmp_path: Path, job: str, record_property
) -> None:
    stride = SAMPLED_STRIDES[job]
    drivers = ":drivers" if job not in ("maintain", *DRIVER_ONLY) else ""
    report = _sweep(tmp_path, job, [f"crash:{stride}{drivers}:commands", f"power-loss:{2 * stride}"], timeout_s=1800)
    crash, power_loss = report["plans"]
    for plan in (crash, power_loss):
        assert report["operations"] in plan["reached"]  # the last operation
    if drivers:
        assert set(report["driver_points"]) <= set(crash["reached"])
    # a Python worker killed in its first task; the driver at the end (a job without Spark: only that)
    assert len(crash["reached_by_command"]) == (1 if job in DRIVER_ONLY else 2)
    record_property("crash sweep", _summary(report))


@pytest.mark.full_sweep
@JOBS
def test_the_full_sweep_reaches_every_operation_of_an_uninterrupted_run(
    tmp_path: Path, job: str, record_property
) -> None:
    shards = int(os.environ.get("LOGKEEPER_SWEEP_SHARDS", os.cpu_count() or 1))
    report = _sweep(tmp_path, job, ["crash:1:commands", "power-loss:1"], timeout_s=4 * 3600, shards=shards)
    for plan in report["plans"]:
        assert plan["reached"] == list(range(1, report["operations"] + 1))
    record_property("crash sweep", _summary(report, shards))
    print(_summary(report, shards))
