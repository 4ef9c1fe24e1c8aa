"""The `logkeeper` command: dispatch, exit codes and one-line errors, in real processes."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from jobs import cli
from tests.builders.log_dir import LogDirBuilder, kafka_log_dir
from tests.jobs.conftest import MASTER, REPO, locked_by_another_process

LOGKEEPER = Path(sys.executable).parent / "logkeeper"


def _run(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jobs", *argv], capture_output=True, text=True, check=False, cwd=REPO, timeout=timeout
    )


def test_help_lists_every_subcommand() -> None:
    result = subprocess.run([str(LOGKEEPER), "--help"], capture_output=True, text=True, check=False, timeout=60)
    assert result.returncode == 0
    for name in cli.SUBCOMMANDS:
        assert f"\n    {name} " in result.stdout
    assert _run().returncode == 2


@pytest.mark.parametrize("name", list(cli.SUBCOMMANDS))
def test_each_subcommand_has_its_own_help(name: str) -> None:
    result = _run(name, "--help")
    assert result.returncode == 0
    assert result.stdout.startswith(f"usage: logkeeper {name} ")


def test_maintain_help_lists_every_steps_options_and_refuses_others() -> None:
    shown = _run("maintain", "--help").stdout
    for option in ("--deep-verify", "--handle-strays", "--high-watermark-source", "--file-delete-delay-ms"):
        assert option in shown
    assert "--dedupe-buffer-bytes" in shown
    refused = _run("maintain", "--log-dirs", ".", "--bogus")
    assert refused.returncode == 2
    assert refused.stderr.strip() == "logkeeper maintain: unrecognized arguments: --bogus"


# Built by `pip install -e .` where a C compiler is; without one the install runs the twins.
BUILT = importlib.util.find_spec("storage_core.native._native") is not None


@pytest.mark.parametrize(
    ("pure", "named"),
    [
        ("", "native (compiled core, CRC-32C by " if BUILT else "pure Python (the compiled core is not installed"),
        ("1", "pure Python (LOGKEEPER_PURE_PYTHON=1)"),
    ],
)
def test_version_names_the_storage_core_implementation(pure: str, named: str) -> None:
    env = {**os.environ, "LOGKEEPER_PURE_PYTHON": pure}
    result = subprocess.run([str(LOGKEEPER), "--version"], capture_output=True, text=True, check=False, env=env)
    assert result.returncode == 0
    assert result.stdout.startswith("logkeeper 0.1.0 (storage_core: " + named)
    assert result.stdout.count("\n") == 1  # one line, whatever the terminal's width


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nope"], "usage: logkeeper "),
        (["recover", "--log-dirs", "/nonexistent/logkeeper"], "logkeeper recover: log dir /nonexistent/logkeeper"),
        (["retention", "--bogus"], "logkeeper retention: unrecognized arguments: --bogus"),
        (["compact", "--log-dirs", ".", "--now-ms", "soon"], "logkeeper compact: argument --now-ms: invalid int"),
    ],
)
def test_bad_arguments_exit_2_with_a_message_and_no_traceback(argv: list[str], message: str) -> None:
    result = _run(*argv)
    assert result.returncode == 2
    assert result.stderr.startswith(message)
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_a_typo_in_server_properties_exits_2_naming_the_key(tmp_path: Path) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text(f"log.dirs={tmp_path}\nlog.retention.hour=24\n")
    result = _run("recover", "--server-properties", str(properties))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "log.retention.hour: unknown broker configuration key; did you mean log.retention.hours?" in result.stderr


def test_a_held_lock_exits_3_and_touches_nothing(tmp_path: Path, hold_lock: Callable[[Path], None]) -> None:
    free, held = tmp_path / "free", tmp_path / "held"
    (kafka_log_dir(free) / "t-0").mkdir()
    kafka_log_dir(held)
    hold_lock(held)
    result = _run("recover", "--log-dirs", f"{free},{held}", "--warehouse", str(tmp_path / "wh"))
    assert result.returncode == 3
    assert result.stderr.splitlines() == [
        f"logkeeper recover: refused: log dir {held} is locked by a live process (a running Kafka broker?): "
        "stop the broker before maintaining this directory"
    ]
    assert sorted(p.name for p in free.iterdir()) == ["meta.properties", "t-0"]  # not even a .lock
    assert not (tmp_path / "wh").exists()
    assert not locked_by_another_process(free)


def test_dump_never_imports_pyspark() -> None:
    script = (
        "import sys\n"
        "from jobs.cli import main\n"
        "code = main(['dump', '--help'])\n"
        "print(code, 'pyspark' in sys.modules, 'py4j' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, cwd=REPO, timeout=60
    )
    assert result.stdout.splitlines()[-1] == "0 False False"


@pytest.fixture
def fake_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """`fake_job(body)`: point `logkeeper recover` at a module whose `main(argv)` runs `body`."""

    def install(body: str) -> None:
        name = f"fake_job_{uuid.uuid4().hex}"  # a fresh module each time (imports are cached)
        (tmp_path / f"{name}.py").write_text(f"def main(argv):\n    {body}\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.setitem(cli.SUBCOMMANDS, "recover", (name, "a fake"))

    return install


def test_an_unexpected_error_is_one_line_and_exit_1(
    fake_job: Callable[[str], None], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("LOGKEEPER_DEBUG", raising=False)
    fake_job("raise RuntimeError('first line\\nsecond line')")
    assert cli.main(["recover"]) == 1
    assert capsys.readouterr().err == "logkeeper recover: RuntimeError: first line\n"
    monkeypatch.setenv("LOGKEEPER_DEBUG", "1")
    assert cli.main(["recover"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback")
    assert err.endswith("logkeeper recover: RuntimeError: first line\n")


@pytest.mark.parametrize(
    ("body", "code", "err"),
    [
        ("return 3", 3, ""),
        ("raise SystemExit(0)", 0, ""),
        ("raise SystemExit(2)", 2, ""),
        ("raise KeyboardInterrupt", 130, "logkeeper recover: interrupted\n"),
    ],
)
def test_job_exit_codes_pass_through(
    fake_job: Callable[[str], None], capsys: pytest.CaptureFixture[str], body: str, code: int, err: str
) -> None:
    fake_job(body)
    assert cli.main(["recover", "--anything"]) == code
    assert capsys.readouterr().err == err


@pytest.mark.spark
@pytest.mark.slow
def test_successful_runs_print_no_traceback_and_no_spark_warnings(tmp_path: Path) -> None:
    """Repeated real runs (a JVM each): exit 0, no traceback (pyspark's daemon used to hit a broken
    pipe at exit in about one run in five), none of Spark's WARN lines; `--log-format json` gives one
    object per logkeeper line."""
    builder = LogDirBuilder(tmp_path / "logs")
    builder.partition("t", 0)
    builder.checkpoints()
    argv = ["stats", "--log-dirs", str(builder.path), "--warehouse", str(tmp_path / "wh"), "--master", "local[2]"]
    for _ in range(2):
        result = _run(*argv, timeout=600)
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        assert " WARN " not in result.stderr
        assert "logkeeper stats: 1 partitions, 1 ok, 0 failed" in result.stderr
    as_json = _run("--log-format", "json", *argv, timeout=600)
    assert as_json.returncode == 0
    assert "Traceback" not in as_json.stderr
    records = [json.loads(line) for line in as_json.stderr.splitlines() if line.startswith("{")]
    assert {"ts", "level", "logger", "message"} <= set(records[0])
    assert any(r["message"] == "logkeeper stats: 1 partitions, 1 ok, 0 failed" for r in records)
    assert [
        line for line in as_json.stderr.splitlines() if "logkeeper stats" in line and not line.startswith("{")
    ] == []
    quiet = _run("-q", *argv, timeout=600)
    assert quiet.returncode == 0
    assert "Traceback" not in quiet.stderr
    assert "logkeeper stats:" not in quiet.stderr


@pytest.mark.spark
def test_a_dry_run_says_what_it_would_change_never_just_ok(spark, tmp_path: Path, capsys) -> None:
    from jobs import recover

    builder = LogDirBuilder(tmp_path / "logs")
    part = builder.partition("t", 0)
    builder.checkpoints()
    active = max(part.glob("*.log"))
    with active.open("ab") as torn:
        torn.write(b"\x00\x00\x00\x00\x00\x00\x00\x0a\x00\x00\x01\x00" + b"x" * 30)  # a batch cut short
    size = active.stat().st_size
    argv = ["--log-dirs", str(builder.path), "--master", MASTER, "--warehouse", str(tmp_path / "wh"), "--dry-run"]
    assert recover.main(argv) == 0
    err = capsys.readouterr().err
    (line,) = [line for line in err.splitlines() if line.startswith("[1/1] t-0 ")]
    assert line.startswith(f"[1/1] t-0 ok, would truncate 42 B of {active.name} (")
    assert "quarantine 42 B" in line
    assert active.stat().st_size == size  # a plan: nothing changed
