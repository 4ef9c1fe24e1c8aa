"""The shapes both implementations share: the walk's and the offset map's state arrays, stop codes.

Mirrors `native.h` (the C side reads the same int64 arrays through the buffer protocol). A state
is an `array('q')`, so one call passes every field without building an object per field.

Walk state (`W_*`), one `array('q')` of `W_FIELDS` int64s, read and updated by a walk:

| field | meaning |
|---|---|
| POSITION | where the next batch starts; on return, where the walk stopped (or the next batch after a REPLAY) |
| END | walk up to here (-1: the buffer's end) |
| BATCHES, HAVE_LAST, LAST_OFFSET | batches walked, and the last one's last offset (HAVE_LAST = 0: none yet) |
| FLAGS | WF_VERIFY_CRC, WF_CHECK_OFFSETS (stop where a last offset is not above the last one before), |
| | WF_CHECK_ORDER (stop where a base offset is not above the last one before), WF_INDEX (index entries) |
| SEGMENT_BASE, INTERVAL | the segment's base offset and `index.interval.bytes` |
| LAST_INDEX_ENTRY, MAX_TIMESTAMP, OFFSET_OF_MAX | `LogSegment.recover`'s running values |
| OI_COUNT, OI_CAPACITY, OI_LAST | offset index: entries, max entries, last relative offset |
| TI_COUNT, TI_CAPACITY, TI_LAST_TIMESTAMP, TI_LAST_OFFSET | time index: entries, max entries, last entry |
| REPLAY, EPOCH_FLOOR | which batches the caller replays: none, every one, or those with a producer |
| | id or a leader epoch above EPOCH_FLOOR |
| BATCH_POSITION | after a REPLAY stop: the position of the batch to replay |
| HAVE_SKIPPED, SKIPPED_LAST | the last offset of the last v2 batch walked past without a replay |

Offset map state (`M_*`): slots, entries, first put, last put, superseded bits valid, bits bytes,
ordered (every put so far had an offset above the put before it, so the last put is the largest).
"""

from __future__ import annotations

from array import array

(
    W_POSITION,
    W_END,
    W_BATCHES,
    W_HAVE_LAST,
    W_LAST_OFFSET,
    W_FLAGS,
    W_SEGMENT_BASE,
    W_INTERVAL,
    W_LAST_INDEX_ENTRY,
    W_MAX_TIMESTAMP,
    W_OFFSET_OF_MAX,
    W_OI_COUNT,
    W_OI_CAPACITY,
    W_OI_LAST,
    W_TI_COUNT,
    W_TI_CAPACITY,
    W_TI_LAST_TIMESTAMP,
    W_TI_LAST_OFFSET,
    W_REPLAY,
    W_EPOCH_FLOOR,
    W_BATCH_POSITION,
    W_HAVE_SKIPPED,
    W_SKIPPED_LAST,
    W_FIELDS,
) = range(24)

WF_VERIFY_CRC, WF_CHECK_OFFSETS, WF_INDEX, WF_CHECK_ORDER = 1, 2, 4, 8
REPLAY_NONE, REPLAY_EVERY, REPLAY_PRODUCER_OR_EPOCH = 0, 1, 2

# Why a walk stopped. END .. CRC_MISMATCH and OFFSETS_BACKWARDS end the valid prefix at POSITION;
# LEGACY and SLOW leave the batch at POSITION to the caller (a magic 0/1 entry; an offset outside
# int64 or the segment's range, or an index entry the index would refuse); REPLAY: the batch at
# BATCH_POSITION was walked and indexed, the caller replays it.
(
    STOP_END,
    STOP_TRUNCATED_HEADER,
    STOP_SIZE_TOO_SMALL,
    STOP_PAST_END,
    STOP_BAD_MAGIC,
    STOP_V2_TOO_SMALL,
    STOP_CRC_MISMATCH,
    STOP_LEGACY,
    STOP_OFFSETS_BACKWARDS,
    STOP_SLOW,
    STOP_REPLAY,
) = range(11)

# How `map_retained` probes a record's key: not at all (framing only), by a lookup, or by the
# superseded bits of the batch's offset range first and then a lookup.
PROBE_NONE, PROBE_LOOKUP, PROBE_SUPERSEDED = 0, 1, 2

M_SLOTS, M_ENTRIES, M_FIRST_PUT, M_LAST_PUT, M_SUPERSEDED_VALID, M_BITS_BYTES, M_ORDERED, M_FIELDS = range(8)

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def walk_state(*, end: int, flags: int, segment_base: int = 0, interval: int = 0, replay: int = REPLAY_NONE) -> array:
    """A fresh walk state from position 0 (raises OverflowError when a value does not fit an int64)."""
    state = array("q", bytes(8 * W_FIELDS))
    state[W_END] = end
    state[W_FLAGS] = flags
    state[W_SEGMENT_BASE] = segment_base
    state[W_INTERVAL] = interval
    state[W_MAX_TIMESTAMP] = -1
    state[W_OFFSET_OF_MAX] = -1
    state[W_REPLAY] = replay
    return state
