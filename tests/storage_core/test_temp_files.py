"""Interrupted swaps (LogCleanerTest.testRecoveryAfterCrash states 1-6, split phases): old or new, never a mix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from storage_core import names
from storage_core.records.batch import Record, build_batch
from storage_core.records.file_records import iterate_batches
from tests.builders.log_dir import recover_unclean

T0 = 1_700_000_000_000
SEGMENT_SUFFIXES = (names.LOG_SUFFIX, names.INDEX_SUFFIX, names.TIME_INDEX_SUFFIX)


def _load(path: Path) -> None:
    recover_unclean(path, now_ms=T0)


def _keys(path: Path) -> list[tuple[int, bytes]]:
    return [
        (r.offset, r.key)
        for log in sorted(path.glob("*.log"))
        for b in iterate_batches(log.read_bytes())
        for r in b.records()
    ]


def _segment_files(path: Path, base: int) -> list[Path]:
    prefix = names.filename_prefix(base)
    return [path / (prefix + s) for s in SEGMENT_SUFFIXES]


@pytest.fixture
def log_and_cleaned(tmp_path: Path) -> tuple[Path, Path]:
    """10 segments of 3 one-record batches; a cleaned segment for the first 9 keeping even keys only."""
    log = tmp_path / "topic-0"
    log.mkdir()
    offset = 0
    for _ in range(10):
        base = offset
        batches = []
        for _ in range(3):
            batches.append(build_batch([Record(offset, T0 + offset, b"%d" % (offset % 6), b"v")], base_offset=offset))
            offset += 1
        names.log_file(log, base).write_bytes(b"".join(batches))
    _load(log)
    cleaned = tmp_path / "cleaned"
    cleaned.mkdir()
    kept = [
        b
        for path in sorted(log.glob("*.log"))[:9]
        for b in iterate_batches(path.read_bytes())
        if int(b.records()[0].key) % 2 == 0
    ]
    names.log_file(cleaned, 0).write_bytes(b"".join(bytes(b.raw) for b in kept))
    _load(cleaned)
    return log, cleaned


def _place(cleaned: Path, log: Path, suffixes: dict[str, str]) -> None:
    for file in _segment_files(cleaned, 0):
        shutil.copyfile(file, log / (file.name + suffixes[file.suffix]))


def _delete_old(log: Path, *, rename: bool) -> None:
    for base in range(0, 27, 3):
        for file in _segment_files(log, base):
            if file.exists():
                if rename:
                    file.rename(str(file) + names.DELETED_SUFFIX)
                else:
                    file.unlink()


STATES = {
    "1-all-cleaned": ({".log": ".cleaned", ".index": ".cleaned", ".timeindex": ".cleaned"}, None, "old"),
    "2-log-swap-rest-cleaned": ({".log": ".swap", ".index": ".cleaned", ".timeindex": ".cleaned"}, None, "old"),
    "3-all-swap-old-intact": ({".log": ".swap", ".index": ".swap", ".timeindex": ".swap"}, None, "new"),
    "4-all-swap-old-deleted": ({".log": ".swap", ".index": ".swap", ".timeindex": ".swap"}, "rename", "new"),
    "5-timeindex-swap-only": ({".log": "", ".index": "", ".timeindex": ".swap"}, "rename", "new"),
    "6-swap-done-deleted-left": ({".log": "", ".index": "", ".timeindex": ""}, "rename", "new"),
    "6b-swap-done-deleted-gone": ({".log": "", ".index": "", ".timeindex": ""}, "unlink", "new"),
}


@pytest.mark.parametrize("state", STATES, ids=list(STATES))
def test_recovery_after_crash_keeps_old_or_new_keys(log_and_cleaned, state: str) -> None:
    log, cleaned = log_and_cleaned
    suffixes, old_files, expect = STATES[state]
    original = _keys(log)
    new = [(o, k) for o, k in original if o >= 27 or int(k) % 2 == 0]
    if old_files is not None:
        _delete_old(log, rename=old_files == "rename")
    _place(cleaned, log, suffixes)
    _load(log)
    assert _keys(log) == (original if expect == "old" else new)
    leftovers = [p.name for p in log.iterdir() if p.name.endswith((".cleaned", ".swap", ".deleted"))]
    assert leftovers == []


def test_split_phase_with_swap_above_the_smallest_cleaned_is_discarded(log_and_cleaned) -> None:
    # LogLoaderTest split phase 2: the last new segment is .swap, an earlier one still .cleaned.
    log, cleaned = log_and_cleaned
    original = _keys(log)
    for file in _segment_files(cleaned, 0):
        shutil.copyfile(file, log / (file.name + names.CLEANED_SUFFIX))
    source = names.log_file(log, 27)
    shutil.copyfile(source, log / (names.log_file(log, 28).name + names.SWAP_SUFFIX))
    _load(log)
    assert _keys(log) == original
