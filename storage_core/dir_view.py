"""A partition directory's file names as a loader sees them, kept current as it changes them.

The loader decides from names (which `.swap`, `.cleaned`, `.deleted`, orphan index files exist) and
changes them by deleting and renaming; listing the directory once and tracking those changes saves a
listing per decision. A dry run gives the loader an overlay file system
(:mod:`storage_core.overlay_fs`), so the view works the same in both.
"""

from __future__ import annotations

from pathlib import Path

from storage_core.fs import FileSystem


class DirView:
    """The regular files of one directory, by name.

    Args:
        dir_path: the directory.
        fs: the file system.
    """

    def __init__(self, dir_path: Path, *, fs: FileSystem) -> None:
        self.dir = dir_path
        self._fs = fs
        self._names = {name for name in fs.list_dir(dir_path) if not fs.is_dir(dir_path / name)}

    def names(self) -> list[str]:
        """The file names present, sorted (which is offset order for segment files)."""
        return sorted(self._names)

    def exists(self, name: str) -> bool:
        return name in self._names

    def path(self, name: str) -> Path:
        return self.dir / name

    def size(self, name: str) -> int:
        return self._fs.size(self.path(name))

    def delete(self, name: str) -> int:
        """Delete a file; returns its size."""
        size = self.size(name)
        self._fs.delete(self.path(name))
        self._names.discard(name)
        return size

    def rename(self, source: str, target: str) -> None:
        """Rename `source` to `target`, replacing it (atomic, directory fsynced)."""
        self._fs.rename_atomic(self.path(source), self.dir / target)
        self._names.discard(source)
        self._names.add(target)

    def add(self, name: str) -> None:
        """Record a file the loader created."""
        self._names.add(name)
