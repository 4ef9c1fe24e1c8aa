"""A `.log` file: framing of concatenated batches, the valid-prefix scan, FileChannel-style appends.

Mirrors `FileRecords.java`, `FileLogInputStream.java` and the validity loop of `LogSegment.recover`
(kafka-format.md §3, kafka-maintenance.md §3.2-§3.3). A `.log` is batches back to back, no header.
Every entry starts `Offset => Int64  Size => Int32` with the magic byte at position 16:

* fewer than 17 bytes left, or an entry running past the end: iteration ends (a torn tail);
* `Size < 14` (a zero-filled preallocated tail reads as size 0): corrupt;
* magic 0/1: a legacy entry; magic 2: a record batch; anything else: corrupt.

CRCs are checked by the scan, not by plain iteration. Anything after the valid prefix is what
recovery truncates. Crash story: appends are positional writes at the tracked size; bytes not yet
fsynced may be lost, which is exactly the torn tail recovery removes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from storage_core.errors import CorruptRecordError
from storage_core.fs import FileHandle, FileSystem, default_fs
from storage_core.records.batch import ATTRIBUTES_POSITION, RECORD_BATCH_OVERHEAD, RecordBatch
from storage_core.records.crc import crc32, crc32c
from storage_core.records.legacy import RECORD_OVERHEAD_V0, LegacyBatch

HEADER_SIZE_UP_TO_MAGIC = 17
LOG_OVERHEAD = 12
_FRAME = struct.Struct(">qi4xb")  # offset, size, (leader epoch / legacy crc), magic: HEADER_SIZE_UP_TO_MAGIC bytes
_V2_CRC = struct.Struct(">I")
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LEGACY_CRC = struct.Struct(">I")

Batch = RecordBatch | LegacyBatch
Buffer = bytes | bytearray | memoryview


def iterate_batches(buffer: Buffer, *, start: int = 0, end: int | None = None) -> Iterator[Batch]:
    """The batches of a `.log` buffer, framing only (no CRC check).

    Raises:
        CorruptRecordError: an entry whose size is below 14 or whose magic is not 0, 1 or 2.
    """
    end = len(buffer) if end is None else min(end, len(buffer))
    position = start
    while position + HEADER_SIZE_UP_TO_MAGIC < end:
        _, size, magic = _FRAME.unpack_from(buffer, position)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(
                f"record size {size} is smaller than the minimum record overhead", position=position
            )
        if position + LOG_OVERHEAD + size > end:
            return
        if magic == 2:
            yield RecordBatch(buffer, position)
        elif magic in (0, 1):
            yield LegacyBatch(buffer, position)
        else:
            raise CorruptRecordError(f"invalid magic {magic}", position=position)
        position += LOG_OVERHEAD + size


@dataclass(frozen=True, slots=True)
class ScanResult:
    """Where the valid prefix of a `.log` ends, and why.

    Attributes:
        valid_bytes: length of the prefix of whole, valid batches.
        batch_count: batches in the prefix.
        last_offset: last offset of the prefix's last batch, None when it is empty.
        invalid_position: where the first invalid bytes start (== valid_bytes), None if the whole
            buffer is valid.
        invalid_reason: why those bytes are invalid.
    """

    valid_bytes: int
    batch_count: int
    last_offset: int | None
    invalid_position: int | None
    invalid_reason: str | None


def scan_valid_prefix(buffer: Buffer, *, verify_crc: bool = True, check_offsets: bool = False) -> ScanResult:
    """Walk the batches of a `.log` buffer and find where its valid prefix ends.

    A batch ends the prefix when fewer than 17 bytes remain, its size is below 14 (e.g. a zero-filled
    tail), it runs past the end, its magic is unknown, a v2 batch is shorter than 61 bytes, or (with
    `verify_crc`) its CRC does not match. With `check_offsets`, a batch whose last offset is not above
    the previous batch's also ends it (Kafka only notices this when it appends an index entry there).

    Args:
        buffer: the file's bytes (an mmap is best).
        verify_crc: check CRC-32C (v2) / CRC-32 (v0, v1) of every batch.
        check_offsets: also stop at offsets that go backwards.
    """
    end = len(buffer)
    view = memoryview(buffer) if verify_crc else buffer
    position = 0
    count = 0
    last_offset: int | None = None
    reason: str | None = None
    frame = _FRAME.unpack_from
    while True:
        if position + HEADER_SIZE_UP_TO_MAGIC >= end:
            if position < end:
                reason = "truncated batch header"
            break
        base_offset, size, magic = frame(buffer, position)
        if size < RECORD_OVERHEAD_V0:
            reason = f"batch size {size} below the minimum 14" + (" (zero-filled tail)" if size == 0 else "")
            break
        batch_end = position + LOG_OVERHEAD + size
        if batch_end > end:
            reason = "batch runs past the end of the file"
            break
        if magic == 2:
            if size + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD:
                reason = f"batch of {size + LOG_OVERHEAD} bytes is smaller than its header"
                break
            stored_crc = _V2_CRC.unpack_from(buffer, position + HEADER_SIZE_UP_TO_MAGIC)[0]
            if verify_crc and crc32c(view[position + ATTRIBUTES_POSITION : batch_end]) != stored_crc:
                reason = "CRC mismatch"
                break
            batch_last = base_offset + _LAST_OFFSET_DELTA.unpack_from(buffer, position + 23)[0]
        elif magic in (0, 1):
            if verify_crc:
                (legacy_crc,) = _LEGACY_CRC.unpack_from(buffer, position + LOG_OVERHEAD)
                if crc32(view[position + LOG_OVERHEAD + 4 : batch_end]) != legacy_crc:
                    reason = "CRC mismatch"
                    break
            batch_last = base_offset
        else:
            reason = f"invalid magic {magic}"
            break
        if check_offsets and last_offset is not None and batch_last <= last_offset:
            reason = f"offsets go backwards ({batch_last} after {last_offset})"
            break
        last_offset = batch_last
        count += 1
        position = batch_end
    return ScanResult(position, count, last_offset, None if reason is None else position, reason)


class FileRecords:
    """A segment's `.log` file with a tracked size, appended to like Kafka's FileChannel.

    Use :meth:`open`. The tracked size is the logical end: a preallocated file may be longer
    (zero-filled) until :meth:`trim`.
    """

    def __init__(self, path: Path, handle: FileHandle, size: int, fs: FileSystem) -> None:
        self.path = path
        self._handle = handle
        self._size = size
        self._fs = fs

    @classmethod
    def open(
        cls, path: Path, *, fs: FileSystem | None = None, writable: bool = False, create: bool = False
    ) -> FileRecords:
        fs = fs or default_fs()
        handle = fs.open(Path(path), writable=writable or create, create=create)
        return cls(Path(path), handle, handle.size(), fs)

    @property
    def size_in_bytes(self) -> int:
        return self._size

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write `data` at the tracked end; returns the position it starts at."""
        position = self._size
        self._handle.write_at(position, data)
        self._size += len(data)
        return position

    def read(self, position: int, size: int) -> bytes:
        """Up to `size` bytes at `position`, never past the tracked end."""
        return self._handle.read_at(position, max(0, min(size, self._size - position)))

    def buffer(self) -> Buffer:
        """The file's bytes up to the tracked size (an mmap view when possible)."""
        mapped = self._fs.mmap(self.path)
        return memoryview(mapped)[: self._size] if len(mapped) > self._size else mapped

    def batches(self, start_position: int = 0, end: int | None = None) -> Iterator[Batch]:
        return iterate_batches(self.buffer(), start=start_position, end=end)

    def scan(self, *, verify_crc: bool = True, check_offsets: bool = False) -> ScanResult:
        return scan_valid_prefix(self.buffer(), verify_crc=verify_crc, check_offsets=check_offsets)

    def truncate_to(self, size: int) -> int:
        """Cut the file at `size`; returns the bytes removed."""
        removed = self._handle.size() - size
        if removed > 0:
            self._handle.truncate(size)
        self._size = min(self._size, size)
        return max(removed, 0)

    def trim(self) -> None:
        """Drop a preallocated tail beyond the tracked size."""
        if self._handle.size() > self._size:
            self._handle.truncate(self._size)

    def flush(self) -> None:
        self._handle.fsync()

    def close(self) -> None:
        self._handle.close()
