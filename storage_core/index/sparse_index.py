"""What the offset and time indexes share (Kafka's `AbstractIndex.java`, kafka-format.md §6.3).

An index file is an array of fixed-size big-endian entries, no header, keyed by a value that
increases with the entry number. A NEW file is preallocated (zero-filled) to
`floor(max_index_size / entry_size) * entry_size` bytes with 0 entries; an EXISTING file counts
`floor(length / entry_size)` entries, so an untrimmed preallocated file reads as full of zero
entries. Trimming resizes the file to its entries. Lookups return the last entry whose key is at or
below the target ("largest lower bound").

Crash story: index files are not checksummed. A crash can leave a zero-filled or half-written
index; recovery rebuilds it from the `.log`. :meth:`SparseIndex.has_zero_tail` detects the
zero-filled case so it can be rebuilt even after a clean shutdown.

Reads go through one read of the file at open (an mmap copy); every write goes through the fs layer
so crash injection sees it.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import ClassVar

from storage_core.errors import CorruptIndexError
from storage_core.fs import FileHandle, FileSystem, default_fs

DEFAULT_MAX_INDEX_SIZE = 10_485_760


class SparseIndex:
    """An index file of fixed-size entries; subclasses declare `ENTRY` and the key of an entry.

    Args:
        path: the index file.
        base_offset: the segment's base offset.
        data: the file's bytes at open.
        handle: a writable handle, or None when opened read-only.
        max_index_size: the preallocation size (`segment.index.bytes`).
        fs: the file system.
    """

    ENTRY: ClassVar[struct.Struct]

    def __init__(
        self,
        path: Path,
        base_offset: int,
        *,
        data: bytes,
        handle: FileHandle | None,
        max_index_size: int,
        fs: FileSystem,
    ) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self._fs = fs
        self._handle = handle
        self._in_memory = False
        self._length = len(data)
        self._entries = len(data) // self.ENTRY.size
        self._buf = bytearray(data[: self._entries * self.ENTRY.size])

    @classmethod
    def open(
        cls,
        path: Path,
        base_offset: int,
        *,
        max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
        writable: bool = False,
        fs: FileSystem | None = None,
    ):
        """Open an index; a missing file is created preallocated when `writable`, else reads as empty."""
        fs = fs or default_fs()
        path = Path(path)
        size = cls.ENTRY.size
        if not fs.exists(path):
            if not writable:
                return cls(path, base_offset, data=b"", handle=None, max_index_size=max_index_size, fs=fs)
            handle = fs.open(path, writable=True, create=True)
            handle.truncate(max_index_size // size * size)
            index = cls(path, base_offset, data=b"", handle=handle, max_index_size=max_index_size, fs=fs)
            index._length = max_index_size // size * size
            return index
        data = bytes(fs.mmap(path))
        handle = fs.open(path, writable=True) if writable else None
        return cls(path, base_offset, data=data, handle=handle, max_index_size=max_index_size, fs=fs)

    @classmethod
    def build_in_memory(cls, path: Path, base_offset: int, *, max_index_size: int, fs: FileSystem):
        """An empty, preallocated index built in memory and written by :meth:`persist` in one step.

        Recovery builds indexes this way, so a crash never leaves a half-written index behind: the
        file is either the old one or the complete new one.
        """
        index = cls(Path(path), base_offset, data=b"", handle=None, max_index_size=max_index_size, fs=fs)
        index._in_memory = True
        index._length = max_index_size // cls.ENTRY.size * cls.ENTRY.size
        return index

    @property
    def in_memory(self) -> bool:
        return self._in_memory

    def encoded(self) -> bytes:
        """The bytes of this index trimmed to its entries."""
        return bytes(self._buf)

    def persist(self) -> None:
        """Write an in-memory index, trimmed, atomically over its file (fsynced, directory fsynced)."""
        self._fs.write_atomic(self.path, self.encoded())
        self._length = len(self._buf)

    # -- shape -----------------------------------------------------------------------------------
    @property
    def entry_count(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._length // self.ENTRY.size

    @property
    def length(self) -> int:
        """The file's length in bytes."""
        return self._length

    def raw_entry(self, n: int) -> tuple[int, ...]:
        return self.ENTRY.unpack_from(self._buf, n * self.ENTRY.size)

    def has_zero_tail(self) -> bool:
        """True if the last entry is all zero bytes: a preallocated region that was never written."""
        if self._entries == 0:
            return False
        size = self.ENTRY.size
        return not any(self._buf[(self._entries - 1) * size :])

    def _key(self, n: int) -> int:
        raise NotImplementedError

    def sanity_check(self) -> None:
        """Kafka's sanity check of this index type (raises CorruptIndexError)."""
        raise NotImplementedError

    def find_problem(self) -> str | None:
        """Why this index cannot be trusted as it is: Kafka's sanity check fails, or its tail is a
        zero-filled preallocated region a crash left behind. None when it looks sound."""
        try:
            self.sanity_check()
        except CorruptIndexError as exc:
            return f"corrupt: {exc}"
        if self.has_zero_tail():
            return "zero-filled tail (preallocated, never written)"
        return None

    def _largest_lower_bound(self, target: int) -> int:
        """Index of the last entry whose key is <= target, or -1."""
        low, high = 0, self._entries - 1
        if high < 0 or self._key(0) > target:
            return -1
        while low < high:
            middle = (low + high + 1) // 2
            if self._key(middle) <= target:
                low = middle
            else:
                high = middle - 1
        return low

    # -- writes ----------------------------------------------------------------------------------
    def _writable(self) -> FileHandle:
        if self._handle is None:
            raise ValueError(f"{self.path} was opened read-only")
        return self._handle

    def _append_entry(self, entry: bytes) -> None:
        position = self._entries * self.ENTRY.size
        if self._entries >= self.max_entries:
            self._length = position + len(entry)
        if not self._in_memory:
            self._writable().write_at(position, entry)
        self._buf[position:] = entry
        self._entries += 1

    def _truncate_to_entries(self, entries: int) -> None:
        self._entries = min(entries, self._entries)
        del self._buf[self._entries * self.ENTRY.size :]

    def resize(self, new_size: int) -> None:
        """Set the file length to `new_size` rounded down to whole entries (zero-extends)."""
        rounded = new_size // self.ENTRY.size * self.ENTRY.size
        if rounded != self._length:
            if not self._in_memory:
                self._writable().truncate(rounded)
            self._length = rounded
        if self._entries > rounded // self.ENTRY.size:
            self._truncate_to_entries(rounded // self.ENTRY.size)

    def trim_to_valid_size(self) -> None:
        self.resize(self._entries * self.ENTRY.size)

    def flush(self) -> None:
        if self._handle is not None:
            self._handle.fsync()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
