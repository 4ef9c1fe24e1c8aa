"""Producer-state snapshots (storage_core/producer_snapshot.py, kafka-format.md §9)."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_core import names
from storage_core.errors import CorruptSnapshotError
from storage_core.fs import FaultInjectingFileSystem, LocalFileSystem, SimulatedCrash
from storage_core.producer_snapshot import (
    CRC_POSITION,
    CRC_START,
    ENTRIES_START,
    ENTRY_SIZE,
    ProducerSnapshotEntry,
    decode_snapshot,
    encode_snapshot,
    list_snapshot_offsets,
    read_snapshot,
    write_snapshot,
)
from storage_core.records.crc import crc32c
from tests.faults import PowerLossFileSystem
from tests.realdata.manifest import REALDATA, ManifestRow, rows_of_kind

FS = LocalFileSystem()
ONE = ProducerSnapshotEntry(
    producer_id=1000,
    epoch=0,
    last_sequence=4,
    last_offset=14,
    offset_delta=4,
    timestamp=1700000000000,
    coordinator_epoch=-1,
    current_txn_first_offset=-1,
)
SNAPSHOT_ROWS = rows_of_kind("producer-state snapshot v1")


def test_layout_sizes() -> None:
    assert (CRC_POSITION, CRC_START, ENTRIES_START, ENTRY_SIZE) == (2, 6, 10, 46)


def test_examples_9_3_byte_for_byte() -> None:
    assert encode_snapshot([]) == bytes.fromhex("0001 48674bc7 00000000")
    assert encode_snapshot([ONE]) == bytes.fromhex(
        "00014ce7c535000000010000000000000"
        "3e8000000000004000000000000000e"
        "000000040000018bcfe56800ffffffff"
        "ffffffffffffffff"
    )
    assert decode_snapshot(encode_snapshot([ONE])) == [ONE]
    assert decode_snapshot(bytes.fromhex("000148674bc700000000")) == []


def _forge(count: int, body: bytes) -> bytes:
    """A snapshot with a correct CRC over an arbitrary count and body."""
    covered = struct.pack(">i", count) + body
    return struct.pack(">hI", 1, crc32c(covered)) + covered


def _flip(data: bytes, position: int) -> bytes:
    return data[:position] + bytes([data[position] ^ 0x01]) + data[position + 1 :]


@pytest.mark.parametrize(
    ("damage", "position"),
    [
        (lambda d: b"", None),
        (lambda d: d[:9], None),
        (lambda d: b"\x00\x02" + d[2:], 0),
        (lambda d: b"\x00\x00" + d[2:], 0),
        (lambda d: _flip(d, 3), CRC_POSITION),
        (lambda d: _flip(d, 30), CRC_POSITION),
        (lambda d: d[:-1], CRC_POSITION),
        (lambda d: d + b"\x00", CRC_POSITION),
        (lambda d: _forge(2, d[ENTRIES_START:]), CRC_START),
        (lambda d: _forge(0, d[ENTRIES_START:]), CRC_START),
        (lambda d: _forge(-1, b""), CRC_START),
        (lambda d: _forge(1, d[ENTRIES_START:-1]), CRC_START),
    ],
    ids=[
        "empty",
        "short header",
        "version 2",
        "version 0",
        "crc field flip",
        "entry flip",
        "truncated",
        "trailing byte",
        "count too high",
        "count too low",
        "negative count",
        "short entry",
    ],
)
def test_corrupt_snapshots(damage: Callable[[bytes], bytes], position: int | None) -> None:
    path = Path("/x/00000000000000000015.snapshot")
    with pytest.raises(CorruptSnapshotError) as error:
        decode_snapshot(damage(encode_snapshot([ONE])), path=path)
    assert error.value.path == path
    assert error.value.position == position


def test_read_names_the_file(tmp_path: Path) -> None:
    path = names.snapshot_file(tmp_path, 15)
    path.write_bytes(encode_snapshot([ONE])[:-3])
    with pytest.raises(CorruptSnapshotError) as error:
        read_snapshot(path, fs=FS)
    assert error.value.path == path


def test_fields_that_do_not_fit_are_refused() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        encode_snapshot([ProducerSnapshotEntry(1, 2**15, 0, 0, 0, 0, 0, 0)])


def test_write_is_atomic_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = names.snapshot_file(tmp_path, 15)
    write_snapshot(path, [ONE], fs=FS)
    assert read_snapshot(path, fs=FS) == [ONE]
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_a_crash_or_power_loss_never_leaves_a_torn_snapshot(tmp_path: Path) -> None:
    entries = [ONE, ProducerSnapshotEntry(7, 1, 9, 20, 0, 5, 3, 18)]
    counting = FaultInjectingFileSystem()
    write_snapshot(names.snapshot_file(tmp_path, 1), entries, fs=counting)
    for n in range(1, len(counting.operations) + 1):
        part = tmp_path / f"crash-{n}"
        part.mkdir()
        fs = PowerLossFileSystem(fail_at=n)
        with pytest.raises(SimulatedCrash):
            write_snapshot(names.snapshot_file(part, 21), entries, fs=fs)
        fs.power_loss()
        assert list_snapshot_offsets(part, fs=FS) in ([], [21]), counting.operations[n - 1]
        if list_snapshot_offsets(part, fs=FS):
            assert read_snapshot(names.snapshot_file(part, 21), fs=FS) == entries


def test_list_snapshot_offsets(tmp_path: Path) -> None:
    for offset in (30, 5, 100):
        write_snapshot(names.snapshot_file(tmp_path, offset), [], fs=FS)
    for name in (
        names.snapshot_file(tmp_path, 7, names.DELETED_SUFFIX).name,
        names.snapshot_file(tmp_path, 8).name + names.TMP_SUFFIX,
        names.log_file(tmp_path, 9).name,
        "5.snapshot",
        "leader-epoch-checkpoint",
    ):
        (tmp_path / name).write_bytes(b"")
    assert list_snapshot_offsets(tmp_path, fs=FS) == [5, 30, 100]
    assert list_snapshot_offsets(tmp_path / "missing", fs=FS) == []


def test_list_snapshot_offsets_of_a_real_partition() -> None:
    part = REALDATA / "ArthurArutunyan04__Backend_labs/kafka-data/oms_order_created-1"
    assert list_snapshot_offsets(part, fs=FS) == [94005, 94646]


@pytest.mark.parametrize("row", SNAPSHOT_ROWS, ids=[row.id for row in SNAPSHOT_ROWS])
def test_every_real_snapshot_matches_the_manifest_and_reencodes_to_its_bytes(row: ManifestRow) -> None:
    entries = read_snapshot(row.path, fs=FS)
    assert len(entries) == int(row.contents.split(":", 1)[1].split()[0])
    assert encode_snapshot(entries) == row.path.read_bytes()


def test_every_snapshot_file_under_realdata_parses() -> None:
    paths = sorted(REALDATA.rglob("*" + names.SNAPSHOT_SUFFIX))
    assert len(paths) == len(SNAPSHOT_ROWS) > 100
    for path in paths:
        read_snapshot(path, fs=FS)


@pytest.mark.parametrize(
    ("relative", "count", "first"),
    [
        (
            "LestFeeD__online-shop-user/kafka/data/cart-product-request-0/00000000000000000026.snapshot",
            13,
            (8000, 0, 1, 13, 0, -1, -1),
        ),
        (
            "LestFeeD__online-shop-user/kafka/data/product-topic-0/00000000000000000009.snapshot",
            9,
            (7008, 0, 0, 8, 0, -1, -1),
        ),
        (
            "Islene888__movie_liveroom/kafka-data/live-events-0/00000000000000000045.snapshot",
            6,
            (2000, 0, 12, 29, 0, -1, -1),
        ),
    ],
)
def test_manifest_facts(relative: str, count: int, first: tuple[int, ...]) -> None:
    entries = read_snapshot(REALDATA / relative, fs=FS)
    assert len(entries) == count
    head = entries[0]
    assert (
        head.producer_id,
        head.epoch,
        head.last_sequence,
        head.last_offset,
        head.offset_delta,
        head.coordinator_epoch,
        head.current_txn_first_offset,
    ) == first


snapshot_entries = st.builds(
    ProducerSnapshotEntry,
    producer_id=st.integers(-(2**63), 2**63 - 1),
    epoch=st.integers(-(2**15), 2**15 - 1),
    last_sequence=st.integers(-(2**31), 2**31 - 1),
    last_offset=st.integers(-(2**63), 2**63 - 1),
    offset_delta=st.integers(-(2**31), 2**31 - 1),
    timestamp=st.integers(-(2**63), 2**63 - 1),
    coordinator_epoch=st.integers(-(2**31), 2**31 - 1),
    current_txn_first_offset=st.integers(-(2**63), 2**63 - 1),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(snapshot_entries, max_size=10))
def test_round_trip(entries: list[ProducerSnapshotEntry]) -> None:
    data = encode_snapshot(entries)
    assert len(data) == ENTRIES_START + ENTRY_SIZE * len(entries)
    assert decode_snapshot(data) == entries


@settings(max_examples=100, deadline=None)
@given(st.lists(snapshot_entries, min_size=1, max_size=4), st.data())
def test_any_single_bit_flip_is_detected(entries: list[ProducerSnapshotEntry], data: st.DataObject) -> None:
    encoded = encode_snapshot(entries)
    bit = data.draw(st.integers(0, len(encoded) * 8 - 1))
    damaged = bytearray(encoded)
    damaged[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(bytes(damaged))
