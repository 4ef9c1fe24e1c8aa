"""A segment's `.log` file: batch framing, the valid-prefix scan, and FileChannel-style appends.

Mirrors `clients/.../common/record/FileRecords.java`, `FileLogInputStream.java` and the validity
loop of `storage/.../log/LogSegment.java` `recover` (kafka-format.md §3). A `.log` is entries back
to back, no file header, no padding. Every entry of every magic starts (big-endian):

```
Entry => Offset => Int64  Size => Int32 (bytes after this field)  4 bytes (v2: leader epoch, v0/v1: CRC)
         Magic => Int8  ...                 (Records.java: LOG_OVERHEAD 12, HEADER_SIZE_UP_TO_MAGIC 17)
```

Framing (`FileLogInputStream.nextBatch`): 17 bytes or fewer left, or an entry running past the end,
ends iteration silently (a torn tail); `Size < 14` (a zero-filled preallocated tail reads as 0) is
corrupt; magic 0/1 is a legacy entry, 2 a record batch. Stricter than Kafka's file iterator, a magic
outside 0..2 is corrupt here (Kafka's in-memory iterator rejects it too). CRCs are checked by the
scan, not by plain iteration.

Offsets going backwards: Kafka's recovery does not truncate there. `LogSegment.recover` only meets
them when it appends an offset-index entry (every `index.interval.bytes`), where `OffsetIndex.append`
throws InvalidOffsetException, which `LogLoader` answers by emptying the whole segment. So the scan
reports a regression only when asked (`check_offsets`, for verification); recovery itself
reproduces Kafka's rule with the indexes (segment.py).

Crash story: appends are positional writes at the tracked size and are durable only after
:meth:`FileRecords.flush`; what a crash loses is a torn tail, which recovery truncates.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from storage_core import native
from storage_core.errors import CorruptRecordError, SegmentTooLargeError
from storage_core.fs import FileHandle, FileSystem, default_fs
from storage_core.native.layout import (
    INT64_MAX,
    INT64_MIN,
    STOP_BAD_MAGIC,
    STOP_CRC_MISMATCH,
    STOP_END,
    STOP_LEGACY,
    STOP_PAST_END,
    STOP_SIZE_TOO_SMALL,
    STOP_SLOW,
    STOP_TRUNCATED_HEADER,
    STOP_V2_TOO_SMALL,
    W_BATCHES,
    W_HAVE_LAST,
    W_LAST_OFFSET,
    W_POSITION,
    WF_CHECK_OFFSETS,
    WF_VERIFY_CRC,
    walk_state,
)
from storage_core.records.batch import (
    FIELD_CODE,
    FIELD_POSITION,
    LOG_OVERHEAD,
    MAGIC_POSITION,
    RECORD_BATCH_OVERHEAD,
    RecordBatch,
)
from storage_core.records.legacy import RECORD_OVERHEAD_V0, LegacyBatch

Batch = RecordBatch | LegacyBatch
Buffer = bytes | bytearray | memoryview

# The prefix every magic shares, from the v2 declaration: base offset, size, 4 skipped bytes, magic.
_FRAME = struct.Struct(
    ">"
    + FIELD_CODE["base_offset"]
    + FIELD_CODE["batch_length"]
    + f"{MAGIC_POSITION - LOG_OVERHEAD}x"
    + FIELD_CODE["magic"]
)
HEADER_SIZE_UP_TO_MAGIC = _FRAME.size  # 17
LAST_OFFSET_DELTA_POSITION = FIELD_POSITION["last_offset_delta"]
_LAST_OFFSET_DELTA = struct.Struct(">" + FIELD_CODE["last_offset_delta"])
_MAX_FILE_SIZE = 2**31 - 1  # positions in a segment (and in its offset index) are int32


def iterate_batches(buffer: Buffer, *, start: int = 0, end: int | None = None) -> Iterator[Batch]:
    """The batches of a `.log` buffer, framing only (no CRC check).

    Args:
        buffer: the file's bytes (an mmap is best).
        start: position of the first batch.
        end: stop here instead of at the end of `buffer`.

    Yields:
        RecordBatch (magic 2) or LegacyBatch (magic 0/1) views, in file order.

    Raises:
        CorruptRecordError: an entry whose size is below 14, whose magic is not 0, 1 or 2, or a
            magic-2 entry shorter than its 61-byte header (`position` = the entry's).
    """
    end = len(buffer) if end is None else min(end, len(buffer))
    position = start
    while position + HEADER_SIZE_UP_TO_MAGIC < end:
        _, size, magic = _FRAME.unpack_from(buffer, position)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(
                f"record size {size} is less than the minimum record overhead {RECORD_OVERHEAD_V0}", position=position
            )
        batch_end = position + LOG_OVERHEAD + size
        if batch_end > end:
            return
        if magic == 2:
            yield RecordBatch(buffer, position)
        elif magic in (0, 1):
            yield LegacyBatch(buffer, position)
        else:
            raise CorruptRecordError(f"invalid magic {magic}", position=position)
        position = batch_end


@dataclass(frozen=True, slots=True)
class ScanResult:
    """Where the valid prefix of a `.log` ends, and why.

    Attributes:
        valid_bytes: length of the prefix of whole, valid batches (what recovery keeps).
        batch_count: batches in the prefix.
        last_offset: last offset of the prefix's last batch, None when the prefix is empty.
        invalid_position: where the first invalid bytes start (== valid_bytes), None when the whole
            buffer is valid.
        invalid_reason: why those bytes are invalid, None when the whole buffer is valid.
    """

    valid_bytes: int
    batch_count: int
    last_offset: int | None
    invalid_position: int | None
    invalid_reason: str | None


def scan_valid_prefix(buffer: Buffer, *, verify_crc: bool = True, check_offsets: bool = False) -> ScanResult:
    """Walk the batches of a `.log` buffer and find where its valid prefix ends.

    The prefix ends at the first of: 17 bytes or fewer left ("truncated batch header"), a size
    below 14 ("... zero-filled tail" when 0), an entry past the end of the buffer ("batch runs past
    the end of the file"), a magic outside 0..2, a v2 batch shorter than 61 bytes, a CRC mismatch
    (CRC-32C for v2, CRC-32 for v0/v1; with `verify_crc`), and, with `check_offsets`, a batch whose
    last offset is not above the previous batch's ("offsets go backwards"). Never raises for
    damaged bytes.

    Args:
        buffer: the file's bytes (an mmap is best).
        verify_crc: check every batch's CRC (Kafka's `ensureValid` in recovery).
        check_offsets: also stop where offsets stop increasing (see the module docstring).

    Returns:
        The prefix's length, batch count and last offset, and where and why it ends.
    """
    view = memoryview(buffer)
    end = len(view)
    flags = (WF_VERIFY_CRC if verify_crc else 0) | (WF_CHECK_OFFSETS if check_offsets else 0)
    state = walk_state(end=end, flags=flags)
    position, count, last_offset = 0, 0, None
    while True:
        if last_offset is not None and not INT64_MIN <= last_offset <= INT64_MAX:
            stop = STOP_SLOW  # a last offset beyond int64: the next batch goes the one-by-one way
        else:
            state[W_POSITION], state[W_BATCHES] = position, count
            state[W_HAVE_LAST], state[W_LAST_OFFSET] = (0, 0) if last_offset is None else (1, last_offset)
            stop = native.walk(view, state, bytearray(), bytearray())
            position, count = state[W_POSITION], state[W_BATCHES]
            last_offset = state[W_LAST_OFFSET] if state[W_HAVE_LAST] else None
        if stop not in (STOP_LEGACY, STOP_SLOW):
            break
        batch_last, reason = _scan_one_batch(view, position, verify_crc=verify_crc)
        if reason is None and check_offsets and last_offset is not None and batch_last <= last_offset:
            reason = f"offsets go backwards ({batch_last} after {last_offset})"
        if reason is not None:
            return ScanResult(position, count, last_offset, position, reason)
        last_offset, count = batch_last, count + 1
        position += LOG_OVERHEAD + _FRAME.unpack_from(view, position)[1]
    if stop == STOP_END:
        return ScanResult(position, count, last_offset, None, None)
    return ScanResult(position, count, last_offset, position, _reason(view, position, stop, last_offset))


def _scan_one_batch(view: memoryview, position: int, *, verify_crc: bool) -> tuple[int, str | None]:
    """The last offset of the entry at `position` (a legacy entry, or a v2 batch whose last offset
    is beyond int64), or why it is invalid (its framing was checked by the walk)."""
    _, _, magic = _FRAME.unpack_from(view, position)
    if magic == 2:
        batch = RecordBatch(view, position)
        return batch.last_offset, "CRC mismatch" if verify_crc and not batch.is_valid() else None
    legacy = LegacyBatch(view, position)
    return legacy.base_offset, "CRC mismatch" if verify_crc and not legacy.is_valid() else None


def _reason(view: memoryview, position: int, stop: int, last_offset: int | None) -> str:
    """Why the valid prefix ends at `position` (the walk's `stop`)."""
    if stop == STOP_TRUNCATED_HEADER:
        return "truncated batch header"
    base_offset, size, magic = _FRAME.unpack_from(view, position)
    if stop == STOP_SIZE_TOO_SMALL:
        return f"batch size {size} is below the minimum 14" + (" (zero-filled tail)" if size == 0 else "")
    if stop == STOP_PAST_END:
        return "batch runs past the end of the file"
    if stop == STOP_BAD_MAGIC:
        return f"invalid magic {magic}"
    if stop == STOP_V2_TOO_SMALL:
        return f"batch of {size + LOG_OVERHEAD} bytes is smaller than its {RECORD_BATCH_OVERHEAD}-byte header"
    if stop == STOP_CRC_MISMATCH:
        return "CRC mismatch"
    batch_last = base_offset + _LAST_OFFSET_DELTA.unpack_from(view, position + LAST_OFFSET_DELTA_POSITION)[0]
    return f"offsets go backwards ({batch_last} after {last_offset})"


class FileRecords:
    """A segment's `.log` file with a tracked size, appended to like Kafka's FileChannel.

    Open with :meth:`open`. The tracked size (Kafka's `size` AtomicInteger) is the logical end: a
    preallocated file may be longer, zero-filled, until :meth:`trim`. All I/O goes through `fs`.
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
        """Open `path`; its tracked size is the file's length.

        Args:
            path: the `.log` file.
            fs: the file system (default: the local one).
            writable: allow append, truncate_to and trim.
            create: create an empty file when missing (implies writable).

        Raises:
            SegmentTooLargeError: the file is over 2^31 - 1 bytes (Kafka's maximum segment size).
        """
        fs = fs or default_fs()
        handle = fs.open(Path(path), writable=writable or create, create=create)
        size = handle.size()
        if size > _MAX_FILE_SIZE:  # Kafka's FileRecords refuses it the same way, before reading it
            handle.close()
            raise SegmentTooLargeError(size, path=path)
        return cls(Path(path), handle, size, fs)

    @property
    def size_in_bytes(self) -> int:
        """The tracked size: the end of the last appended batch."""
        return self._size

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write `data` at the tracked end.

        Returns:
            The position `data` starts at.

        Raises:
            ValueError: the file would pass 2^31-1 bytes (Kafka's "too large for segment").
        """
        position = self._size
        if len(data) > _MAX_FILE_SIZE - position:
            raise ValueError(f"append of {len(data)} bytes is too large for {self.path} at position {position}")
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
        """The batches from `start_position` (framing only, see :func:`iterate_batches`)."""
        return iterate_batches(self.buffer(), start=start_position, end=end)

    def scan(self, *, verify_crc: bool = True, check_offsets: bool = False) -> ScanResult:
        """:func:`scan_valid_prefix` over the file up to the tracked size."""
        return scan_valid_prefix(self.buffer(), verify_crc=verify_crc, check_offsets=check_offsets)

    def truncate_to(self, size: int) -> int:
        """`FileRecords.truncateTo`: cut the file (and any preallocated tail) at `size`.

        Returns:
            The bytes removed from the tracked size.

        Raises:
            ValueError: `size` is negative or beyond the tracked size.
        """
        if not 0 <= size <= self._size:
            raise ValueError(f"cannot truncate {self.path} to {size} bytes: its size is {self._size}")
        if self._handle.size() > size:
            self._handle.truncate(size)
        removed = self._size - size
        self._size = size
        return removed

    def trim(self) -> None:
        """Drop a preallocated tail beyond the tracked size (Kafka trims on roll and close)."""
        if self._handle.size() > self._size:
            self._handle.truncate(self._size)

    def flush(self) -> None:
        """fsync the file."""
        self._handle.fsync()

    def close(self) -> None:
        """Release the file handle (no flush, no trim)."""
        self._handle.close()

    def __enter__(self) -> FileRecords:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
