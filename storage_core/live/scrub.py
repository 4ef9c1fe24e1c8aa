"""Scrub: CRC-check every batch of every closed segment, and its indexes, beside a live broker.

Kafka never re-reads data below the recovery point, so bit rot (a bad disk, controller or cable)
surfaces only when a consumer fails on it. A scrub reads what recovery's deep verification reads,
but read-only and gently:

1. List the partition's segments; the active one (the last) is never scrubbed: a broker is
   writing it, and recovery checks it anyway.
2. Take the closed segments that are due by the cursor (:mod:`storage_core.live.scrub_cursor`),
   never-verified first.
3. Read each like a consumer (:func:`storage_core.live.reader.read_segment`): chunked preads, each
   admitted by the throttle (a token bucket shared by the host's scrub tasks), each chunk's pages
   dropped from the page cache once scanned (`POSIX_FADV_DONTNEED`), framing, CRC-32C (CRC-32 for
   v0/v1) and increasing offsets checked batch by batch; the SHA-256 of the verified batches'
   headers is taken and the offset/time-index entries are checked on the way (each entry must
   point at a batch holding its offset; :mod:`storage_core.index_rebuild`'s checks).
4. A segment deleted or replaced while read (retention, the cleaner) is `changed_during_read`: not
   verified, no finding, due again next time. Otherwise its outcome goes to the cursor at once.

Findings name the segment, the byte position, the offset range of the damaged batch (as far as its
header can be read) and what is wrong. A finding in a batch below the recovery point is
**corruption**; above it the data may not have been flushed yet (the checkpoint trails the log), so
it is reported as `unflushed`, not corruption.

Crash story: nothing in a log dir is written, created, renamed or deleted (the page-cache advice
changes no byte). The only file written is the cursor, in the warehouse, atomically, after each
segment: a scrub stopped at any point resumes with the first segment it had not finished.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.fs import FileSystem, default_fs
from storage_core.index_rebuild import OffsetEntriesCheck, TimeEntriesCheck
from storage_core.live.reader import CHUNK_BYTES, Chunk, ReadStatus, Throttle, list_segments, read_segment
from storage_core.live.scrub_cursor import ScrubCursor, VerifiedSegment
from storage_core.records.batch import HEADER, MAGIC_POSITION, MAGIC_VALUE, BatchHeader
from storage_core.records.file_records import iterate_batches


@dataclass(frozen=True, slots=True)
class ScrubFinding:
    """Something wrong in one closed segment.

    Attributes:
        base_offset: the segment.
        file: the damaged file's name.
        position: byte position in the `.log` (for an index: of the batch the bad entry names, or -1).
        first_offset: first offset of the damaged batch, -1 when not readable.
        last_offset: last offset of the damaged batch, -1 when not readable.
        kind: crc_mismatch, invalid_batch, offsets_go_backwards, cut_short, index_invalid, timeindex_invalid.
        detail: what is wrong, in words.
        below_recovery_point: the damaged batch is below the recovery point (flushed: corruption).
    """

    base_offset: int
    file: str
    position: int
    first_offset: int
    last_offset: int
    kind: str
    detail: str
    below_recovery_point: bool

    @property
    def is_corruption(self) -> bool:
        return self.below_recovery_point


@dataclass(frozen=True, slots=True)
class SegmentScrub:
    """How scrubbing one segment went: ok, corrupt, or changed_during_read (not verified)."""

    base_offset: int
    status: str
    bytes_read: int
    findings: tuple[ScrubFinding, ...] = ()


@dataclass(frozen=True, slots=True)
class ScrubResult:
    """A partition's scrub: the segments verified now, those skipped (verified recently), and what was found."""

    segments: tuple[SegmentScrub, ...]
    segments_not_due: int
    segments_left: int
    cursor: ScrubCursor

    @property
    def findings(self) -> tuple[ScrubFinding, ...]:
        return tuple(f for s in self.segments for f in s.findings)

    @property
    def bytes_read(self) -> int:
        return sum(s.bytes_read for s in self.segments)


def scrub_partition(
    dir_path: Path,
    *,
    cursor: ScrubCursor,
    now_ms: int,
    recheck_ms: int,
    recovery_point: int | None,
    live: bool,
    throttle: Throttle | None = None,
    chunk_bytes: int = CHUNK_BYTES,
    drop_cache: bool = True,
    keep_going: Callable[[], bool] = lambda: True,
    save_cursor: Callable[[ScrubCursor], None] | None = None,
    clock_ms: Callable[[], int] | None = None,
    fs: FileSystem | None = None,
) -> ScrubResult:
    """Scrub the due closed segments of one partition (passes 1-4 of the module docstring).

    Args:
        dir_path: the partition directory.
        cursor: what earlier scrubs verified.
        now_ms: the run's clock, for what is due.
        recheck_ms: re-verify a segment this long after it was verified.
        recovery_point: the log dir's recovery-point checkpoint for the partition (None: unknown,
            every batch counts as flushed).
        live: a broker may be writing the directory.
        throttle: admits each read.
        chunk_bytes: bytes per read.
        drop_cache: drop scanned pages from the page cache.
        keep_going: asked before each segment; False stops the scrub (a time budget): the rest is
            left for the next run.
        save_cursor: called with the new cursor after every verified segment.
        clock_ms: when a segment was verified (default: `now_ms`).
        fs: the file system.

    Returns:
        The segments verified and their findings, and the cursor after them.
    """
    fs = fs or default_fs()
    dir_path = Path(dir_path)
    bases = list_segments(dir_path, fs=fs)
    closed = list(bases[:-1])
    due = [b for b in closed if cursor.is_due(b, _size(dir_path, b, fs), now_ms=now_ms, recheck_ms=recheck_ms)]
    done: list[SegmentScrub] = []
    left = 0
    for base_offset in cursor.due_order(due):
        if not keep_going():
            left += 1
            continue
        scrubbed, digest, size = _scrub_segment(
            dir_path,
            base_offset,
            recovery_point=recovery_point,
            live=live,
            throttle=throttle,
            chunk_bytes=chunk_bytes,
            drop_cache=drop_cache,
            fs=fs,
        )
        done.append(scrubbed)
        if scrubbed.status == "changed_during_read":
            continue
        entry = VerifiedSegment(size, digest, clock_ms() if clock_ms else now_ms, scrubbed.status)
        cursor = cursor.with_segment(base_offset, entry, set(closed))
        if save_cursor is not None:
            save_cursor(cursor)
    return ScrubResult(tuple(done), len(closed) - len(due), left, cursor)


def _size(dir_path: Path, base_offset: int, fs: FileSystem) -> int:
    try:
        return fs.size(names.log_file(dir_path, base_offset))
    except FileNotFoundError:
        return -1  # gone since the listing: due, and reported changed when read


def _scrub_segment(
    dir_path: Path,
    base_offset: int,
    *,
    recovery_point: int | None,
    live: bool,
    throttle: Throttle | None,
    chunk_bytes: int,
    drop_cache: bool,
    fs: FileSystem,
) -> tuple[SegmentScrub, str, int]:
    """One closed segment: its scrub, the SHA-256 of the bytes verified, and the `.log`'s size."""
    digest = hashlib.sha256()
    offset_check = OffsetEntriesCheck(names.offset_index_file(dir_path, base_offset), base_offset, fs)
    time_check = TimeEntriesCheck(names.time_index_file(dir_path, base_offset), base_offset, fs)
    first_position: dict[int, int] = {}  # last offset -> position, for index findings

    def on_chunk(chunk: Chunk) -> None:
        view = memoryview(chunk.buffer)[: chunk.end]
        for batch in iterate_batches(view):
            digest.update(view[batch.position : batch.position + _DIGESTED_HEADER_BYTES])
            placed = _Placed(chunk.position + batch.position, batch)
            offset_check.feed(placed)  # type: ignore[arg-type]
            time_check.feed(placed)  # type: ignore[arg-type]
            first_position.setdefault(batch.last_offset, placed.position)

    read = read_segment(
        dir_path,
        base_offset,
        is_active=False,
        live=live,
        on_chunk=on_chunk,
        chunk_bytes=chunk_bytes,
        check_offsets=True,
        throttle=throttle,
        drop_cache=drop_cache,
        fs=fs,
    )
    bytes_read = read.valid_bytes
    if read.status is ReadStatus.CHANGED_DURING_READ:
        return SegmentScrub(base_offset, "changed_during_read", bytes_read), "", read.file_bytes
    log_name = names.log_file(dir_path, base_offset).name
    findings: list[ScrubFinding] = []
    if read.status is ReadStatus.INVALID:
        position = read.invalid_position if read.invalid_position is not None else read.valid_bytes
        first, last = _batch_offsets(dir_path, base_offset, position, fs)
        reason = read.invalid_reason or "invalid batch"
        flushed = recovery_point is None or (last if last >= 0 else (read.last_offset or base_offset)) < recovery_point
        findings.append(ScrubFinding(base_offset, log_name, position, first, last, _kind(reason), reason, flushed))
    else:  # the whole .log is valid: its indexes must agree with it
        below = recovery_point is None or (read.last_offset if read.last_offset is not None else -1) < recovery_point
        for check, kind, path in (
            (offset_check, "index_invalid", names.offset_index_file(dir_path, base_offset)),
            (time_check, "timeindex_invalid", names.time_index_file(dir_path, base_offset)),
        ):
            problem = check.finish()
            if problem is not None and problem != "missing":
                findings.append(ScrubFinding(base_offset, path.name, -1, -1, -1, kind, problem, below))
    status = "corrupt" if any(f.is_corruption for f in findings) else "ok"
    return SegmentScrub(base_offset, status, bytes_read, tuple(findings)), digest.hexdigest(), read.file_bytes


class _Placed:
    """A batch seen through a chunk, with its position in the file (what the index checks read)."""

    __slots__ = ("base_offset", "last_offset", "max_timestamp", "position")

    def __init__(self, position: int, batch: object) -> None:
        self.position = position
        self.base_offset = batch.base_offset  # type: ignore[attr-defined]
        self.last_offset = batch.last_offset  # type: ignore[attr-defined]
        self.max_timestamp = batch.max_timestamp  # type: ignore[attr-defined]


# The cursor's SHA-256 covers each verified batch's header (offsets, length, magic and the CRC that
# was just checked against its body), not every byte: hashing every byte ran at 200 MB/s here and
# held the scrub to 0.12 of the read+CRC32C limit (bench/README.md, scrub).
_DIGESTED_HEADER_BYTES = HEADER.size


def _kind(reason: str) -> str:
    if reason.startswith("CRC mismatch"):
        return "crc_mismatch"
    if reason.startswith("offsets go backwards"):
        return "offsets_go_backwards"
    if reason.startswith("batch cut short"):
        return "cut_short"
    return "invalid_batch"


def _batch_offsets(dir_path: Path, base_offset: int, position: int, fs: FileSystem) -> tuple[int, int]:
    """First and last offset of the batch at `position`, as far as its header says (-1 when unreadable)."""
    try:
        handle = fs.open(names.log_file(dir_path, base_offset))
    except FileNotFoundError:
        return -1, -1
    try:
        header = handle.read_at(position, HEADER.size)
    finally:
        handle.close()
    if len(header) <= MAGIC_POSITION:
        return -1, -1
    first = int.from_bytes(header[:8], "big", signed=True)
    if header[MAGIC_POSITION] != MAGIC_VALUE or len(header) < HEADER.size:
        return first, first  # a legacy entry holds one offset (a wrapper's inner last one is not in its header)
    fields = BatchHeader._make(HEADER.unpack(header))
    return first, first + fields.last_offset_delta
