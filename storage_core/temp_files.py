"""Passes 1-4 of Kafka's log load: leftover temp files and interrupted swaps.

Mirrors `LogLoader.removeTempFilesAndCollectSwapFiles` and the swap passes of `LogLoader.load`
(kafka-maintenance.md §2.2-§2.3). The swap protocol (`LocalLog.replaceSegments`) writes new
segments as `.cleaned`, renames them to `.swap` (descending base offset), renames the replaced
segments to `.deleted`, renames the `.swap` files to their final names and fsyncs the directory.
Whatever point a crash interrupted, these passes leave either the old segments or the new ones:

1. delete `*.deleted` (not `.checkpoint.deleted`); remember `*.cleaned` and `*.swap`;
   delete every `.swap` at or above the smallest `.cleaned` offset (an unfinished clean or split),
   then every `.cleaned` file;
2. range = [smallest `.log.swap` base offset, largest `.log.swap` next offset);
3. delete every non-swap file with a numeric name inside the range (old segments, their indexes
   and snapshots);
4. rename the remaining `.swap` files to their final names.

The `.log.swap` and `.log.cleaned` files deleted in pass 1 (an unfinished clean or split) hold copies
of records the old segments still hold; they are quarantined all the same
(:mod:`storage_core.quarantine`), as every record byte recovery removes. `.deleted` files and the
files a completed swap replaces are not: the records they held live on in the swapped-in segments,
which is what the interrupted operation set out to do.
"""

from __future__ import annotations

from pathlib import Path

from storage_core import names
from storage_core.dir_view import DirView
from storage_core.errors import InvalidNameError
from storage_core.fs import FileSystem
from storage_core.load_actions import ActionKind, FileChange, LoadAction
from storage_core.quarantine import QuarantineArea, quarantine
from storage_core.records.file_records import scan_valid_prefix


def complete_swaps_and_remove_temp_files(
    dir_path: Path, view: DirView, *, area: QuarantineArea, fs: FileSystem
) -> list[LoadAction]:
    """Run passes 1-4 over `view`; returns the actions taken, one per file changed or quarantined."""
    actions: list[LoadAction] = []
    cleaned: list[str] = []
    swaps: list[str] = []

    def delete(kind: ActionKind, name: str, offset: int, reason: str) -> None:
        if names.LOG_SUFFIX + "." in name:  # `.log.swap`, `.log.cleaned`: record data
            size = view.size(name)
            actions.extend(quarantine(area, dir_path, name, 0, size, reason=reason, base_offset=offset, fs=fs))
        size = view.delete(name)
        actions.append(LoadAction(kind, name, offset, size, reason, FileChange.DELETE))

    # Pass 1.
    for name in view.names():
        if name.endswith(names.DELETED_SUFFIX) and not name.endswith(".checkpoint" + names.DELETED_SUFFIX):
            size = view.delete(name)
            actions.append(
                LoadAction(
                    ActionKind.DELETE_DELETED_FILE, name, _offset_or(name), size, "leftover .deleted", FileChange.DELETE
                )
            )
        elif name.endswith(names.CLEANED_SUFFIX):
            cleaned.append(name)
        elif name.endswith(names.SWAP_SUFFIX):
            swaps.append(name)
    min_cleaned = min((_offset_or(n) for n in cleaned), default=None)
    valid_swaps = []
    for name in swaps:
        if min_cleaned is not None and _offset_or(name) >= min_cleaned:
            delete(
                ActionKind.DELETE_INVALID_SWAP,
                name,
                _offset_or(name),
                f"at or above the smallest .cleaned offset {min_cleaned}: unfinished clean or split",
            )
        else:
            valid_swaps.append(name)
    for name in cleaned:
        delete(ActionKind.DELETE_CLEANED_FILE, name, _offset_or(name), "unfinished clean")
    # Pass 2.
    log_swaps = [n for n in valid_swaps if n.endswith(names.LOG_SUFFIX + names.SWAP_SUFFIX)]
    if log_swaps:
        min_swap = min(_offset_or(n) for n in log_swaps)
        max_swap = max(_next_offset(view, n, fs=fs) for n in log_swaps)
        # Pass 3.
        for name in view.names():
            if name.endswith(names.SWAP_SUFFIX):
                continue
            offset = _offset(name)
            if offset is not None and min_swap <= offset < max_swap:
                size = view.delete(name)
                actions.append(
                    LoadAction(
                        ActionKind.DELETE_REPLACED_FILE,
                        name,
                        offset,
                        size,
                        f"replaced by the swapped-in segments [{min_swap}, {max_swap})",
                        FileChange.DELETE,
                    )
                )
    # Pass 4.
    for name in valid_swaps:
        final = name[: -len(names.SWAP_SUFFIX)]
        view.rename(name, final)
        actions.append(
            LoadAction(
                ActionKind.COMPLETE_SWAP, name, _offset_or(name), 0, f"renamed to {final}", FileChange.RENAME, final
            )
        )
    return actions


def _next_offset(view: DirView, name: str, *, fs: FileSystem) -> int:
    """The next offset after the last whole batch of a `.log.swap` file (its base offset if empty)."""
    scan = scan_valid_prefix(fs.mmap(view.path(name)), verify_crc=False)
    return _offset_or(name) if scan.last_offset is None else scan.last_offset + 1


def _offset(name: str) -> int | None:
    """The offset a file name starts with, or None for names without one (partition.metadata, ...)."""
    try:
        return names.offset_from_file_name(name)
    except InvalidNameError:
        return None


def _offset_or(name: str) -> int:
    offset = _offset(name)
    return -1 if offset is None else offset
