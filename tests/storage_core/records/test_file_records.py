from __future__ import annotations

from pathlib import Path

import pytest

from storage_core.errors import CorruptRecordError
from storage_core.fs import LocalFileSystem
from storage_core.records.batch import Record, build_batch
from storage_core.records.file_records import FileRecords, iterate_batches, scan_valid_prefix

T = 1_700_000_000_000


def _log(count: int = 5) -> bytes:
    return b"".join(build_batch([Record(i, T + i, b"k", b"v" * 50)], base_offset=i) for i in range(count))


def test_scan_of_a_whole_log() -> None:
    data = _log()
    scan = scan_valid_prefix(data)
    assert (scan.valid_bytes, scan.batch_count, scan.last_offset, scan.invalid_position) == (len(data), 5, 4, None)


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda d: d[:-10], "runs past the end"),
        (lambda d: d + b"\x00" * 100, "zero-filled"),
        (lambda d: d + b"\x01\x02\x03", "truncated batch header"),
        (lambda d: d[:200] + bytes([d[200] ^ 0x40]) + d[201:], "CRC mismatch"),
    ],
    ids=["truncated", "zero-filled", "short-garbage", "bit-flip"],
)
def test_scan_stops_at_the_first_invalid_batch(damage, reason: str) -> None:
    data = _log()
    damaged = damage(data)
    scan = scan_valid_prefix(damaged)
    batch_size = len(data) // 5
    assert scan.valid_bytes % batch_size == 0
    assert scan.invalid_position == scan.valid_bytes
    assert reason in scan.invalid_reason


def test_scan_reports_offsets_going_backwards_only_when_asked() -> None:
    data = _log(3) + build_batch([Record(1, T, b"k", b"v")], base_offset=1)
    assert scan_valid_prefix(data).batch_count == 4
    scan = scan_valid_prefix(data, check_offsets=True)
    assert (scan.batch_count, scan.invalid_reason) == (3, "offsets go backwards (1 after 2)")


def test_iteration_raises_on_size_below_14_and_stops_at_a_torn_tail() -> None:
    data = _log()
    assert len(list(iterate_batches(data[:-1]))) == 4
    with pytest.raises(CorruptRecordError) as error:
        list(iterate_batches(data + b"\x00" * 30))
    assert error.value.position == len(data)


def test_file_records_appends_reads_truncates_and_trims(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    path = tmp_path / "00000000000000000000.log"
    records = FileRecords.open(path, fs=fs, create=True)
    positions = [records.append(build_batch([Record(i, T, b"k", b"v")], base_offset=i)) for i in range(3)]
    assert positions[0] == 0
    assert records.size_in_bytes == path.stat().st_size
    assert [b.base_offset for b in records.batches()] == [0, 1, 2]
    assert records.read(positions[1], 8) == (1).to_bytes(8, "big")
    size_before = records.size_in_bytes
    assert records.truncate_to(positions[2]) == size_before - positions[2]
    assert path.stat().st_size == positions[2]
    records.flush()
    records.close()
    with path.open("ab") as f:
        f.write(b"\x00" * 64)  # a preallocated tail
    reopened = FileRecords(path, LocalFileSystem().open(path, writable=True), positions[2], fs)
    reopened.trim()
    assert path.stat().st_size == positions[2]
    reopened.close()
