"""`spark-submit.sh` packages the code at submit time and runs a job with the pip-installed Spark."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from jobs.demo import generate

pytestmark = [pytest.mark.spark, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]


def test_submit_stats_and_dump(tmp_path: Path) -> None:
    log_dirs = generate(tmp_path / "logs")
    result = subprocess.run(
        [
            str(REPO / "spark-submit.sh"),
            "--master",
            "local[1]",
            "stats",
            "--log-dirs",
            str(log_dirs[0]),
            "--warehouse",
            str(tmp_path / "wh"),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert list((tmp_path / "wh" / "segment_stats" / "_delta_log").glob("*.json"))
    assert not list(REPO.glob("*.zip"))  # the package zip is built in a temp dir, never committed
    bad = subprocess.run([str(REPO / "spark-submit.sh")], capture_output=True, text=True, check=False)
    assert bad.returncode == 2
