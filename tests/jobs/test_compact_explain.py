"""`logkeeper compact --explain`: the reason for every compacted partition, into `compaction_explain`.

A KRaft log dir whose compacted topics are held back each by another rule (the active segment,
min.compaction.lag.ms, an open transaction), overdue by max.compaction.lag.ms, or with a dedupe
buffer too small for their keys; then every real broker log dir of ../shared/realdata. Nothing is
cleaned and no file changes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from jobs import audit, compact
from jobs._delta import read_table
from jobs._tables import COMPACTION_EXPLAIN
from storage_core import names
from storage_core.records.batch import Record, build_batch
from tests.builders.log_dir import T0, recover_unclean
from tests.jobs.conftest import MASTER
from tests.jobs.test_tiered_retention import DAY, NOW, tiered_log_dir
from tests.realdata.manifest import broker_log_dirs, writable_copy

pytestmark = pytest.mark.spark
COMPACT = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"}


def _digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


def _open_transaction(dir_path: Path) -> None:
    """Offset 15 becomes a transactional record of producer 7 that never commits: the last stable offset."""
    segment = names.log_file(dir_path, 10)
    batches = []
    for offset in range(10, 20):
        txn = offset == 15
        batches.append(
            build_batch(
                [Record(offset, T0 + offset, b"key-%d" % (offset % 7), b"v" * 100)],
                base_offset=offset,
                partition_leader_epoch=0,
                producer_id=7 if txn else -1,
                producer_epoch=0 if txn else -1,
                base_sequence=0 if txn else -1,
                is_transactional=txn,
            )
        )
    segment.write_bytes(b"".join(batches))
    for path in dir_path.iterdir():
        if path.suffix in (".index", ".timeindex", ".snapshot"):
            path.unlink()
    recover_unclean(dir_path, quarantine=dir_path.parent.parent / "quarantine")


def _explain(log_dirs: list[Path], tmp_path: Path, *extra: str) -> dict[str, dict]:
    out = tmp_path / "explain.json"
    argv = ["--log-dirs", ",".join(map(str, log_dirs)), "--master", MASTER, "--warehouse", str(tmp_path / "wh")]
    assert compact.main([*argv, "--explain", "--now-ms", str(NOW), "--result-json", str(out), *extra]) == 0
    return {f"{Path(p['log_dir']).name}/{p['dir_name']}": p for p in json.loads(out.read_text())["partitions"]}


def test_every_compacted_partition_gets_its_reason_and_nothing_changes(spark, tmp_path: Path) -> None:
    log_dir, _ = tiered_log_dir(
        tmp_path,
        {
            "due": COMPACT,
            "young": {**COMPACT, "min.compaction.lag.ms": str(30 * DAY)},
            "txn": COMPACT,
            "overdue": {
                "cleanup.policy": "compact",
                "min.cleanable.dirty.ratio": "0.99",
                "max.compaction.lag.ms": str(DAY),
            },
            "events": {},
        },
    )
    _open_transaction(log_dir / "txn-0")
    before = _digest(log_dir)
    rows = _explain([log_dir], tmp_path, "--dedupe-buffer-bytes", "100")
    assert _digest(log_dir) == before  # read only
    table = {r["dir_name"]: r for r in read_table(tmp_path / "wh" / COMPACTION_EXPLAIN).to_pylist()}
    assert {d: table[d]["uncleanable_reason"] for d in table} == {
        "due-0": "active_segment",
        "young-0": "min_compaction_lag",
        "txn-0": "open_transaction",
        "overdue-0": "active_segment",
    }
    assert table["due-0"]["reason_code"] == "dirty_ratio"
    assert table["young-0"]["reason_code"] == "empty" or table["young-0"]["cleanable_bytes"] == 0
    assert table["txn-0"]["first_uncleanable_offset"] == 10  # the segment holding the open transaction
    assert table["overdue-0"]["reason_code"] == "max_compaction_lag"
    assert table["overdue-0"]["overdue_ms"] > 0
    # 7 keys repeat over 40 offsets: a clean keeps the latest of each; 100 bytes hold 3 keys' slots.
    assert table["due-0"]["superseded_records"] == 30 - 7
    assert table["due-0"]["reclaimable_bytes"] > 0
    assert table["due-0"]["dirty_keys"] == 7
    assert not table["due-0"]["buffer_fits"]
    assert rows["logs/events-0"]["status"] == "skipped"
    assert "has no compact" in rows["logs/events-0"]["error_message"]
    action = next(a for a in rows["logs/due-0"]["actions"] if a["kind"] == "clean_explain")
    assert action["code"] == "dirty_ratio"
    assert "ends at active_segment" in action["reason"]
    stuck = {r["topic"]: r["stuck_reason"] for r in audit.run_query(tmp_path / "wh", "compaction_stuck").to_pylist()}
    assert stuck["overdue"] == "max_compaction_lag_overdue"
    assert stuck["txn"] == "open_transaction"
    assert stuck["due"] == "dedupe_buffer_too_small"


def test_every_compacted_partition_of_the_realdata_gets_a_reason(spark, tmp_path: Path) -> None:
    dirs = [writable_copy(s, tmp_path / "real" / f"{i}-{s.name}") for i, s in enumerate(broker_log_dirs())]
    rows = _explain(dirs, tmp_path, "--allow-missing-meta-properties")
    explained = [r for r in rows.values() if any(a["kind"] == "clean_explain" for a in r["actions"])]
    assert any(r["topic"] == "__consumer_offsets" for r in explained)
    table = read_table(tmp_path / "wh" / COMPACTION_EXPLAIN).to_pylist()
    assert len(table) == len(explained)
    assert all(r["uncleanable_reason"] and r["reason_code"] for r in table)
    for row in rows.values():
        if row["status"] == "skipped":  # not compacted, a stray, or a topic whose configs are unknown: said so
            assert row["error_message"]
        else:
            assert row["status"] == "ok", row
