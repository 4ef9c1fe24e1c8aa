"""`logkeeper dump` as a command: exit codes, one-line errors, no JVM."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from storage_core.records.batch import Record, build_batch


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jobs", *args], capture_output=True, text=True, check=False)


def test_dump_prints_and_never_imports_pyspark(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_batch([Record(0, 1, b"k", b"v")], base_offset=0))
    probe = (
        "import sys, jobs.cli; code = jobs.cli.main(['dump', '--files', sys.argv[1], '--json']);"
        "assert 'pyspark' not in sys.modules, 'pyspark imported'; raise SystemExit(code)"
    )
    result = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert '"type":"batch"' in result.stdout


def test_missing_file_and_bad_flag_exit_2_with_one_line() -> None:
    missing = _run("dump", "--files", "/nonexistent/00000000000000000000.log")
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0
    assert "Traceback" not in missing.stderr
    bad = _run("dump", "--files", "x", "--no-such-flag")
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr


def test_unknown_subcommand_exits_2() -> None:
    assert _run("frobnicate").returncode == 2
