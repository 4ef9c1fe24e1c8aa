"""The two checksums of Kafka's log formats (kafka-format.md §2.3).

* CRC-32C (Castagnoli; reflected polynomial 0x82F63B78, `java.util.zip.CRC32C`): v2 record batches
  (bytes [21, end)) and producer-state snapshots. Check value: CRC-32C(b"123456789") = 0xE3069283.
* CRC-32 (IEEE, `java.util.zip.CRC32`, zlib): legacy v0/v1 messages (magic byte to end).

Both return the unsigned 32-bit value Kafka stores (`ByteUtils.writeUnsignedInt`) and accept any
buffer (bytes, bytearray, memoryview slices of an mmap) without copying it. Mirrors
`clients/src/main/java/org/apache/kafka/common/utils/Crc32C.java`.
"""

from __future__ import annotations

import zlib

# CRC-32C of a buffer, unsigned: the C function itself, re-exported (recovery calls it once a batch,
# and a Python wrapper would add a call frame to each).
from crc32c import crc32c as crc32c


def crc32(data: bytes | bytearray | memoryview) -> int:
    """CRC-32 (IEEE) of `data`, unsigned."""
    return zlib.crc32(data) & 0xFFFFFFFF
