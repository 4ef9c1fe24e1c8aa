"""Recover copies of every real broker log dir: no valid batch is lost and every index verifies."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from storage_core import names
from storage_core.index_rebuild import rebuild_indexes
from storage_core.records.file_records import scan_valid_prefix
from tests.builders.log_dir import recover_unclean
from tests.realdata.manifest import REALDATA

pytestmark = pytest.mark.both_cores  # CI runs it again on the pure-Python core (./dev test)

PARTITION_DIRS = sorted(
    p
    for p in REALDATA.glob("*/**/*-[0-9]*")
    if p.is_dir() and any(p.glob("*.log")) and names.is_partition_dir_candidate(p.name)
)


def _valid_batches(dir_path: Path) -> list[bytes]:
    out = []
    for log in sorted(dir_path.glob("*.log")):
        data = log.read_bytes()
        out.append(data[: scan_valid_prefix(data).valid_bytes])
    return out


@pytest.mark.parametrize("source", PARTITION_DIRS, ids=[str(p.relative_to(REALDATA)) for p in PARTITION_DIRS])
def test_unclean_recovery_keeps_every_valid_batch(tmp_path: Path, source: Path) -> None:
    copy = tmp_path / source.name
    shutil.copytree(source, copy)
    for path in [copy, *copy.iterdir()]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    before = _valid_batches(copy)
    result = recover_unclean(copy, now_ms=0)
    assert _valid_batches(copy) == before
    assert result.truncated_bytes == 0
    assert rebuild_indexes(copy, verify_only=True).actions == ()
