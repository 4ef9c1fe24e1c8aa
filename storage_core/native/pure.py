"""The pure-Python twins of the native core: the reference, and what runs where the C did not build.

Each function has the signature and the results of its namesake in `_native` (module.c), errors
and positions included; `storage_core.native` picks one of the two. The property tests in
tests/storage_core/native/ feed both the same valid and damaged inputs and compare.

* :func:`walk`: the v2 batch-chain walk (layout.py: state, stops), as in walk.c.
* :func:`frame_records`: record.py's framing of a records section.
* :func:`map_put_keys`, :func:`map_put_records`, :func:`map_get`, :func:`map_retained`: Kafka's
  SkimpyOffsetMap over the buffers of :class:`~storage_core.cleaner.offset_map.OffsetMap`
  (its docstring gives the layout and the superseded bits).
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable, Sequence
from itertools import compress, islice
from operator import lt, ne

from storage_core.errors import SegmentTooLargeError
from storage_core.native.layout import (
    INT64_MAX,
    INT64_MIN,
    M_BITS_BYTES,
    M_ENTRIES,
    M_FIRST_PUT,
    M_LAST_PUT,
    M_ORDERED,
    M_SLOTS,
    M_SUPERSEDED_VALID,
    PROBE_NONE,
    PROBE_SUPERSEDED,
    REPLAY_EVERY,
    STOP_BAD_MAGIC,
    STOP_CRC_MISMATCH,
    STOP_END,
    STOP_LEGACY,
    STOP_OFFSETS_BACKWARDS,
    STOP_PAST_END,
    STOP_REPLAY,
    STOP_SIZE_TOO_SMALL,
    STOP_SLOW,
    STOP_TRUNCATED_HEADER,
    STOP_V2_TOO_SMALL,
    W_BATCH_POSITION,
    W_BATCHES,
    W_END,
    W_EPOCH_FLOOR,
    W_FLAGS,
    W_HAVE_LAST,
    W_HAVE_SKIPPED,
    W_INTERVAL,
    W_LAST_INDEX_ENTRY,
    W_LAST_OFFSET,
    W_MAX_TIMESTAMP,
    W_OFFSET_OF_MAX,
    W_OI_CAPACITY,
    W_OI_COUNT,
    W_OI_LAST,
    W_POSITION,
    W_REPLAY,
    W_SEGMENT_BASE,
    W_SKIPPED_LAST,
    W_TI_CAPACITY,
    W_TI_COUNT,
    W_TI_LAST_OFFSET,
    W_TI_LAST_TIMESTAMP,
    WF_CHECK_OFFSETS,
    WF_CHECK_ORDER,
    WF_INDEX,
    WF_VERIFY_CRC,
)
from storage_core.records.crc import crc32c as crc32c
from storage_core.records.record import RecordFrame
from storage_core.records.record import frame_records as frame_records

try:  # CPython's own MD5: twice as fast as OpenSSL 3's for short keys (no per-call algorithm fetch)
    from _md5 import md5 as _md5
except ImportError:  # a CPython built without its builtin hashes
    from hashlib import md5 as _md5

Buffer = bytes | bytearray | memoryview

_INT32_MAX = 2**31 - 1
# The frame every entry has (base offset, size, magic), and a v2 header through its producer id.
_FRAME = struct.Struct(">qi4xb")
_V2 = struct.Struct(">qiibIhiqqq")
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


def md5(data: Buffer) -> bytes:
    """The 16-byte MD5 digest of `data`."""
    return _md5(data).digest()


def _stop_of(view: memoryview, position: int, end: int) -> int:
    """Why the entry at `position` is not a walkable v2 batch (walk.c's checks, in their order)."""
    _, size, magic = _FRAME.unpack_from(view, position)
    if size < 14:
        return STOP_SIZE_TOO_SMALL
    if position + 12 + size > end:
        return STOP_PAST_END
    if magic in (0, 1):
        return STOP_LEGACY
    if magic != 2:
        return STOP_BAD_MAGIC
    return STOP_V2_TOO_SMALL


def walk(buffer: Buffer, state: array, offset_entries: bytearray, time_entries: bytearray) -> int:
    """Walk v2 batches from `state[W_POSITION]` until a stop (layout.py); see walk.c.

    Raises:
        SegmentTooLargeError: `buffer` is longer than 2**31 - 1 bytes (its positions are ints).
    """
    view = memoryview(buffer)
    if len(view) > _INT32_MAX:
        raise SegmentTooLargeError(len(view))
    position, end = state[W_POSITION], state[W_END]
    if end < 0 or end > len(view):
        end = len(view)
    flags, segment_base, interval = state[W_FLAGS], state[W_SEGMENT_BASE], state[W_INTERVAL]
    verify, check_offsets, index = flags & WF_VERIFY_CRC, flags & WF_CHECK_OFFSETS, flags & WF_INDEX
    check_order = flags & WF_CHECK_ORDER
    replay, epoch_floor = state[W_REPLAY], state[W_EPOCH_FLOOR]
    batches, have_last, last_offset = state[W_BATCHES], state[W_HAVE_LAST], state[W_LAST_OFFSET]
    last_index_entry, max_ts, offset_of_max = state[W_LAST_INDEX_ENTRY], state[W_MAX_TIMESTAMP], state[W_OFFSET_OF_MAX]
    oi_count, oi_capacity, oi_last = state[W_OI_COUNT], state[W_OI_CAPACITY], state[W_OI_LAST]
    ti_count, ti_capacity = state[W_TI_COUNT], state[W_TI_CAPACITY]
    ti_last_ts, ti_last = state[W_TI_LAST_TIMESTAMP], state[W_TI_LAST_OFFSET]
    have_skipped, skipped_last = state[W_HAVE_SKIPPED], state[W_SKIPPED_LAST]
    unpack_v2, pack_offset, pack_time, crc = _V2.unpack_from, _OFFSET_ENTRY.pack, _TIME_ENTRY.pack, crc32c
    int32_max, int64_min, int64_max = _INT32_MAX, INT64_MIN, INT64_MAX
    check_any = check_offsets or check_order
    if position < 0:
        position = end
    # One pass per batch, the common case first: the names above are locals (not globals) and the
    # end-of-buffer tests are one comparison while a whole header fits (61 > 17), as the tight loop
    # of a pure-Python walk costs per test (bench/README.md, the pure path at 200 B batches).
    while True:
        if position + 61 > end:
            if position >= end:
                stop = STOP_END
            elif position + 17 >= end:
                stop = STOP_TRUNCATED_HEADER
            else:
                stop = _stop_of(view, position, end)
            break
        base, size, epoch, magic, crc_stored, _, delta, _, batch_max, producer_id = unpack_v2(view, position)
        batch_end = position + 12 + size
        if magic != 2 or size < 49 or batch_end > end:
            stop = _stop_of(view, position, end)
            break
        if verify and crc(view[position + 21 : batch_end]) != crc_stored:
            stop = STOP_CRC_MISMATCH
            break
        last = base + delta
        if last > int64_max or last < int64_min:
            stop = STOP_SLOW
            break
        if (
            check_any
            and have_last
            and ((check_offsets and last <= last_offset) or (check_order and base <= last_offset))
        ):
            stop = STOP_OFFSETS_BACKWARDS
            break
        if index:
            rel = last - segment_base
            if rel < 0 or rel > int32_max:
                stop = STOP_SLOW  # OffsetOverflowError, raised by the Python side
                break
            if batch_max > max_ts:
                new_max, new_offset_of_max = batch_max, last
            else:
                new_max, new_offset_of_max = max_ts, offset_of_max
            if position - last_index_entry > interval:
                if oi_count >= oi_capacity or (oi_count and rel <= oi_last) or ti_count >= ti_capacity - 1:
                    stop = STOP_SLOW  # the index is full or the offsets go backwards
                    break
                previous_ts = -1
                if ti_count:
                    offset_rel = new_offset_of_max - segment_base
                    if not int64_min <= offset_rel <= int64_max or offset_rel < ti_last or new_max < ti_last_ts:
                        stop = STOP_SLOW
                        break
                    previous_ts = ti_last_ts
                time_rel = None
                if new_max > previous_ts:
                    time_rel = new_offset_of_max - segment_base
                    if not 0 <= time_rel <= int32_max:
                        stop = STOP_SLOW
                        break
                offset_entries += pack_offset(rel, position)
                oi_count, oi_last = oi_count + 1, rel
                if time_rel is not None:
                    time_entries += pack_time(new_max, time_rel)
                    ti_count, ti_last_ts, ti_last = ti_count + 1, new_max, time_rel
                last_index_entry = position
            max_ts, offset_of_max = new_max, new_offset_of_max
        batches += 1
        have_last, last_offset = 1, last
        if replay:  # REPLAY_NONE is 0
            if replay == REPLAY_EVERY or producer_id >= 0 or (epoch >= 0 and epoch > epoch_floor):
                state[W_BATCH_POSITION] = position
                position = batch_end
                stop = STOP_REPLAY
                break
            have_skipped, skipped_last = 1, last
        position = batch_end
    state[W_POSITION] = position
    state[W_BATCHES] = batches
    state[W_HAVE_LAST] = have_last
    state[W_LAST_OFFSET] = last_offset
    state[W_LAST_INDEX_ENTRY] = last_index_entry
    state[W_MAX_TIMESTAMP] = max_ts
    state[W_OFFSET_OF_MAX] = offset_of_max
    state[W_OI_COUNT] = oi_count
    state[W_OI_LAST] = oi_last
    state[W_TI_COUNT] = ti_count
    state[W_TI_LAST_TIMESTAMP] = ti_last_ts
    state[W_TI_LAST_OFFSET] = ti_last
    state[W_HAVE_SKIPPED] = have_skipped
    state[W_SKIPPED_LAST] = skipped_last
    return stop


# -- the offset map ------------------------------------------------------------------------------

_ENTRY_SIZE = 24
_HASH_SIZE = 16
_SLOT_OFFSET = struct.Struct(">q")
_PROBE = struct.Struct(">i")
_EMPTY = bytes(_ENTRY_SIZE)


def _position(slots: Buffer, state: array, digest: bytes, attempt: int = 0) -> tuple[int, bool]:
    """The position of the slot holding `digest` (and True), or of the empty slot where it
    belongs (and False), probing from `attempt` on.

    Raises:
        ValueError: every slot was visited (a full map and an absent key).
    """
    count, probe_of = state[M_SLOTS], _PROBE.unpack_from
    while attempt <= count + 12:
        if attempt <= _HASH_SIZE - 4:
            probe = abs(probe_of(digest, attempt)[0])
        else:  # |the last hashed probe| + 1, + 2, ...: `count` consecutive slots, so every one is visited
            probe = abs(probe_of(digest, _HASH_SIZE - 4)[0]) + attempt - (_HASH_SIZE - 4)
        position = probe % count * _ENTRY_SIZE
        slot = slots[position : position + _ENTRY_SIZE]
        if slot.startswith(digest):
            return position, True
        if slot == _EMPTY:
            return position, False
        attempt += 1
    raise ValueError("the offset map is full")


def _supersede(bits: Buffer, state: array, offset: int) -> None:
    """Note that a later put replaced the put at `offset`; the bits go once over their share."""
    if not state[M_SUPERSEDED_VALID]:
        return
    bit = offset - state[M_FIRST_PUT]
    if bit < 0 or (bit >> 3) + 1 > state[M_BITS_BYTES]:
        state[M_SUPERSEDED_VALID] = 0  # over its share: the cleaner looks keys up instead
        return
    bits[bit >> 3] |= 1 << (bit & 7)


def map_put_keys(
    slots: Buffer, bits: Buffer, state: array, offsets: Sequence[int], keys: Sequence[bytes], max_entries: int
) -> int:
    """Put each (offsets[i], keys[i]) in order, stopping before a put once the map holds
    `max_entries` keys (the cleaner's `maxDesiredMapSize` check, made before every put).

    When the puts cannot fill the map and their offsets strictly increase past every earlier put,
    each distinct key is hashed and probed once, with its last offset: the map (slots, count,
    superseded bits) ends as the puts one by one would leave it.

    Returns:
        How many were put.

    Raises:
        ValueError: a put finds every slot taken (only if `max_entries` exceeds the slots).
    """
    count = len(offsets)
    if (
        count
        and state[M_ENTRIES] + count <= min(max_entries, state[M_SLOTS])
        and state[M_ORDERED]
        and offsets[0] > state[M_LAST_PUT]
        and all(map(lt, offsets, islice(offsets, 1, None)))
    ):
        _put_distinct(slots, bits, state, offsets, keys)
        return count
    return _put_each(slots, bits, state, offsets, keys, max_entries)


def _put_distinct(slots: Buffer, bits: Buffer, state: array, offsets: Sequence[int], keys: Sequence[bytes]) -> None:
    """`map_put_keys`'s fast path; its conditions hold."""
    last = dict(zip(keys, offsets, strict=True))  # each key's last offset, in order of first put
    count, probe_of = state[M_SLOTS], _PROBE.unpack_from
    offset_of, write_offset = _SLOT_OFFSET.unpack_from, _SLOT_OFFSET.pack_into
    entries = state[M_ENTRIES]
    if not entries:
        state[M_FIRST_PUT] = offsets[0]
    first_put, limit = state[M_FIRST_PUT], state[M_BITS_BYTES]
    direct = state[M_SUPERSEDED_VALID] and ((offsets[-1] - first_put) >> 3) + 1 <= limit
    for key, offset in last.items():
        digest = _md5(key).digest()
        position = abs(probe_of(digest)[0]) % count * _ENTRY_SIZE  # _position's first probe, inlined
        slot = slots[position : position + _ENTRY_SIZE]
        found = slot.startswith(digest)
        if not (found or slot == _EMPTY):
            position, found = _position(slots, state, digest, attempt=1)
        if found:
            replaced = offset_of(slots, position + _HASH_SIZE)[0]
            if replaced > offset:  # another key of these puts with the same MD5, put later: it wins
                replaced, offset = offset, replaced
            if direct:
                bit = replaced - first_put
                bits[bit >> 3] |= 1 << (bit & 7)
            else:
                _supersede(bits, state, replaced)
        else:
            slots[position : position + _HASH_SIZE] = digest
            entries += 1
        write_offset(slots, position + _HASH_SIZE, offset)
    state[M_ENTRIES], state[M_LAST_PUT] = entries, offsets[-1]
    if len(last) < len(offsets) and state[M_SUPERSEDED_VALID]:
        # Replaced by a later put of the same key among these.
        for offset in compress(offsets, map(ne, offsets, map(last.__getitem__, keys))):
            if direct:
                bit = offset - first_put
                bits[bit >> 3] |= 1 << (bit & 7)
            else:
                _supersede(bits, state, offset)


def _put_each(
    slots: Buffer, bits: Buffer, state: array, offsets: Sequence[int], keys: Sequence[bytes], max_entries: int
) -> int:
    """`map_put_keys` one put at a time."""
    offset_of, write_offset = _SLOT_OFFSET.unpack_from, _SLOT_OFFSET.pack_into
    done = 0
    for offset, key in zip(offsets, keys, strict=True):
        entries = state[M_ENTRIES]
        if entries >= max_entries:
            break
        if entries >= state[M_SLOTS]:  # Kafka's require(entries < slots), before probing a full map forever
            raise ValueError("the offset map is full")
        digest = _md5(key).digest()
        position, found = _position(slots, state, digest)
        if offset <= state[M_LAST_PUT]:
            state[M_SUPERSEDED_VALID] = state[M_ORDERED] = 0  # not increasing: the bits could not be trusted
        state[M_LAST_PUT] = offset
        if found:
            _supersede(bits, state, offset_of(slots, position + _HASH_SIZE)[0])
        else:
            if not entries:
                state[M_FIRST_PUT] = offset
            slots[position : position + _HASH_SIZE] = digest
            state[M_ENTRIES] = entries + 1
        write_offset(slots, position + _HASH_SIZE, offset)
        done += 1
    return done


def map_get(slots: Buffer, bits: Buffer, state: array, key: bytes) -> int:
    """The offset stored for `key`, or -1 (ValueError: a full map and an absent key)."""
    position, found = _position(slots, state, _md5(key).digest())
    return _SLOT_OFFSET.unpack_from(slots, position + _HASH_SIZE)[0] if found else -1


def _keyed(data: bytes, frames: list[RecordFrame], base_offset: int) -> list[tuple[int, bytes | None, bool]]:
    """(offset, key, is a tombstone) of each framed record."""
    return [
        (base_offset + offset_delta, data[key_at : key_at + key_length] if key_length >= 0 else None, value_length < 0)
        for _, _, offset_delta, key_at, key_length, _, value_length, _ in frames
    ]


def _in_order(records: list[tuple[int, bytes | None, bool]], base_offset: int, last_offset: int) -> bool:
    """Whether the records' offsets strictly increase inside [base offset, last offset]."""
    previous = base_offset - 1
    for offset, _, _ in records:
        if offset <= previous:
            return False
        previous = offset
    return previous <= last_offset


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
    """Frame a batch's records section (:func:`frame_records`; its errors) and put the key of each
    record with a key and an offset >= `start`, in order, as :func:`map_put_keys`.

    Returns:
        (records framed, whether their offsets strictly increase inside [base offset, last offset],
        puts made, the index of the record whose put would have passed `max_entries` (-1 if none),
        the last offset put (-1 if none)).
    """
    records = _keyed(data, frame_records(data, count), base_offset)

    def put_keys(offsets: list[int], keys: list[bytes]) -> int:
        return map_put_keys(slots, bits, state, offsets, keys, max_entries)

    return put_keyed_records(records, base_offset, last_offset, start, put_keys)


def put_keyed_records(
    records: list[tuple[int, bytes | None, bool]],
    base_offset: int,
    last_offset: int,
    start: int,
    put_keys: Callable[[list[int], list[bytes]], int],
) -> tuple[int, bool, int, int, int]:
    """:func:`map_put_records` over records already decoded as (offset, key, is tombstone): puts the
    keys of those with a key and an offset >= `start` through `put_keys` (it returns how many it
    put); the cleaner's legacy batches (no records section to frame) go this way too."""
    wanted = [index for index, (offset, key, _) in enumerate(records) if key is not None and offset >= start]
    put = put_keys([records[i][0] for i in wanted], [records[i][1] for i in wanted])  # type: ignore[misc]
    stop_index = wanted[put] if put < len(wanted) else -1
    last_put = records[wanted[put - 1]][0] if put else -1
    return len(records), _in_order(records, base_offset, last_offset), put, stop_index, last_put


def map_superseded_in(bits: Buffer, state: array, first: int, last: int) -> int:
    """Which offsets of [first, last] a later put replaced: bit i stands for offset `first + i`
    (0 when `first` is below the first put or the bits are not valid)."""
    if not state[M_SUPERSEDED_VALID] or not state[M_ENTRIES] or first < state[M_FIRST_PUT]:
        return 0
    first_put = state[M_FIRST_PUT]
    low, high = first - first_put, min(last - first_put, 8 * state[M_BITS_BYTES] - 1)
    if high < low:
        return 0
    window = int.from_bytes(bits[low >> 3 : (high >> 3) + 1], "little") >> (low & 7)
    return window & ((1 << (high - low + 1)) - 1)


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
    """Frame a batch's records section and probe its keys: what the cleaner decides a record on.

    Returns:
        (records framed, and four masks, bit i for record i: its offset is above `latest`; it is
        not above, has a key and the map holds a later offset for it (PROBE_SUPERSEDED: the
        superseded bits of [base offset, last offset] answer first; PROBE_LOOKUP: by a lookup;
        PROBE_NONE: never set); its key is null; its value is null).
    """
    records = _keyed(data, frame_records(data, count), base_offset)
    superseded = map_superseded_in(bits, state, base_offset, last_offset) if probe == PROBE_SUPERSEDED else 0
    above = later = null_key = tombstone = 0
    for index, (offset, key, is_tombstone) in enumerate(records):
        bit = 1 << index
        if key is None:
            null_key |= bit
        if is_tombstone:
            tombstone |= bit
        if offset > latest:
            above |= bit
        elif (
            key is not None
            and probe != PROBE_NONE
            and (
                (superseded and offset >= base_offset and superseded >> (offset - base_offset) & 1)
                or map_get(slots, bits, state, key) > offset
            )
        ):
            later |= bit
    return len(records), above, later, null_key, tombstone
