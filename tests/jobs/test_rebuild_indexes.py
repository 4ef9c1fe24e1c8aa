"""`logkeeper rebuild-indexes` on a real local SparkSession."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs import rebuild_indexes
from storage_core import names
from tests.builders.log_dir import LogDirBuilder
from tests.jobs.conftest import MASTER

pytestmark = pytest.mark.spark


def test_verify_reports_and_rebuild_restores_kafkas_recovery_bytes(spark, tmp_path: Path) -> None:
    builder = LogDirBuilder(tmp_path / "d")
    part = builder.partition("orders", 0, segments=2, batches_per_segment=60)
    index = names.offset_index_file(part, 0)
    timeindex = names.time_index_file(part, 60)
    expected = (index.read_bytes(), timeindex.read_bytes())
    index.write_bytes(b"\x00" * 80)
    timeindex.unlink()
    result_json = tmp_path / "verify.json"
    common = ["--log-dirs", str(builder.path), "--master", MASTER]
    assert rebuild_indexes.main([*common, "--verify-only", "--result-json", str(result_json)]) == 1
    actions = json.loads(result_json.read_text())["partitions"][0]["actions"]
    assert sorted((a["kind"], a["file"]) for a in actions) == [
        ("index_mismatch", index.name),
        ("index_mismatch", timeindex.name),
    ]
    assert index.read_bytes() == b"\x00" * 80
    assert rebuild_indexes.main([*common, "--result-json", str(result_json)]) == 0
    assert (index.read_bytes(), timeindex.read_bytes()) == expected
    assert rebuild_indexes.main([*common, "--verify-only"]) == 0
