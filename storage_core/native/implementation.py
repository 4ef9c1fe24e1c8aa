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

import os
import sys
from array import array
from collections.abc import Iterator
from contextlib import contextmanager

from storage_core.errors import CorruptRecordError
from storage_core.native import pure
from storage_core.records.record import RecordFrame

Buffer = bytes | bytearray | memoryview

IMPLEMENTATION = "pure"
REASON = "LOGKEEPER_PURE_PYTHON=1"
_native = None
if os.environ.get("LOGKEEPER_PURE_PYTHON", "") not in ("", "0"):
    pass
else:
    try:
        from storage_core.native import _native  # type: ignore[attr-defined,no-redef]
    except ImportError as exc:  # not built (no compiler at install time) or not shipped
        REASON = f"the compiled core did not import ({exc})"
    else:
        IMPLEMENTATION = "native"
        REASON = f"compiled core, CRC-32C by {_native.crc32c_implementation()}"


def describe() -> str:
    """One line for `--version` and progress lines: `native (...)` or `pure Python (why)`."""
    return f"native ({REASON})" if IMPLEMENTATION == "native" else f"pure Python ({REASON})"


def _raise(exc: Exception) -> None:
    kind, message = exc.args
    if kind == "index":
        raise IndexError(message) from None
    raise CorruptRecordError(message) from None


if _native is not None:
    crc32c = _native.crc32c
    md5 = _native.md5
    walk = _native.walk
    map_put_keys = _native.map_put_keys
    map_get = _native.map_get
    _FrameError = _native.FrameError

    def frame_records(data: bytes, count: int) -> list[RecordFrame]:
        try:
            return _native.frame_records(data, count)
        except _FrameError as exc:
            if exc.args[0] == "unsupported":
                return pure.frame_records(bytes(data), count)
            _raise(exc)
            raise  # unreachable: _raise raises

    def map_put_records(
        slots: Buffer,
        bits: Buffer,
        state: array,
        data: bytes,
        count: int,
        base_offset: int,
        last_offset: int,
        start: int,
        max_entries: int,
    ) -> tuple[int, bool, int, int, int]:
        try:
            return _native.map_put_records(
                slots, bits, state, data, count, base_offset, last_offset, start, max_entries
            )
        except _FrameError as exc:
            if exc.args[0] == "unsupported":
                return pure.map_put_records(
                    slots, bits, state, bytes(data), count, base_offset, last_offset, start, max_entries
                )
            _raise(exc)
            raise

    def map_retained(
        slots: Buffer,
        bits: Buffer,
        state: array,
        data: bytes,
        count: int,
        base_offset: int,
        last_offset: int,
        latest: int,
        probe: int,
    ) -> tuple[int, int, int, int, int]:
        try:
            framed, *masks = _native.map_retained(
                slots, bits, state, data, count, base_offset, last_offset, latest, probe
            )
        except _FrameError as exc:
            if exc.args[0] == "unsupported":
                return pure.map_retained(
                    slots, bits, state, bytes(data), count, base_offset, last_offset, latest, probe
                )
            _raise(exc)
            raise
        above, later, null_key, tombstone = (int.from_bytes(mask, "little") for mask in masks)
        return framed, above, later, null_key, tombstone

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
