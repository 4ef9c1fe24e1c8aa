"""The two checksums: check values (kafka-format.md §2.3) and buffer types."""

from __future__ import annotations

import mmap
from pathlib import Path

from storage_core.records.crc import crc32, crc32c


def test_check_values() -> None:
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32(b"123456789") == 0xCBF43926


def test_memoryview_and_mmap_slices_give_the_same_crc(tmp_path: Path) -> None:
    data = bytes(range(256)) * 40
    path = tmp_path / "data"
    path.write_bytes(data)
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        view = memoryview(mapped)
        assert crc32c(view[21:5000]) == crc32c(data[21:5000])
        assert crc32(view[16:300]) == crc32(data[16:300])
        view.release()


def test_crc32_is_unsigned() -> None:
    assert crc32(b"\xff" * 4) == 0xFFFFFFFF
