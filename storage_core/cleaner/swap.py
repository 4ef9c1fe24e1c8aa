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

import hashlib
from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.fs import FileSystem
from storage_core.load_actions import ActionKind, FileChange, LoadAction


@dataclass(frozen=True, slots=True)
class SwappedFile:
    """The net change a swap made to one file name: the new segments' files are created (or rewrite
    an old file of the same name), the old segments' other files and snapshots are deleted."""

    name: str
    base_offset: int
    change: FileChange
    bytes_removed: int
    sha256: str = ""  # of a created or rewritten file's new content


def swap_actions(kind: ActionKind, changes: list[SwappedFile], reason: str) -> list[LoadAction]:
    """One action per file a swap changed."""
    return [
        LoadAction(kind, c.name, c.base_offset, c.bytes_removed, reason, c.change, sha256=c.sha256) for c in changes
    ]


def _files(dir_path: Path, base_offset: int, suffix: str, fs: FileSystem) -> list[Path]:
    paths = [
        names.log_file(dir_path, base_offset, suffix),
        names.offset_index_file(dir_path, base_offset, suffix),
        names.time_index_file(dir_path, base_offset, suffix),
        names.txn_index_file(dir_path, base_offset, suffix),
    ]
    return [p for p in paths if fs.exists(p)]


def replace_segments(
    dir_path: Path, *, new_bases: list[int], old_bases: list[int], fs: FileSystem
) -> list[SwappedFile]:
    """Swap `.cleaned` segments in for the old ones; returns the net change to each file name."""
    new_names: dict[str, int] = {}
    for base in sorted(new_bases, reverse=True):
        for path in _files(dir_path, base, names.CLEANED_SUFFIX, fs):
            new_names[path.name[: -len(names.CLEANED_SUFFIX)]] = base
            fs.rename_atomic(path, path.with_name(path.name[: -len(names.CLEANED_SUFFIX)] + names.SWAP_SUFFIX))
    deleted: list[Path] = []
    old_names: dict[str, tuple[int, int]] = {}
    for base in sorted(old_bases):
        for path in _files(dir_path, base, "", fs):
            old_names[path.name] = (base, fs.size(path))
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
            old_names[snapshot.name] = (base, fs.size(snapshot))
            target = names.snapshot_file(dir_path, base, names.DELETED_SUFFIX)
            fs.rename_atomic(snapshot, target)
            deleted.append(target)
    for path in deleted:
        fs.delete(path)
    if deleted:
        fs.fsync_dir(dir_path)
    changes = [
        SwappedFile(
            name,
            base,
            FileChange.REWRITE if name in old_names else FileChange.CREATE,
            0,
            hashlib.sha256(fs.mmap(dir_path / name)).hexdigest(),
        )
        for name, base in sorted(new_names.items())
    ]
    changes += [
        SwappedFile(name, base, FileChange.DELETE, size)
        for name, (base, size) in sorted(old_names.items())
        if name not in new_names
    ]
    return changes
