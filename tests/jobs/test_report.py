"""`logkeeper report`: the HTML report of a warehouse made by real jobs, rendered in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.jobs.conftest import REPO

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.browser]

SECTIONS = (
    "bytes-per-topic",
    "bytes-per-broker",
    "retention-per-day",
    "compaction-savings",
    "corruption",
    "scrub-findings",
    "due-for-compaction",
    "last-runs",
    "disk-usage",
    "compaction-stuck",
)
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--virtual-time-budget=5000",
)


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    """Debian's Chromium, headless, with a fresh profile; bounded in time."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    assert binary, "chromium is installed by ./dev test (apt-get install chromium)"
    return subprocess.run(
        [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def test_the_report_renders_every_section_with_data_and_every_plot_drawn(audit_warehouse, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = subprocess.run(
        [sys.executable, "-m", "jobs.cli", "report", "--warehouse", str(audit_warehouse), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # self-contained: works offline

    dom = chromium("--dump-dom", out.as_uri(), profile=tmp_path / "profile").stdout
    assert 'data-checked="yes"' in dom  # the self-check ran after layout
    for section in SECTIONS:
        match = re.search(rf'<section id="{section}" data-rows="(\d+)">(.*?)</section>', dom, re.S)
        assert match, section
        assert int(match[1]) > 0, f"{section} has no data"
        plots = re.findall(r'<svg class="plot" data-marks="(\d+)".*?data-drawn="(\d+)"', match[2], re.S)
        assert plots, f"{section} has no plot"
        for marks, drawn in plots:
            assert int(marks) > 0
            assert int(drawn) == int(marks), f"{section}: {drawn} of {marks} marks drawn"

    png = tmp_path / "report.png"
    chromium(f"--screenshot={png}", "--window-size=1280,4000", out.as_uri(), profile=tmp_path / "profile2")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 50_000  # plots and tables, not a blank page


def test_an_empty_warehouse_is_a_one_line_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "jobs.cli", "report", "--warehouse", str(tmp_path), "--out", str(tmp_path / "r.html")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r.html").exists()
