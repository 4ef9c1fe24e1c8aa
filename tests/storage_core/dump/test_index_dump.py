"""`.index`, `.timeindex` and `.txnindex` dumps and their verification against the `.log` (§12.1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage_core import names
from storage_core.index.offset_index import OffsetPosition, encode_offset_index
from storage_core.index.time_index import TimestampOffset, encode_time_index
from storage_core.index.txn_index import AbortedTxn
from storage_core.records.batch import Record, build_batch
from tests.realdata.manifest import REALDATA
from tests.storage_core.dump.conftest import DumpRun

T = 1_700_000_000_000
BASE = 100


@pytest.fixture
def segment(tmp_path: Path) -> list[int]:
    """A `.log` at base offset 100: one-record batches 100-103, then one batch of 104-105.

    Returns the position of each batch.
    """
    batches = [build_batch([Record(BASE + i, T + i, b"k", b"v" * 100)], base_offset=BASE + i) for i in range(4)]
    batches.append(build_batch([Record(104, T + 4, b"k", b"v"), Record(105, T + 5, b"k", b"w")], base_offset=104))
    names.log_file(tmp_path, BASE).write_bytes(b"".join(batches))
    positions = [0]
    for batch in batches[:-1]:
        positions.append(positions[-1] + len(batch))
    return positions


def _index(tmp_path: Path, entries: list[tuple[int, int]], tail: bytes = b"") -> Path:
    path = names.offset_index_file(tmp_path, BASE)
    path.write_bytes(encode_offset_index([OffsetPosition(*e) for e in entries], base_offset=BASE) + tail)
    return path


def _time_index(tmp_path: Path, entries: list[tuple[int, int]]) -> Path:
    path = names.time_index_file(tmp_path, BASE)
    path.write_bytes(encode_time_index([TimestampOffset(*e) for e in entries], base_offset=BASE))
    return path


def test_offset_index_entries_print_and_verify(tmp_path: Path, segment: list[int], dump: DumpRun) -> None:
    path = _index(tmp_path, [(101, segment[1]), (103, segment[3])])
    out, err = dump(path)
    assert out == [f"Dumping {path}", f"offset: 101 position: {segment[1]}", f"offset: 103 position: {segment[3]}"]
    assert err == []
    assert dump(path, verify_index_only=True) == ([f"Dumping {path}"], [])


def test_broken_index_reports_mismatches_newest_first(tmp_path: Path, segment: list[int], dump: DumpRun) -> None:
    path = _index(tmp_path, [(101, segment[1]), (102, segment[1]), (103, 10**6)])
    out, err = dump(path, verify_index_only=True)
    assert out == [f"Dumping {path}"]
    assert err == [
        f"Mismatches in :{path.absolute()}",
        "  Index offset: 103, log offset: -1",
        "  Index offset: 102, log offset: 101",
    ]


def test_a_batch_larger_than_max_message_size_is_not_found(tmp_path: Path, segment: list[int], dump: DumpRun) -> None:
    path = _index(tmp_path, [(101, segment[1])])
    _, err = dump(path, verify_index_only=True, max_message_size=50)
    assert err[1:] == ["  Index offset: 101, log offset: -1"]


def test_zero_filled_tail_ends_the_entries(tmp_path: Path, segment: list[int], dump: DumpRun) -> None:
    path = _index(tmp_path, [(101, segment[1])], tail=bytes(8 * 5))
    out, err = dump(path)
    assert out[1:] == [f"offset: 101 position: {segment[1]}"]
    assert err == []


def test_empty_index_and_sanity_check(tmp_path: Path, segment: list[int], dump: DumpRun) -> None:
    empty = _index(tmp_path, [])
    assert dump(empty, index_sanity_check=True) == ([f"Dumping {empty}", f"{empty} is empty."], [])
    sound = _index(tmp_path, [(101, segment[1])])
    assert dump(sound, index_sanity_check=True) == ([f"Dumping {sound}", f"{sound} passed sanity check."], [])
    torn = _index(tmp_path, [(101, segment[1])], tail=b"\x00\x00\x01")
    out, err = dump(torn, index_sanity_check=True)
    assert out == [f"Dumping {torn}"]
    assert len(err) == 1
    assert err[0].startswith(f"{torn} failed sanity check: length 11 is not a multiple of 8")


def test_index_without_its_log_prints_unverified_entries(tmp_path: Path, dump: DumpRun) -> None:
    path = _index(tmp_path, [(101, 73)])
    out, err = dump(path)
    assert out[1:] == ["offset: 101 position: 73"]
    assert err == [f"No log file {names.log_file(tmp_path, BASE)}: index entries are not verified."]


def test_time_index_prints_and_verifies_in_kafkas_order(tmp_path: Path, segment: list[int], dump: DumpRun) -> None:
    _index(tmp_path, [(102, segment[2])])
    path = _time_index(tmp_path, [(T + 1, 101), (T + 9, 102), (T + 3, 103), (T + 20, 104)])
    out, err = dump(path)
    assert out[1:] == [
        f"timestamp: {T + 1} offset: 101",
        f"timestamp: {T + 9} offset: 102",
        f"timestamp: {T + 3} offset: 103",
        f"timestamp: {T + 20} offset: 104",
    ]
    absolute = path.absolute()
    assert err == [
        f"Found timestamp mismatch in :{absolute}",
        f"  Index timestamp: {T + 9}, log timestamp: {T + 2}",
        f"Found out of order timestamp in :{absolute}",
        f"  Index timestamp: {T + 3}, Previously indexed timestamp: {T + 9}",
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 104, found log offset: 105",
    ]
    assert dump(path, verify_index_only=True) == ([f"Dumping {path}"], err)
    assert dump(path, index_sanity_check=True) == ([f"Dumping {path}", f"{path} passed sanity check."], [])


def test_a_sound_time_index_has_no_findings(tmp_path: Path, segment: list[int], dump: DumpRun) -> None:
    path = _time_index(tmp_path, [(T + 1, 101), (T + 3, 103), (T + 5, 105)])
    assert dump(path, verify_index_only=True) == ([f"Dumping {path}"], [])


def test_txn_index_prints_one_line_per_aborted_transaction(tmp_path: Path, dump: DumpRun) -> None:
    path = names.txn_index_file(tmp_path, BASE)
    path.write_bytes(AbortedTxn(7, 100, 120, 95).encode() + AbortedTxn(8, 130, 131, 125).encode())
    out, err = dump(path)
    assert out[1:] == [
        "version: 0 producerId: 7 firstOffset: 100 lastOffset: 120 lastStableOffset: 95",
        "version: 0 producerId: 8 firstOffset: 130 lastOffset: 131 lastStableOffset: 125",
    ]
    assert err == []


def test_real_broker_indexes_verify_against_their_logs(dump: DumpRun) -> None:
    segment = REALDATA / "VolodymyrZee__kafka/__consumer_offsets-12/00000000000000000000"
    out, err = dump(f"{segment}.index", verify_index_only=True)
    assert (out, err) == ([f"Dumping {segment}.index"], [])
