"""Dispatch by suffix, unknown files, per-file errors, and the findings printed after the last file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from storage_core import names
from storage_core.dump import DumpOptions, dump_files, render_json, render_text
from storage_core.index.offset_index import OffsetPosition, encode_offset_index
from storage_core.index.time_index import TimestampOffset, encode_time_index
from storage_core.records.batch import Record, build_batch
from tests.storage_core.dump.conftest import DumpRun

T = 1_700_000_000_000


def test_unknown_files_are_announced_then_ignored(tmp_path: Path, dump: DumpRun) -> None:
    files = [tmp_path / "00000000000000000000.log.deleted", tmp_path / "meta.properties", tmp_path / "quorum-state"]
    for path in files:
        path.write_bytes(b"x")
    out, err = dump(*files)
    assert out == [f"Dumping {path}" for path in files]
    assert err == [f"Ignoring unknown file {path}" for path in files]


def test_a_file_that_cannot_be_dumped_is_reported_and_the_next_one_dumped(tmp_path: Path, dump: DumpRun) -> None:
    bad = tmp_path / "segment.index"
    bad.write_bytes(bytes(8))
    good = names.log_file(tmp_path, 0)
    good.write_bytes(build_batch([Record(0, T, b"k", b"v")], base_offset=0))
    out, err = dump(bad, good)
    assert out[:3] == [f"Dumping {bad}", f"Dumping {good}", "Log starting offset: 0"]
    assert len(err) == 1
    assert err[0].startswith(f"Cannot dump {bad}: InvalidNameError: ")


def test_findings_come_after_every_file_in_kafkas_order(tmp_path: Path) -> None:
    batches = [build_batch([Record(i, T + i, b"k", b"v")], base_offset=i) for i in (0, 1, 5)]
    log = names.log_file(tmp_path, 0)
    log.write_bytes(b"".join(batches))
    time_index = names.time_index_file(tmp_path, 0)
    time_index.write_bytes(encode_time_index([TimestampOffset(T + 7, 1)], base_offset=0))
    index = names.offset_index_file(tmp_path, 0)
    index.write_bytes(encode_offset_index([OffsetPosition(5, 0)], base_offset=0))
    lines = list(dump_files([time_index, log, index], DumpOptions(deep_iteration=True)))
    assert [line.stderr for line in lines] == [False] * (len(lines) - 6) + [True] * 6
    assert [render_text(line) for line in lines[-6:]] == [
        f"Mismatches in :{index.absolute()}",
        "  Index offset: 5, log offset: 0",
        f"Found timestamp mismatch in :{time_index.absolute()}",
        f"  Index timestamp: {T + 7}, log timestamp: {T + 1}",
        f"Non-consecutive offsets in {log.absolute()}",
        "  1 is followed by 5",
    ]
    bodies = [json.loads(render_json(line)) for line in lines[-6:]]
    assert bodies[1] == {"type": "index_mismatch", "file": str(index.absolute()), "indexOffset": 5, "logOffset": 0}
    assert bodies[0] == {"type": "index_mismatch_heading", "file": str(index.absolute())}


def test_the_path_is_printed_as_given(tmp_path: Path, dump: DumpRun, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    names.log_file(tmp_path, 0).write_bytes(b"")
    out, _ = dump("./00000000000000000000.log")
    assert out == ["Dumping ./00000000000000000000.log", "Log starting offset: 0"]
