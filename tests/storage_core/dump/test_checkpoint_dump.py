"""Checkpoint text files: one line per entry in the file's order (our own shape)."""

from __future__ import annotations

from pathlib import Path

from storage_core import names
from tests.realdata.manifest import REALDATA
from tests.storage_core.dump.conftest import DumpRun


def test_offset_checkpoint_entries_in_file_order(tmp_path: Path, dump: DumpRun) -> None:
    path = tmp_path / names.RECOVERY_POINT_CHECKPOINT
    path.write_text("0\n3\nt 1 5\nt 0 7\nmy-topic 12 0\n")
    out, err = dump(path)
    assert out == [
        f"Dumping {path}",
        "topic: t partition: 1 offset: 5",
        "topic: t partition: 0 offset: 7",
        "topic: my-topic partition: 12 offset: 0",
    ]
    assert err == []


def test_leader_epoch_checkpoint_from_a_real_broker(dump: DumpRun) -> None:
    path = REALDATA / "ArthurArutunyan04__Backend_labs/kafka-data/oms_order_created-1/leader-epoch-checkpoint"
    out, err = dump(path)
    assert out == [
        f"Dumping {path}",
        "epoch: 10 startOffset: 81908",
        "epoch: 12 startOffset: 91078",
        "epoch: 14 startOffset: 94005",
    ]
    assert err == []


def test_malformed_checkpoint_prints_its_error_on_stderr(tmp_path: Path, dump: DumpRun) -> None:
    path = tmp_path / names.CLEANER_OFFSET_CHECKPOINT
    path.write_text("0\n2\nt 0 5\n")
    out, err = dump(path)
    assert out == [f"Dumping {path}"]
    assert len(err) == 1
    assert "expected 2 entries but found 1" in err[0]
