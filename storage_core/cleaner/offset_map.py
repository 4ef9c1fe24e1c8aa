"""Kafka's `SkimpyOffsetMap`: key -> latest offset in a fixed buffer, 24 bytes per key.

Each slot is `MD5(key)` (16 bytes) followed by an int64 offset. Open addressing: probe k reads a
4-byte big-endian int from the hash at byte `min(k, 12)`, adds `max(0, k - 12)`, and takes the
absolute value modulo the slot count. A slot is empty when all 24 bytes are zero. `put` always
sets `latest_offset`. Two keys with the same MD5 share a slot, exactly as in Kafka.
"""

from __future__ import annotations

import hashlib
import struct

ENTRY_SIZE = 24
HASH_SIZE = 16
_OFFSET = struct.Struct(">q")
_PROBE = struct.Struct(">i")


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

    def _slot(self, digest: bytes, attempt: int) -> int:
        if attempt < HASH_SIZE - 4:
            probe = int.from_bytes(digest[attempt : attempt + 4], "big", signed=True)
        else:
            probe = _PROBE.unpack_from(digest, HASH_SIZE - 4)[0] + attempt - (HASH_SIZE - 4)
        return (abs(probe) % self.slots) * ENTRY_SIZE

    def _find(self, digest: bytes) -> tuple[int, bool]:
        buf = self._buf
        attempt = 0
        while True:
            position = self._slot(digest, attempt)
            if buf[position : position + HASH_SIZE] == digest:
                return position, True
            if not any(buf[position : position + ENTRY_SIZE]):
                return position, False
            attempt += 1

    def put(self, key: bytes, offset: int) -> None:
        digest = hashlib.md5(key).digest()
        position, found = self._find(digest)
        if not found:
            if self.entries >= self.slots:
                raise ValueError("the offset map is full")
            self._buf[position : position + HASH_SIZE] = digest
            self.entries += 1
        _OFFSET.pack_into(self._buf, position + HASH_SIZE, offset)
        self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """The offset stored for `key`, or -1."""
        position, found = self._find(hashlib.md5(key).digest())
        return _OFFSET.unpack_from(self._buf, position + HASH_SIZE)[0] if found else -1

    def clear(self) -> None:
        self._buf[:] = bytes(len(self._buf))
        self.entries = 0
        self.latest_offset = -1

    @property
    def utilization(self) -> float:
        return self.entries / self.slots
