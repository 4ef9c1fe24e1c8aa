"""Dump `.index`, `.timeindex` and `.txnindex` files as `DumpLogSegments` does, verifying the first two.

Mirrors `dumpIndex`, `dumpTimeIndex` and `dumpTxnIndex` of `DumpLogSegments.scala` (kafka-format.md
§12.1, §6-§8):

* `.index`: `<file> is empty.` when it has no entries; with `--index-sanity-check` only
  `<file> passed sanity check.`; else `offset: O position: P` per entry (not with
  `--verify-index-only`). Each entry is checked: the first batch within `--max-message-size` bytes at
  P must have last offset O.
* `.timeindex`: `<file> passed sanity check.` or `timestamp: T offset: O` per entry. Each entry is
  checked against the first batch at or after the offset index's position for O whose last offset
  is >= O: it must end at O, its largest record timestamp must be T, and T must exceed the previous
  entry's.
* both stop at the first entry after the first whose offset is the base offset: the zero-filled,
  preallocated tail a crash leaves behind.
* `.txnindex`: `version: V producerId: P firstOffset: F lastOffset: L lastStableOffset: S`.

Verification findings are printed at the end of the run (:mod:`storage_core.dump.diagnostics`).
Where Kafka fails (no `.log` beside the index, a failed sanity check) we print one line on stderr
and go on.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from storage_core import names
from storage_core.dump.diagnostics import Diagnostics
from storage_core.dump.log_dump import corrupt_line
from storage_core.dump.options import DumpOptions
from storage_core.dump.render import DumpLine, Field
from storage_core.errors import CorruptDataError, CorruptIndexError, UnsupportedFormatError
from storage_core.fs import FileSystem
from storage_core.index.offset_index import OffsetIndex
from storage_core.index.time_index import TimeIndex
from storage_core.index.txn_index import TransactionIndex
from storage_core.records.file_records import Batch, Buffer, iterate_batches

NO_TIMESTAMP = -1


def _sanity_line(index: OffsetIndex | TimeIndex, file: str) -> DumpLine:
    try:
        index.sanity_check()
    except CorruptIndexError as exc:
        return DumpLine(
            "sanity_check",
            (Field("file", file), Field("passed", False), Field("error", str(exc))),
            template="{file} failed sanity check: {error}",
            stderr=True,
        )
    return DumpLine(
        "sanity_check", (Field("file", file), Field("passed", True)), template="{file} passed sanity check."
    )


def _segment_log(path: Path, base_offset: int, fs: FileSystem) -> tuple[Buffer | None, DumpLine | None]:
    """The segment's `.log` bytes, or None and a stderr line saying the entries go unverified."""
    log = names.log_file(path.parent, base_offset)
    if fs.exists(log):
        return fs.mmap(log), None
    return None, DumpLine(
        "log_not_found",
        (Field("file", str(log)),),
        template="No log file {file}: index entries are not verified.",
        stderr=True,
    )


def _first_batch_last_offset(log: Buffer, *, position: int, max_size: int) -> int:
    """Last offset of the first whole batch in [position, position + max_size), -1 if there is none."""
    if position < 0:
        return -1
    try:
        batch = next(iterate_batches(log, start=position, end=position + max_size), None)
    except CorruptDataError:
        return -1
    return -1 if batch is None else batch.last_offset


def dump_offset_index(
    file: str, *, options: DumpOptions, diagnostics: Diagnostics, fs: FileSystem
) -> Iterator[DumpLine]:
    """The lines of an `.index` file after `Dumping <file>`.

    Raises:
        InvalidNameError: the file name does not start with an offset.
    """
    path = Path(file)
    base_offset = names.offset_from_file_name(path.name)
    index = OffsetIndex.open(path, base_offset, fs=fs)
    if index.entry_count == 0:
        yield DumpLine("index_empty", (Field("file", file),), template="{file} is empty.")
        return
    if options.index_sanity_check:
        yield _sanity_line(index, file)
        return
    log, missing = _segment_log(path, base_offset, fs)
    if missing is not None:
        yield missing
    absolute = str(path.absolute())
    for n, entry in enumerate(index.entries()):
        if n > 0 and entry.offset == base_offset:
            return
        if log is not None:
            log_offset = _first_batch_last_offset(log, position=entry.position, max_size=options.max_message_size)
            if log_offset != entry.offset:
                diagnostics.index_mismatch(absolute, index_offset=entry.offset, log_offset=log_offset)
        if not options.verify_index_only:
            yield DumpLine("index_entry", (Field("offset", entry.offset), Field("position", entry.position)))


def _batch_ending_at_or_after(log: Buffer, *, position: int, offset: int) -> Batch | None:
    try:
        return next((b for b in iterate_batches(log, start=max(position, 0)) if b.last_offset >= offset), None)
    except CorruptDataError:
        return None


def dump_time_index(file: str, *, options: DumpOptions, diagnostics: Diagnostics, fs: FileSystem) -> Iterator[DumpLine]:
    """The lines of a `.timeindex` file after `Dumping <file>`.

    Raises:
        InvalidNameError: the file name does not start with an offset.
    """
    path = Path(file)
    base_offset = names.offset_from_file_name(path.name)
    time_index = TimeIndex.open(path, base_offset, fs=fs)
    if options.index_sanity_check:
        yield _sanity_line(time_index, file)
        return
    log, missing = _segment_log(path, base_offset, fs)
    if missing is not None:
        yield missing
    offset_index = OffsetIndex.open(names.offset_index_file(path.parent, base_offset), base_offset, fs=fs)
    absolute = str(path.absolute())
    previous_timestamp = NO_TIMESTAMP
    for n, entry in enumerate(time_index.entries()):
        if n > 0 and entry.offset == base_offset:
            return
        if log is not None:
            position = offset_index.lookup(entry.offset).position
            batch = _batch_ending_at_or_after(log, position=position, offset=entry.offset)
            if batch is None or batch.last_offset != entry.offset:
                log_offset = -1 if batch is None else batch.last_offset
                diagnostics.timeindex_offset_not_found(absolute, index_offset=entry.offset, log_offset=log_offset)
            else:
                try:
                    max_timestamp = max((r.timestamp for r in batch.records()), default=NO_TIMESTAMP)
                except (CorruptDataError, UnsupportedFormatError) as exc:
                    yield corrupt_line(file, position=batch.position, error=exc)
                    max_timestamp = NO_TIMESTAMP
                if max_timestamp != entry.timestamp:
                    diagnostics.timeindex_mismatch(
                        absolute, index_timestamp=entry.timestamp, log_timestamp=max_timestamp
                    )
                if previous_timestamp >= entry.timestamp:
                    diagnostics.timeindex_out_of_order(
                        absolute, index_timestamp=entry.timestamp, prev_index_timestamp=previous_timestamp
                    )
        if not options.verify_index_only:
            yield DumpLine("timeindex_entry", (Field("timestamp", entry.timestamp), Field("offset", entry.offset)))
        previous_timestamp = entry.timestamp


def dump_txn_index(file: str, *, fs: FileSystem) -> Iterator[DumpLine]:
    """The lines of a `.txnindex` file after `Dumping <file>`: one per aborted transaction.

    Raises:
        InvalidNameError: the file name does not start with an offset.
        CorruptIndexError: an entry has an unknown version.
    """
    path = Path(file)
    index = TransactionIndex.open(path, names.offset_from_file_name(path.name), fs=fs)
    for entry in index.all_entries():
        yield DumpLine(
            "txnindex_entry",
            (
                Field("version", entry.version),
                Field("producerId", entry.producer_id),
                Field("firstOffset", entry.first_offset),
                Field("lastOffset", entry.last_offset),
                Field("lastStableOffset", entry.last_stable_offset),
            ),
        )
