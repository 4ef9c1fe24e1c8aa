"""The offset map: the latest put wins, the map-full stop, and the superseded bits against an oracle."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage_core.cleaner.offset_map import OffsetMap


def test_latest_put_wins_and_unknown_keys_read_minus_one() -> None:
    offset_map = OffsetMap(24 * 8)
    assert offset_map.put_all([(3, b"a"), (4, b"b"), (9, b"a")], max_entries=8) == 3
    assert (offset_map.get(b"a"), offset_map.get(b"b"), offset_map.get(b"c")) == (9, 4, -1)
    assert (offset_map.entries, offset_map.latest_offset) == (2, 9)


def test_put_all_stops_before_a_put_once_the_map_holds_max_entries() -> None:
    offset_map = OffsetMap(24 * 8)
    # The check comes before every put, even one that would only update a key already there.
    assert offset_map.put_all([(0, b"a"), (1, b"b"), (2, b"a"), (3, b"c")], max_entries=2) == 2
    assert (offset_map.get(b"a"), offset_map.latest_offset) == (0, 1)


@pytest.mark.parametrize("key", [b"a", b"c"])
def test_any_put_into_a_full_map_is_an_error_as_in_kafka(key: bytes) -> None:
    offset_map = OffsetMap(24 * 2)
    offset_map.put_all([(0, b"a"), (1, b"b")], max_entries=3)
    with pytest.raises(ValueError, match="full"):
        offset_map.put_all([(2, key)], max_entries=3)


puts = st.lists(st.tuples(st.integers(1, 4), st.integers(0, 5)), min_size=1, max_size=80)  # (offset gap, key)


@given(puts, st.integers(-5, 400), st.integers(0, 400))
def test_superseded_bits_are_the_puts_a_later_put_replaced(gaps_and_keys, first, span) -> None:
    offset_map = OffsetMap(24 * 16)
    offset, keyed = 0, []
    for gap, key in gaps_and_keys:
        offset += gap
        keyed.append((offset, b"k%d" % key))
    offset_map.put_all(keyed, max_entries=16)
    replaced = {o for i, (o, key) in enumerate(keyed) if any(k == key for _, k in keyed[i + 1 :])}
    bits = offset_map.superseded_in(first, first + span)
    if first < keyed[0][0]:
        assert bits == 0  # no answer for a range starting below the first put
    else:
        assert {first + i for i in range(span + 1) if bits >> i & 1} == {
            o for o in replaced if first <= o <= first + span
        }
    assert all(offset_map.get(key) > o for o, key in keyed if o in replaced)


def test_no_superseded_bits_once_puts_stop_increasing() -> None:
    offset_map = OffsetMap(24 * 8)
    offset_map.put_all([(5, b"a"), (6, b"a")], max_entries=8)
    assert offset_map.superseded_in(5, 6) == 0b01
    offset_map.put_all([(2, b"a")], max_entries=8)  # `get` now answers 2: offset 5 is no longer superseded
    assert offset_map.superseded_in(0, 10) == 0
    offset_map.clear()
    offset_map.put_all([(7, b"a"), (8, b"a")], max_entries=8)
    assert offset_map.superseded_in(7, 8) == 0b01


def test_no_superseded_bits_past_a_quarter_of_the_slots_memory() -> None:
    offset_map = OffsetMap(24 * 2)  # 48 bytes of slots: 12 bytes, 96 offsets, of superseded bits
    offset_map.put_all([(0, b"a"), (95, b"a"), (96, b"a")], max_entries=2)
    assert offset_map.superseded_in(0, 95) == 1 | 1 << 95
    offset_map.put_all([(120, b"a")], max_entries=2)  # offset 96 would need a 13th byte
    assert offset_map.superseded_in(0, 120) == 0
