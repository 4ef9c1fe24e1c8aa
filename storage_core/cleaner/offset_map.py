"""Kafka's `SkimpyOffsetMap`: key -> latest offset in a fixed buffer, 24 bytes per key.

Each slot is `MD5(key)` (16 bytes) followed by an int64 offset. Open addressing: probe k reads a
4-byte big-endian int from the hash at byte `min(k, 12)`, adds `max(0, k - 12)`, and takes the
absolute value modulo the slot count. A slot is empty when all 24 bytes are zero. Two keys with
the same MD5 share a slot, exactly as in Kafka. The cleaner sets `latest_offset` (Kafka's
`updateLatestOffset`): puts leave it alone.

Not in Kafka: while puts come in strictly increasing offset order (the map phase of a well-formed
log), the map also remembers, one bit per offset from the first put to the last replaced one,
which put offsets a later put replaced. The cleaning phase drops such a record without hashing its
key again: `superseded_in` never reports an offset whose `get` would not return a larger one. The
bits take at most a quarter of the slots' memory (24 / 0.9 * 1.25 = 33.3 bytes per key at the 0.9
load factor); past that, or once puts stop increasing, the map reports no superseded offset.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Sequence
from itertools import compress, islice
from operator import lt, ne

try:  # CPython's own MD5: twice as fast as OpenSSL 3's for short keys (no per-call algorithm fetch)
    from _md5 import md5 as _md5
except ImportError:  # a CPython built without its builtin hashes
    from hashlib import md5 as _md5

ENTRY_SIZE = 24
HASH_SIZE = 16
_OFFSET = struct.Struct(">q")
_PROBE = struct.Struct(">i")
_EMPTY = bytes(ENTRY_SIZE)
SUPERSEDED_SHARE = 4  # the superseded bits take at most 1/4 of the slots' bytes (48 offsets per slot)


def _zeroed(size: int) -> mmap.mmap:  # noqa: TID251 - anonymous memory, not a file (the fs layer's)
    """`size` zero bytes that cost nothing until written: a private anonymous mapping, whose pages
    the kernel fills with zeros when first touched. `bytearray(size)` writes every byte up front:
    for Kafka's default 128 MiB dedupe buffer ~0.1 s a pass, whatever the number of keys."""
    return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)  # noqa: TID251 - as above


class OffsetMap:
    """A bounded key -> offset map.

    Args:
        memory_bytes: the buffer size (`log.cleaner.dedupe.buffer.size / log.cleaner.threads`).
    """

    def __init__(self, memory_bytes: int) -> None:
        self.slots = memory_bytes // ENTRY_SIZE
        if self.slots < 1:
            raise ValueError(f"an offset map of {memory_bytes} bytes has no slot")
        self._buf = _zeroed(self.slots * ENTRY_SIZE)
        self.entries = 0
        self.latest_offset = -1
        self._first_put = -1  # set by the first put
        self._last_put = -1
        # Bit i: the put at offset `_first_put + i` was replaced. None once puts stopped increasing
        # or the bits outgrew their share.
        self._superseded: bytearray | None = bytearray()

    def _position(self, digest: bytes, attempt: int = 0) -> tuple[int, bool]:
        """The position of the slot holding `digest` (and True), or of the empty slot where it
        belongs (and False), probing from `attempt` on."""
        buf, slots, probe_of = self._buf, self.slots, _PROBE.unpack_from
        while True:
            if attempt <= HASH_SIZE - 4:
                probe = probe_of(digest, attempt)[0]
            else:
                probe = probe_of(digest, HASH_SIZE - 4)[0] + attempt - (HASH_SIZE - 4)
            position = abs(probe) % slots * ENTRY_SIZE
            slot = buf[position : position + ENTRY_SIZE]
            if slot.startswith(digest):
                return position, True
            if slot == _EMPTY:
                return position, False
            attempt += 1

    def put_all(self, offsets: Sequence[int], keys: Sequence[bytes], *, max_entries: int) -> int:
        """Put each (offsets[i], keys[i]) in order, stopping before a put once the map holds
        `max_entries` keys (the cleaner's `maxDesiredMapSize` check, made before every put).

        When the puts cannot fill the map (`entries + len(offsets)` is at most `max_entries` and the
        slot count) and their offsets strictly increase past every earlier put (the map phase of a
        well-formed log), each distinct key is hashed and probed once, with its last offset: the map
        (slots, count, superseded bits) ends as the puts one by one would leave it.

        Returns:
            How many were put (`len(offsets)` unless it stopped).

        Raises:
            ValueError: a put finds every slot taken (only if `max_entries` exceeds the slots).
        """
        count = len(offsets)
        if (
            count
            and self.entries + count <= min(max_entries, self.slots)
            and offsets[0] > self._last_put
            and all(map(lt, offsets, islice(offsets, 1, None)))
        ):
            self._put_distinct(offsets, keys)
            return count
        return self._put_each(offsets, keys, max_entries)

    def _put_distinct(self, offsets: Sequence[int], keys: Sequence[bytes]) -> None:
        """`put_all`'s fast path; its conditions hold."""
        last = dict(zip(keys, offsets, strict=True))  # each key's last offset, in order of first put
        buf, slots, probe_of = self._buf, self.slots, _PROBE.unpack_from
        offset_of, write_offset = _OFFSET.unpack_from, _OFFSET.pack_into
        if not self.entries:
            self._first_put = offsets[0]
        first_put, bits = self._first_put, self._reserve_bits(offsets[-1])
        entries = self.entries
        for key, offset in last.items():
            digest = _md5(key).digest()
            position = abs(probe_of(digest)[0]) % slots * ENTRY_SIZE  # _position's first probe, inlined
            slot = buf[position : position + ENTRY_SIZE]
            found = slot.startswith(digest)
            if not (found or slot == _EMPTY):
                position, found = self._position(digest, attempt=1)
            if found:
                replaced = offset_of(buf, position + HASH_SIZE)[0]
                if replaced > offset:  # another key of these puts with the same MD5, put later: it wins
                    replaced, offset = offset, replaced
                if bits is None:
                    self._supersede(replaced)
                else:
                    bit = replaced - first_put
                    bits[bit >> 3] |= 1 << (bit & 7)
            else:
                buf[position : position + HASH_SIZE] = digest
                entries += 1
            write_offset(buf, position + HASH_SIZE, offset)
        self.entries, self._last_put = entries, offsets[-1]
        if len(last) < len(offsets) and self._superseded is not None:
            # Replaced by a later put of the same key among these.
            for offset in compress(offsets, map(ne, offsets, map(last.__getitem__, keys))):
                if bits is None:
                    self._supersede(offset)
                else:
                    bit = offset - first_put
                    bits[bit >> 3] |= 1 << (bit & 7)

    def _reserve_bits(self, offset: int) -> bytearray | None:
        """The superseded bits, grown to hold the bit of every offset up to `offset`; None when they
        are gone or that would take them over their share (then :meth:`_supersede` sets each bit)."""
        superseded = self._superseded
        if superseded is None:
            return None
        need, limit = ((offset - self._first_put) >> 3) + 1, len(self._buf) // SUPERSEDED_SHARE
        if need > limit:
            return None
        if need > len(superseded):
            superseded.extend(bytes(min(max(2 * len(superseded), need), limit) - len(superseded)))
        return superseded

    def _put_each(self, offsets: Sequence[int], keys: Sequence[bytes], max_entries: int) -> int:
        """`put_all` one put at a time."""
        buf, slots = self._buf, self.slots
        offset_of, write_offset = _OFFSET.unpack_from, _OFFSET.pack_into
        done = 0
        for offset, key in zip(offsets, keys, strict=True):
            if self.entries >= max_entries:
                break
            if self.entries >= slots:  # Kafka's require(entries < slots), before probing a full map forever
                raise ValueError("the offset map is full")
            digest = _md5(key).digest()
            position, found = self._position(digest)
            if offset <= self._last_put:
                self._superseded = None  # not increasing: the bits could not be trusted
            self._last_put = offset
            if found:
                self._supersede(offset_of(buf, position + HASH_SIZE)[0])
            else:
                if not self.entries:
                    self._first_put = offset
                buf[position : position + HASH_SIZE] = digest
                self.entries += 1
            write_offset(buf, position + HASH_SIZE, offset)
            done += 1
        return done

    def _supersede(self, offset: int) -> None:
        """Note that a later put replaced the put at `offset`; the bits go once over their share."""
        if self._superseded is None:
            return
        bits = self._reserve_bits(offset)
        if bits is None:
            self._superseded = None  # over its memory share: the cleaner looks keys up instead
            return
        bit = offset - self._first_put
        bits[bit >> 3] |= 1 << (bit & 7)

    def get(self, key: bytes) -> int:
        """The offset stored for `key`, or -1."""
        digest = _md5(key).digest()
        position, found = self._position(digest)
        return _OFFSET.unpack_from(self._buf, position + HASH_SIZE)[0] if found else -1

    def superseded_in(self, first: int, last: int) -> int:
        """Which offsets of [first, last] a later put replaced: bit i stands for offset `first + i`.

        A set bit means the map holds a larger offset for the key put at that offset. 0 (no
        answer) when `first` is below the first put, when puts did not come in strictly increasing
        offset order, or when the bits outgrew their share.
        """
        superseded = self._superseded
        if not superseded or first < self._first_put:
            return 0
        low, high = first - self._first_put, min(last - self._first_put, 8 * len(superseded) - 1)
        if high < low:
            return 0
        window = int.from_bytes(superseded[low >> 3 : (high >> 3) + 1], "little") >> (low & 7)
        return window & ((1 << (high - low + 1)) - 1)

    def clear(self) -> None:
        """Empty the map (Kafka's `clear` zeroes the buffer): a map with no entry was never written."""
        if self.entries:
            self._buf.close()
            self._buf = _zeroed(self.slots * ENTRY_SIZE)
        self.entries = 0
        self.latest_offset = -1
        self._first_put = -1
        self._last_put = -1
        self._superseded = bytearray()

    @property
    def utilization(self) -> float:
        return self.entries / self.slots
