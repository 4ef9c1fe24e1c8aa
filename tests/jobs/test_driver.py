from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from jobs._args import JobArgs, UsageError, common_args, job_parser
from jobs._driver import run_main
from jobs._log_dirs import discover_log_dirs, locked_log_dirs
from jobs._results import EXIT_FAILED, EXIT_OK, EXIT_REFUSED, EXIT_USAGE, JobSummary, PartitionRow, new_run_id
from tests.builders.log_dir import kafka_log_dir
from tests.jobs.conftest import locked_by_another_process


@dataclass(frozen=True, slots=True)
class FakeArgs:
    common: JobArgs


def parse(argv: list[str]) -> FakeArgs:
    return FakeArgs(common_args(job_parser("fake", "a job that marks partition t-1 failed").parse_args(argv)))


def run(args: FakeArgs) -> JobSummary:
    """Lock, discover, and report every partition ok except t-1 (no Spark needed for the driver's part)."""
    with locked_log_dirs(args.common.log_dirs):
        found, rows = discover_log_dirs(args.common.log_dirs)
        rows += [
            PartitionRow(p.log_dir, p.dir_name, p.topic, p.partition, "failed" if p.partition == 1 else "ok", 0, 0)
            for p in found
        ]
    return JobSummary("fake", new_run_id(), args.common.dry_run, tuple(rows))


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    for name in ("t-0", "t-1"):
        (kafka_log_dir(tmp_path / "logs") / name).mkdir()
    return tmp_path / "logs"


def test_results_and_exit_code(log_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = tmp_path / "result.json"
    argv = ["--log-dirs", str(log_dir), "--result-json", str(result), "--warehouse", str(tmp_path / "wh")]
    assert run_main("fake", parse, run, argv) == EXIT_FAILED
    body = json.loads(result.read_text())
    assert [(p["dir_name"], p["status"]) for p in body["partitions"]] == [("t-0", "ok"), ("t-1", "failed")]
    assert (tmp_path / "wh" / "maintenance_log" / "_delta_log").is_dir()
    err = capsys.readouterr().err
    assert "logkeeper fake: 2 partitions, 1 ok, 1 failed" in err
    assert f"{log_dir}/t-1: failed" in err


def test_all_ok_exits_0(tmp_path: Path) -> None:
    (kafka_log_dir(tmp_path / "logs") / "t-0").mkdir()
    assert run_main("fake", parse, run, ["--log-dirs", str(tmp_path / "logs")]) == EXIT_OK


def test_bad_arguments_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main("fake", parse, run, ["--log-dirs", str(tmp_path / "missing")]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("logkeeper fake: log dir ")


def test_multi_line_usage_errors_are_printed_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    def parse_badly(argv: list[str]) -> FakeArgs:
        raise UsageError("first\nsecond")

    assert run_main("fake", parse_badly, run, []) == EXIT_USAGE
    assert capsys.readouterr().err == "logkeeper fake: first second\n"


def test_a_live_broker_lock_refuses_with_exit_3(
    log_dir: Path, tmp_path: Path, hold_lock: Callable[[Path], None], capsys: pytest.CaptureFixture[str]
) -> None:
    held = kafka_log_dir(tmp_path / "held")
    hold_lock(held)
    result = tmp_path / "result.json"
    argv = ["--log-dirs", f"{log_dir},{held}", "--result-json", str(result)]
    assert run_main("fake", parse, run, argv) == EXIT_REFUSED
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"logkeeper fake: refused: log dir {held} is locked by a live process")
    assert not result.exists()
    assert not locked_by_another_process(log_dir)
    assert sorted(p.name for p in log_dir.iterdir()) == ["meta.properties", "t-0", "t-1"]  # not even a .lock
