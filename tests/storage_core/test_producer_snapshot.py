from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_core.errors import CorruptSnapshotError
from storage_core.fs import LocalFileSystem
from storage_core.producer_snapshot import ProducerSnapshotEntry, decode_snapshot, encode_snapshot, write_snapshot

FS = LocalFileSystem()
ONE = ProducerSnapshotEntry(1000, 0, 4, 14, 4, 1700000000000, -1, -1)


def test_examples_9_3() -> None:
    assert encode_snapshot([]).hex() == "000148674bc700000000"
    assert encode_snapshot([ONE]).hex() == (
        "00014ce7c535000000010000000000000"
        "3e8000000000004000000000000000e"
        "000000040000018bcfe56800ffffffff"
        "ffffffffffffffff"
    )


@pytest.mark.parametrize(
    "damage",
    [lambda d: b"\x00\x02" + d[2:], lambda d: d[:-1], lambda d: d[:20] + bytes([d[20] ^ 1]) + d[21:], lambda d: d[:4]],
    ids=["version", "short", "crc", "header"],
)
def test_corrupt_snapshots(damage) -> None:
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(damage(encode_snapshot([ONE])))


def test_write_is_atomic(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000015.snapshot"
    write_snapshot(path, [ONE], fs=FS)
    assert decode_snapshot(path.read_bytes()) == [ONE]
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


entries = st.builds(
    ProducerSnapshotEntry,
    st.integers(0, 2**63 - 1),
    st.integers(-1, 2**15 - 1),
    st.integers(-1, 2**31 - 1),
    st.integers(-1, 2**63 - 1),
    st.integers(0, 2**31 - 1),
    st.integers(-1, 2**63 - 1),
    st.integers(-1, 2**31 - 1),
    st.integers(-1, 2**63 - 1),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(entries, max_size=8))
def test_round_trip(values) -> None:
    assert decode_snapshot(encode_snapshot(values)) == values
