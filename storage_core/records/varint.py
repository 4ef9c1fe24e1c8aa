"""Zig-zag base-128 varints and varlongs (Kafka `ByteUtils`, kafka-format.md §2.2).

Encode: `z = (n << 1) ^ (n >> 31)` (64 for varlongs), then 7 bits at a time, least significant group
first, the high bit set on every byte but the last. A varint must end within 5 bytes and a varlong
within 10 bytes, otherwise the data is corrupt.
"""

from __future__ import annotations

from storage_core.errors import CorruptRecordError

_MASK32 = (1 << 32) - 1
_MASK64 = (1 << 64) - 1


def _encode_unsigned(z: int) -> bytes:
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def encode_varint(n: int) -> bytes:
    """Zig-zag encode a signed 32-bit integer."""
    return _encode_unsigned(((n << 1) ^ (n >> 31)) & _MASK32)


def encode_varlong(n: int) -> bytes:
    """Zig-zag encode a signed 64-bit integer."""
    return _encode_unsigned(((n << 1) ^ (n >> 63)) & _MASK64)


def _decode(buf: bytes | bytearray | memoryview, pos: int, max_bytes: int) -> tuple[int, int]:
    z = 0
    shift = 0
    for i in range(max_bytes):
        try:
            byte = buf[pos + i]
        except IndexError:
            raise CorruptRecordError("varint runs past the end of the record", position=pos) from None
        z |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (z >> 1) ^ -(z & 1), pos + i + 1
        shift += 7
    raise CorruptRecordError(f"illegal varint: more than {max_bytes} bytes", position=pos)


def decode_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Decode a varint at `pos`; returns (value, position after it)."""
    return _decode(buf, pos, 5)


def decode_varlong(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Decode a varlong at `pos`; returns (value, position after it)."""
    return _decode(buf, pos, 10)


def size_of_varint(n: int) -> int:
    """Bytes `encode_varint(n)` takes."""
    z = ((n << 1) ^ (n >> 31)) & _MASK32
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size
