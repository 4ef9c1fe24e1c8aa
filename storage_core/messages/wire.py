"""The primitive encodings of Kafka's protocol messages (`common/protocol/types/Type.java`,
`ByteUtils.java`, `Readable`/`Writable`). Big-endian throughout.

```
bool     1 byte, 0 = false (any other value reads as true)
int8 int16 int32 int64   signed, 1 2 4 8 bytes;  uint16 uint32   unsigned, 2 4 bytes
float64  IEEE 754 double, 8 bytes
uuid     16 bytes (most then least significant long); text form: URL-safe base64, no padding
unsigned varint   7 bits a byte, least significant group first, 0x80 on every byte but the last;
                  at most 5 bytes (an int32)
```

Variable-length values (strings, bytes, arrays) carry a length before their content: int16
(strings) or int32 (bytes, arrays) in non-flexible versions, -1 for null; an unsigned varint of
length + 1 in flexible versions ("compact"), 0 for null. The readers and writers of those live in
:mod:`storage_core.messages.reader` and :mod:`~storage_core.messages.writer`.
"""

from __future__ import annotations

import struct
from typing import Final

from storage_core.errors import CorruptRecordError
from storage_core.partition_metadata import UUID_SIZE

Buffer = bytes | bytearray | memoryview

UNSIGNED_VARINT_MAX_BYTES: Final = 5
_UINT32_MASK = 0xFFFFFFFF

FIXED: Final = {  # Kafka type name -> its struct, for the fixed-size scalars
    "bool": struct.Struct(">b"),
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
}
FIXED_SIZES: Final = {name: s.size for name, s in FIXED.items()} | {"uuid": UUID_SIZE}
INT16: Final = FIXED["int16"]
INT32: Final = FIXED["int32"]
_ONE_BYTE = tuple(bytes((n,)) for n in range(0x80))


def read_unsigned_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """The unsigned varint at `pos` and the position after it.

    Raises:
        CorruptRecordError: longer than 5 bytes, or the buffer ends inside it (`position` = `pos`).
    """
    value = 0
    for i in range(UNSIGNED_VARINT_MAX_BYTES):
        try:
            byte = buf[pos + i]
        except IndexError:
            raise CorruptRecordError("unsigned varint runs past the end of the value", position=pos) from None
        value |= (byte & 0x7F) << (7 * i)
        if byte < 0x80:
            return value & _UINT32_MASK, pos + i + 1
    raise CorruptRecordError(f"unsigned varint longer than {UNSIGNED_VARINT_MAX_BYTES} bytes", position=pos)


def encode_unsigned_varint(value: int) -> bytes:
    """The unsigned varint of `value` (0 <= value < 2**32).

    Raises:
        ValueError: a value outside [0, 2**32).
    """
    if not 0 <= value <= _UINT32_MASK:
        raise ValueError(f"{value} does not fit an unsigned varint")
    if value < 0x80:
        return _ONE_BYTE[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
