"""The quarantine: record bytes a job must remove from a log dir are copied out of it first.

Recovery cuts torn and corrupt tails, empties or deletes segments whose offsets cannot be served,
deletes the segments after a truncation and the leftovers of an interrupted clean or split. Kafka
deletes those bytes; we keep them. Before any byte of a `.log` file (of any lifecycle suffix:
`.log`, `.log.swap`, `.log.cleaned`) is truncated or deleted for such a reason, the byte range is
copied to the quarantine, fsynced, and only then removed. Files whose removal loses no record are not
quarantined: indexes and producer snapshots (rebuilt from the `.log`), `.deleted` files and the old
segments of a completed swap (replaced by their cleaned copies, as Kafka intends), and the segments
retention and compaction delete on purpose.

Layout (outside every log dir: a broker parses every subdirectory of a log dir as a partition):

```
<quarantine dir>/<run id>/<log dir id>/<partition dir name>/<file name>.<start>-<end>.log
```

`<quarantine dir>` is `--quarantine-dir`, else `<warehouse>/quarantine`; `<log dir id>` is the log
dir's `directory.id` from `meta.properties` (Kafka 3.7+), else its base name and a digest of its
absolute path. A piece holds bytes [start, end) of the file as they were; its name ends in `.log`, so
`logkeeper dump` (and Kafka's `kafka-dump-log.sh`) read it as a segment, whose batches keep their
offsets. Each piece is an action row (`quarantine`: path, byte count, sha256, offset range).

Crash story: a piece is written as `<piece>.partial`, fsynced, renamed to its name (the directory
fsynced, and every directory created on the way), and only then are the bytes removed from the log
dir. A crash before the rename leaves a `.partial` file and the bytes in the log dir; a crash after
it, a complete piece and the bytes still in the log dir. Either way the next run finds the same
bytes to remove and quarantines them again: with the same run id (a retried run) into the same
piece, which it rewrites from a `.partial` or keeps when it already holds those bytes; with a new
run id into its own directory, leaving the crashed run's copy as a duplicate without an audit row.
A dry run writes nothing and reports the piece it would write.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.errors import CorruptCheckpointError, CorruptDataError, StorageError
from storage_core.fs import FileSystem
from storage_core.load_actions import ActionKind, FileChange, LoadAction
from storage_core.meta_properties import read_meta_properties
from storage_core.records.file_records import iterate_batches

PARTIAL_SUFFIX = ".partial"
_CHUNK = 1 << 20
_PIECE = re.compile(r"^(?P<file>.+)\.(?P<start>\d+)-(?P<end>\d+)\.log$")


@dataclass(frozen=True, slots=True)
class QuarantineArea:
    """Where one partition's removed bytes go.

    Attributes:
        directory: `<quarantine dir>/<run id>/<log dir id>/<partition dir name>`, or None when the
            job has no quarantine location (then only a dry run may proceed).
        dry_run: report pieces, write none.
    """

    directory: Path | None
    dry_run: bool = False


def log_dir_id(log_dir: Path, *, fs: FileSystem) -> str:
    """The log dir's `directory.id` (meta.properties), else `<base name>-<12 hex of its absolute path>`."""
    log_dir = Path(log_dir)
    meta = log_dir / names.META_PROPERTIES
    if fs.exists(meta):
        try:
            directory_id = read_meta_properties(meta, fs=fs).directory_id
        except CorruptCheckpointError:
            directory_id = None
        if directory_id:
            return directory_id
    digest = hashlib.sha256(str(log_dir.absolute()).encode()).hexdigest()[:12]
    return f"{log_dir.absolute().name or 'root'}-{digest}"


def partition_area(
    quarantine_dir: Path | None, run_id: str, log_dir: Path, dir_name: str, *, dry_run: bool, fs: FileSystem
) -> QuarantineArea:
    """The :class:`QuarantineArea` of one partition directory of a run."""
    if quarantine_dir is None:
        return QuarantineArea(None, dry_run)
    return QuarantineArea(Path(quarantine_dir) / run_id / log_dir_id(log_dir, fs=fs) / dir_name, dry_run)


def piece_name(file_name: str, start: int, end: int) -> str:
    """`<file name>.<start>-<end>.log`: bytes [start, end) of `file_name`."""
    return f"{file_name}.{start}-{end}.log"


def parse_piece_name(name: str) -> tuple[str, int, int] | None:
    """(file name, start, end) of a piece's name, None if it is not one."""
    match = _PIECE.match(name)
    if match is None:
        return None
    return match["file"], int(match["start"]), int(match["end"])


def _valid_offsets(data: memoryview) -> tuple[int, int]:
    """First and last offset of the whole batches with a valid CRC in `data`, (-1, -1) if none."""
    first = last = -1
    try:
        for batch in iterate_batches(data):
            if batch.is_valid():
                if first < 0:
                    first = batch.base_offset
                last = batch.last_offset
    except (CorruptDataError, ValueError):
        pass  # the framing ends here: what follows is not batches
    return first, last


def quarantine(
    area: QuarantineArea,
    dir_path: Path,
    name: str,
    start: int,
    end: int,
    *,
    reason: str,
    base_offset: int = -1,
    fs: FileSystem,
) -> list[LoadAction]:
    """Copy bytes [start, end) of `dir_path/name` to the quarantine, durably, before they are removed.

    Returns:
        The `quarantine` action (the piece's path, size, sha256 and offset range), as a list: empty
        for an empty range, which has nothing to keep.

    Raises:
        StorageError: the job has no quarantine location (and this is not a dry run).
        OSError: the copy failed; the caller must not remove the bytes.
    """
    if start >= end:
        return []
    if area.directory is None and not area.dry_run:
        raise StorageError(
            f"{dir_path / name}: bytes [{start}, {end}) must be quarantined before they are removed, "
            "but no quarantine location is set (--quarantine-dir)"
        )
    piece = piece_name(name, start, end)
    target = area.directory / piece if area.directory is not None else Path("<quarantine-dir>") / piece
    data = memoryview(fs.mmap(dir_path / name))[start:end]
    digest = hashlib.sha256(data).hexdigest()
    first, last = _valid_offsets(data)
    if not area.dry_run:
        _write_piece(target, data, digest, fs)
    return [
        LoadAction(
            ActionKind.QUARANTINE,
            name,
            base_offset,
            end - start,
            reason,
            FileChange.QUARANTINE,
            str(target),
            digest,
            first,
            last,
        )
    ]


def _write_piece(target: Path, data: memoryview, digest: str, fs: FileSystem) -> None:
    """Write the piece durably (`.partial`, fsync, rename, fsync the directory), or keep an identical one."""
    if fs.exists(target) and fs.size(target) == len(data) and hashlib.sha256(fs.mmap(target)).hexdigest() == digest:
        return  # a retried run copied these bytes already
    fs.make_dirs(target.parent)
    partial = target.with_name(target.name + PARTIAL_SUFFIX)
    handle = fs.open(partial, writable=True, create=True)
    try:
        handle.truncate(0)
        for position in range(0, len(data), _CHUNK):
            handle.write_at(position, data[position : position + _CHUNK])
        handle.fsync()
    finally:
        handle.close()
    fs.rename_atomic(partial, target)
