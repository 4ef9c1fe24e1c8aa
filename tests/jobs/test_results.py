from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from jobs._log_dirs import PartitionTask
from jobs._results import (
    EXIT_FAILED,
    EXIT_OK,
    ActionRow,
    JobSummary,
    LogDirRow,
    PartitionRow,
    exit_code,
    failed_row,
    new_run_id,
    partition_row,
    progress_line,
    run_partition_work,
    settings_lines,
    write_result_json,
)
from storage_core.config_layers import ConfigValue
from storage_core.errors import CorruptRecordError

PART = PartitionTask("/data/d1", "orders-0", "orders", 0, "live", 2_000_000)


def _row(dir_name: str, status: str, *, log_dir: str = "/data/d1", partition: int = 0) -> PartitionRow:
    return PartitionRow(log_dir, dir_name, dir_name.rsplit("-", 1)[0], partition, status, 10, 1)


def test_exit_code_is_1_when_any_partition_failed_or_is_corrupt() -> None:
    assert exit_code([]) == EXIT_OK
    assert exit_code([_row("a-0", "ok"), _row("b-0", "skipped")]) == EXIT_OK
    assert exit_code([_row("a-0", "ok"), _row("b-0", "failed")]) == EXIT_FAILED
    assert exit_code([_row("a-0", "corrupt")]) == EXIT_FAILED
    summary = JobSummary("recover", new_run_id(), False, (_row("a-0", "ok"), _row("b-0", "failed")))
    assert (summary.failed, summary.exit_code) == (1, EXIT_FAILED)


def test_failed_row_carries_the_error() -> None:
    error = CorruptRecordError("bad CRC", path="/data/d1/orders-0/00000000000000000000.log", position=61)
    row = failed_row(PART, time.monotonic(), error)
    assert (row.status, row.error_type, row.size_bytes) == ("failed", "CorruptRecordError", 2_000_000)
    assert "position 61" in row.error_message
    assert (row.log_dir, row.dir_name, row.topic, row.partition) == ("/data/d1", "orders-0", "orders", 0)


@dataclass(frozen=True)
class _Task:
    partition: PartitionTask


def test_partition_work_makes_its_row_and_a_storage_or_io_error_a_failed_row(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def work(started: float) -> PartitionRow:
        return partition_row(PART, "ok", started=started, log_end_offset=42)

    row = run_partition_work(_Task(PART), work)
    assert (row.status, row.log_end_offset, row.size_bytes, row.dir_name) == ("ok", 42, 2_000_000, "orders-0")
    assert row.duration_ms >= 0

    def fails(started: float) -> PartitionRow:
        raise OSError(5, "Input/output error")

    failed = run_partition_work(_Task(PART), fails)
    assert (failed.status, failed.error_type, failed.log_dir) == ("failed", "OSError", "/data/d1")
    assert "[" not in capsys.readouterr().err  # progress lines are the driver's, never an executor's

    def bug(started: float) -> PartitionRow:
        raise KeyError("a bug is not a partition's failure")

    with pytest.raises(KeyError):
        run_partition_work(_Task(PART), bug)


def test_an_untouched_partition_row_takes_no_time() -> None:
    row = partition_row(PART, "skipped", started=None, error_message="why")
    assert (row.duration_ms, row.status, row.error_message) == (0, "skipped", "why")


def test_progress_line() -> None:
    row = PartitionRow("/data/d1", "orders-0", "orders", 0, "ok", 2_000_000, 500)
    assert progress_line(3, 10, row, "") == "[3/10] orders-0 ok 2000000 B 4.0 MB/s"
    instant = PartitionRow("/data/d1", "orders-1", "orders", 1, "failed", 0, 0)
    assert progress_line(1, 1, instant, "") == "[1/1] orders-1 failed 0 B 0.0 MB/s"
    pure = " [storage_core: pure Python (why)]"  # an executor's core_note(), printed by the driver
    assert progress_line(1, 1, instant, pure) == "[1/1] orders-1 failed 0 B 0.0 MB/s" + pure


def test_result_json_shape_is_stable(tmp_path: Path) -> None:
    action = ActionRow("truncate_segment", "00000000000000000000.log", 0, 17, "torn batch", "truncate")
    lock = ActionRow("create_lock_file", ".lock", -1, 0, "to take the lock", "create", sha256="e3b0")
    rows = (
        PartitionRow("/data/d2", "payments-0", "payments", 0, "ok", 5, 1),
        PartitionRow("/data/d1", "orders-1", "orders", 1, "failed", 3, 2, error_type="OSError", error_message="EIO"),
        PartitionRow("/data/d1", "orders-0", "orders", 0, "ok", 9, 3, truncated_bytes=17, actions=(action,)),
    )
    run_id = new_run_id()
    path = tmp_path / "out" / "result.json"
    log_dirs = (LogDirRow("/data/d2", ()), LogDirRow("/data/d1", (lock,)))
    write_result_json(path, JobSummary("recover", run_id, True, rows, log_dirs))
    text = path.read_text()
    body = json.loads(text)
    assert list(body) == ["job", "run_id", "dry_run", "partitions", "topics", "log_dirs"]
    assert body["topics"] == []  # no row carries settings
    assert (body["job"], body["run_id"], body["dry_run"]) == ("recover", run_id, True)
    assert [(p["log_dir"], p["dir_name"]) for p in body["partitions"]] == [
        ("/data/d1", "orders-0"),
        ("/data/d1", "orders-1"),
        ("/data/d2", "payments-0"),
    ]
    first = body["partitions"][0]
    assert list(first)[:7] == ["log_dir", "dir_name", "topic", "partition", "status", "size_bytes", "duration_ms"]
    assert first["actions"] == [
        {
            "kind": "truncate_segment",
            "file": "00000000000000000000.log",
            "base_offset": 0,
            "bytes": 17,
            "reason": "torn batch",
            "change": "truncate",
            "target": "",
            "sha256": "",
            "first_offset": -1,
            "last_offset": -1,
            "code": "",
            "dirty_ratio": None,
            "min_cleanable_ratio": None,
            "cleanable_bytes": None,
            "first_uncleanable_offset": None,
        }
    ]
    assert body["partitions"][1]["error_type"] == "OSError"
    assert [(d["log_dir"], [a["change"] for a in d["actions"]]) for d in body["log_dirs"]] == [
        ("/data/d1", ["create"]),
        ("/data/d2", []),
    ]
    assert [p.name for p in path.parent.iterdir()] == ["result.json"]  # no temp file left
    # The same summary gives the same bytes (row order and key order are deterministic).
    write_result_json(path, JobSummary("recover", run_id, True, tuple(reversed(rows)), tuple(reversed(log_dirs))))
    assert path.read_text() == text


def test_result_json_names_the_settings_used_per_topic_and_their_sources(tmp_path: Path) -> None:
    policy = ConfigValue("cleanup.policy", "compact", "topic config (metadata log)")
    retention = ConfigValue("retention.ms", "604800000", "default")
    rows = (
        PartitionRow("/data/d1", "orders-1", "orders", 1, "ok", 3, 2, settings=(policy, retention)),
        PartitionRow("/data/d1", "orders-0", "orders", 0, "ok", 9, 3, settings=(policy, retention)),
        PartitionRow("/data/d1", "clicks-0", "clicks", 0, "skipped", 9, 0),  # decided nothing: not listed
    )
    path = tmp_path / "result.json"
    write_result_json(path, JobSummary("compact", new_run_id(), True, rows))
    body = json.loads(path.read_text())
    assert body["topics"] == [
        {
            "log_dir": "/data/d1",
            "topic": "orders",
            "settings": {
                "cleanup.policy": {"value": "compact", "source": "topic config (metadata log)"},
                "retention.ms": {"value": "604800000", "source": "default"},
            },
        }
    ]
    assert body["partitions"][1]["settings"][0] == {
        "name": "cleanup.policy",
        "value": "compact",
        "source": "topic config (metadata log)",
    }
    assert settings_lines(rows) == [
        "  d1/orders: cleanup.policy=compact (topic config (metadata log)), retention.ms=604800000 (default)"
    ]
