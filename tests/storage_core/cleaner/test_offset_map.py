"""The offset map: the latest put wins, the map-full stop, and the superseded bits against an oracle."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage_core.cleaner import offset_map as offset_map_module
from storage_core.cleaner.offset_map import OffsetMap
from storage_core.native import pure


def put(offset_map: OffsetMap, keyed: list[tuple[int, bytes]], *, max_entries: int) -> int:
    return offset_map.put_all([o for o, _ in keyed], [k for _, k in keyed], max_entries=max_entries)


def test_latest_put_wins_and_unknown_keys_read_minus_one() -> None:
    offset_map = OffsetMap(24 * 8)
    assert put(offset_map, [(3, b"a"), (4, b"b"), (9, b"a")], max_entries=8) == 3
    assert (offset_map.get(b"a"), offset_map.get(b"b"), offset_map.get(b"c")) == (9, 4, -1)
    assert (offset_map.entries, offset_map.latest_offset) == (2, -1)  # the cleaner sets latest_offset


def test_put_all_stops_before_a_put_once_the_map_holds_max_entries() -> None:
    offset_map = OffsetMap(24 * 8)
    # The check comes before every put, even one that would only update a key already there.
    assert put(offset_map, [(0, b"a"), (1, b"b"), (2, b"a"), (3, b"c")], max_entries=2) == 2
    assert (offset_map.get(b"a"), offset_map.entries) == (0, 2)


@pytest.mark.parametrize("mode", ["active", "pure"])
def test_after_offsets_went_backwards_the_last_put_still_wins(mode: str, monkeypatch) -> None:
    # a@16, then b@12 (backwards), then a@13, a@14: one put after another, a ends at 14 (Kafka's
    # map keeps the last put, not the largest offset), in both implementations.
    if mode == "pure":
        monkeypatch.setattr(offset_map_module.native, "map_put_keys", pure.map_put_keys)
    offset_map = OffsetMap(24 * 8)
    put(offset_map, [(16, b"a")], max_entries=8)
    put(offset_map, [(12, b"b")], max_entries=8)
    assert put(offset_map, [(13, b"a"), (14, b"a")], max_entries=8) == 2
    assert (offset_map.get(b"a"), offset_map.superseded_in(0, 20)) == (14, 0)


@pytest.mark.parametrize("key", [b"a", b"c"])
def test_any_put_into_a_full_map_is_an_error_as_in_kafka(key: bytes) -> None:
    offset_map = OffsetMap(24 * 2)
    put(offset_map, [(0, b"a"), (1, b"b")], max_entries=3)
    with pytest.raises(ValueError, match="full"):
        put(offset_map, [(2, key)], max_entries=3)


puts = st.lists(st.tuples(st.integers(1, 4), st.integers(0, 5)), min_size=1, max_size=80)  # (offset gap, key)


def model(keyed: list[tuple[int, bytes]], max_entries: int) -> tuple[int, dict[bytes, int], set[int]]:
    """Puts one by one into a dict: how many were put before the map held `max_entries` keys,
    each key's offset, and the offsets a later put replaced."""
    latest: dict[bytes, int] = {}
    replaced: set[int] = set()
    for done, (offset, key) in enumerate(keyed):
        if len(latest) >= max_entries:
            return done, latest, replaced
        if key in latest:
            replaced.add(latest[key])
        latest[key] = offset
    return len(keyed), latest, replaced


@given(puts, st.lists(st.integers(1, 30), max_size=8), st.integers(1, 16), st.integers(-5, 400), st.integers(0, 400))
def test_puts_in_chunks_leave_the_map_the_model_leaves(gaps_and_keys, cuts, max_entries, first, span) -> None:
    offset, keyed = 0, []
    for gap, key in gaps_and_keys:
        offset += gap
        keyed.append((offset, b"k%d" % key))
    offset_map = OffsetMap(24 * 16)
    done, chunks = 0, []
    for cut in [*cuts, len(keyed)]:
        chunks.append(keyed[done : done + cut])
        done += cut
    put_count = 0
    for chunk in chunks:  # chunks of any size: some take the distinct-key path, some one put at a time
        count = put(offset_map, chunk, max_entries=max_entries)
        put_count += count
        if count < len(chunk):
            break
    expected_count, latest, replaced = model(keyed, max_entries)
    assert put_count == expected_count
    assert offset_map.entries == len(latest)
    assert {key: offset_map.get(key) for key in latest} == latest
    bits = offset_map.superseded_in(first, first + span)
    if first < keyed[0][0]:
        assert bits == 0  # no answer for a range starting below the first put
    else:
        assert {first + i for i in range(span + 1) if bits >> i & 1} == {
            o for o in replaced if first <= o <= first + span
        }


class _FirstByteMd5:
    """A stand-in for MD5 under which keys with the same first byte collide."""

    def __init__(self, key: bytes) -> None:
        self._digest = key[:1] * 16

    def digest(self) -> bytes:
        return self._digest


@pytest.mark.parametrize("chunked", [True, False])
def test_keys_with_the_same_md5_share_a_slot_and_the_later_put_wins(monkeypatch, chunked: bool) -> None:
    # The stand-in hash goes into the pure-Python twins (the C core's MD5 cannot be replaced).
    monkeypatch.setattr(pure, "_md5", _FirstByteMd5)
    monkeypatch.setattr(offset_map_module.native, "map_put_keys", pure.map_put_keys)
    monkeypatch.setattr(offset_map_module.native, "map_get", pure.map_get)
    keyed = [(0, b"xa"), (1, b"xb"), (2, b"xa"), (3, b"y"), (4, b"xc"), (5, b"xb")]
    offset_map = OffsetMap(24 * 8)
    for chunk in [keyed] if chunked else [[p] for p in keyed]:
        put(offset_map, chunk, max_entries=8)
    assert (offset_map.entries, offset_map.get(b"xa"), offset_map.get(b"y")) == (2, 5, 3)
    assert offset_map.superseded_in(0, 5) == 0b10111  # every put of the x-keys but the last


def test_no_superseded_bits_once_puts_stop_increasing() -> None:
    offset_map = OffsetMap(24 * 8)
    put(offset_map, [(5, b"a"), (6, b"a")], max_entries=8)
    assert offset_map.superseded_in(5, 6) == 0b01
    put(offset_map, [(2, b"a")], max_entries=8)  # `get` now answers 2: offset 5 is no longer superseded
    assert offset_map.superseded_in(0, 10) == 0
    offset_map.clear()
    put(offset_map, [(7, b"a"), (8, b"a")], max_entries=8)
    assert offset_map.superseded_in(7, 8) == 0b01


def test_no_superseded_bits_past_a_quarter_of_the_slots_memory() -> None:
    offset_map = OffsetMap(24 * 2)  # 48 bytes of slots: 12 bytes, 96 offsets, of superseded bits
    put(offset_map, [(0, b"a"), (95, b"a"), (96, b"a")], max_entries=2)
    assert offset_map.superseded_in(0, 95) == 1 | 1 << 95
    put(offset_map, [(120, b"a")], max_entries=2)  # offset 96 would need a 13th byte
    assert offset_map.superseded_in(0, 120) == 0


def test_clear_forgets_every_key_and_a_cleared_map_fills_as_a_new_one() -> None:
    offset_map = OffsetMap(24 * 8)  # (never full: `get` of an absent key probes until an empty slot)
    put(offset_map, [(0, b"a"), (1, b"b"), (2, b"c")], max_entries=7)
    offset_map.clear()
    assert (offset_map.entries, offset_map.latest_offset) == (0, -1)
    assert [offset_map.get(k) for k in (b"a", b"b", b"c")] == [-1, -1, -1]
    fresh = OffsetMap(24 * 8)
    for each in (offset_map, fresh):
        put(each, [(10, b"c"), (11, b"d"), (12, b"e"), (13, b"f")], max_entries=7)
    assert [offset_map.get(k) for k in (b"a", b"c", b"d", b"e", b"f")] == [-1, 10, 11, 12, 13]
    assert (offset_map.entries, offset_map.superseded_in(10, 13)) == (fresh.entries, fresh.superseded_in(10, 13))


def test_a_map_as_large_as_kafkas_default_dedupe_buffer_is_not_written_up_front() -> None:
    offset_map = OffsetMap(128 * 1024 * 1024)  # log.cleaner.dedupe.buffer.size
    assert offset_map.slots == 128 * 1024 * 1024 // 24
    put(offset_map, [(0, b"a"), (1, b"b"), (2, b"a")], max_entries=offset_map.slots)
    assert (offset_map.get(b"a"), offset_map.get(b"b"), offset_map.get(b"c")) == (2, 1, -1)
    assert offset_map.superseded_in(0, 2) == 0b001
