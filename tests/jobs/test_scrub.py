"""`logkeeper scrub` beside a live broker: a flipped bit is found (exit 1, a finding row with its byte
position, the corruption_found audit query shows it), nothing in the log dir changes, a budgeted run
leaves the rest to the next one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from jobs import audit, scrub
from jobs._delta import read_table
from jobs._tables import SCRUB_FINDINGS
from storage_core import names
from storage_core.records.file_records import iterate_batches
from tests.builders.log_dir import LogDirBuilder
from tests.jobs.conftest import MASTER
from tests.jobs.test_live import tree

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def rotten(tmp_path: Path, hold_lock: Callable[[Path], None]) -> tuple[Path, list[str], int]:
    builder = LogDirBuilder(tmp_path / "logs")
    orders = builder.partition("orders", 0, segments=3, batches_per_segment=20)
    builder.partition("accounts", 0, segments=3, batches_per_segment=20)
    builder.checkpoints()
    log = names.log_file(orders, 20)
    data = bytearray(log.read_bytes())
    position = list(iterate_batches(bytes(data)))[5].position
    data[position + 80] ^= 0x01
    log.write_bytes(bytes(data))
    hold_lock(builder.path)
    common = ["--log-dirs", str(builder.path), "--master", MASTER, "--warehouse", str(tmp_path / "warehouse")]
    return builder.path, common, position


def test_scrub_finds_a_flipped_bit_and_changes_nothing(spark, rotten, tmp_path: Path) -> None:
    log_dir, common, position = rotten
    before = tree(log_dir)
    out = tmp_path / "scrub.json"
    assert scrub.main([*common, "--max-bytes-per-second", "50000000", "--result-json", str(out)]) == 1
    assert tree(log_dir) == before
    rows = {p["topic"]: p for p in json.loads(out.read_text())["partitions"]}
    assert (rows["orders"]["status"], rows["accounts"]["status"]) == ("corrupt", "ok")
    [action] = [a for a in rows["orders"]["actions"] if a["kind"] == "corruption_detected"]
    assert action["reason"] == f"crc_mismatch: position {position}, offsets [25, 25]: CRC mismatch"
    [finding] = read_table(tmp_path / "warehouse" / SCRUB_FINDINGS).to_pylist()
    assert (finding["dir_name"], finding["base_offset"], finding["position"], finding["kind"]) == (
        "orders-0",
        20,
        position,
        "crc_mismatch",
    )
    assert (finding["first_offset"], finding["last_offset"], finding["corruption"]) == (25, 25, True)
    shown = audit.run_query(tmp_path / "warehouse", "corruption_found", engine="spark", spark=spark).to_pylist()
    assert {r["topic"] for r in shown} == {"orders"}
    assert ("scrub", "00000000000000000020.log", action["reason"]) in {
        (r["job"], r["files"], r["reason"]) for r in shown if r["action"] == "corruption_detected"
    }
    # the next run re-checks only the corrupt segment, and still alerts
    assert scrub.main([*common, "--result-json", str(out)]) == 1
    summaries = [
        a["reason"]
        for p in json.loads(out.read_text())["partitions"]
        for a in p["actions"]
        if a["kind"] == "scrub_summary"
    ]
    assert sorted(s.split(" (")[0] for s in summaries) == ["scrubbed 0 segments", "scrubbed 1 segments"]


def test_a_budgeted_scrub_leaves_the_rest_for_the_next_run(spark, rotten, tmp_path: Path) -> None:
    _, common, _ = rotten
    out = tmp_path / "scrub.json"
    assert scrub.main([*common, "--max-duration-s", "0.001", "--result-json", str(out)]) == 0
    reasons = [a["reason"] for p in json.loads(out.read_text())["partitions"] for a in p["actions"]]
    assert sorted(reasons) == ["scrubbed 0 segments (0 bytes), 0 not due, 2 left for the next run"] * 2
    assert scrub.main([*common, "--result-json", str(out)]) == 1


@pytest.mark.parametrize(
    "argv",
    [["--max-bytes-per-second", "-1"], ["--recheck-period-ms", "-5"], ["--max-duration-s", "0"]],
)
def test_bad_scrub_options_exit_2(rotten, argv: list[str]) -> None:
    _, common, _ = rotten
    assert scrub.main([*common, *argv]) == 2
