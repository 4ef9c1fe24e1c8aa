"""Running storage_core on the pure-Python twins inside one process, whatever the switch chose,
and comparing the two implementations call for call (the equivalence tests and the sanitizer fuzz).

Every caller reaches the native core through attributes of the `storage_core.native` package at
call time, so replacing those attributes with the twins of `storage_core.native.pure` runs the
same code on the reference implementation.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Any

import pytest

import storage_core.native
from storage_core.native import pure
from storage_core.native.layout import (
    M_BITS_BYTES,
    M_FIELDS,
    M_FIRST_PUT,
    M_LAST_PUT,
    M_ORDERED,
    M_SLOTS,
    M_SUPERSEDED_VALID,
    STOP_REPLAY,
    W_EPOCH_FLOOR,
    W_LAST_INDEX_ENTRY,
    W_OI_CAPACITY,
    W_POSITION,
    W_TI_CAPACITY,
    walk_state,
)

pure_python = storage_core.native.use_twins  # storage_core on the pure-Python twins until the block ends


REQUIRE_NATIVE_ENV = "LOGKEEPER_REQUIRE_NATIVE"
compiled_core_required = pytest.mark.usefixtures("compiled_core")  # the fixture: ./conftest.py


HOSTILE_INTS = [0, 1, -1, 13, 14, 48, 49, 61, 2**31 - 1, 2**31 - 2, -(2**31), 2**32 - 1, 2**15 - 1, -(2**15)]


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """What a call gives: ("ok", result) or ("error", its type and message)."""
    try:
        return "ok", call()
    except Exception as exc:  # CorruptRecordError, IndexError, ValueError: compared by type and message
        return "error", (type(exc).__name__, str(exc))


def walk_all(walk: Callable[..., int], data: bytes, params: dict[str, int]) -> list[tuple[int, bytes, bytes, bytes]]:
    """Every stop of a walk over `data` (continuing after REPLAY stops), with its state and entries."""
    state = walk_state(
        end=params["end"],
        flags=params["flags"],
        segment_base=params["segment_base"],
        interval=params["interval"],
        replay=params["replay"],
    )
    state[W_OI_CAPACITY], state[W_TI_CAPACITY] = params["oi_capacity"], params["ti_capacity"]
    state[W_EPOCH_FLOOR] = params["epoch_floor"]
    state[W_POSITION] = params["position"]
    state[W_LAST_INDEX_ENTRY] = params.get("last_index_entry", 0)
    stops = []
    for _ in range(50):
        offset_entries, time_entries = bytearray(), bytearray()
        stop = walk(data, state, offset_entries, time_entries)
        stops.append((stop, state.tobytes(), bytes(offset_entries), bytes(time_entries)))
        if stop != STOP_REPLAY:
            break
    return stops


class MapBuffers:
    """The buffers of an OffsetMap, built alike for each implementation."""

    def __init__(self, slots: int, bits_bytes: int) -> None:
        self.slots = bytearray(24 * slots)
        self.bits = bytearray(bits_bytes)
        self.state = array("q", bytes(8 * M_FIELDS))
        self.state[M_SLOTS], self.state[M_FIRST_PUT], self.state[M_LAST_PUT] = slots, -1, -1
        self.state[M_SUPERSEDED_VALID], self.state[M_BITS_BYTES], self.state[M_ORDERED] = 1, bits_bytes, 1

    def snapshot(self) -> tuple[bytes, bytes | None, bytes]:
        """Slots, superseded bits and state; the bits only while valid (once a put invalidates
        them nothing reads them again until `clear`, so where each stopped setting bits is moot)."""
        return bytes(self.slots), bytes(self.bits) if self.state[M_SUPERSEDED_VALID] else None, self.state.tobytes()


def both(name: str, maps: dict[str, MapBuffers], *args: Any, native_buffer: Callable[[bytes], Any] = bytes) -> None:
    """Call `name` on each implementation's map with `args` (bytes among them handed to the
    native side through `native_buffer`); results and maps must agree."""
    native_args = tuple(native_buffer(a) if isinstance(a, bytes) else a for a in args)
    outcomes = {
        impl: outcome(lambda m=m, module=module, a=a: getattr(module, name)(m.slots, m.bits, m.state, *a))
        for (impl, m), module, a in zip(maps.items(), (storage_core.native, pure), (native_args, args), strict=True)
    }
    assert outcomes["native"] == outcomes["pure"], (name, args, outcomes)
    assert maps["native"].snapshot() == maps["pure"].snapshot(), (name, args, "the maps differ")


def map_pair(slots: int, bits_bytes: int) -> dict[str, MapBuffers]:
    """One empty map for each implementation, alike."""
    return {"native": MapBuffers(slots, bits_bytes), "pure": MapBuffers(slots, bits_bytes)}
