"""`logkeeper move` end to end: a KRaft JBOD broker's two log dirs (each with its `directory.id`, both
registered with the controller in a real metadata log at metadata.version 3.7-IV2), a partition
moved by name and a whole dir evacuated, the refusals, and the dry run. The crash sweep of the whole
job is tests/reliability (every operation under `full_sweep`), storage_core's at every operation of
a move is tests/storage_core/test_move.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from jobs import move, recover, report
from jobs._delta import read_table
from jobs._tables import MAINTENANCE_LOG
from storage_core import names
from storage_core.checkpoint import read_offset_checkpoint, write_offset_checkpoint
from storage_core.clean_shutdown import write_clean_shutdown
from storage_core.meta_properties import MetaProperties, write_meta_properties
from storage_core.names import TopicPartition
from storage_core.partition_metadata import PartitionMetadata, write_partition_metadata
from tests.builders.log_dir import LogDirBuilder, kafka_log_dir
from tests.builders.metadata_log import MetadataLogBuilder, random_uuid

CLUSTER = "4L6g3nShT-eMCtK--X86sw"


def _tree(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() for p in path.rglob("*") if p.is_file()
    }


def _broker(root: Path, *, register_b: bool = True, node_b: int = 1) -> tuple[Path, Path, str, str]:
    """Dirs a (with the metadata log, orders-0 and events-0) and b of broker 1; their directory ids."""
    a_id, b_id = random_uuid(), random_uuid()
    builder = LogDirBuilder(root / "a")
    meta = MetadataLogBuilder(builder.path)
    meta.feature("metadata.version", 17)
    meta.broker(1, log_dirs=(a_id, b_id) if register_b else (a_id,))
    for topic in ("orders", "events"):
        dir_path = builder.partition(topic, 0, segments=3)
        topic_id = meta.topic(topic, replicas=(1,), directories=(a_id,))
        write_partition_metadata(dir_path / names.PARTITION_METADATA, PartitionMetadata(0, topic_id))
    meta.write_segment()
    builder.checkpoints()
    write_offset_checkpoint(
        builder.path / names.REPLICATION_OFFSET_CHECKPOINT, {TopicPartition(t, 0): 30 for t in ("orders", "events")}
    )
    write_meta_properties(
        builder.path / names.META_PROPERTIES, MetaProperties(1, CLUSTER, node_id=1, directory_id=a_id)
    )
    write_clean_shutdown(builder.path)
    b = kafka_log_dir(root / "b")
    write_meta_properties(b / names.META_PROPERTIES, MetaProperties(1, CLUSTER, node_id=node_b, directory_id=b_id))
    write_clean_shutdown(b)
    return builder.path, b, a_id, b_id


def _argv(a: Path, b: Path, tmp_path: Path, *extra: str) -> list[str]:
    return [
        "--log-dirs",
        f"{a},{b}",
        "--warehouse",
        str(tmp_path / "wh"),
        "--result-json",
        str(tmp_path / "r.json"),
        *extra,
    ]


def test_a_partition_moves_with_its_checkpoints_and_the_broker_will_report_its_new_dir(tmp_path: Path) -> None:
    a, b, a_id, b_id = _broker(tmp_path)
    source = _tree(a / "orders-0")
    assert move.main(_argv(a, b, tmp_path, "--partition", "orders-0", "--to-log-dir", str(b))) == 0
    assert _tree(b / "orders-0") == source
    assert not (a / "orders-0").exists()
    assert sorted(p.name for p in a.iterdir() if p.name.startswith("orders")) == []
    assert read_offset_checkpoint(b / names.REPLICATION_OFFSET_CHECKPOINT) == {TopicPartition("orders", 0): 30}
    assert TopicPartition("orders", 0) not in read_offset_checkpoint(a / names.REPLICATION_OFFSET_CHECKPOINT)
    assert (a / names.CLEAN_SHUTDOWN_FILE).exists()
    assert (b / names.CLEAN_SHUTDOWN_FILE).exists()
    (row,) = json.loads((tmp_path / "r.json").read_text())["partitions"]
    assignment = next(x for x in row["actions"] if x["kind"] == "directory_assignment")
    assert a_id in assignment["reason"]
    assert b_id in assignment["reason"]
    assert "AssignReplicasToDirs" in assignment["reason"]
    kinds = [x["kind"] for x in row["actions"]]
    assert kinds.count("move_switch") == kinds.count("move_retire") == 1
    log = read_table(tmp_path / "wh" / MAINTENANCE_LOG).to_pylist()
    assert {r["action"] for r in log if r["job"] == "move"} >= {
        "move_copy",
        "move_switch",
        "move_retire",
        "move_delete_source",
    }
    assert re.search(r'<section id="moves" data-rows="[1-9]', report.render(tmp_path / "wh"))
    # Again: nothing left to do.
    assert move.main(_argv(a, b, tmp_path, "--partition", "orders-0", "--to-log-dir", str(b))) == 2


def test_evacuate_moves_every_partition_of_a_dir_and_a_dry_run_changes_nothing(tmp_path: Path) -> None:
    a, b, _, _ = _broker(tmp_path)
    before = _tree(a)
    assert move.main(_argv(a, b, tmp_path, "--evacuate", str(a), "--dry-run")) == 0
    assert _tree(a) == before
    planned = json.loads((tmp_path / "r.json").read_text())["partitions"]
    assert {p["dir_name"] for p in planned} == {"orders-0", "events-0"}
    assert move.main(_argv(a, b, tmp_path, "--evacuate", str(a), "--max-bytes-per-second", "1000000")) == 0
    assert (b / "orders-0").is_dir()
    assert (b / "events-0").is_dir()
    assert (a / f"{names.METADATA_TOPIC}-0").is_dir()  # the metadata log is never moved


@pytest.mark.parametrize(
    ("setup", "extra", "message"),
    [
        ({"node_b": 2}, (), "not one broker's"),
        ({"register_b": False}, (), "not among the log dirs broker 1 registered"),
        ({}, ("--partition", "nothing-0"), "in none of the log dirs"),
        ({}, ("--partition", f"{names.METADATA_TOPIC}-0"), "metadata log"),
    ],
)
def test_what_cannot_be_made_safe_is_refused_before_anything_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setup: dict, extra: tuple[str, ...], message: str
) -> None:
    a, b, _, _ = _broker(tmp_path, **setup)
    before = (_tree(a), _tree(b))
    what = extra or ("--partition", "orders-0")
    assert move.main(_argv(a, b, tmp_path, *what, "--to-log-dir", str(b))) == 2
    assert (_tree(a), _tree(b)) == before
    assert message in capsys.readouterr().err


def test_a_live_brokers_lock_refuses_the_move(tmp_path: Path, hold_lock) -> None:
    a, b, _, _ = _broker(tmp_path)
    hold_lock(b)
    assert move.main(_argv(a, b, tmp_path, "--partition", "orders-0", "--to-log-dir", str(b))) == 3
    assert (a / "orders-0").is_dir()


def test_a_move_interrupted_after_its_switch_is_finished_by_the_same_command(tmp_path: Path) -> None:
    """Live in both dirs, identical (a crash between steps 4 and 5): every other job refuses the
    duplicate, as a broker does; the move goes on from its step 5."""
    a, b, _, _ = _broker(tmp_path)
    shutil.copytree(a / "orders-0", b / "orders-0")
    assert recover.main(["--log-dirs", f"{a},{b}", "--warehouse", str(tmp_path / "wh")]) == 2
    assert move.main(_argv(a, b, tmp_path, "--partition", "orders-0", "--to-log-dir", str(b))) == 0
    assert not (a / "orders-0").exists()
    (row,) = json.loads((tmp_path / "r.json").read_text())["partitions"]
    assert [x["kind"] for x in row["actions"]][2] == "move_retire"
    (b / "events-0").mkdir()  # a duplicate that is not the same bytes is still refused, nothing touched
    names.log_file(b / "events-0", 0).write_bytes(b"other")
    before = (_tree(a), _tree(b))
    assert move.main(_argv(a, b, tmp_path, "--partition", "events-0", "--to-log-dir", str(b))) == 2
    assert (_tree(a), _tree(b)) == before
