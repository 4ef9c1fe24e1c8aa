from __future__ import annotations

from pathlib import Path

import pytest

from storage_core.errors import CorruptIndexError
from storage_core.fs import LocalFileSystem
from storage_core.index.txn_index import AbortedTxn, TransactionIndex

FS = LocalFileSystem()


def test_entry_layout_and_lazy_file(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex.open(path, 0, fs=FS)
    assert not path.exists()
    index.append(AbortedTxn(producer_id=1000, first_offset=5, last_offset=9, last_stable_offset=10))
    index.append(AbortedTxn(producer_id=7, first_offset=11, last_offset=20, last_stable_offset=21))
    with pytest.raises(ValueError, match="not above"):
        index.append(AbortedTxn(producer_id=7, first_offset=1, last_offset=20, last_stable_offset=21))
    index.close()
    assert path.read_bytes()[:34].hex() == ("000000000000000003e800000000000000050000000000000009000000000000000a")
    reopened = TransactionIndex.open(path, 0, fs=FS)
    assert [t.producer_id for t in reopened.all_entries()] == [1000, 7]
    assert reopened.collect_aborted_txns(10, 15) == ([reopened.all_entries()[1]], True)
    reopened.truncate_to(15)
    assert len(reopened.all_entries()) == 1
    reopened.close()
    assert path.stat().st_size == 34


def test_partial_trailing_entry_is_ignored_and_bad_version_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "x.txnindex"
    entry = AbortedTxn(1, 2, 3, 4).encode()
    path.write_bytes(entry + entry[:10])
    assert len(TransactionIndex.open(path, 0, fs=FS).all_entries()) == 1
    path.write_bytes(b"\x01" + entry[1:])
    with pytest.raises(CorruptIndexError):
        TransactionIndex.open(path, 0, fs=FS)


def test_sanity_check(tmp_path: Path) -> None:
    path = tmp_path / "x.txnindex"
    path.write_bytes(AbortedTxn(1, 2, 3, 4).encode())
    with pytest.raises(CorruptIndexError):
        TransactionIndex.open(path, 10, fs=FS).sanity_check()
