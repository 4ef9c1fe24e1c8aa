"""F12 job-wide: a crash (or a power loss) at the operations of a whole Spark job, driver and executors.

Each case runs tests/reliability/sweep.py in its own process (its own `local[1]` Spark session, with the
job-wide fault control set before Spark starts). The sweep counts the operations of an uninterrupted
run first, then crashes at them and checks that each crash came at that very operation, and that
recovering and running again ends where the uninterrupted run did. Here the sweep must reach every
operation of its plan and find no mismatch.

Two plans (measured times in tests/RELIABILITY.md):

- sampled, in the default run: every K-th operation of the whole run (K per job below: about 25
  points each; 2K in power-loss mode) and the last one, plus, in crash mode, every driver operation
  of recover, retention and compact (the lock, the clean-shutdown marker, the checkpoints: the
  operations the per-instance count of old never reached);
- full (`-m full_sweep`, its own CI step `.ci/full-sweep`, bounded in time there): every operation
  of every job in both modes, and the test asserts that the sweep reached each one; the plan is shared
  by `LOGKEEPER_SWEEP_SHARDS` processes (default: one per CPU), each with its own Spark session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLED_STRIDES = {"recover": 16, "retention": 6, "compact": 5, "maintain": 32, "move": 8}
JOBS = pytest.mark.parametrize("job", ["recover", "retention", "compact", "maintain", "move"])
DRIVER_ONLY = frozenset({"move"})  # no Spark: every operation is the driver's
MODES = pytest.mark.parametrize("mode", ["crash", "power-loss"])

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _sweep(work: Path, job: str, mode: str, *, stride: int, stride_only: bool, timeout_s: int, shards: int = 1) -> dict:
    """Run the sweep in `shards` processes at once, each with its share of the plan; their merged report,
    after the checks every plan shares."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    env.pop("LOGKEEPER_FAULT_DIR", None)
    command = [sys.executable, "-m", "tests.reliability.sweep", "--job", job, "--mode", mode, "--stride", str(stride)]
    command += ["--stride-only"] if stride_only else []
    running = []
    for index in range(1, shards + 1):
        out, log = work / f"report-{index}.json", work / f"sweep-{index}.log"
        shard = ["--shard", f"{index}/{shards}", "--out", str(out), "--work", str(work / f"work-{index}")]
        with log.open("w") as sink:
            process = subprocess.Popen(command + shard, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT)
        running.append((process, out, log))
    deadline = time.monotonic() + timeout_s
    try:
        for process, _, log in running:
            assert process.wait(timeout=max(1.0, deadline - time.monotonic())) == 0, log.read_text()[-3000:]
    finally:
        for process, _, _ in running:
            process.kill()
            process.wait()
    parts = [json.loads(out.read_text()) for _, out, _ in running]
    report = {**parts[0], "planned": [], "reached": [], "mismatches": []}
    for part in parts:
        assert (part["operations"], part["driver_points"]) == (report["operations"], report["driver_points"])
        for key in ("planned", "reached", "mismatches"):
            report[key] = report[key] + part[key]
    report["planned"], report["reached"] = sorted(report["planned"]), sorted(report["reached"])
    report["seconds"] = max(part["seconds"] for part in parts)
    assert report["mismatches"] == []
    assert report["reached"] == report["planned"]
    assert report["driver_operations"] > 0
    assert report["executor_operations"] > 0 or job in DRIVER_ONLY
    return report


@MODES
@JOBS
def test_the_sampled_sweep_reaches_every_planned_operation_and_every_rerun_ends_where_one_run_does(
    tmp_path: Path, job: str, mode: str
) -> None:
    every_driver_operation = mode == "crash" and job not in ("maintain", *DRIVER_ONLY)
    stride = SAMPLED_STRIDES[job] * (2 if mode == "power-loss" else 1)
    report = _sweep(tmp_path, job, mode, stride=stride, stride_only=not every_driver_operation, timeout_s=1800)
    assert report["operations"] in report["reached"]  # the last operation
    if every_driver_operation:
        assert set(report["driver_points"]) <= set(report["reached"])


@pytest.mark.full_sweep
@MODES
@JOBS
def test_the_full_sweep_reaches_every_operation_of_an_uninterrupted_run(tmp_path: Path, job: str, mode: str) -> None:
    shards = int(os.environ.get("LOGKEEPER_SWEEP_SHARDS", os.cpu_count() or 1))
    report = _sweep(tmp_path, job, mode, stride=1, stride_only=True, timeout_s=4 * 3600, shards=shards)
    assert report["reached"] == list(range(1, report["operations"] + 1))
    print(f"{job} {mode}: {report['operations']} operations, all reached, in {report['seconds']} s ({shards} shards)")
