"""The native core of storage_core: the hot loops in C, each with a pure-Python twin.

`storage_core/native/*.c` is a small C extension (`_native`, built by `pip install`, optional):
the v2 batch-chain walk with CRC-32C and recovery's index entries (walk.c), the framing of a
batch's records section (frame.c), and the offset map's MD5 / probe / put over a batch of keys
(offset_map.c). It reads only buffers the Python side mapped through `storage_core.fs`; every
decision, file change and crash step stays in Python. `pure.py` holds the twins, the reference;
`implementation.py` picks one (`LOGKEEPER_PURE_PYTHON=1` forces the twins) and says which.
"""

from storage_core.native.implementation import (
    IMPLEMENTATION,
    REASON,
    crc32c,
    describe,
    frame_records,
    map_get,
    map_put_keys,
    map_put_records,
    map_retained,
    md5,
    use_twins,
    walk,
)

__all__ = [
    "IMPLEMENTATION",
    "REASON",
    "crc32c",
    "describe",
    "frame_records",
    "map_get",
    "map_put_keys",
    "map_put_records",
    "map_retained",
    "md5",
    "use_twins",
    "walk",
]
