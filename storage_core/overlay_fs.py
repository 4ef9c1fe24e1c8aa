"""A dry run's file system: every change is kept in memory over the real, untouched files.

A dry run must report exactly what a real run would do. Rather than a second, predicting copy of
every procedure, a dry run runs the *same* code on an :class:`OverlayFileSystem`: reads see the
real files as the run has changed them so far, and writes, truncations, renames and deletions only
change the overlay. The real file system is only ever read. So a dry run's actions are a real run's
actions by construction (the jobs' tests check it file by file).

Representation: a path maps to a node or to a whiteout (deleted). A node's content is either a
prefix of a real file (a renamed or truncated file costs no copy) or bytes in memory (written or
created files, and a real file the run writes into). Memory is therefore what a real run would
write: small for recovery and retention (indexes, snapshots, checkpoints), the cleaned segments for
compaction. Nothing is ever fsynced; locks are the real ones.

A dry run of several steps (`maintain`) keeps each overlay between steps with :meth:`save` and
:meth:`restore` (a pickle of the changes, in a scratch directory outside every log dir), so a later
step sees what the earlier ones would have done.
"""

from __future__ import annotations

import pickle
import time
from dataclasses import dataclass
from pathlib import Path

from storage_core.fs import FileIdentity, FileSystem

Buffer = bytes | bytearray | memoryview  # or the base's read-only mapping of an untouched file


@dataclass
class _Node:
    """A file as the dry run sees it: `data` in memory, else the first `length` bytes of `source`."""

    data: bytearray | None
    source: Path | None
    length: int
    mtime_ms: int | None


class _OverlayHandle:
    """A :class:`~storage_core.fs.FileHandle` over an overlay node."""

    def __init__(self, fs: OverlayFileSystem, path: Path) -> None:
        self._fs = fs
        self._path = path

    @property
    def path(self) -> Path:
        return self._path

    def read_at(self, position: int, size: int) -> bytes:
        return bytes(self._fs._view(self._path)[position : position + size])

    def write_at(self, position: int, data: bytes | bytearray | memoryview) -> None:
        content = self._fs._materialize(self._path)
        end = position + len(data)
        if end > len(content):
            content.extend(bytes(end - len(content)))
        content[position:end] = data

    def append(self, data: bytes | bytearray | memoryview) -> int:
        position = self.size()
        self.write_at(position, data)
        return position

    def truncate(self, size: int) -> None:
        self._fs.truncate(self._path, size)

    def fsync(self) -> None:
        pass

    def size(self) -> int:
        return self._fs.size(self._path)

    def identity(self) -> FileIdentity:
        identity = self._fs.identity(self._path)
        if identity is None:
            raise FileNotFoundError(2, "No such file or directory (deleted in this dry run)", str(self._path))
        return identity

    def drop_cache(self, position: int, size: int) -> None:
        pass  # nothing of the base file is cached by reading it here beyond what mmap maps

    def close(self) -> None:
        pass

    def __enter__(self) -> _OverlayHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class OverlayFileSystem:
    """A :class:`~storage_core.fs.FileSystem` whose changes stay in memory over `base` (read only).

    Args:
        base: the real file system, only read.
    """

    def __init__(self, base: FileSystem) -> None:
        self._base = base
        self._nodes: dict[Path, _Node | None] = {}  # None: deleted
        self._dirs: set[Path] = set()

    def save(self, path: Path) -> None:
        """Keep this overlay's changes in `path` (written through the base file system)."""
        self._base.make_dirs(Path(path).parent)
        self._base.write_atomic(Path(path), pickle.dumps((self._nodes, self._dirs)))

    @classmethod
    def restore(cls, path: Path, base: FileSystem) -> OverlayFileSystem:
        """An overlay with the changes :meth:`save` kept in `path`, over `base`."""
        overlay = cls(base)
        overlay._nodes, overlay._dirs = pickle.loads(base.read_bytes(Path(path)))
        return overlay

    # -- nodes ------------------------------------------------------------------------------------

    def _node(self, path: Path) -> _Node:
        path = Path(path)
        if path in self._nodes:
            node = self._nodes[path]
            if node is None:
                raise FileNotFoundError(2, "No such file or directory (deleted in this dry run)", str(path))
            return node
        node = _Node(None, path, self._base.size(path), None)
        self._nodes[path] = node
        return node

    def _view(self, path: Path) -> Buffer:
        node = self._node(path)
        if node.data is not None:
            return node.data
        assert node.source is not None
        mapped = self._base.mmap(node.source)
        return mapped if len(mapped) == node.length else memoryview(mapped)[: node.length]

    def _materialize(self, path: Path) -> bytearray:
        node = self._node(path)
        if node.data is None:
            node.data = bytearray(self._view(path))
            node.source = None
        node.mtime_ms = int(time.time() * 1000)
        return node.data

    # -- FileSystem -------------------------------------------------------------------------------

    def open(self, path: Path, *, writable: bool = False, create: bool = False) -> _OverlayHandle:
        path = Path(path)
        if create and not self.exists(path):
            self._nodes[path] = _Node(bytearray(), None, 0, int(time.time() * 1000))
        self._node(path)  # a missing file raises, as opening it would
        return _OverlayHandle(self, path)

    def read_bytes(self, path: Path) -> bytes:
        return bytes(self._view(path))

    def mmap(self, path: Path) -> Buffer:
        view = self._view(path)
        return bytes(view) if isinstance(view, bytearray | memoryview) else view

    def write_file(self, path: Path, data: bytes, *, fsync: bool = True) -> None:
        self._nodes[Path(path)] = _Node(bytearray(data), None, len(data), int(time.time() * 1000))

    def write_atomic(self, path: Path, data: bytes, *, sync_dir: bool = True) -> None:
        self.write_file(path, data)

    def truncate(self, path: Path, size: int) -> None:
        node = self._node(path)
        if node.data is None and size <= node.length:
            node.length = size
        else:
            content = self._materialize(path)
            if size < len(content):
                del content[size:]
            else:
                content.extend(bytes(size - len(content)))
        node.mtime_ms = int(time.time() * 1000)

    def fsync(self, path: Path) -> None:
        pass

    def fsync_dir(self, path: Path) -> None:
        pass

    def rename_atomic(self, source: Path, target: Path, *, sync_dir: bool = True) -> None:
        node = self._node(source)
        self._nodes[Path(target)] = node
        self._nodes[Path(source)] = None

    def delete(self, path: Path) -> None:
        if self.exists(path):
            self._nodes[Path(path)] = None

    def remove_dir(self, path: Path) -> None:
        """A whiteout: the directory is gone from this overlay's listings."""
        if self.is_dir(path):
            self._dirs.discard(Path(path))
            self._nodes[Path(path)] = None

    def make_dirs(self, path: Path) -> None:
        path = Path(path)
        while not self.is_dir(path):
            self._dirs.add(path)
            path = path.parent

    def list_dir(self, path: Path) -> list[str]:
        path = Path(path)
        names = set(self._base.list_dir(path)) if self._base.is_dir(path) else set()
        for node_path, node in self._nodes.items():
            if node_path.parent == path:
                if node is None:
                    names.discard(node_path.name)
                else:
                    names.add(node_path.name)
        names.update(d.name for d in self._dirs if d.parent == path)
        return sorted(names)

    def exists(self, path: Path) -> bool:
        path = Path(path)
        if path in self._nodes:
            return self._nodes[path] is not None
        return path in self._dirs or self._base.exists(path)

    def is_dir(self, path: Path) -> bool:
        path = Path(path)
        if path in self._nodes:
            return False
        return path in self._dirs or self._base.is_dir(path)

    def size(self, path: Path) -> int:
        node = self._node(path)
        return len(node.data) if node.data is not None else node.length

    def mtime_ms(self, path: Path) -> int:
        node = self._node(path)
        if node.mtime_ms is not None:
            return node.mtime_ms
        assert node.source is not None
        return self._base.mtime_ms(node.source)

    def set_mtime_ms(self, path: Path, mtime_ms: int) -> None:
        self._node(path).mtime_ms = mtime_ms

    def identity(self, path: Path) -> FileIdentity | None:
        """The base file's identity while this dry run has not rewritten it; a rewritten or new file is
        one of this overlay only (device -1), deleted is None."""
        path = Path(path)
        if path not in self._nodes:
            return self._base.identity(path)
        node = self._nodes[path]
        if node is None:
            return None
        if node.data is None and node.source is not None:
            return self._base.identity(node.source)
        return FileIdentity(-1, id(node))

    def lock_holder(self, path: Path) -> int | None:
        return self._base.lock_holder(path)

    def try_lock(self, path: Path) -> int | None:
        return self._base.try_lock(path)

    def unlock(self, fd: int) -> None:
        self._base.unlock(fd)
