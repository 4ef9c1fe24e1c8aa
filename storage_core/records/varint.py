"""Zig-zag base-128 varints and varlongs of the v2 record format (kafka-format.md §2.2).

Mirrors `clients/src/main/java/org/apache/kafka/common/utils/ByteUtils.java`
(`writeVarint`, `readVarint`, `writeVarlong`, `readVarlong`, `sizeOfVarint`).

```
encode: z = (n << 1) ^ (n >> 31)        (n >> 63 for a varlong), masked to 32 (64) bits
        7 bits of z at a time, least significant group first,
        bit 0x80 set on every byte but the last
decode: n = (z >>> 1) ^ -(z & 1)
```

Invariants: a varint ends within 5 bytes and a varlong within 10 (Kafka's "illegal varint"); a
longer run, or one that runs past the buffer, is a :class:`CorruptRecordError`. Nothing here is
checksummed on its own: varints live inside a batch whose CRC covers them.
"""

from __future__ import annotations

from storage_core.errors import CorruptRecordError

Buffer = bytes | bytearray | memoryview

_MASK32 = (1 << 32) - 1
_MASK64 = (1 << 64) - 1
VARINT_MAX_BYTES = 5
VARLONG_MAX_BYTES = 10
# Most lengths and deltas zig-zag below 0x80 and encode as one byte: no bytearray for them.
_ONE_BYTE = tuple(bytes((z,)) for z in range(0x80))


def _encode_unsigned(z: int) -> bytes:
    if z < 0x80:
        return _ONE_BYTE[z]
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def encode_unsigned_varint(value: int) -> bytes:
    """`ByteUtils.writeUnsignedVarint`: no zig-zag, for lengths and tags of protocol messages.

    Raises:
        ValueError: a value outside [0, 2**32).
    """
    if not 0 <= value <= _MASK32:
        raise ValueError(f"{value} does not fit an unsigned varint")
    return _encode_unsigned(value)


def encode_varint(n: int) -> bytes:
    """Zig-zag encode a signed 32-bit integer.

    Args:
        n: a value in [-2**31, 2**31 - 1] (larger values are masked to 32 bits, as Java's int).

    Returns:
        1 to 5 bytes.
    """
    return _encode_unsigned(((n << 1) ^ (n >> 31)) & _MASK32)


def encode_varlong(n: int) -> bytes:
    """Zig-zag encode a signed 64-bit integer (1 to 10 bytes)."""
    return _encode_unsigned(((n << 1) ^ (n >> 63)) & _MASK64)


def _decode(buf: Buffer, pos: int, max_bytes: int) -> tuple[int, int]:
    z = 0
    shift = 0
    for i in range(max_bytes):
        try:
            byte = buf[pos + i]
        except IndexError:
            raise CorruptRecordError("varint runs past the end of the buffer", position=pos) from None
        z |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (z >> 1) ^ -(z & 1), pos + i + 1
        shift += 7
    raise CorruptRecordError(f"illegal varint: more than {max_bytes} bytes", position=pos)


def decode_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Decode the varint at `pos`.

    Returns:
        (value, position after the varint).

    Raises:
        CorruptRecordError: more than 5 bytes, or the buffer ends first (`position` = `pos`).
    """
    return _decode(buf, pos, VARINT_MAX_BYTES)


def decode_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """Decode the varlong at `pos`.

    Returns:
        (value, position after the varlong).

    Raises:
        CorruptRecordError: more than 10 bytes, or the buffer ends first (`position` = `pos`).
    """
    return _decode(buf, pos, VARLONG_MAX_BYTES)


def size_of_varint(n: int) -> int:
    """The number of bytes `encode_varint(n)` takes."""
    z = ((n << 1) ^ (n >> 31)) & _MASK32
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size
