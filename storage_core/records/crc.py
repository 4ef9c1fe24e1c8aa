"""The two checksums of Kafka's log formats (kafka-format.md §2.3).

* CRC-32C (Castagnoli): v2 record batches (bytes 21..end) and producer snapshots (bytes 6..end).
* CRC-32 (IEEE, zlib): legacy v0/v1 messages (magic byte to end).

Both accept any buffer (bytes, memoryview, mmap slices) without copying.
"""

from __future__ import annotations

import zlib

from crc32c import crc32c as _crc32c


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C of `data`."""
    return _crc32c(data)


def crc32(data: bytes | bytearray | memoryview) -> int:
    """CRC-32 (IEEE) of `data`, unsigned."""
    return zlib.crc32(data) & 0xFFFFFFFF
