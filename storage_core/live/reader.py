"""Reading a partition directory the way a consumer does, beside a live broker, without its `.lock`.

What a running broker may do to a partition directory while we read it (kafka-maintenance.md §2,
§5, §6; `LocalLog`, `UnifiedLog.truncateTo`, `LogCleaner.replaceSegments`):

* the **active segment** (the `.log` with the highest base offset) grows by whole batches written
  at its end; a reader may see a prefix of the batch being written;
* a **roll** creates a new active segment; the old one is closed (trimmed, never rewritten);
* **retention** renames a segment's files to `.deleted` and deletes them later;
* the **cleaner** writes `.cleaned` files, renames them to `.swap`, renames the `.swap` over the old
  `.log` (a new file under the old name) and renames the old one to `.deleted`;
* a follower **truncation** deletes segments above an offset and truncates the one holding it;
* the **checkpoints** trail the log, and `.kafka_cleanshutdown` is absent while the broker runs.

The rules, in order (per partition):

1. List the segments (`segments_before`).
2. Per segment: open the `.log` read-only (missing: `changed_during_read`), note which file it is
   (device, inode) and its size, and read it in chunks with `pread` -- never `mmap`, whose pages
   would raise SIGBUS after a truncation -- framing and CRC-checking batches as recovery does
   (:func:`~storage_core.records.file_records.scan_valid_prefix`). Closed segments are read in
   full. The active segment of a live directory is read up to its last complete batch: a batch
   cut short at the end (or a zero-filled preallocated tail) is `in_flight`, never corruption.
3. After the read, the segment's name must still name the file we read: otherwise the segment was
   deleted or replaced while we read it (retention or the cleaner ran) and it is reported as
   `changed_during_read`, not as a failure. What we read was one whole file, but no longer the log.
4. List the segments again (`segments_after`). The rows describe a **consistent snapshot** when both
   lists agree and no segment changed during its read.

Data above the recovery point may still be in the page cache only (not flushed): a reader sees it
as a consumer does, and its lack of durability is no corruption.

Crash story: nothing here opens a file for writing, creates, renames or deletes anything in a log
dir (it may drop our own pages from the page cache, which changes no byte). Dying mid-read leaves
the directory as it was.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from storage_core import names
from storage_core.fs import FileHandle, FileSystem, default_fs
from storage_core.records.batch import LOG_OVERHEAD
from storage_core.records.file_records import HEADER_SIZE_UP_TO_MAGIC, iterate_batches, scan_valid_prefix
from storage_core.records.legacy import RECORD_OVERHEAD_V0

CHUNK_BYTES = 4 * 1024 * 1024
"""pread size: big enough that the Python work per chunk is small, small enough to throttle smoothly."""


class Throttle(Protocol):
    """Admits reads at a rate: :meth:`acquire` returns when `size` more bytes may be read."""

    def acquire(self, size: int) -> None: ...


class ReadStatus(enum.StrEnum):
    """What reading one segment found, as a consumer would see it."""

    OK = "ok"  # every byte is a whole, valid batch
    IN_FLIGHT = "in_flight"  # the live active segment ends in a batch being written
    CHANGED_DURING_READ = "changed_during_read"  # deleted, renamed or replaced while read
    INVALID = "invalid"  # damaged bytes (closed segment, or a stopped broker's log)


@dataclass(frozen=True, slots=True)
class Chunk:
    """Whole, CRC-valid batches read from a segment: `buffer[:end]`, the file's bytes at `position`."""

    position: int
    buffer: bytes
    end: int


@dataclass(frozen=True, slots=True)
class SegmentRead:
    """How reading one segment's `.log` went.

    Attributes:
        base_offset: the segment.
        is_active: it was the active segment when the partition was listed.
        status: see :class:`ReadStatus`.
        file_bytes: the `.log`'s size when it was opened (0 if it was gone).
        valid_bytes: bytes of whole, valid batches read (the rest is in flight or invalid).
        batch_count: whole, valid batches read.
        last_offset: the last offset of the last of them, None if none.
        invalid_position: where invalid (or in-flight) bytes start, None if none.
        invalid_reason: why they are not a whole, valid batch.
    """

    base_offset: int
    is_active: bool
    status: ReadStatus
    file_bytes: int
    valid_bytes: int
    batch_count: int = 0
    last_offset: int | None = None
    invalid_position: int | None = None
    invalid_reason: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionSnapshot:
    """The segments of one partition as read, and whether they form a consistent snapshot."""

    segments_before: tuple[int, ...]
    segments_after: tuple[int, ...]
    reads: tuple[SegmentRead, ...] = field(default=())

    @property
    def consistent(self) -> bool:
        """No segment appeared, went or changed while the partition was read."""
        return self.segments_before == self.segments_after and all(
            r.status is not ReadStatus.CHANGED_DURING_READ for r in self.reads
        )


def list_segments(dir_path: Path, *, fs: FileSystem | None = None) -> tuple[int, ...]:
    """Base offsets of the `.log` files in a partition directory, ascending (`.deleted`/`.swap` are not)."""
    fs = fs or default_fs()
    return tuple(names.log_base_offsets(fs.list_dir(Path(dir_path))))


class SegmentScan:
    """One chunked pass over an open `.log`: iterate :meth:`chunks`, then read the outcome attributes.

    Args:
        handle: the `.log`, open for reading.
        size: bytes to read (its size when opened: what a live writer appends later is not read).
        chunk_bytes: bytes per pread (a batch larger than that is read whole).
        verify_crc: check every batch's CRC.
        check_offsets: stop where offsets stop increasing (deep verification).
        throttle: admits each pread's bytes before it is made.
        drop_cache: drop each chunk's pages from the page cache once scanned.
    """

    def __init__(
        self,
        handle: FileHandle,
        *,
        size: int,
        chunk_bytes: int = CHUNK_BYTES,
        verify_crc: bool = True,
        check_offsets: bool = False,
        throttle: Throttle | None = None,
        drop_cache: bool = False,
    ) -> None:
        self._handle = handle
        self._size = size
        self._chunk_bytes = chunk_bytes
        self._verify_crc = verify_crc
        self._check_offsets = check_offsets
        self._throttle = throttle
        self._drop_cache = drop_cache
        self.valid_bytes = 0
        self.batch_count = 0
        self.last_offset: int | None = None
        self.invalid_reason: str | None = None
        self.incomplete = False
        self.read_bytes = 0

    def _read(self, position: int, size: int) -> bytes:
        if self._throttle is not None:
            self._throttle.acquire(size)
        data = self._handle.read_at(position, size)
        self.read_bytes += len(data)
        return data

    def chunks(self) -> Iterator[Chunk]:
        """The file's whole, valid batches, chunk by chunk; stops at the first bytes that are not one.

        Each pread starts at the first byte not yet scanned, so no bytes are copied between chunks:
        a batch cut by the end of a chunk is read again, whole, by the next pread (its pages are
        still cached: only the scanned part of a chunk is dropped from the page cache).
        """
        position = 0  # the first byte not yet scanned
        want = self._chunk_bytes
        while position < self._size:
            data = self._read(position, min(want, self._size - position))
            if not data:  # the file shrank under us (a truncation): what is left is cut short
                break
            scan = scan_valid_prefix(data, verify_crc=self._verify_crc, check_offsets=self._check_offsets)
            if scan.batch_count:
                first = next(iterate_batches(data))
                if self._check_offsets and self.last_offset is not None and first.last_offset <= self.last_offset:
                    self.invalid_reason = f"offsets go backwards ({first.last_offset} after {self.last_offset})"
                    return
                yield Chunk(position, data, scan.valid_bytes)
                self.batch_count += scan.batch_count
                self.last_offset = scan.last_offset
                if self._drop_cache:
                    self._handle.drop_cache(position, scan.valid_bytes)
            position += scan.valid_bytes
            self.valid_bytes = position
            if scan.invalid_reason is None:
                want = self._chunk_bytes
                continue
            entry_size = _cut_short(data[scan.valid_bytes :])
            if entry_size is None:
                self.invalid_reason = scan.invalid_reason
                return
            if position + len(data) - scan.valid_bytes >= self._size:
                break  # cut short by the end of the file
            want = max(self._chunk_bytes, entry_size, HEADER_SIZE_UP_TO_MAGIC + 1)  # the next read gets further
        if position < self._size:
            self.incomplete = True
            self.invalid_reason = "batch cut short at the end of the file"

    @property
    def invalid_position(self) -> int | None:
        return None if self.invalid_reason is None else self.valid_bytes


def _cut_short(rest: bytes) -> int | None:
    """The whole size of the entry `rest` starts if `rest` merely cuts it short (0 when even its
    header is cut), None if the bytes are invalid however many follow (the scan's framing rules)."""
    if len(rest) <= HEADER_SIZE_UP_TO_MAGIC:
        return 0
    size = int.from_bytes(rest[8:LOG_OVERHEAD], "big", signed=True)
    if size >= RECORD_OVERHEAD_V0 and LOG_OVERHEAD + size > len(rest):
        return LOG_OVERHEAD + size
    return None


def read_segment(
    dir_path: Path,
    base_offset: int,
    *,
    is_active: bool,
    live: bool,
    on_chunk: Callable[[Chunk], None] | None = None,
    chunk_bytes: int = CHUNK_BYTES,
    check_offsets: bool = False,
    throttle: Throttle | None = None,
    drop_cache: bool = False,
    fs: FileSystem | None = None,
) -> SegmentRead:
    """Read one segment's `.log` like a consumer (rules 2 and 3 of the module docstring).

    Args:
        dir_path: the partition directory.
        base_offset: the segment.
        is_active: it is the partition's last segment.
        live: a broker may be writing the directory (its `.lock` is held).
        on_chunk: called with every chunk of whole, valid batches, in file order.
        chunk_bytes: bytes per pread.
        check_offsets: also stop where offsets stop increasing.
        throttle: admits each pread's bytes.
        drop_cache: drop each chunk's pages from the page cache once scanned.
        fs: the file system.

    Returns:
        What the read found. Never raises for a segment that went away.
    """
    fs = fs or default_fs()
    path = names.log_file(Path(dir_path), base_offset)
    try:
        handle = fs.open(path)
    except FileNotFoundError:
        return SegmentRead(base_offset, is_active, ReadStatus.CHANGED_DURING_READ, 0, 0, invalid_reason="gone")
    try:
        identity = handle.identity()
        size = handle.size()
        scan = SegmentScan(
            handle,
            size=size,
            chunk_bytes=chunk_bytes,
            check_offsets=check_offsets,
            throttle=throttle,
            drop_cache=drop_cache,
        )
        for chunk in scan.chunks():
            if on_chunk is not None:
                on_chunk(chunk)
        if drop_cache:
            # Per-chunk advice leaves pages the kernel still held at that moment (about the last
            # quarter of each 4 MiB chunk here): one sweep over the file drops them (bench/README.md).
            handle.drop_cache(0, size)
    finally:
        handle.close()
    reason = scan.invalid_reason
    if fs.identity(path) != identity:
        status, reason = ReadStatus.CHANGED_DURING_READ, "deleted, renamed or replaced while read"
    elif reason is None:
        status = ReadStatus.OK
    elif live and is_active and (scan.incomplete or _zero_filled_tail(reason)):
        status = ReadStatus.IN_FLIGHT
    else:
        status = ReadStatus.INVALID
    return SegmentRead(
        base_offset,
        is_active,
        status,
        size,
        scan.valid_bytes,
        scan.batch_count,
        scan.last_offset,
        scan.invalid_position,
        reason,
    )


def _zero_filled_tail(reason: str) -> bool:
    # A broker with log.preallocate=true grows the active .log zero-filled ahead of its writes.
    return "zero-filled" in reason


def read_partition(
    dir_path: Path,
    *,
    live: bool,
    visit: Callable[[int, bool], Callable[[Chunk], None] | None] | None = None,
    only_closed: bool = False,
    fs: FileSystem | None = None,
    **options: object,
) -> PartitionSnapshot:
    """Read every segment of a partition like a consumer and say whether the reads form a snapshot.

    Args:
        dir_path: the partition directory.
        live: a broker may be writing the directory.
        visit: `visit(base_offset, is_active)` returns the chunk callback of that segment (or None).
        only_closed: skip the active segment (it is still listed in the snapshot).
        fs: the file system.
        options: passed to :func:`read_segment` (chunk_bytes, check_offsets, throttle, drop_cache).

    Returns:
        The segment lists before and after, and one read per segment read.
    """
    fs = fs or default_fs()
    before = list_segments(dir_path, fs=fs)
    reads = []
    for base_offset in before:
        is_active = base_offset == before[-1]
        if only_closed and is_active:
            continue
        on_chunk = visit(base_offset, is_active) if visit is not None else None
        reads.append(
            read_segment(dir_path, base_offset, is_active=is_active, live=live, on_chunk=on_chunk, fs=fs, **options)  # type: ignore[arg-type]
        )
    return PartitionSnapshot(before, list_segments(dir_path, fs=fs), tuple(reads))


def is_live(log_dir: Path, *, fs: FileSystem | None = None) -> bool:
    """True if another process (a running broker) holds the log dir's `.lock`; asks without locking."""
    fs = fs or default_fs()
    return fs.lock_holder(Path(log_dir) / names.LOCK_FILE) is not None
