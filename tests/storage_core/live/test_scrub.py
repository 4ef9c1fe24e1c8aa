"""scrub_partition: bit rot found with its position and offsets, nothing written to the log dir,
the cursor resumes where a stopped scrub stopped, indexes checked, live changes not failures."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from storage_core import names
from storage_core.live.scrub import scrub_partition
from storage_core.live.scrub_cursor import ScrubCursor, cursor_path, read_cursor, write_cursor
from storage_core.records.batch import RECORD_BATCH_OVERHEAD
from storage_core.records.file_records import iterate_batches
from tests.builders.log_dir import LogDirBuilder

NOW = 1_800_000_000_000
DAY = 86_400_000


def tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()}


@pytest.fixture
def partition(tmp_path: Path) -> Path:
    return LogDirBuilder(tmp_path / "logs").partition("orders", 0, segments=4, batches_per_segment=25)


def _scrub(dir_path: Path, cursor: ScrubCursor | None = None, **kwargs):
    options = {"now_ms": NOW, "recheck_ms": 7 * DAY, "recovery_point": 10**9, "live": True, **kwargs}
    return scrub_partition(dir_path, cursor=cursor or ScrubCursor("logs", dir_path.name), **options)


def test_a_flipped_bit_below_the_recovery_point_is_corruption_with_its_position(partition: Path) -> None:
    log = names.log_file(partition, 25)
    batches = list(iterate_batches(log.read_bytes()))
    damaged = batches[7]
    data = bytearray(log.read_bytes())
    data[damaged.position + 70] ^= 0x04
    log.write_bytes(bytes(data))
    before = tree(partition)
    result = _scrub(partition, chunk_bytes=1000)
    assert tree(partition) == before
    [finding] = result.findings
    assert (finding.base_offset, finding.file, finding.position) == (25, log.name, damaged.position)
    assert (finding.first_offset, finding.last_offset, finding.kind) == (32, 32, "crc_mismatch")
    assert finding.is_corruption
    assert [s.status for s in result.segments] == ["ok", "corrupt", "ok"]  # the active segment is not scrubbed
    # above the recovery point the damage may be unflushed data: reported, not corruption
    [above] = _scrub(partition, recovery_point=30).findings
    assert (above.position, above.is_corruption) == (damaged.position, False)


def test_a_stopped_scrub_resumes_where_it_stopped_and_rechecks_after_the_period(partition: Path, tmp_path) -> None:
    path = cursor_path(tmp_path / "warehouse" / "_scrub_cursors", partition.parent, partition.name, host="h")
    saved: list[ScrubCursor] = []

    def save(cursor: ScrubCursor) -> None:
        saved.append(cursor)
        write_cursor(path, cursor)

    started = iter([True, False, False])
    first = _scrub(partition, keep_going=lambda: next(started), save_cursor=save)
    assert ([s.base_offset for s in first.segments], first.segments_left) == ([0], 2)
    cursor, warning = read_cursor(path, log_dir="logs", dir_name=partition.name)
    assert warning == ""
    assert cursor == saved[-1]
    entry = cursor.segments[0]
    data = names.log_file(partition, 0).read_bytes()
    headers = b"".join(data[b.position : b.position + RECORD_BATCH_OVERHEAD] for b in iterate_batches(data))
    assert entry.sha256 == hashlib.sha256(headers).hexdigest()
    assert (entry.size, entry.verified_ms, entry.status) == (names.log_file(partition, 0).stat().st_size, NOW, "ok")
    second = _scrub(partition, cursor, save_cursor=save)
    assert ([s.base_offset for s in second.segments], second.segments_not_due) == ([25, 50], 1)
    third = _scrub(partition, second.cursor)
    assert (third.segments, third.segments_not_due) == ((), 3)
    later = _scrub(partition, second.cursor, now_ms=NOW + 8 * DAY)
    assert [s.base_offset for s in later.segments] == [0, 25, 50]


def test_an_unreadable_cursor_starts_over(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text("{not json")
    cursor, warning = read_cursor(path, log_dir="l", dir_name="t-0")
    assert (cursor.segments, "unreadable cursor" in warning) == ({}, True)


def test_an_index_entry_pointing_inside_a_batch_is_an_index_finding(partition: Path) -> None:
    index = names.offset_index_file(partition, 0)
    data = bytearray(index.read_bytes())
    assert data, "the builder's segments have index entries"
    data[4:8] = (int.from_bytes(data[4:8], "big") + 3).to_bytes(4, "big")
    index.write_bytes(bytes(data))
    [finding] = _scrub(partition).findings
    assert (finding.base_offset, finding.file, finding.kind) == (0, index.name, "index_invalid")


def test_reads_go_through_the_throttle_and_a_segment_renamed_midway_is_changed(partition: Path) -> None:
    admitted: list[int] = []

    class Recorder:
        def acquire(self, size: int) -> None:
            admitted.append(size)
            if len(admitted) == 2:  # retention renames the first segment while it is read
                log = names.log_file(partition, 0)
                log.rename(log.with_name(log.name + names.DELETED_SUFFIX))

    result = _scrub(partition, throttle=Recorder(), chunk_bytes=1024)
    assert [s.status for s in result.segments] == ["changed_during_read", "ok", "ok"]
    assert result.findings == ()
    assert sum(admitted) >= result.bytes_read
    assert 0 not in result.cursor.segments  # not verified: due again next time
