"""The quarantine end to end: `truncated` partitions, the location's rules, the audit rows, `dump` of a piece."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import pytest

from jobs import audit, compact, dump, maintain, recover, retention
from jobs._delta import read_table
from jobs._tables import MAINTENANCE_LOG
from storage_core import names
from storage_core.clean_shutdown import read_clean_shutdown
from storage_core.quarantine import log_dir_id
from tests.builders.interop_corpus import NOW, build_corpus
from tests.builders.log_dir import kafka_log_dir
from tests.jobs.conftest import MASTER
from tests.storage_core.records.peer import peer_batch, peer_read

pytestmark = pytest.mark.spark
T0 = 1_700_000_000_000


@pytest.fixture
def flipped(tmp_path: Path) -> Path:
    """A log dir whose one partition has a bit flipped in the base offset of batch 8 of 15 (8 -> 12)."""
    part = kafka_log_dir(tmp_path / "logs") / "t-0"
    part.mkdir()
    batches = [peer_batch([(0, T0 + o, b"k%d" % o, b"v" * 40, [])], codec=0, base_offset=o) for o in range(15)]
    damaged = bytearray(batches[8])
    struct.pack_into(">q", damaged, 0, 12)
    names.log_file(part, 0).write_bytes(b"".join([*batches[:8], bytes(damaged), *batches[9:]]))
    return part.parent


def _state(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_flipped_base_offset_leaves_the_valid_prefix_and_a_truncated_partition(
    spark, flipped: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wh, result = tmp_path / "wh", tmp_path / "result.json"
    argv = ["--log-dirs", str(flipped), "--master", MASTER, "--warehouse", str(wh), "--run-id", "r1"]
    assert recover.main([*argv, "--result-json", str(result)]) == 1  # records left the live log: look
    err = capsys.readouterr().err
    assert "1 partitions, 0 ok, 1 truncated, 0 failed" in err
    assert "t-0: truncated: RecordsQuarantined" in err
    row = json.loads(result.read_text())["partitions"][0]
    assert (row["status"], row["error_type"], row["log_end_offset"]) == ("truncated", "RecordsQuarantined", 8)
    (piece,) = [a for a in row["actions"] if a["change"] == "quarantine"]
    where = wh.absolute() / "quarantine" / "r1" / log_dir_id(flipped, fs=_local()) / "t-0"
    assert Path(piece["target"]).parent == where
    assert (piece["first_offset"], piece["last_offset"]) == (12, 14)
    kept = peer_read(names.log_file(flipped / "t-0", 0).read_bytes())
    assert [record.offset for batch in kept for record in batch] == list(range(8))
    assert read_clean_shutdown(flipped) is not None  # a truncated partition is consistent
    log = read_table(wh / MAINTENANCE_LOG).to_pylist()
    (logged,) = [r for r in log if r["action"] == "quarantine"]
    assert (logged["target"], logged["sha256"], logged["bytes_removed"], logged["status"]) == (
        piece["target"],
        piece["sha256"],
        piece["bytes"],
        "truncated",
    )
    found = audit.run_query(wh, "corruption_found").to_pylist()
    assert {(r["action"], r["status"]) for r in found} >= {("quarantine", "truncated"), ("partition", "truncated")}
    assert dump.main(["--files", piece["target"]]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1] == f"Quarantined bytes [880, 1655) of {names.log_file(flipped / 't-0', 0).name}"
    assert "baseOffset: 12 lastOffset: 12" in out


def _local():
    from storage_core.fs import LocalFileSystem

    return LocalFileSystem()


@pytest.mark.parametrize("where", ["inside", "under-warehouse-inside"])
def test_a_quarantine_inside_a_log_dir_is_refused_before_any_change(
    flipped: Path, tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _state(flipped)
    extra = (
        ["--quarantine-dir", str(flipped / "q")] if where == "inside" else ["--warehouse", str(flipped / "warehouse")]
    )
    assert recover.main(["--log-dirs", str(flipped), "--master", MASTER, *extra]) == 2
    assert "a broker would load it as a partition" in capsys.readouterr().err
    assert _state(flipped) == before


def test_a_warehouse_that_is_not_local_needs_a_quarantine_dir(
    spark, flipped: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _state(flipped)
    remote = ["--log-dirs", str(flipped), "--master", MASTER, "--warehouse", "s3://bucket/warehouse"]
    assert recover.main(remote) == 2
    assert "give --quarantine-dir" in capsys.readouterr().err
    assert _state(flipped) == before
    elsewhere = tmp_path / "kept"  # (run without its maintenance log: no Delta writer here for s3)
    summary = recover.run(recover.parse_args([*remote, "--quarantine-dir", str(elsewhere), "--run-id", "r2"]))
    assert summary.exit_code == 1
    assert [p.name for p in elsewhere.rglob("*.log")] == ["00000000000000000000.log.880-1655.log"]


def test_maintain_goes_on_after_a_truncation_and_exits_1(spark, flipped: Path, tmp_path: Path) -> None:
    result, topics = tmp_path / "r.json", tmp_path / "topics.toml"
    topics.write_text('[topics."t"]\n"cleanup.policy" = "delete"\n')
    argv = ["--log-dirs", str(flipped), "--master", MASTER, "--warehouse", str(tmp_path / "wh"), "--result-json"]
    argv += [str(result), "--high-watermark-source", "log-end", "--topic-config", str(topics)]
    assert maintain.main(argv) == 1
    statuses = {
        step: json.loads(result.with_name(f"{step}-r.json").read_text())["partitions"][0]["status"]
        for step in ("recover", "retention", "stats")
    }
    assert statuses == {"recover": "truncated", "retention": "ok", "stats": "ok"}


@pytest.mark.parametrize("job", ["compact", "retention"])
def test_corruption_found_by_compact_or_retention_is_quarantined_and_the_rest_kept(
    spark, tmp_path: Path, job: str
) -> None:
    """A bit flipped inside a record of a cleanly shut down dir's compacted segment (CRC mismatch). The
    cleaner rewrites whole segments, so compact's load checks every batch of the compacted topic and
    cuts that segment at the bad batch; retention's load (Kafka's: only a segment with a missing
    index is recovered) meets it when the segment lost its `.index`. Either way the bytes cut are
    quarantined, the partition is `truncated` (exit 1), and the segments around it stay."""
    root = tmp_path / "corpus"
    build_corpus(root)
    accounts = root / "clean" / "accounts-0"
    segment = names.log_file(accounts, 20)
    data = bytearray(segment.read_bytes())
    position = 0
    for _ in range(3):  # to the fourth batch, offset 23
        position += 12 + struct.unpack_from(">i", data, position + 8)[0]
    data[position + 70] ^= 0x01
    segment.write_bytes(bytes(data))
    if job == "retention":
        names.offset_index_file(accounts, 20).unlink()
    result, wh = tmp_path / "r.json", tmp_path / "wh"
    argv = ["--log-dirs", str(root / "clean"), "--master", MASTER, "--warehouse", str(wh), "--run-id", "r1"]
    argv += ["--topic-config", str(root / "topics.toml"), "--now-ms", str(NOW), "--result-json", str(result)]
    main = {"compact": compact.main, "retention": retention.main}[job]
    assert main([*argv, "--high-watermark-source", "log-end"]) == 1
    (row,) = [r for r in json.loads(result.read_text())["partitions"] if r["dir_name"] == "accounts-0"]
    assert (row["status"], row["error_type"]) == ("truncated", "RecordsQuarantined")
    (piece,) = [a for a in row["actions"] if a["change"] == "quarantine"]
    assert (piece["first_offset"], piece["last_offset"]) == (24, 29)  # of the batches with a valid CRC
    assert Path(piece["target"]).read_bytes() == bytes(data[position:])
    assert piece["sha256"] == hashlib.sha256(data[position:]).hexdigest()
    live = [r.offset for f in sorted(accounts.glob("*.log")) for b in peer_read(f.read_bytes()) for r in b]
    assert not set(range(23, 30)) & set(live)  # every batch left is valid for kafka-python
    assert max(live) == 39  # the segments after the cut one stay
    logged = [r for r in read_table(wh / MAINTENANCE_LOG).to_pylist() if r["action"] == "quarantine"]
    assert [(r["job"], r["target"], r["sha256"]) for r in logged] == [(job, piece["target"], piece["sha256"])]
