"""Which implementation of the native core runs: the compiled `_native`, or the pure-Python twins.

The choice is made once, at import: `LOGKEEPER_PURE_PYTHON=1` forces the twins; otherwise the
compiled module is used when it imports (it is built by `pip install`, optionally: a machine
without a C compiler installs and runs the twins). :data:`IMPLEMENTATION` says which ("native" or
"pure") and :data:`REASON` why, for `logkeeper --version` and the executors' progress lines.

The native functions raise `_native.FrameError(kind, message)` where the twins raise
CorruptRecordError or IndexError; the wrappers here turn one into the other, and hand a records
section with a value wider than 64 bits (kind "unsupported") to the twin (as bytes, whatever buffer
the caller passed, so its errors read the same).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from storage_core.errors import CorruptRecordError
from storage_core.native import pure

T = TypeVar("T")

IMPLEMENTATION = "pure"
REASON = "LOGKEEPER_PURE_PYTHON=1"
_native = None
if os.environ.get("LOGKEEPER_PURE_PYTHON", "") not in ("", "0"):
    pass
else:
    try:
        from storage_core.native import _native  # type: ignore[attr-defined,no-redef]
    except ImportError as exc:  # not built (no compiler at install time) or not shipped
        if importlib.util.find_spec("storage_core.native._native") is None:
            REASON = "the compiled core is not installed: pip install builds it where a C compiler is"
        else:
            REASON = f"the compiled core did not import ({exc})"
    else:
        IMPLEMENTATION = "native"
        REASON = f"compiled core, CRC-32C by {_native.crc32c_implementation()}"


def describe() -> str:
    """One line for `--version` and progress lines: `native (...)` or `pure Python (why)`."""
    return f"native ({REASON})" if IMPLEMENTATION == "native" else f"pure Python ({REASON})"


def _falling_back(compiled: Callable[..., T], twin: Callable[..., T], data_at: int) -> Callable[..., T]:
    """`compiled`, its FrameError turned into the twin's exception (kind "index": IndexError, else
    CorruptRecordError); a records section the C core does not take (kind "unsupported": a value
    wider than 64 bits) goes to `twin`, its argument `data_at` as bytes. The C side raises
    "unsupported" before it changes anything, so the twin starts from the same state."""

    def call(*args: Any) -> T:
        try:
            return compiled(*args)
        except _native.FrameError as exc:  # type: ignore[union-attr]
            kind, message = exc.args
            if kind == "index":
                raise IndexError(message) from None
            if kind != "unsupported":
                raise CorruptRecordError(message) from None
        args = (*args[:data_at], bytes(args[data_at]), *args[data_at + 1 :])
        return twin(*args)

    return call


def _retained_masks(*args: Any) -> tuple[int, int, int, int, int]:
    """`_native.map_retained` with its masks (little-endian bytes) as ints, as the twin returns them."""
    framed, above, later, null_key, tombstone = _native.map_retained(*args)  # type: ignore[union-attr]
    return framed, *(int.from_bytes(mask, "little") for mask in (above, later, null_key, tombstone))  # type: ignore[return-value]


if _native is not None:
    crc32c = _native.crc32c
    md5 = _native.md5
    walk = _native.walk
    map_put_keys = _native.map_put_keys
    map_get = _native.map_get
    frame_records = _falling_back(_native.frame_records, pure.frame_records, 0)
    map_put_records = _falling_back(_native.map_put_records, pure.map_put_records, 3)
    map_retained = _falling_back(_retained_masks, pure.map_retained, 3)
else:
    crc32c = pure.crc32c
    md5 = pure.md5
    walk = pure.walk
    frame_records = pure.frame_records
    map_put_keys = pure.map_put_keys
    map_get = pure.map_get
    map_put_records = pure.map_put_records
    map_retained = pure.map_retained


TWINNED = ("crc32c", "md5", "walk", "frame_records", "map_put_keys", "map_put_records", "map_get", "map_retained")


@contextmanager
def use_twins() -> Iterator[None]:
    """Run storage_core on the pure-Python twins in this process until the block ends, whatever
    the switch chose (tests and benches compare the two side by side; not thread-safe).

    Every caller reaches the core through attributes of the `storage_core.native` package at call
    time, so swapping those attributes swaps the implementation.
    """
    package = sys.modules["storage_core.native"]
    saved = {name: getattr(package, name) for name in TWINNED}
    try:
        for name in TWINNED:
            setattr(package, name, getattr(pure, name))
        yield
    finally:
        for name, value in saved.items():
            setattr(package, name, value)
