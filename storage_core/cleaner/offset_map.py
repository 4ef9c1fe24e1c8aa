"""Kafka's `SkimpyOffsetMap`: key -> latest offset in a fixed buffer, 24 bytes per key.

Each slot is `MD5(key)` (16 bytes) followed by an int64 offset. Open addressing: probe k reads a
4-byte big-endian int from the hash at byte `min(k, 12)`, takes its absolute value, adds
`max(0, k - 12)`, modulo the slot count. (Kafka adds before the absolute value: a negative int
within `slots` of zero then folds back at zero and its linear probes skip the slots above the fold;
here probes 13 to 12 + slots are consecutive, so they visit every slot.) A slot is empty when all
24 bytes are zero. Two keys with
the same MD5 share a slot, exactly as in Kafka. The cleaner sets `latest_offset` (Kafka's
`updateLatestOffset`): puts leave it alone.

Not in Kafka: while puts come in strictly increasing offset order (the map phase of a well-formed
log), the map also remembers, one bit per offset from the first put to the last replaced one,
which put offsets a later put replaced. The cleaning phase drops such a record without hashing its
key again: `superseded_in` never reports an offset whose `get` would not return a larger one. The
bits take at most a quarter of the slots' memory (24 / 0.9 * 1.25 = 33.3 bytes per key at the 0.9
load factor); past that, or once puts stop increasing, the map reports no superseded offset.

Not in Kafka either: probing gives up with "the offset map is full" after visiting every slot,
where Kafka's `get` of an absent key in a completely full map probes forever.
"""

from __future__ import annotations

import mmap
from array import array
from collections.abc import Sequence

from storage_core import native
from storage_core.native.layout import (
    M_BITS_BYTES,
    M_ENTRIES,
    M_FIELDS,
    M_FIRST_PUT,
    M_LAST_PUT,
    M_ORDERED,
    M_SLOTS,
    M_SUPERSEDED_VALID,
    PROBE_LOOKUP,
    PROBE_NONE,
    PROBE_SUPERSEDED,
)
from storage_core.native.pure import map_superseded_in

ENTRY_SIZE = 24
HASH_SIZE = 16
SUPERSEDED_SHARE = 4  # the superseded bits take at most 1/4 of the slots' bytes (48 offsets per slot)
__all__ = ["ENTRY_SIZE", "PROBE_LOOKUP", "PROBE_NONE", "PROBE_SUPERSEDED", "SUPERSEDED_SHARE", "OffsetMap"]


def _zeroed(size: int) -> mmap.mmap:  # noqa: TID251 - anonymous memory, not a file (the fs layer's)
    """`size` zero bytes that cost nothing until written: a private anonymous mapping, whose pages
    the kernel fills with zeros when first touched. `bytearray(size)` writes every byte up front:
    for Kafka's default 128 MiB dedupe buffer ~0.1 s a pass, whatever the number of keys."""
    return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)  # noqa: TID251 - as above


class OffsetMap:
    """A bounded key -> offset map over two lazily zeroed buffers: the slots, and the superseded
    bits (a quarter of the slots' size, touched only where a bit is set).

    The work is done by `storage_core.native` (the C core or its pure-Python twins, which hold the
    reference code): :meth:`put_all` for keys in hand, :meth:`put_records` and :meth:`retained`
    for the keys of a batch's records section, framed and hashed without a Python object per
    record. The scalar state (slots, entries, first and last put, whether the bits are valid, the
    bits' size) is one `array('q')` both implementations read and update.

    Args:
        memory_bytes: the buffer size (`log.cleaner.dedupe.buffer.size / log.cleaner.threads`).
    """

    def __init__(self, memory_bytes: int) -> None:
        self.slots = memory_bytes // ENTRY_SIZE
        if self.slots < 1:
            raise ValueError(f"an offset map of {memory_bytes} bytes has no slot")
        self._bits_bytes = self.slots * ENTRY_SIZE // SUPERSEDED_SHARE
        self._buf = _zeroed(self.slots * ENTRY_SIZE)
        self._bits = _zeroed(self._bits_bytes)
        self._state = array("q", bytes(8 * M_FIELDS))
        self.latest_offset = -1
        self._reset()

    def _reset(self) -> None:
        state = self._state
        state[M_SLOTS], state[M_ENTRIES], state[M_FIRST_PUT], state[M_LAST_PUT] = self.slots, 0, -1, -1
        state[M_SUPERSEDED_VALID], state[M_BITS_BYTES], state[M_ORDERED] = 1, self._bits_bytes, 1

    @property
    def entries(self) -> int:
        return self._state[M_ENTRIES]

    def put_all(self, offsets: Sequence[int], keys: Sequence[bytes], *, max_entries: int) -> int:
        """Put each (offsets[i], keys[i]) in order, stopping before a put once the map holds
        `max_entries` keys (the cleaner's `maxDesiredMapSize` check, made before every put).

        Returns:
            How many were put (`len(offsets)` unless it stopped).

        Raises:
            ValueError: a put finds every slot taken (only if `max_entries` exceeds the slots).
        """
        return native.map_put_keys(self._buf, self._bits, self._state, offsets, keys, max_entries)

    def put_records(
        self, data: bytes, count: int, *, base_offset: int, last_offset: int, start: int, max_entries: int
    ) -> tuple[int, bool, int, int, int]:
        """Frame a batch's records section (`count` records; CorruptRecordError or IndexError as
        `frame_records`) and put the key of every record that has one and an offset >= `start`,
        as :meth:`put_all` would.

        Returns:
            (records framed, whether their offsets strictly increase inside [base offset, last
            offset], puts made, the index of the record whose put would have passed
            `max_entries` (-1: none did), the last offset put (-1: none)).
        """
        return native.map_put_records(
            self._buf, self._bits, self._state, data, count, base_offset, last_offset, start, max_entries
        )

    def retained(
        self, data: bytes, count: int, *, base_offset: int, last_offset: int, latest: int, probe: int
    ) -> tuple[int, int, int, int, int]:
        """Frame a batch's records section and say, per record, what the cleaner decides on.

        Args:
            probe: PROBE_NONE (frame only), PROBE_LOOKUP, or PROBE_SUPERSEDED (the superseded
                bits of [base offset, last offset] answer before a lookup).

        Returns:
            (records framed, and four masks, bit i for record i: its offset is above `latest`; it
            is not, has a key, and the map holds a later offset for that key; its key is null;
            its value is null).
        """
        return native.map_retained(
            self._buf, self._bits, self._state, data, count, base_offset, last_offset, latest, probe
        )

    def get(self, key: bytes) -> int:
        """The offset stored for `key`, or -1."""
        return native.map_get(self._buf, self._bits, self._state, key)

    def superseded_in(self, first: int, last: int) -> int:
        """Which offsets of [first, last] a later put replaced: bit i stands for offset `first + i`.

        A set bit means the map holds a larger offset for the key put at that offset. 0 (no
        answer) when `first` is below the first put, when puts did not come in strictly increasing
        offset order, or when the bits outgrew their share.
        """
        return map_superseded_in(self._bits, self._state, first, last)

    def clear(self) -> None:
        """Empty the map (Kafka's `clear` zeroes the buffer): a map with no entry was never written."""
        if self.entries:
            self._buf.close()
            self._bits.close()
            self._buf = _zeroed(self.slots * ENTRY_SIZE)
            self._bits = _zeroed(self._bits_bytes)
        self.latest_offset = -1
        self._reset()

    @property
    def utilization(self) -> float:
        return self.entries / self.slots
