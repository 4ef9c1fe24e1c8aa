"""What the offset and time indexes share (Kafka's `AbstractIndex.java`, kafka-format.md §6.3).

An index file is an array of fixed-size big-endian entries, no header, keyed by a value that
increases with the entry number; subclasses declare the entry layout (`ENTRY`) and its key.

* A NEW file is preallocated (zero-filled) to `floor(max_index_size / entry_size) * entry_size`
  bytes and holds 0 entries; `max_index_size` below one entry is an error.
* An EXISTING file counts `floor(length / entry_size)` entries, like Kafka: an untrimmed,
  preallocated file reads as full of zero entries.
* `max_entries` is `length / entry_size`; resizing rounds down to whole entries; trimming resizes
  the file to its entries.
* Lookups return the last entry whose key is at or below the target ("largest lower bound").

Crash story: index files are not checksummed. A crash can leave a zero-filled or half-written
index, which recovery rebuilds from the `.log`. Kafka trusts a zero-filled tail after a clean
shutdown; :meth:`SparseIndex.has_zero_tail` detects it so it can be rebuilt all the same.

Reads come from one mapping of the file at open; every write goes through the fs layer (a
positional write, a truncate, an fsync, or one atomic replacement for an index built in memory),
so crash injection sees each mutation.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, Self

from storage_core.errors import CorruptIndexError, OffsetOverflowError
from storage_core.fs import FileHandle, FileSystem, default_fs
from storage_core.index.index_file import IndexFile
from storage_core.load_actions import FileChange

DEFAULT_MAX_INDEX_SIZE = 10_485_760
_INT32_MAX = 2**31 - 1  # the largest relative offset an entry can store


class SparseIndex(IndexFile):
    """An index file of fixed-size entries. Use :meth:`open` or :meth:`build_in_memory`.

    Args:
        path: the index file.
        base_offset: the segment's base offset.
        data: the file's bytes at open.
        writable: whether writes are allowed.
        max_index_size: the preallocation size (`segment.index.bytes`).
        fs: the file system.
    """

    ENTRY: ClassVar[struct.Struct]

    def __init__(
        self,
        path: Path,
        base_offset: int,
        *,
        data: bytes | bytearray | memoryview,
        writable: bool,
        max_index_size: int,
        fs: FileSystem,
    ) -> None:
        super().__init__(path, base_offset, fs)
        self.max_index_size = max_index_size
        self._writable = writable
        self._length = len(data)
        self._entries = len(data) // self.ENTRY.size
        self._buf = bytearray(memoryview(data)[: self._entries * self.ENTRY.size])

    @classmethod
    def _preallocated_length(cls, max_index_size: int) -> int:
        if max_index_size < cls.ENTRY.size:
            raise ValueError(f"invalid max index size {max_index_size}: below one {cls.ENTRY.size}-byte entry")
        return max_index_size // cls.ENTRY.size * cls.ENTRY.size

    @classmethod
    def open(
        cls,
        path: Path,
        base_offset: int,
        *,
        max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
        writable: bool = False,
        fs: FileSystem | None = None,
    ) -> Self:
        """Open an index file.

        A missing file is created preallocated when `writable`, and reads as empty otherwise.

        Raises:
            ValueError: a new file's `max_index_size` is below one entry.
        """
        fs = fs or default_fs()
        path = Path(path)
        if fs.exists(path):
            return cls(path, base_offset, data=fs.mmap(path), writable=writable, max_index_size=max_index_size, fs=fs)
        index = cls(path, base_offset, data=b"", writable=writable, max_index_size=max_index_size, fs=fs)
        if writable:
            length = cls._preallocated_length(max_index_size)
            index._handle = fs.open(path, writable=True, create=True)
            index._handle.truncate(length)
            index._length = length
        return index

    @classmethod
    def build_in_memory(cls, path: Path, base_offset: int, *, max_index_size: int, fs: FileSystem) -> Self:
        """An empty, preallocated index built in memory and written by :meth:`persist` in one step.

        Recovery builds indexes this way, so a crash never leaves a half-written index behind: the
        file is either the old one or the complete new one.
        """
        index = cls(Path(path), base_offset, data=b"", writable=True, max_index_size=max_index_size, fs=fs)
        index._in_memory = True
        index._length = cls._preallocated_length(max_index_size)
        return index

    def encoded(self) -> bytes:
        """The bytes of this index trimmed to its entries."""
        return bytes(self._buf)

    def persist(self, *, sync_dir: bool = True) -> FileChange | None:
        """Write an in-memory index, trimmed, over its file: atomically, or only an fsync when the
        file already holds these bytes (`IndexFile._write_whole`; `sync_dir` as `FileSystem.write_atomic`).

        Later writes go to the file.

        Returns:
            How the file changed (None: it already held these bytes).
        """
        change = self._write_whole(self.encoded(), sync_dir=sync_dir)
        self._length = len(self._buf)
        self._in_memory = False
        return change

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

    def can_append_offset(self, offset: int) -> bool:
        """Whether `offset` fits an entry: within int32 above the base offset (`canAppendOffset`)."""
        return 0 <= offset - self.base_offset <= _INT32_MAX

    def _relative(self, offset: int) -> int:
        """`offset` relative to the base offset (raises OffsetOverflowError when it does not fit)."""
        if not self.can_append_offset(offset):
            raise OffsetOverflowError(
                "offset cannot be stored relative to the segment's base offset", segment=self.path, offset=offset
            )
        return offset - self.base_offset

    def raw_entry(self, n: int) -> tuple[int, ...]:
        """The fields of entry `n` as stored (offsets relative)."""
        return self.ENTRY.unpack_from(self._buf, n * self.ENTRY.size)

    def has_zero_tail(self) -> bool:
        """True if the entries end in all-zero bytes: a preallocated region never written.

        That is the shape a crash leaves (a full-size, zero-filled file, or zeros after the last
        written entry). No sound index ends in a zero entry: an offset-index entry never points at
        position 0 (the first batch is never indexed), and a time index would need timestamp 0 at
        the base offset.
        """
        if self._entries == 0:
            return False
        return not any(self._buf[(self._entries - 1) * self.ENTRY.size :])

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

    def _largest_lower_bound(self, target: int, key: Callable[[int], int] | None = None) -> int:
        """Number of the last entry whose key (`_key` unless given) is <= target, or -1.

        Kafka searches a "warm" tail section first to stay in the page cache; over sorted keys
        the answer is the same as this plain binary search.
        """
        key = key or self._key
        low, high = 0, self._entries - 1
        if high < 0 or key(0) > target:
            return -1
        while low < high:
            middle = (low + high + 1) // 2
            if key(middle) <= target:
                low = middle
            else:
                high = middle - 1
        return low

    # -- writes ----------------------------------------------------------------------------------
    def _file(self) -> FileHandle:
        if not self._writable:
            raise ValueError(f"{self.path} was opened read-only")
        if self._handle is None:
            self._handle = self._fs.open(self.path, writable=True)
        return self._handle

    def _append_entry(self, entry: bytes) -> None:
        position = len(self._buf)  # == entries * entry size
        if not self._in_memory:
            self._file().write_at(position, entry)
        self._buf += entry
        self._entries += 1
        if position + len(entry) > self._length:  # a write past the end extends the file
            self._length = position + len(entry)

    def append_encoded(self, entries: bytes | bytearray, count: int) -> None:
        """Append `count` entries already encoded and checked (recovery's native walk writes them
        with this index's own checks: increasing, within int32 of the base, not past `max_entries`)."""
        if not count:
            return
        position = len(self._buf)
        if not self._in_memory:
            self._file().write_at(position, entries)
        self._buf += entries
        self._entries += count
        self._length = max(self._length, len(self._buf))

    def _truncate_to_entries(self, entries: int) -> None:
        self._entries = min(entries, self._entries)
        del self._buf[self._entries * self.ENTRY.size :]

    def resize(self, new_size: int) -> None:
        """Set the file length to `new_size` rounded down to whole entries (zero-extends).

        Entries beyond the new length are dropped.
        """
        rounded = new_size // self.ENTRY.size * self.ENTRY.size
        if rounded != self._length:
            if not self._in_memory:
                self._file().truncate(rounded)
            self._length = rounded
        self._truncate_to_entries(rounded // self.ENTRY.size)

    def trim_to_valid_size(self) -> None:
        """Resize the file to its entries (done at roll, close and after recovery)."""
        self.resize(self._entries * self.ENTRY.size)
