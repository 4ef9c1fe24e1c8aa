"""A partition directory's file names as a loader sees them, with dry-run support.

The loader decides from names (which `.swap`, `.cleaned`, `.deleted`, orphan index files exist) and
changes them by deleting and renaming. In a real run each change goes to the file system at once.
In a dry run nothing is touched: the view only records the change, so later passes see the
directory as it would be (a completed swap's files under their final names, read from their
`.swap` paths) and the result lists exactly what a real run would do.
"""

from __future__ import annotations

from pathlib import Path

from storage_core.fs import FileSystem


class DirView:
    """The regular files of one directory, by name, with recorded or applied changes.

    Args:
        dir_path: the directory.
        dry_run: record changes without applying them.
        fs: the file system.
    """

    def __init__(self, dir_path: Path, *, dry_run: bool, fs: FileSystem) -> None:
        self.dir = dir_path
        self.dry_run = dry_run
        self._fs = fs
        self._physical: dict[str, str] = {
            name: name for name in fs.list_dir(dir_path) if not fs.is_dir(dir_path / name)
        }

    def names(self) -> list[str]:
        """The file names present, sorted (which is offset order for segment files)."""
        return sorted(self._physical)

    def exists(self, name: str) -> bool:
        return name in self._physical

    def path(self, name: str) -> Path:
        """Where the content of `name` is read from (its `.swap` path while a dry run renames it)."""
        return self.dir / self._physical[name]

    def size(self, name: str) -> int:
        return self._fs.size(self.path(name))

    def delete(self, name: str) -> int:
        """Delete a file; returns its size."""
        size = self.size(name)
        if not self.dry_run:
            self._fs.delete(self.path(name))
        del self._physical[name]
        return size

    def rename(self, source: str, target: str) -> None:
        """Rename `source` to `target`, replacing it (atomic, directory fsynced)."""
        if not self.dry_run:
            self._fs.rename_atomic(self.path(source), self.dir / target)
            self._physical[target] = target
        else:
            self._physical[target] = self._physical[source]
        del self._physical[source]

    def add(self, name: str) -> None:
        """Record a file the loader created."""
        self._physical[name] = name
