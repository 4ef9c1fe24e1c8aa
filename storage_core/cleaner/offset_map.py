"""Kafka's `SkimpyOffsetMap`: key -> latest offset in a fixed buffer, 24 bytes per key.

Each slot is `MD5(key)` (16 bytes) followed by an int64 offset. Open addressing: probe k reads a
4-byte big-endian int from the hash at byte `min(k, 12)`, adds `max(0, k - 12)`, and takes the
absolute value modulo the slot count. A slot is empty when all 24 bytes are zero. A put always
sets `latest_offset`. Two keys with the same MD5 share a slot, exactly as in Kafka.

Not in Kafka: while puts come in strictly increasing offset order (the map phase of a well-formed
log), the map also remembers, one bit per offset from the first put to the last replaced one,
which put offsets a later put replaced. The cleaning phase drops such a record without hashing its
key again: `superseded_in` never reports an offset whose `get` would not return a larger one. The
bits take at most a quarter of the slots' memory (24 / 0.9 * 1.25 = 33.3 bytes per key at the 0.9
load factor); past that, or once puts stop increasing, the map reports no superseded offset.
"""

from __future__ import annotations

import hashlib
import struct

ENTRY_SIZE = 24
HASH_SIZE = 16
_OFFSET = struct.Struct(">q")
_PROBE = struct.Struct(">i")
_EMPTY = bytes(ENTRY_SIZE)
_md5 = hashlib.md5
SUPERSEDED_SHARE = 4  # the superseded bits take at most 1/4 of the slots' bytes (48 offsets per slot)


class OffsetMap:
    """A bounded key -> offset map.

    Args:
        memory_bytes: the buffer size (`log.cleaner.dedupe.buffer.size / log.cleaner.threads`).
    """

    def __init__(self, memory_bytes: int) -> None:
        self.slots = memory_bytes // ENTRY_SIZE
        if self.slots < 1:
            raise ValueError(f"an offset map of {memory_bytes} bytes has no slot")
        self._buf = bytearray(self.slots * ENTRY_SIZE)
        self.entries = 0
        self.latest_offset = -1
        self._first_put = -1  # set by the first put
        self._last_put = -1
        # Bit i: the put at offset `_first_put + i` was replaced. None once puts stopped increasing
        # or the bits outgrew their share.
        self._superseded: bytearray | None = bytearray()

    def _position(self, digest: bytes, attempt: int = 0) -> int:
        """The position of the slot holding `digest`, or of the empty slot where it belongs, probing
        from `attempt` on."""
        buf = self._buf
        while True:
            probe = _PROBE.unpack_from(digest, min(attempt, HASH_SIZE - 4))[0] + max(0, attempt - (HASH_SIZE - 4))
            position = abs(probe) % self.slots * ENTRY_SIZE
            if buf.startswith(digest, position) or buf.startswith(_EMPTY, position):
                return position
            attempt += 1

    def put_all(self, keyed: list[tuple[int, bytes]], *, max_entries: int) -> int:
        """Put each (offset, key) in order, stopping before a put once the map holds `max_entries`
        keys (the cleaner's `maxDesiredMapSize` check, made before every put).

        Returns:
            How many were put (`len(keyed)` unless it stopped).

        Raises:
            ValueError: a put finds every slot taken (only if `max_entries` exceeds the slots).
        """
        buf, slots, superseded = self._buf, self.slots, self._superseded
        startswith, probe_of = buf.startswith, _PROBE.unpack_from
        offset_of, write_offset = _OFFSET.unpack_from, _OFFSET.pack_into
        # The hot loop keeps the counters in locals and stores them back at the end.
        done, entries, first_put, last_put = 0, self.entries, self._first_put, self._last_put
        try:
            for offset, key in keyed:
                if entries >= max_entries:
                    break
                if entries >= slots:  # Kafka's require(entries < slots), before probing a full map forever
                    raise ValueError("the offset map is full")
                digest = _md5(key).digest()
                position = abs(probe_of(digest)[0]) % slots * ENTRY_SIZE  # _position's first probe, inlined
                found = startswith(digest, position)
                if not (found or startswith(_EMPTY, position)):
                    position = self._position(digest, attempt=1)
                    found = startswith(digest, position)
                if offset <= last_put:
                    superseded = None  # not increasing: the bits could not be trusted
                last_put = offset
                if found and superseded is not None:
                    bit = offset_of(buf, position + HASH_SIZE)[0] - first_put
                    if bit >> 3 >= len(superseded):
                        limit = len(buf) // SUPERSEDED_SHARE
                        if bit >> 3 >= limit:
                            superseded = None  # over its memory share: the cleaner looks keys up instead
                        else:
                            superseded.extend(
                                bytes(min(max(2 * len(superseded), (bit >> 3) + 1), limit) - len(superseded))
                            )
                    if superseded is not None:
                        superseded[bit >> 3] |= 1 << (bit & 7)
                elif not found:
                    if not entries:
                        first_put = offset
                    buf[position : position + HASH_SIZE] = digest
                    entries += 1
                write_offset(buf, position + HASH_SIZE, offset)
                done += 1
        finally:
            self.entries, self._first_put, self._last_put, self._superseded = entries, first_put, last_put, superseded
            if done:
                self.latest_offset = last_put
        return done

    def get(self, key: bytes) -> int:
        """The offset stored for `key`, or -1."""
        digest = _md5(key).digest()
        position = self._position(digest)
        return _OFFSET.unpack_from(self._buf, position + HASH_SIZE)[0] if self._buf.startswith(digest, position) else -1

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
        self._buf[:] = bytes(len(self._buf))
        self.entries = 0
        self.latest_offset = -1
        self._first_put = -1
        self._last_put = -1
        self._superseded = bytearray()

    @property
    def utilization(self) -> float:
        return self.entries / self.slots
