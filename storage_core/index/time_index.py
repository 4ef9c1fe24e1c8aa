"""The time index `.timeindex` (Kafka `TimeIndex.java`, kafka-format.md §7).

```
TimeIndexEntry => Timestamp => Int64        largest batch max timestamp seen so far in the segment
                  RelativeOffset => Int32   last offset of the batch that carried it, minus base
```

Big-endian, 12-byte entries, no header. Timestamps strictly increase, offsets never decrease. An
entry is written only when its timestamp is above the last one, so data without timestamps leaves
the index empty. One slot is kept for the entry written when the segment rolls or closes
(`is_full` is `entries >= max_entries - 1`). Lookup returns the largest entry with timestamp <=
target, else (-1, base offset). Not checksummed; rebuilt from the `.log` after a crash.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from storage_core.errors import CorruptIndexError, IndexFullError, InvalidOffsetError, StorageError
from storage_core.index.sparse_index import SparseIndex


class TimestampOffset(NamedTuple):
    """A timestamp and an absolute offset."""

    timestamp: int
    offset: int


class TimeIndex(SparseIndex):
    """A segment's time index."""

    ENTRY = struct.Struct(">qi")  # Timestamp, RelativeOffset

    def _key(self, n: int) -> int:
        return self.raw_entry(n)[0]

    def entry(self, n: int) -> TimestampOffset:
        """Entry number `n`, with its absolute offset."""
        timestamp, relative = self.raw_entry(n)
        return TimestampOffset(timestamp, self.base_offset + relative)

    def entries(self) -> list[TimestampOffset]:
        return [self.entry(n) for n in range(self.entry_count)]

    @property
    def last_entry(self) -> TimestampOffset:
        """The last entry, or (-1, base offset) when empty."""
        return self.entry(self.entry_count - 1) if self.entry_count else TimestampOffset(-1, self.base_offset)

    def is_full(self) -> bool:
        return self.entry_count >= self.max_entries - 1

    def lookup(self, timestamp: int) -> TimestampOffset:
        """The largest entry with timestamp <= `timestamp`, or (-1, base offset)."""
        slot = self._largest_lower_bound(timestamp)
        return TimestampOffset(-1, self.base_offset) if slot < 0 else self.entry(slot)

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> None:
        """Append (timestamp, offset) if the timestamp is above the last entry's.

        Raises:
            IndexFullError: the index is full (unless `skip_full_check`).
            InvalidOffsetError: `offset` is below the last entry's offset.
            StorageError: `timestamp` is below the last entry's timestamp.
            OffsetOverflowError: `offset` is not within int32 above the base offset.
        """
        # Recovery offers an entry per indexed batch: the checks read the last entry directly.
        entries, entry = self._entries, self.ENTRY
        if not skip_full_check and entries >= self._length // entry.size - 1:  # is_full()
            raise IndexFullError(
                f"{self.path} is full ({entries} entries in segment.index.bytes {self.max_index_size}): "
                "the segment was written under a larger setting"
            )
        if entries:
            last_timestamp, last_relative = entry.unpack_from(self._buf, (entries - 1) * entry.size)
            if offset < (last_offset := self.base_offset + last_relative):
                raise InvalidOffsetError(f"attempt to append offset {offset} to {self.path} after offset {last_offset}")
            if timestamp < last_timestamp:
                raise StorageError(f"attempt to append timestamp {timestamp} to {self.path} after {last_timestamp}")
        else:
            last_timestamp = -1
        if timestamp > last_timestamp:
            self._append_entry(entry.pack(timestamp, self._relative(offset)))

    def _relative_offset(self, n: int) -> int:
        return self.raw_entry(n)[1]

    def truncate_to(self, offset: int) -> None:
        """Keep only the entries with offset < `offset` (offsets never decrease)."""
        target = offset - self.base_offset
        slot = self._largest_lower_bound(target, key=self._relative_offset)
        keep = 0 if slot < 0 else slot + (0 if self._relative_offset(slot) == target else 1)
        self._truncate_to_entries(keep)

    def sanity_check(self) -> None:
        """Kafka's `TimeIndex.sanityCheck`.

        Raises:
            CorruptIndexError: last timestamp below the first, last offset below the base offset, or
                a length that is not a multiple of 12.
        """
        if self.entry_count:
            first, last = self.entry(0), self.last_entry
            if last.timestamp < first.timestamp:
                raise CorruptIndexError(
                    f"last timestamp {last.timestamp} is below the first {first.timestamp}", path=self.path
                )
            if last.offset < self.base_offset:
                raise CorruptIndexError(
                    f"last offset {last.offset} is below the base offset {self.base_offset}", path=self.path
                )
        if self.length % self.ENTRY.size:
            raise CorruptIndexError(f"length {self.length} is not a multiple of {self.ENTRY.size}", path=self.path)


def encode_time_index(entries: list[TimestampOffset], *, base_offset: int) -> bytes:
    """The bytes of a trimmed time index holding `entries`."""
    return b"".join(TimeIndex.ENTRY.pack(e.timestamp, e.offset - base_offset) for e in entries)
