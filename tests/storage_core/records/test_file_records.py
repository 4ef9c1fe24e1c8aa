"""`.log` framing, the valid-prefix scan (what recovery keeps, and why it stops), and FileRecords."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from storage_core.errors import CorruptRecordError
from storage_core.fs import LocalFileSystem
from storage_core.records.batch import Record, RecordBatch, build_batch, build_end_txn_marker
from storage_core.records.compression import CompressionType
from storage_core.records.file_records import (
    HEADER_SIZE_UP_TO_MAGIC,
    FileRecords,
    ScanResult,
    iterate_batches,
    scan_valid_prefix,
)
from storage_core.records.legacy import LegacyBatch, build_legacy_messages

T = 1_700_000_000_000
BATCH_SIZE = len(build_batch([Record(0, T, b"k", b"v" * 50)], base_offset=0))


def _log(count: int = 5, *, first: int = 0) -> bytes:
    """`count` one-record batches of BATCH_SIZE bytes at offsets first, first + 1, ..."""
    return b"".join(
        build_batch([Record(i, T + i, b"k", b"v" * 50)], base_offset=i) for i in range(first, first + count)
    )


def _mixed_segment() -> bytes:
    """Message-format history in one file: v0, v1 (plain and a wrapper), then v2 batches."""
    return b"".join(
        [
            build_legacy_messages([Record(0, -1, b"a", b"0"), Record(1, -1, b"b", b"1")], magic=0),
            build_legacy_messages([Record(2, T, b"c", b"2")], magic=1),
            build_legacy_messages(
                [Record(3, T, b"d", b"3"), Record(4, T, b"e", b"4")], magic=1, compression=CompressionType.LZ4
            ),
            build_batch([Record(5, T, b"f", b"5"), Record(6, T, None, b"6")], base_offset=5),
            build_end_txn_marker(
                offset=7, producer_id=1, producer_epoch=0, commit=True, coordinator_epoch=0, timestamp=T
            ),
        ]
    )


# -- framing -------------------------------------------------------------------------------------------


def test_iteration_frames_every_magic() -> None:
    data = _mixed_segment()
    batches = list(iterate_batches(data))
    assert HEADER_SIZE_UP_TO_MAGIC == 17
    assert [(type(b), b.magic, b.last_offset) for b in batches] == [
        (LegacyBatch, 0, 0),
        (LegacyBatch, 0, 1),
        (LegacyBatch, 1, 2),
        (LegacyBatch, 1, 4),
        (RecordBatch, 2, 6),
        (RecordBatch, 2, 7),
    ]
    assert [r.offset for b in batches for r in b.records()] == list(range(8))
    assert sum(b.size_in_bytes for b in batches) == len(data)
    positions = [b.position for b in batches]
    assert [b.position for b in iterate_batches(data, start=positions[2], end=positions[5])] == positions[2:5]


def test_iteration_stops_silently_at_a_torn_tail() -> None:
    data = _log()
    assert len(list(iterate_batches(data[:-1]))) == 4
    assert len(list(iterate_batches(data + data[:HEADER_SIZE_UP_TO_MAGIC]))) == 5  # 17 bytes left: Kafka stops


@pytest.mark.parametrize(
    "tail",
    [
        b"\x00" * 30,  # a zero-filled (preallocated) tail: size 0
        struct.pack(">qi", 9, 13) + bytes(20),
        struct.pack(">qii", 9, 40, 0) + b"\x05" + bytes(39),  # magic 5
        struct.pack(">qii", 9, 40, 0) + b"\x02" + bytes(39),  # a 52-byte v2 batch
    ],
    ids=["zero-filled", "size-13", "magic-5", "v2-below-61"],
)
def test_iteration_raises_at_a_corrupt_frame(tail: bytes) -> None:
    data = _log(3)
    with pytest.raises(CorruptRecordError) as error:
        list(iterate_batches(data + tail))
    assert error.value.position == len(data)


# -- valid-prefix scan ----------------------------------------------------------------------------------


def test_scan_of_a_whole_log() -> None:
    data = _mixed_segment()
    assert scan_valid_prefix(data) == ScanResult(len(data), 6, 7, None, None)
    assert scan_valid_prefix(b"") == ScanResult(0, 0, None, None, None)


def _flip(data: bytes, position: int) -> bytes:
    return data[:position] + bytes([data[position] ^ 0x40]) + data[position + 1 :]


@pytest.mark.parametrize(
    ("damage", "batches_kept", "reason"),
    [
        (lambda d: d[:-10], 4, "batch runs past the end of the file"),
        (lambda d: d + b"\x01\x02\x03", 5, "truncated batch header"),
        (lambda d: d + b"\x7f" * 100, 5, "batch runs past the end of the file"),  # garbage: a huge size
        (lambda d: d + b"\x00" * 4096, 5, "batch size 0 is below the minimum 14 (zero-filled tail)"),
        (lambda d: d + struct.pack(">qi", 5, 13) + bytes(13), 5, "batch size 13 is below the minimum 14"),
        (lambda d: _flip(d, 2 * BATCH_SIZE + 70), 2, "CRC mismatch"),
        (lambda d: _flip(d, 3 * BATCH_SIZE + 22), 3, "CRC mismatch"),  # the attributes are covered too
        (lambda d: d + struct.pack(">qii", 5, 40, 0) + b"\x03" + bytes(39), 5, "invalid magic 3"),
        (lambda d: d + struct.pack(">qii", 5, 40, 0) + b"\x02" + bytes(39), 5, "smaller than its 61-byte header"),
    ],
    ids=[
        "truncated",
        "short-garbage",
        "garbage",
        "zero-filled",
        "size-13",
        "bit-flip",
        "attributes",
        "magic",
        "tiny-v2",
    ],
)
def test_scan_stops_at_the_first_invalid_batch(damage, batches_kept: int, reason: str) -> None:
    scan = scan_valid_prefix(damage(_log()))
    assert scan == ScanResult(
        batches_kept * BATCH_SIZE, batches_kept, batches_kept - 1, batches_kept * BATCH_SIZE, scan.invalid_reason
    )
    assert reason in scan.invalid_reason


def test_scan_checks_legacy_crcs_too() -> None:
    data = _mixed_segment()
    first_v1 = list(iterate_batches(data))[2].position
    scan = scan_valid_prefix(_flip(data, first_v1 + 30))
    assert (scan.valid_bytes, scan.batch_count, scan.invalid_reason) == (first_v1, 2, "CRC mismatch")


def test_scan_without_crc_check_accepts_a_bit_flip() -> None:
    damaged = _flip(_log(), 2 * BATCH_SIZE + 70)
    assert scan_valid_prefix(damaged, verify_crc=False).batch_count == 5


def test_offsets_going_backwards_end_the_prefix_only_when_asked() -> None:
    data = _log(3) + _log(1, first=1) + _log(1, first=2)  # last offsets 0, 1, 2, then 1, 2
    assert scan_valid_prefix(data).batch_count == 5
    scan = scan_valid_prefix(data, check_offsets=True)
    assert (scan.batch_count, scan.last_offset, scan.invalid_position) == (3, 2, 3 * BATCH_SIZE)
    assert scan.invalid_reason == "offsets go backwards (1 after 2)"
    repeated = _log(2) + _log(1, first=1)  # an equal last offset is not an increase either
    assert scan_valid_prefix(repeated, check_offsets=True).batch_count == 2


def test_scan_works_on_an_mmap_view(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_log() + b"\x00" * 500)
    scan = scan_valid_prefix(LocalFileSystem().mmap(path))
    assert (scan.valid_bytes, scan.batch_count) == (5 * BATCH_SIZE, 5)


# -- FileRecords ----------------------------------------------------------------------------------------


def test_file_records_append_read_batches_and_scan(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    with FileRecords.open(path, create=True) as log:
        positions = [log.append(build_batch([Record(i, T, b"k", b"v")], base_offset=i)) for i in range(3)]
        assert positions == [0, positions[1], 2 * positions[1]]
        assert log.size_in_bytes == path.stat().st_size == 3 * positions[1]
        assert log.read(positions[1], 8) == (1).to_bytes(8, "big")
        assert log.read(log.size_in_bytes - 4, 100) == path.read_bytes()[-4:]  # never past the tracked end
        assert [b.base_offset for b in log.batches()] == [0, 1, 2]
        assert [b.base_offset for b in log.batches(positions[1])] == [1, 2]
        assert log.scan() == ScanResult(log.size_in_bytes, 3, 2, None, None)
        log.flush()
    with FileRecords.open(path) as reopened:
        assert reopened.size_in_bytes == 3 * positions[1]


def test_file_records_truncate_to(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_log())
    with FileRecords.open(path, writable=True) as log:
        assert log.truncate_to(2 * BATCH_SIZE) == 3 * BATCH_SIZE
        assert (log.size_in_bytes, path.stat().st_size) == (2 * BATCH_SIZE, 2 * BATCH_SIZE)
        assert log.truncate_to(2 * BATCH_SIZE) == 0
        with pytest.raises(ValueError, match="cannot truncate"):
            log.truncate_to(3 * BATCH_SIZE)
        assert log.append(_log(1, first=2)) == 2 * BATCH_SIZE


def test_file_records_trim_drops_a_preallocated_tail(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_log(2) + b"\x00" * 4096)  # a preallocated segment after a crash
    log = FileRecords(path, fs.open(path, writable=True), 2 * BATCH_SIZE, fs)
    assert log.scan().valid_bytes == 2 * BATCH_SIZE
    assert len(log.buffer()) == 2 * BATCH_SIZE
    log.trim()
    assert path.stat().st_size == 2 * BATCH_SIZE
    log.close()


def test_file_records_refuses_to_pass_int32_positions(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"")
    log = FileRecords(path, fs.open(path, writable=True), 2**31 - 10, fs)
    with pytest.raises(ValueError, match="too large"):
        log.append(b"x" * 20)
    assert (log.size_in_bytes, path.stat().st_size) == (2**31 - 10, 0)
    log.close()
