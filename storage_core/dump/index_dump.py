"""Dump `.index`, `.timeindex` and `.txnindex` files as `DumpLogSegments` does, with verification.

Verification reads the segment's `.log`: an offset-index entry (O, P) must point at a batch whose
last offset is O; a time-index entry (T, O) must name the last offset of a batch whose max timestamp
is T, and time-index timestamps must increase. Mismatches go to stderr, as Kafka prints them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from storage_core import names
from storage_core.dump.lines import DumpLine
from storage_core.errors import CorruptIndexError, CorruptRecordError
from storage_core.fs import FileSystem
from storage_core.index.offset_index import OffsetIndex
from storage_core.index.time_index import TimeIndex
from storage_core.index.txn_index import TransactionIndex
from storage_core.records.file_records import Batch, iterate_batches


def _log_buffer(path: Path, fs: FileSystem) -> bytes | None:
    log = path.with_name(names.filename_prefix(names.offset_from_file_name(path.name)) + names.LOG_SUFFIX)
    return fs.mmap(log) if fs.exists(log) else None


def _sanity(index: OffsetIndex | TimeIndex, path: Path) -> Iterator[DumpLine]:
    try:
        index.sanity_check()
        yield DumpLine("sanity_check", (("file", str(path)), ("passed", True)), text=f"{path} passed sanity check.")
    except CorruptIndexError as exc:
        yield DumpLine("sanity_check", (("file", str(path)), ("passed", False), ("error", str(exc))), text=str(exc))


def _entries_until_zero(index: OffsetIndex | TimeIndex) -> list:
    """Entries up to the first slot (after the first) whose offset is the base offset: a zero tail."""
    entries = index.entries()
    for i, entry in enumerate(entries):
        if i > 0 and entry.offset == index.base_offset:
            return entries[:i]
    return entries


def dump_offset_index(path: Path, *, verify_only: bool, sanity_only: bool, fs: FileSystem) -> Iterator[DumpLine]:
    base = names.offset_from_file_name(path.name)
    index = OffsetIndex.open(path, base, fs=fs)
    if sanity_only:
        yield from _sanity(index, path)
        return
    entries = _entries_until_zero(index)
    if not entries:
        yield DumpLine("index_empty", (("file", str(path)),), text=f"{path} is empty.")
        return
    log = _log_buffer(path, fs)
    mismatches = []
    for entry in entries:
        if log is not None:
            batch = _batch_at(log, entry.position)
            if batch is None or batch.last_offset != entry.offset:
                mismatches.append((entry.offset, -1 if batch is None else batch.last_offset))
        if not verify_only:
            yield DumpLine("index_entry", (("offset", entry.offset), ("position", entry.position)))
    if mismatches:
        yield DumpLine("index_mismatch", text=f"Mismatches in :{path.resolve()}", stderr=True)
        for index_offset, log_offset in mismatches:
            yield DumpLine(
                "index_mismatch",
                (("indexOffset", index_offset), ("logOffset", log_offset)),
                text=f"  Index offset: {index_offset}, log offset: {log_offset}",
                stderr=True,
            )


def _batch_at(log: bytes, position: int) -> Batch | None:
    try:
        return next(iterate_batches(log, start=position), None)
    except CorruptRecordError:
        return None


def _safe_batches(log: bytes, position: int) -> list[Batch]:
    try:
        return list(iterate_batches(log, start=position))
    except CorruptRecordError:
        return []


def dump_time_index(path: Path, *, verify_only: bool, sanity_only: bool, fs: FileSystem) -> Iterator[DumpLine]:
    base = names.offset_from_file_name(path.name)
    index = TimeIndex.open(path, base, fs=fs)
    if sanity_only:
        yield from _sanity(index, path)
        return
    entries = _entries_until_zero(index)
    log = _log_buffer(path, fs)
    by_last_offset = {b.last_offset: b for b in _safe_batches(log, 0)} if log is not None else {}
    problems = []
    previous = -1
    for entry in entries:
        if log is not None:
            batch = by_last_offset.get(entry.offset)
            if batch is None:
                problems.append(("not_found", entry.offset, -1))
            elif batch.max_timestamp != entry.timestamp:
                problems.append(("mismatch", entry.timestamp, batch.max_timestamp))
            if entry.timestamp <= previous:
                problems.append(("order", entry.timestamp, previous))
        previous = entry.timestamp
        if not verify_only:
            yield DumpLine("timeindex_entry", (("timestamp", entry.timestamp), ("offset", entry.offset)))
    headings = {
        "mismatch": f"Found timestamp mismatch in :{path.resolve()}",
        "order": f"Found out of order timestamp in :{path.resolve()}",
        "not_found": "The following indexed offsets are not found in the log.",
    }
    for kind, heading in headings.items():
        found = [p for p in problems if p[0] == kind]
        if found:
            yield DumpLine("timeindex_problem", text=heading, stderr=True)
        for _, first, second in found:
            text = {
                "mismatch": f"  Index timestamp: {first}, log timestamp: {second}",
                "order": f"  Index timestamp: {first}, Previously indexed timestamp: {second}",
                "not_found": f"Indexed offset: {first}, found log offset: {second}",
            }[kind]
            yield DumpLine(
                "timeindex_problem", (("problem", kind), ("a", first), ("b", second)), text=text, stderr=True
            )


def dump_txn_index(path: Path, *, fs: FileSystem) -> Iterator[DumpLine]:
    index = TransactionIndex.open(path, names.offset_from_file_name(path.name), fs=fs)
    for entry in index.all_entries():
        yield DumpLine(
            "txnindex_entry",
            (
                ("version", entry.version),
                ("producerId", entry.producer_id),
                ("firstOffset", entry.first_offset),
                ("lastOffset", entry.last_offset),
                ("lastStableOffset", entry.last_stable_offset),
            ),
        )
