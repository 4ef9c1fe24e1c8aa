"""Where a segment's offsets stop increasing: the end of the prefix recovery can keep.

A batch's base offset is not covered by its CRC, so one flipped bit there gives a batch that every
reader judges valid but whose offsets are out of order. Kafka's recovery notices only where it
appends an index entry (`OffsetIndex.append` throws InvalidOffsetException) and then empties the
whole segment. We cut the segment instead, at the first batch that breaks the order, and keep every
earlier batch; recovery quarantines the rest (:mod:`storage_core.quarantine`).

Which batch breaks the order: batch i whose first offset is not above the last offset of batch
i-1. Then either batch i went down, or batch i-1 went up. Batch i-1 is taken as the culprit (the
cut moves to it) when batch i is in order with batch i-2 (or i-1 is the first batch) and batch i+1
is not in order with batch i-1: a batch that jumped ahead leaves its successors below it. The
first offset of a batch is its header's (the base offset for magic 2, the offset of a v0/v1 entry,
which is its last). The next segment's base offset, when known, bounds the last batch too, as if it
were one more batch. Framing that cannot be walked ends the check: what follows is recovery's
torn-tail and CRC business.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from storage_core import native
from storage_core.errors import CorruptDataError
from storage_core.native.layout import (
    STOP_BAD_MAGIC,
    STOP_END,
    STOP_PAST_END,
    STOP_SIZE_TOO_SMALL,
    STOP_TRUNCATED_HEADER,
    STOP_V2_TOO_SMALL,
    W_HAVE_LAST,
    W_LAST_OFFSET,
    WF_CHECK_ORDER,
    walk_state,
)
from storage_core.records.batch import LOG_OVERHEAD, RECORD_BATCH_OVERHEAD
from storage_core.records.file_records import HEADER_SIZE_UP_TO_MAGIC, Buffer
from storage_core.records.legacy import RECORD_OVERHEAD_V0, LegacyBatch

# A v2 batch's base offset, length, magic and last offset delta in one unpack (skipped: the partition
# leader epoch, CRC and attributes); the first 17 bytes, up to the magic, are common to every magic.
_V2_OFFSETS = struct.Struct(">qi4xb6xi")
_FRAME = struct.Struct(">qi4xb")


class _Span(NamedTuple):
    position: int
    first: int
    last: int


def _spans(buffer: Buffer, next_segment_base: int | None) -> list[_Span]:
    """Each entry's position, first and last offset, framed as `iterate_batches` frames them (and
    stopping where it would raise), without a batch object per v2 batch: this walk runs over every
    segment recovery reads, beside the native walk, so at small batches its Python loop is a large
    part of a load (bench/README.md, recover end to end)."""
    spans = []
    append, unpack, end = spans.append, _V2_OFFSETS.unpack_from, len(buffer)
    position = 0
    while position + HEADER_SIZE_UP_TO_MAGIC < end:
        if position + _V2_OFFSETS.size <= end:
            base, size, magic, delta = unpack(buffer, position)
        else:  # a short entry (a legacy one, or a header cut short): the frame alone
            base, size, magic, delta = *_FRAME.unpack_from(buffer, position), 0
        batch_end = position + LOG_OVERHEAD + size
        if size < RECORD_OVERHEAD_V0 or batch_end > end:
            break  # iterate_batches: CorruptRecordError, or the end of the whole batches
        if magic == 2:
            if size + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD:
                break  # RecordBatch: shorter than its header
            append(_Span(position, base, base + delta))
        elif magic in (0, 1):
            try:
                last = LegacyBatch(buffer, position).last_offset
            except CorruptDataError:
                break
            append(_Span(position, last, last))
        else:
            break
        position = batch_end
    if next_segment_base is not None:
        spans.append(_Span(len(buffer), next_segment_base, next_segment_base))  # the next segment, as a batch
    return spans


_FRAMING_STOPS = frozenset(
    (STOP_END, STOP_TRUNCATED_HEADER, STOP_SIZE_TOO_SMALL, STOP_PAST_END, STOP_BAD_MAGIC, STOP_V2_TOO_SMALL)
)


def _in_order(buffer: Buffer, next_segment_base: int | None) -> bool:
    """True when the native walk proves the segment in order: every v2 batch's base offset above the
    last offset before it, up to where the framing ends (where :func:`_spans` ends too), and the
    last one below the next segment's base. False decides nothing: a legacy entry, an offset beyond
    int64 or an order break go the batch-by-batch way of :func:`_spans`."""
    state = walk_state(end=len(buffer), flags=WF_CHECK_ORDER)
    if native.walk(memoryview(buffer), state, bytearray(), bytearray()) not in _FRAMING_STOPS:
        return False
    return next_segment_base is None or not state[W_HAVE_LAST] or state[W_LAST_OFFSET] < next_segment_base


def first_out_of_order(buffer: Buffer, *, next_segment_base: int | None = None) -> tuple[int, str] | None:
    """The position of the first batch whose offsets break the increasing order, and why; None if none does.

    Args:
        buffer: a `.log` file's bytes.
        next_segment_base: the next segment's base offset (every offset here must be below it), or None.
    """
    return None if _in_order(buffer, next_segment_base) else _first_break(buffer, next_segment_base)


def _first_break(buffer: Buffer, next_segment_base: int | None) -> tuple[int, str] | None:
    """:func:`first_out_of_order` batch by batch (the module docstring's rule over :func:`_spans`)."""
    spans = _spans(buffer, next_segment_base)
    for i in range(1, len(spans)):
        current, previous = spans[i], spans[i - 1]
        if current.first > previous.last:
            continue
        before = spans[i - 2] if i >= 2 else None
        after = spans[i + 1] if i + 1 < len(spans) else None
        previous_jumped = (before is None or current.first > before.last) and (
            after is None or after.first <= previous.last
        )
        culprit = previous if previous_jumped else current
        if culprit.position == len(buffer):
            return None  # the next segment starts too low: that is its own problem, not this segment's
        what = "the next segment" if current.position == len(buffer) else f"the batch at position {current.position}"
        return (
            culprit.position,
            f"offsets not increasing: {what} starts at offset {current.first}, not above offset {previous.last}"
            f" of the batch at position {previous.position}; cut at the batch at position {culprit.position}",
        )
    return None
