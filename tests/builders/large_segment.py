"""A `.log` just past Kafka's largest segment (2^31 - 1 bytes), sparse so that it costs no disk.

`write_segment_past_2_gib(path)` writes a valid chain of two v2 batches: the first, at position 0,
has no records and a zero-filled body (a hole in the file) that ends past 2^31 bytes, its CRC-32C
computed over the hole's zeros; the second, a one-record batch, starts past position 2^31 - 1, where
a 4-byte index position turns negative. Only the two batches' own pages are written.

```
[0, 61)                 batch 0 header (base offset 0, 0 records, batch length 2^31 - 4)
[61, 2^31 + 8)          its body: zeros, a hole
[2^31 + 8, end)         batch 1 (offset 1, one record)
```
"""

from __future__ import annotations

import struct
from pathlib import Path

from storage_core import native
from storage_core.records.batch import Record, build_batch

FIRST_BATCH_END = 2**31 + 8  # where the second batch starts: past every int32 position (length <= 2^31 - 1)
_ZEROS = bytes(16 * 1024 * 1024)


def _crc_of_zeros_after(data: bytes, zeros: int) -> int:
    crc = native.crc32c(data)
    while zeros:
        chunk = min(zeros, len(_ZEROS))
        crc = native.crc32c(memoryview(_ZEROS)[:chunk], crc)
        zeros -= chunk
    return crc


def write_segment_past_2_gib(path: Path) -> int:
    """Write the segment above at `path`; its size in bytes."""
    first = bytearray(build_batch([], base_offset=0, last_offset_delta=0))
    struct.pack_into(">i", first, 8, FIRST_BATCH_END - 12)  # batch length: everything after it
    struct.pack_into(">I", first, 17, _crc_of_zeros_after(bytes(first[21:]), FIRST_BATCH_END - len(first)))
    second = build_batch([Record(1, 1_700_000_000_000, b"k", b"v")], base_offset=1)
    with path.open("wb") as out:
        out.write(first)
        out.seek(FIRST_BATCH_END)
        out.write(second)
    return FIRST_BATCH_END + len(second)
