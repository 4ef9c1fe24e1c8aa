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
  of every job in both modes, and the test asserts that the sweep reached each one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLED_STRIDES = {"recover": 16, "retention": 6, "compact": 5, "maintain": 32}
JOBS = pytest.mark.parametrize("job", ["recover", "retention", "compact", "maintain"])
MODES = pytest.mark.parametrize("mode", ["crash", "power-loss"])

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _sweep(work: Path, job: str, mode: str, *, stride: int, stride_only: bool, timeout_s: int) -> dict:
    """Run the sweep in its own process; its report, after the checks every plan shares."""
    report_path = work / "report.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    env.pop("LOGKEEPER_FAULT_DIR", None)
    command = [sys.executable, "-m", "tests.reliability.sweep", "--job", job, "--mode", mode, "--stride", str(stride)]
    command += ["--out", str(report_path), "--work", str(work / "work")] + (["--stride-only"] if stride_only else [])
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout_s)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(report_path.read_text())
    assert report["mismatches"] == []
    assert report["reached"] == report["planned"]
    assert report["driver_operations"] > 0
    assert report["executor_operations"] > 0
    return report


@MODES
@JOBS
def test_the_sampled_sweep_reaches_every_planned_operation_and_every_rerun_ends_where_one_run_does(
    tmp_path: Path, job: str, mode: str
) -> None:
    every_driver_operation = mode == "crash" and job != "maintain"
    stride = SAMPLED_STRIDES[job] * (2 if mode == "power-loss" else 1)
    report = _sweep(tmp_path, job, mode, stride=stride, stride_only=not every_driver_operation, timeout_s=1800)
    assert report["operations"] in report["reached"]  # the last operation
    if every_driver_operation:
        assert set(report["driver_points"]) <= set(report["reached"])


@pytest.mark.full_sweep
@MODES
@JOBS
def test_the_full_sweep_reaches_every_operation_of_an_uninterrupted_run(tmp_path: Path, job: str, mode: str) -> None:
    report = _sweep(tmp_path, job, mode, stride=1, stride_only=True, timeout_s=4 * 3600)
    assert report["reached"] == list(range(1, report["operations"] + 1))
    print(f"{job} {mode}: {report['operations']} operations, all reached, in {report['seconds']} s")
