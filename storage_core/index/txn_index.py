"""The aborted-transaction index `.txnindex` (Kafka `TransactionIndex.java`, `AbortedTxn.java`, §8).

```
AbortedTxn => Version => Int16          0 (readers look at its first byte only)
              ProducerId => Int64
              FirstOffset => Int64      first offset of the aborted transaction
              LastOffset => Int64       offset of its ABORT marker
              LastStableOffset => Int64 LSO when the abort was written
```

Big-endian, 34-byte entries, append-only, no preallocation; the file is created on the first append.
Entries strictly increase in last offset; a trailing partial entry is ignored. Kafka's reader takes
the version from the first byte alone, as a signed byte, and rejects a version above 0 (§8.1).
Not checksummed; recovery rebuilds it by replaying producer state.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

from storage_core.errors import CorruptIndexError
from storage_core.fs import FileHandle, FileSystem, default_fs
from storage_core.index.index_file import IndexFile
from storage_core.load_actions import FileChange

_ENTRY = struct.Struct(">hqqqq")  # Version, ProducerId, FirstOffset, LastOffset, LastStableOffset
CURRENT_VERSION = 0


class AbortedTxn(NamedTuple):
    """One aborted transaction; `version` is the stored Int16."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = 0

    def encode(self) -> bytes:
        return _ENTRY.pack(self.version, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset)


ENTRY_SIZE = _ENTRY.size


def decode_txn_index(data: bytes, *, path: Path | None = None) -> list[AbortedTxn]:
    """The entries of a `.txnindex` (a trailing partial entry is ignored).

    Raises:
        CorruptIndexError: an entry whose version, read as Kafka does, is above 0.
    """
    entries = []
    for position in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
        version, producer_id, first, last, lso = _ENTRY.unpack_from(data, position)
        kafka_version = version >> 8  # `AbortedTxn.version()`: the signed first byte of the Int16
        if kafka_version > CURRENT_VERSION:
            raise CorruptIndexError(
                f"unexpected aborted transaction version {kafka_version}", path=path, position=position
            )
        entries.append(AbortedTxn(producer_id, first, last, lso, version))
    return entries


class TransactionIndex(IndexFile):
    """A segment's aborted-transaction index."""

    def __init__(self, path: Path, base_offset: int, entries: list[AbortedTxn], fs: FileSystem) -> None:
        super().__init__(path, base_offset, fs)
        self._entries = entries

    @classmethod
    def open(cls, path: Path, base_offset: int, *, fs: FileSystem | None = None) -> TransactionIndex:
        """Read a segment's txn index; a missing file reads as empty and is created on the first append.

        Raises:
            CorruptIndexError: an entry has an unknown version.
        """
        fs = fs or default_fs()
        path = Path(path)
        entries = decode_txn_index(fs.read_bytes(path), path=path) if fs.exists(path) else []
        return cls(path, base_offset, entries, fs)

    @classmethod
    def build_in_memory(cls, path: Path, base_offset: int, *, fs: FileSystem) -> TransactionIndex:
        """An empty index built in memory; :meth:`persist` writes it in one atomic step."""
        index = cls(Path(path), base_offset, [], fs)
        index._in_memory = True
        return index

    def encoded(self) -> bytes:
        return b"".join(e.encode() for e in self._entries)

    def persist(self, *, sync_dir: bool = True) -> FileChange | None:
        """Write an in-memory index over its file (only if it has entries or its file already exists),
        as `IndexFile._write_whole` does; `sync_dir` as `FileSystem.write_atomic`.

        Later appends go to the file.

        Returns:
            How the file changed (None: unchanged, or no file needed).
        """
        change = None
        if self._entries or self._fs.exists(self.path):
            change = self._write_whole(self.encoded(), sync_dir=sync_dir)
        self._in_memory = False
        return change

    def all_entries(self) -> list[AbortedTxn]:
        return list(self._entries)

    def _writable(self) -> FileHandle:
        if self._handle is None:
            self._handle = self._fs.open(self.path, writable=True, create=True)
        return self._handle

    def append(self, txn: AbortedTxn) -> None:
        """Add an entry (creating the file).

        Raises:
            ValueError: `txn.last_offset` is not above the last entry's.
        """
        if self._entries and txn.last_offset <= self._entries[-1].last_offset:
            raise ValueError(
                f"last offset {txn.last_offset} is not above the last entry's {self._entries[-1].last_offset}"
            )
        if not self._in_memory:
            self._writable().write_at(len(self._entries) * ENTRY_SIZE, txn.encode())
        self._entries.append(txn)

    def truncate_to(self, offset: int) -> None:
        """Drop the first entry with last offset >= `offset` and everything after it."""
        keep = next((i for i, e in enumerate(self._entries) if e.last_offset >= offset), len(self._entries))
        if keep < len(self._entries):
            del self._entries[keep:]
            if not self._in_memory:
                self._writable().truncate(keep * ENTRY_SIZE)

    def sanity_check(self) -> None:
        """Raises CorruptIndexError if an entry's last offset is below the base offset."""
        for entry in self._entries:
            if entry.last_offset < self.base_offset:
                raise CorruptIndexError(
                    f"aborted transaction last offset {entry.last_offset} is below the base offset {self.base_offset}",
                    path=self.path,
                )

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """Aborted transactions overlapping [fetch_offset, upper_bound_offset); True if the search is complete."""
        found = []
        for entry in self._entries:
            if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound_offset:
                found.append(entry)
            if entry.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False
