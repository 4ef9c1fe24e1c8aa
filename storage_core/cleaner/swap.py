"""Kafka's swap protocol (`LocalLog.replaceSegments`), the specification the crash tests enumerate.

1. The new segment's files were written as `*.cleaned` and fsynced. *Crash here: load deletes every
   `.cleaned` file; the old segments stay.*
2. Rename the new segments' files `.cleaned` -> `.swap` (descending base offset; `.log`, `.index`,
   `.timeindex`, `.txnindex`). *Crash during this step: a `.swap` at or above the smallest remaining
   `.cleaned` offset is deleted with the `.cleaned` files: rolled back. Once every file is `.swap`,
   load completes the swap: rolled forward.*
3. Rename every file of each old segment to `.deleted` (ascending). *Crash here: load deletes the
   `.deleted` files and completes the swap.*
4. Rename the new segments' `.swap` files to their final names, fsync the directory. *Crash here: load
   renames the remaining `.swap` files.*
5. Rename the replaced segments' producer snapshots to `.snapshot.deleted`; delete every `.deleted`
   file (`file.delete.delay.ms` = 0 offline). *Crash here: load deletes the leftovers.*
"""

from __future__ import annotations

from pathlib import Path

from storage_core import names
from storage_core.fs import FileSystem


def _files(dir_path: Path, base_offset: int, suffix: str, fs: FileSystem) -> list[Path]:
    paths = [
        names.log_file(dir_path, base_offset, suffix),
        names.offset_index_file(dir_path, base_offset, suffix),
        names.time_index_file(dir_path, base_offset, suffix),
        names.txn_index_file(dir_path, base_offset, suffix),
    ]
    return [p for p in paths if fs.exists(p)]


def replace_segments(dir_path: Path, *, new_bases: list[int], old_bases: list[int], fs: FileSystem) -> list[Path]:
    """Swap `.cleaned` segments in for the old ones; returns the `.deleted` files removed."""
    for base in sorted(new_bases, reverse=True):
        for path in _files(dir_path, base, names.CLEANED_SUFFIX, fs):
            fs.rename_atomic(path, path.with_name(path.name[: -len(names.CLEANED_SUFFIX)] + names.SWAP_SUFFIX))
    deleted: list[Path] = []
    for base in sorted(old_bases):
        for path in _files(dir_path, base, "", fs):
            target = path.with_name(path.name + names.DELETED_SUFFIX)
            fs.rename_atomic(path, target)
            deleted.append(target)
    for base in sorted(new_bases):
        for path in _files(dir_path, base, names.SWAP_SUFFIX, fs):
            fs.rename_atomic(path, path.with_name(path.name[: -len(names.SWAP_SUFFIX)]))
    fs.fsync_dir(dir_path)
    for base in sorted(set(old_bases) - set(new_bases)):
        snapshot = names.snapshot_file(dir_path, base)
        if fs.exists(snapshot):
            target = names.snapshot_file(dir_path, base, names.DELETED_SUFFIX)
            fs.rename_atomic(snapshot, target)
            deleted.append(target)
    for path in deleted:
        fs.delete(path)
    if deleted:
        fs.fsync_dir(dir_path)
    return deleted
