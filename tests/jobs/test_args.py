from __future__ import annotations

from pathlib import Path

import pytest

from jobs._args import JobArgs, UsageError, common_args, job_parser
from storage_core.config import TopicOverrides


def _parse(*argv: str) -> JobArgs:
    return common_args(job_parser("test", "a test job").parse_args(list(argv)))


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    first, second = tmp_path / "d1", tmp_path / "d2"
    first.mkdir()
    second.mkdir()
    return first, second


def test_common_options(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    first, second = dirs
    args = _parse(
        "--log-dirs",
        f"{first}, {second},,{first}",
        "--now-ms",
        "1700000000000",
        "--dry-run",
        "--result-json",
        str(tmp_path / "r.json"),
        "--master",
        "local[3]",
        "--warehouse",
        str(tmp_path / "wh"),
    )
    assert args.log_dirs == (first, second)  # blanks and duplicates dropped
    assert (args.now_ms, args.dry_run, args.master) == (1_700_000_000_000, True, "local[3]")
    assert (args.result_json, args.warehouse, args.topics) == (tmp_path / "r.json", tmp_path / "wh", TopicOverrides())


def test_defaults(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOGKEEPER_SPARK_MASTER", raising=False)
    args = common_args(job_parser("test", "").parse_args(["--log-dirs", str(dirs[0])]))
    assert (args.warehouse, args.master, args.dry_run, args.result_json) == (Path("warehouse"), None, False, None)
    assert args.now_ms > 1_700_000_000_000


def test_log_dirs_come_from_server_properties(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    first, second = dirs
    properties = tmp_path / "server.properties"
    properties.write_text(f"node.id=1\nlog.dirs={first},{second}\nlog.retention.minutes=5\n")
    args = _parse("--server-properties", str(properties))
    assert args.log_dirs == (first, second)
    assert args.broker.log_defaults.retention_ms == 300_000
    assert _parse("--server-properties", str(properties), "--log-dirs", str(second)).log_dirs == (second,)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "no log dirs"),
        (["--log-dirs", "{tmp}/missing"], "missing (from --log-dirs) does not exist"),
        (["--server-properties", "{tmp}/server.properties"], "from log.dirs of"),
        (["--log-dirs", "{tmp}/d1", "--server-properties", "{tmp}/nope.properties"], "no such file"),
        (
            ["--log-dirs", "{tmp}/d1", "--server-properties", "{tmp}/typo.properties"],
            "did you mean log.retention.hours?",
        ),
        (["--log-dirs", "{tmp}/d1", "--topic-config", "{tmp}/nope.toml"], "--topic-config"),
        (["--log-dirs", "{tmp}/d1", "--topic-config", "{tmp}/bad.toml"], "retention.ms: not an integer"),
        (["--log-dirs", "{tmp}/d1", "--now-ms", "-5"], "--now-ms"),
        (["--log-dirs", "{tmp}/d1", "--now-ms", "soon"], "--now-ms"),
        (["--log-dirs", "{tmp}/d1", "--bogus"], "--bogus"),
    ],
)
def test_bad_arguments_are_usage_errors(dirs: tuple[Path, Path], tmp_path: Path, argv: list[str], message: str) -> None:
    (tmp_path / "server.properties").write_text(f"log.dirs={tmp_path}/gone\n")
    (tmp_path / "typo.properties").write_text("log.retention.hour=1\n")
    (tmp_path / "bad.toml").write_text('[topics."t"]\nretention.ms = "a week"\n')
    with pytest.raises(UsageError) as error:
        _parse(*(a.format(tmp=tmp_path) for a in argv))
    assert message in str(error.value)
