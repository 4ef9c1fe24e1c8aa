"""The cleaner's record reader: framing instead of decoding reads and rejects exactly what `records()` does.

The reader answers in bit masks over the records (`OffsetMap.retained`, the native core or its
twin): these tests hold the masks to what `records()` decodes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_core.cleaner.clean import _BatchRecords
from storage_core.cleaner.offset_map import PROBE_LOOKUP, PROBE_NONE, OffsetMap
from storage_core.errors import CorruptRecordError
from storage_core.records.batch import RECORD_BATCH_OVERHEAD, Record, RecordBatch, build_batch
from storage_core.records.compression import CompressionType

T = 1_700_000_000_000

records = st.lists(
    st.tuples(
        st.integers(1, 70),  # offset gap: deltas of one and two varint bytes
        st.integers(-9000, 9000),  # timestamp delta
        st.one_of(st.none(), st.binary(max_size=80)),
        st.one_of(st.none(), st.binary(max_size=200)),
        st.lists(st.tuples(st.text(max_size=4), st.one_of(st.none(), st.binary(max_size=4))), max_size=2),
    ),
    max_size=12,
)


def _batch(raw, compression: CompressionType, log_append: bool) -> RecordBatch:
    offset, built = 99, []
    for gap, ts, key, value, headers in raw:
        offset += gap
        built.append(Record(offset, T + ts, key, value, tuple(headers)))
    data = build_batch(
        built,
        base_offset=100,
        compression=compression,
        producer_id=7,
        producer_epoch=0,
        base_sequence=5,
        log_append_time_ms=T if log_append else None,
    )
    return RecordBatch(data)


@settings(max_examples=150, deadline=None)
@given(records, st.sampled_from([CompressionType.NONE, CompressionType.ZSTD]), st.booleans())
def test_keys_tombstones_and_kept_records_are_those_records_reads(raw, compression, log_append) -> None:
    batch = _batch(raw, compression, log_append)
    decoded = batch.records()
    scanned = _BatchRecords(batch)
    assert _read(scanned) == [(r.offset, r.key is None, r.value is None) for r in decoded]
    offset_map = OffsetMap(24 * 64)
    keyed = [r for r in decoded if r.key is not None]
    offset_map.put_all([r.offset for r in keyed], [r.key for r in keyed], max_entries=64)
    latest = decoded[len(decoded) // 2].offset if decoded else 0
    _, above, later, _, _ = scanned.retained(offset_map, latest, PROBE_LOOKUP)
    assert [bool(above >> i & 1) for i in range(len(decoded))] == [r.offset > latest for r in decoded]
    assert [bool(later >> i & 1) for i in range(len(decoded))] == [
        r.offset <= latest and r.key is not None and offset_map.get(r.key) > r.offset for r in decoded
    ]
    kept = list(range(0, len(decoded), 2))
    assert scanned.records(kept) == [decoded[i] for i in kept]


@settings(max_examples=300, deadline=None)
@given(records, st.data())
def test_a_damaged_records_section_is_rejected_exactly_when_records_rejects_it(raw, data) -> None:
    batch = _batch(raw, CompressionType.NONE, False)
    damaged = bytearray(batch.raw)
    if len(damaged) == RECORD_BATCH_OVERHEAD:
        return
    position = data.draw(st.integers(RECORD_BATCH_OVERHEAD, len(damaged) - 1))
    damaged[position] = data.draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, damaged[position] ^ 0x02]))
    batch = RecordBatch(bytes(damaged))
    try:
        expected = [(r.offset, r.key is None, r.value is None) for r in batch.records()]
    except CorruptRecordError as exc:
        error = exc
    else:
        assert _read(_BatchRecords(batch)) == expected
        return
    with pytest.raises(CorruptRecordError) as raised:
        _read(_BatchRecords(batch))
    assert (raised.value.position, str(raised.value)) == (error.position, str(error))


def _read(scanned: _BatchRecords) -> list[tuple[int, bool, bool]]:
    """(offset, key is null, value is null) of each record, from the masks (offsets: all above -1)."""
    count, above, _, null_key, tombstone = scanned.retained(OffsetMap(24), -(2**63), PROBE_NONE)
    offsets = [r.offset for r in scanned.records(list(range(count)))]
    assert above == (1 << count) - 1
    return [(offsets[i], bool(null_key >> i & 1), bool(tombstone >> i & 1)) for i in range(count)]
