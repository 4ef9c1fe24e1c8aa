"""The offset index `.index` (Kafka `OffsetIndex.java`, kafka-format.md §6).

```
OffsetIndexEntry => RelativeOffset => Int32   offset - segment base offset
                    Position => Int32         byte position in the .log of the start of a batch
```

Big-endian, 8-byte entries, no header. An entry (O, P) means: the batch starting at P has last
offset O (recovery), or the chunk appended at P ends at offset O (append path). Entries strictly
increase in offset and position; relative offsets fit an int32. Sparse: one entry per
`index.interval.bytes` of log. Lookup returns the largest entry with offset <= target, else
(base offset, 0). Not checksummed; "in the event of a crash it is rebuilt" from the `.log`.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from storage_core.errors import CorruptIndexError, IndexFullError, InvalidOffsetError
from storage_core.index.sparse_index import SparseIndex


class OffsetPosition(NamedTuple):
    """An absolute offset and the byte position of its batch in the `.log`."""

    offset: int
    position: int


class OffsetIndex(SparseIndex):
    """A segment's offset index."""

    ENTRY = struct.Struct(">ii")  # RelativeOffset, Position

    def _key(self, n: int) -> int:
        return self.raw_entry(n)[0]

    def entry(self, n: int) -> OffsetPosition:
        """Entry number `n`, with its absolute offset."""
        relative, position = self.raw_entry(n)
        return OffsetPosition(self.base_offset + relative, position)

    def entries(self) -> list[OffsetPosition]:
        return [self.entry(n) for n in range(self.entry_count)]

    @property
    def last_offset(self) -> int:
        """Offset of the last entry, or the base offset when empty."""
        return self.entry(self.entry_count - 1).offset if self.entry_count else self.base_offset

    def is_full(self) -> bool:
        return self.entry_count >= self.max_entries

    def lookup(self, target: int) -> OffsetPosition:
        """The largest entry with offset <= `target`, or (base offset, 0)."""
        slot = self._largest_lower_bound(target - self.base_offset)
        return OffsetPosition(self.base_offset, 0) if slot < 0 else self.entry(slot)

    def append(self, offset: int, position: int) -> None:
        """Add an entry; the checks run in Kafka's order.

        Raises:
            IndexFullError: the index is full (the segment should have rolled).
            InvalidOffsetError: `offset` is not above the last entry's.
            OffsetOverflowError: `offset` is not within int32 above the base offset.
        """
        # Recovery appends an entry per indexed batch: the checks read the last entry directly.
        entries, entry = self._entries, self.ENTRY
        if entries >= self._length // entry.size:
            raise IndexFullError(
                f"attempt to append to a full index {self.path} ({entries} entries in segment.index.bytes "
                f"{self.max_index_size}): the segment was written under a larger setting"
            )
        relative = offset - self.base_offset
        if entries and relative <= (last := entry.unpack_from(self._buf, (entries - 1) * entry.size)[0]):
            raise InvalidOffsetError(
                f"attempt to append offset {offset} to {self.path} whose last offset is {self.base_offset + last}"
            )
        self._append_entry(entry.pack(self._relative(offset), position))

    def truncate_to(self, offset: int) -> None:
        """Keep only the entries with offset < `offset`."""
        slot = self._largest_lower_bound(offset - self.base_offset)
        keep = 0 if slot < 0 else slot + (0 if self._key(slot) == offset - self.base_offset else 1)
        self._truncate_to_entries(keep)

    def sanity_check(self) -> None:
        """Kafka's `OffsetIndex.sanityCheck` (kafka-format.md §6.5).

        Raises:
            CorruptIndexError: the last offset is below the base offset, or the length is not a
                multiple of 8.
        """
        if self.entry_count and self._key(self.entry_count - 1) < 0:
            raise CorruptIndexError(
                f"last offset {self.last_offset} is below the base offset {self.base_offset}", path=self.path
            )
        if self.length % self.ENTRY.size:
            raise CorruptIndexError(f"length {self.length} is not a multiple of {self.ENTRY.size}", path=self.path)


def encode_offset_index(entries: list[OffsetPosition], *, base_offset: int) -> bytes:
    """The bytes of a trimmed offset index holding `entries`."""
    return b"".join(OffsetIndex.ENTRY.pack(e.offset - base_offset, e.position) for e in entries)
