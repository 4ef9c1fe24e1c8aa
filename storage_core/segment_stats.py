"""Per-segment statistics: what the `segment_stats` table holds for one `.log` and its indexes.

Header-level figures (batches, codecs, control and transactional batches, producer ids, timestamps)
come from the 61-byte batch headers; record-level figures (records, keyed records, tombstones,
distinct keys: exact up to 16384, then a HyperLogLog estimate) decode the records.
`invalid_bytes` is what recovery would truncate. Segments are read like a consumer reads them
(:mod:`storage_core.live.reader`: chunked preads, no lock), so statistics can be taken beside a live
broker; each row's `status` says how its read went.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.distinct_keys import DistinctKeys
from storage_core.errors import CorruptRecordError
from storage_core.fs import FileSystem, default_fs
from storage_core.live.reader import Chunk, PartitionSnapshot, ReadStatus, SegmentRead, read_partition, read_segment
from storage_core.records.compression import CompressionType
from storage_core.records.file_records import Batch, iterate_batches


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
    try:
        return fs.size(path)
    except FileNotFoundError:  # absent, or deleted since the segment was listed
        return 0


class SegmentStatsBuilder:
    """Accumulates one segment's figures from the chunks of whole, valid batches a reader passes it."""

    def __init__(self, base_offset: int) -> None:
        self.base_offset = base_offset
        self.next_offset = base_offset
        self.batches = self.records = self.control = self.transactional = self.keyed = self.tombstones = 0
        self.codecs = dict.fromkeys(CompressionType, 0)
        self.producers: set[int] = set()
        self.keys = DistinctKeys()
        self.min_ts, self.max_ts = -1, -1
        self.corrupt_records = False

    def add_chunk(self, chunk: Chunk) -> None:
        """Count the batches of `chunk` (framing and CRCs already checked by the reader)."""
        if self.corrupt_records:
            return  # figures stop at the first batch whose records cannot be decoded
        try:
            for batch in iterate_batches(chunk.buffer, end=chunk.end):
                self._add_batch(batch)
        except CorruptRecordError:
            self.corrupt_records = True

    def _add_batch(self, batch: Batch) -> None:
        self.batches += 1
        self.codecs[batch.compression] += 1
        self.control += batch.is_control
        self.transactional += batch.is_transactional
        if batch.producer_id >= 0:
            self.producers.add(batch.producer_id)
        self.next_offset = batch.next_offset
        for record in batch.records():
            self.records += 1
            if record.timestamp >= 0:
                self.min_ts = record.timestamp if self.min_ts < 0 else min(self.min_ts, record.timestamp)
                self.max_ts = max(self.max_ts, record.timestamp)
            if record.key is not None and not batch.is_control:
                self.keyed += 1
                self.keys.add(record.key)
                self.tombstones += record.value is None

    def finish(self, dir_path: Path, read: SegmentRead, *, fs: FileSystem) -> SegmentStats:
        """The segment's row, given how its read went.

        `status`: ok; invalid_tail (bytes recovery would truncate); corrupt_records (a batch whose
        records cannot be decoded); in_flight (a live active segment's batch being written: its
        bytes are not counted as invalid); changed_during_read (deleted or replaced while read: the
        figures describe the file as it was read).
        """
        status = {
            ReadStatus.OK: "ok",
            ReadStatus.INVALID: "invalid_tail",
            ReadStatus.IN_FLIGHT: "in_flight",
            ReadStatus.CHANGED_DURING_READ: "changed_during_read",
        }[read.status]
        if self.corrupt_records and read.status is not ReadStatus.CHANGED_DURING_READ:
            status = "corrupt_records"
        invalid = read.file_bytes - read.valid_bytes if read.status is ReadStatus.INVALID else 0
        base = self.base_offset
        return SegmentStats(
            base_offset=base,
            next_offset=self.next_offset,
            is_active=read.is_active,
            log_bytes=read.file_bytes,
            index_bytes=_size(names.offset_index_file(dir_path, base), fs),
            timeindex_bytes=_size(names.time_index_file(dir_path, base), fs),
            txnindex_bytes=_size(names.txn_index_file(dir_path, base), fs),
            batch_count=self.batches,
            record_count=self.records,
            control_batch_count=self.control,
            transactional_batch_count=self.transactional,
            none_batch_count=self.codecs[CompressionType.NONE],
            gzip_batch_count=self.codecs[CompressionType.GZIP],
            snappy_batch_count=self.codecs[CompressionType.SNAPPY],
            lz4_batch_count=self.codecs[CompressionType.LZ4],
            zstd_batch_count=self.codecs[CompressionType.ZSTD],
            min_timestamp=self.min_ts,
            max_timestamp=self.max_ts,
            producer_id_count=len(self.producers),
            keyed_record_count=self.keyed,
            tombstone_count=self.tombstones,
            distinct_key_estimate=self.keys.estimate(),
            invalid_bytes=invalid,
            status=status,
        )


def partition_segment_stats(
    dir_path: Path, *, live: bool, fs: FileSystem | None = None
) -> tuple[PartitionSnapshot, list[SegmentStats]]:
    """Every segment's statistics, read like a consumer (:mod:`storage_core.live.reader`; reads only).

    Args:
        dir_path: the partition directory.
        live: a broker may be writing it (the active segment's last batch may be in flight).
        fs: the file system.

    Returns:
        The snapshot the rows describe (consistent or not), and one row per segment read.
    """
    fs = fs or default_fs()
    dir_path = Path(dir_path)
    builders: dict[int, SegmentStatsBuilder] = {}

    def visit(base_offset: int, is_active: bool) -> Callable[[Chunk], None]:
        builders[base_offset] = SegmentStatsBuilder(base_offset)
        return builders[base_offset].add_chunk

    snapshot = read_partition(dir_path, live=live, visit=visit, fs=fs)
    return snapshot, [builders[r.base_offset].finish(dir_path, r, fs=fs) for r in snapshot.reads]


def segment_stats(dir_path: Path, base_offset: int, *, is_active: bool, fs: FileSystem | None = None) -> SegmentStats:
    """One segment's statistics (reads only; the directory is taken as not live)."""
    fs = fs or default_fs()
    builder = SegmentStatsBuilder(base_offset)
    read = read_segment(Path(dir_path), base_offset, is_active=is_active, live=False, on_chunk=builder.add_chunk, fs=fs)
    return builder.finish(Path(dir_path), read, fs=fs)
