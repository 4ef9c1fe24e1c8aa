"""What the three index files of a segment share: a path, a write handle opened on demand, and the
in-memory build mode.

An index is either backed by its file (writes go to the file through the fs layer) or built in
memory by recovery and written once by `persist` (atomic replace), so a crash never leaves a
half-built index: the file is the old one or the complete new one.
"""

from __future__ import annotations

from pathlib import Path

from storage_core.fs import FileHandle, FileSystem
from storage_core.load_actions import FileChange


class IndexFile:
    """Base of :class:`~storage_core.index.sparse_index.SparseIndex` and
    :class:`~storage_core.index.txn_index.TransactionIndex`.

    Args:
        path: the index file.
        base_offset: the segment's base offset.
        fs: the file system.
    """

    def __init__(self, path: Path, base_offset: int, fs: FileSystem) -> None:
        self.path = path
        self.base_offset = base_offset
        self._fs = fs
        self._handle: FileHandle | None = None
        self._in_memory = False

    @property
    def in_memory(self) -> bool:
        """True until an index built in memory is persisted."""
        return self._in_memory

    def _write_whole(self, content: bytes, *, sync_dir: bool) -> FileChange | None:
        """Make the file hold `content`, durably: replaced atomically (`FileSystem.write_atomic`), or,
        when it already holds exactly these bytes (a segment recovered again), only fsynced: no
        rewrite and no rename, and bytes a crashed writer left in the page cache still reach the disk.

        Returns:
            How the file changed: created, rewritten, or None when it already held `content`.
        """
        fs = self._fs
        existed = fs.exists(self.path)
        if existed and fs.size(self.path) == len(content) and fs.read_bytes(self.path) == content:
            fs.fsync(self.path)
            return None
        fs.write_atomic(self.path, content, sync_dir=sync_dir)
        return FileChange.REWRITE if existed else FileChange.CREATE

    def encoded(self) -> bytes:
        """The bytes of this index as :meth:`persist` writes them."""
        raise NotImplementedError

    def flush(self) -> None:
        """fsync the file, if it has been written through a handle."""
        if self._handle is not None:
            self._handle.fsync()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def delete(self) -> None:
        """Close the index and delete its file if it exists."""
        self.close()
        self._fs.delete(self.path)
