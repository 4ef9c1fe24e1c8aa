"""Per-segment statistics: what the `segment_stats` table holds for one `.log` and its indexes.

Header-level figures (batches, codecs, control and transactional batches, producer ids, timestamps)
come from the 61-byte batch headers; record-level figures (records, keyed records, tombstones,
distinct keys: exact up to 16384, then a HyperLogLog estimate) decode the records.
`invalid_bytes` is what recovery would truncate.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.distinct_keys import DistinctKeys
from storage_core.errors import CorruptRecordError
from storage_core.fs import FileSystem, default_fs
from storage_core.records.compression import CompressionType
from storage_core.records.file_records import iterate_batches, scan_valid_prefix


@dataclass(frozen=True, slots=True)
class SegmentStats:
    """One segment's figures (offsets, sizes, counts, timestamps)."""

    base_offset: int
    next_offset: int
    is_active: bool
    log_bytes: int
    index_bytes: int
    timeindex_bytes: int
    txnindex_bytes: int
    batch_count: int
    record_count: int
    control_batch_count: int
    transactional_batch_count: int
    none_batch_count: int
    gzip_batch_count: int
    snappy_batch_count: int
    lz4_batch_count: int
    zstd_batch_count: int
    min_timestamp: int
    max_timestamp: int
    producer_id_count: int
    keyed_record_count: int
    tombstone_count: int
    distinct_key_estimate: int
    invalid_bytes: int
    status: str


def _size(path: Path, fs: FileSystem) -> int:
    return fs.size(path) if fs.exists(path) else 0


def segment_stats(dir_path: Path, base_offset: int, *, is_active: bool, fs: FileSystem | None = None) -> SegmentStats:
    """Compute one segment's statistics (reads only)."""
    fs = fs or default_fs()
    dir_path = Path(dir_path)
    log = names.log_file(dir_path, base_offset)
    data = fs.mmap(log)
    valid = scan_valid_prefix(data).valid_bytes
    batches = records = control = transactional = keyed = tombstones = 0
    codecs = dict.fromkeys(CompressionType, 0)
    producers: set[int] = set()
    keys = DistinctKeys()
    min_ts, max_ts = -1, -1
    next_offset = base_offset
    status = "ok" if valid == len(data) else "invalid_tail"
    try:
        for batch in iterate_batches(data, end=valid):
            batches += 1
            codecs[batch.compression] += 1
            control += batch.is_control
            transactional += batch.is_transactional
            if batch.producer_id >= 0:
                producers.add(batch.producer_id)
            next_offset = batch.next_offset
            for record in batch.records():
                records += 1
                if record.timestamp >= 0:
                    min_ts = record.timestamp if min_ts < 0 else min(min_ts, record.timestamp)
                    max_ts = max(max_ts, record.timestamp)
                if record.key is not None and not batch.is_control:
                    keyed += 1
                    keys.add(record.key)
                    tombstones += record.value is None
    except CorruptRecordError:
        status = "corrupt_records"
    return SegmentStats(
        base_offset=base_offset,
        next_offset=next_offset,
        is_active=is_active,
        log_bytes=len(data),
        index_bytes=_size(names.offset_index_file(dir_path, base_offset), fs),
        timeindex_bytes=_size(names.time_index_file(dir_path, base_offset), fs),
        txnindex_bytes=_size(names.txn_index_file(dir_path, base_offset), fs),
        batch_count=batches,
        record_count=records,
        control_batch_count=control,
        transactional_batch_count=transactional,
        none_batch_count=codecs[CompressionType.NONE],
        gzip_batch_count=codecs[CompressionType.GZIP],
        snappy_batch_count=codecs[CompressionType.SNAPPY],
        lz4_batch_count=codecs[CompressionType.LZ4],
        zstd_batch_count=codecs[CompressionType.ZSTD],
        min_timestamp=min_ts,
        max_timestamp=max_ts,
        producer_id_count=len(producers),
        keyed_record_count=keyed,
        tombstone_count=tombstones,
        distinct_key_estimate=keys.estimate(),
        invalid_bytes=len(data) - valid,
        status=status,
    )
