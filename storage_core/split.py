"""Split a segment whose offsets overflow its 4-byte relative offsets (KAFKA-6264, `LocalLog.splitOverflowedSegment`).

Old brokers could write a segment holding offsets more than 2^31-1 above its base offset; the
indexes cannot address them. The segment's batches are copied, in order, into new segments (each
based at its first batch's base offset and holding batches while their last offset still fits),
written as `.cleaned` and swapped in with the swap protocol (:mod:`storage_core.cleaner.swap`), so a
crash leaves the old segment or the new ones. The byte total of the new segments equals the old one.
"""

from __future__ import annotations

from pathlib import Path

from storage_core import names
from storage_core.cleaner.swap import SwappedFile, replace_segments
from storage_core.errors import StorageError
from storage_core.fs import FileSystem
from storage_core.records.file_records import Batch, iterate_batches
from storage_core.segment import LogSegment

_INT32_MAX = 2**31 - 1


def split_overflowed_segment(
    dir_path: Path, base_offset: int, *, index_interval_bytes: int, segment_index_bytes: int, fs: FileSystem
) -> tuple[list[int], list[SwappedFile]]:
    """Split `<base_offset>.log` into segments whose offsets fit.

    Returns:
        The new base offsets, and the net change to each file name.

    Raises:
        StorageError: offsets go backwards, or below the segment's base offset, so no split can
            order them (nothing is changed).
    """
    log = names.log_file(dir_path, base_offset)
    groups: list[list[Batch]] = []
    for batch in iterate_batches(fs.mmap(log)):
        if batch.base_offset < base_offset:
            raise StorageError(
                f"{log}: batch offset {batch.base_offset} is below the segment's base offset; it cannot be split"
            )
        if groups and batch.last_offset - groups[-1][0].base_offset <= _INT32_MAX:
            groups[-1].append(batch)
            continue
        if groups and batch.base_offset <= groups[-1][-1].last_offset:
            raise StorageError(f"{log}: offsets go backwards at {batch.base_offset}; the segment cannot be split")
        groups.append([batch])
    mtime = fs.mtime_ms(log)
    new_bases = []
    for group in groups:
        new_base = group[0].base_offset
        for suffix in names.SEGMENT_SUFFIXES:
            fs.delete(dir_path / (names.filename_prefix(new_base) + suffix + names.CLEANED_SUFFIX))
        segment = LogSegment.open(
            dir_path,
            new_base,
            index_interval_bytes=index_interval_bytes,
            segment_index_bytes=segment_index_bytes,
            file_suffix=names.CLEANED_SUFFIX,
            create=True,
            fs=fs,
        )
        for batch in group:
            segment.append(largest_offset=batch.last_offset, records=bytes(batch.raw))
        segment.on_become_inactive()
        segment.flush()
        segment.close()
        fs.set_mtime_ms(names.log_file(dir_path, new_base, names.CLEANED_SUFFIX), mtime)
        new_bases.append(new_base)
    return new_bases, replace_segments(dir_path, new_bases=new_bases, old_bases=[base_offset], fs=fs)
