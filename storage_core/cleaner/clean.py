"""One cleaning pass of Kafka's log cleaner (`Cleaner.doClean`, kafka-maintenance.md §6.3-§6.6).

1. Build the key -> offset map over the dirty range [first dirty, first uncleanable), skipping
   aborted transactional data; if the map fills, the pass ends after the last record put.
2. Group the segments below the map's end offset by size (`segment.bytes`, `segment.index.bytes`).
3. Clean each group into one `.cleaned` segment (base offset of the group's first segment),
   chunk by chunk as the cleaner's read buffer sees them, keeping per key only the latest record,
   tombstones until their delete horizon, the data and markers of committed transactions, empty
   headers where producer state needs them; re-compressing kept records with the batch's codec.
4. Swap it in (:mod:`storage_core.cleaner.swap`).
Offsets never change. The CRC of a source batch is not checked (Kafka does not either).

Speed without a change of output: records are framed (:func:`frame_records`), not decoded, and a
batch is built again only when it loses a record or gains a delete horizon; otherwise its bytes are
copied. Where the map phase found a well-formed log (:class:`MapScan`), the map's superseded bits
drop a record without hashing its key again, and a batch whose every record is superseded is
dropped without being framed again (the map phase framed and checked it).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path

from storage_core import names
from storage_core.cleaner.offset_map import PROBE_LOOKUP, PROBE_NONE, PROBE_SUPERSEDED, OffsetMap
from storage_core.cleaner.swap import replace_segments, swap_actions
from storage_core.cleaner.txn_tracker import TransactionTracker, collect_aborted_txns
from storage_core.config import LogConfig
from storage_core.fs import FileSystem
from storage_core.load_actions import ActionKind, LoadAction
from storage_core.native.pure import put_keyed_records
from storage_core.records.batch import RecordBatch, build_batch
from storage_core.records.file_records import Batch, iterate_batches
from storage_core.records.legacy import LegacyBatch, build_legacy_messages
from storage_core.records.record import Record, TimestampType
from storage_core.segment import LogSegment

_INT32_MAX = 2**31 - 1
READ_BUFFER_BYTES = 524_288 // 2  # log.cleaner.io.buffer.size / threads / 2


@dataclass(slots=True)
class CleanerStats:
    """Kafka's CleanerStats for one pass."""

    bytes_read: int = 0
    messages_read: int = 0
    bytes_written: int = 0
    messages_written: int = 0
    map_bytes_read: int = 0
    map_messages_read: int = 0
    invalid_messages_read: int = 0
    buffer_utilization: float = 0.0
    elapsed_secs: float = 0.0
    elapsed_index_secs: float = 0.0

    def summary_lines(self, *, name: str, first_dirty: int, end_offset: int) -> list[str]:
        """The INFO lines Kafka's cleaner logs after a pass."""
        mb = 1024 * 1024
        secs = max(self.elapsed_secs, 1e-9)
        index_secs = max(self.elapsed_index_secs, 1e-9)
        clean_secs = max(secs - self.elapsed_index_secs, 1e-9)
        read_mb, written_mb, map_mb = self.bytes_read / mb, self.bytes_written / mb, self.map_bytes_read / mb
        reduction = 100 * (1 - self.bytes_written / self.bytes_read) if self.bytes_read else 0.0
        fewer = 100 * (1 - self.messages_written / self.messages_read) if self.messages_read else 0.0
        return [
            f"Log cleaner thread 0 cleaned log {name} (dirty section = [{first_dirty}, {end_offset}])",
            f"{read_mb:,.1f} MB of log processed in {self.elapsed_secs:,.1f} seconds ({read_mb / secs:,.1f} MB/sec).",
            f"Indexed {map_mb:,.1f} MB in {self.elapsed_index_secs:,.1f} seconds "
            f"({map_mb / index_secs:,.1f} Mb/sec, {100 * self.elapsed_index_secs / secs:,.1f}% of total time)",
            f"Buffer utilization: {100 * self.buffer_utilization:,.1f}%",
            f"Cleaned {read_mb:,.1f} MB in {secs - self.elapsed_index_secs:,.1f} seconds "
            f"({read_mb / clean_secs:,.1f} Mb/sec, "
            f"{100 * (secs - self.elapsed_index_secs) / secs:,.1f}% of total time)",
            f"Start size: {read_mb:,.1f} MB ({self.messages_read:,} messages)",
            f"End size: {written_mb:,.1f} MB ({self.messages_written:,} messages)",
            f"{reduction:,.1f}% size reduction ({fewer:,.1f}% fewer messages)",
        ]


class _Retention(enum.Enum):
    RETAIN_EMPTY = 1
    DELETE = 2
    DELETE_EMPTY = 3


Region = tuple[tuple[int, int], tuple[int, int]]  # [(segment base, position), (segment base, position))


@dataclass(frozen=True, slots=True)
class ActiveProducer:
    """A producer's state as of now: its last data offset (None if none) and epoch."""

    last_data_offset: int | None
    epoch: int


@dataclass(slots=True)
class PassContext:
    """What one pass's filtering needs (`mapped_region`: :attr:`MapScan.region`)."""

    offset_map: OffsetMap
    tracker: TransactionTracker
    config: LogConfig
    now_ms: int
    first_uncleanable_offset: int
    active_producers: dict[int, ActiveProducer]
    stats: CleanerStats = field(default_factory=CleanerStats)
    retain_legacy_deletes: bool = True
    mapped_region: Region | None = None


@dataclass(frozen=True, slots=True)
class MapScan:
    """What building the offset map read.

    Attributes:
        end_offset: the pass's end offset (`latestOffset + 1`).
        region: from the first batch the map phase read to the end of the last one, as (segment
            base, byte position) pairs, when it found there what a well-formed log guarantees:
            batch offset ranges strictly increasing, every record of every framed batch inside its
            batch's range in increasing order, no legacy batch. Inside it an offset names one
            record of one batch, so the map's superseded bits may stand for a lookup. None otherwise.
    """

    end_offset: int
    region: Region | None


def build_offset_map(
    dir_path: Path,
    bases: list[int],
    *,
    start: int,
    end: int,
    offset_map: OffsetMap,
    load_factor: float,
    log_start_offset: int,
    stats: CleanerStats,
    fs: FileSystem,
) -> MapScan:
    """Fill the map over [start, end) (records framed and checked as they are read); the pass ends at
    `latestOffset + 1`.

    A magic-2 batch's records are framed and their keys put by :meth:`OffsetMap.put_records` (the
    native core: no Python object per record), one put at a time in offset order, so a pass that
    fills the map ends on exactly the record Kafka's would.
    """
    offset_map.clear()
    tracker = TransactionTracker()
    tracker.add_aborted(
        collect_aborted_txns(
            dir_path, bases, start_offset=start, upper_offset=end, log_start_offset=log_start_offset, fs=fs
        )
    )
    floor = max((b for b in bases if b <= start), default=bases[0])
    dirty = [b for b in bases if floor <= b < end]
    max_desired = int(offset_map.slots * load_factor)
    first_read: tuple[int, int] | None = None
    end_read = (floor, 0)
    ordered = True
    previous_last: int | None = None
    for i, base in enumerate(dirty):
        next_start = dirty[i + 1] if i + 1 < len(dirty) else end
        for batch in iterate_batches(fs.mmap(names.log_file(dir_path, base))):
            if batch.last_offset < start and i == 0:
                continue
            first_read = first_read or (base, batch.position)
            end_read = (base, batch.position + batch.size_in_bytes)
            ordered = ordered and isinstance(batch, RecordBatch)
            ordered = ordered and (previous_last is None or batch.base_offset > previous_last)
            previous_last = batch.last_offset
            stats.map_bytes_read += batch.size_in_bytes
            if batch.is_control and isinstance(batch, RecordBatch):
                tracker.on_control_batch_read(batch)
                stats.map_messages_read += 1
            elif isinstance(batch, RecordBatch) and tracker.on_batch_read(batch):
                stats.map_messages_read += batch.records_count
            else:
                count, in_order, put, stop_index, last_put = _put_batch(batch, offset_map, start, max_desired)
                ordered = ordered and in_order
                if stop_index >= 0:  # the map is full: the pass ends on the record it could not put
                    stats.map_messages_read += stop_index + 1
                    if put:
                        offset_map.latest_offset = last_put
                    return MapScan(offset_map.latest_offset + 1, _region(first_read, end_read, ordered))
                stats.map_messages_read += count
            if batch.last_offset >= start:
                offset_map.latest_offset = batch.last_offset
        offset_map.latest_offset = next_start - 1
    return MapScan(offset_map.latest_offset + 1, _region(first_read, end_read, ordered))


def _put_batch(batch: Batch, offset_map: OffsetMap, start: int, max_entries: int) -> tuple[int, bool, int, int, int]:
    """Put the keys of a batch's records at or above `start` (:meth:`OffsetMap.put_records`'s result)."""
    if isinstance(batch, RecordBatch):
        return batch.frame_with(
            lambda data, count: offset_map.put_records(
                data,
                count,
                base_offset=batch.base_offset,
                last_offset=batch.last_offset,
                start=start,
                max_entries=max_entries,
            )
        )
    return put_keyed_records(
        _BatchRecords(batch).keyed,
        batch.base_offset,
        batch.last_offset,
        start,
        lambda offsets, keys: offset_map.put_all(offsets, keys, max_entries=max_entries),
    )


def _region(first_read: tuple[int, int] | None, end_read: tuple[int, int], ordered: bool) -> Region | None:
    return (first_read, end_read) if ordered and first_read is not None else None


def group_segments(
    dir_path: Path, bases: list[int], *, max_size: int, max_index_size: int, first_uncleanable: int, fs: FileSystem
) -> list[list[int]]:
    """Kafka's `groupSegmentsBySize`: consecutive segments that fit one output segment."""
    sizes = {b: fs.size(names.log_file(dir_path, b)) for b in bases}

    def index_bytes(base: int, suffix_path, entry: int) -> int:
        path = suffix_path(dir_path, base)
        return fs.size(path) // entry * entry if fs.exists(path) else 0

    groups: list[list[int]] = []
    remaining = list(bases)
    while remaining:
        group = [remaining.pop(0)]
        log_size = sizes[group[0]]
        idx = index_bytes(group[0], names.offset_index_file, 8)
        tidx = index_bytes(group[0], names.time_index_file, 12)
        while remaining:
            base = remaining[0]
            estimated_last = (remaining[1] - 1) if len(remaining) > 1 else first_uncleanable - 1
            fits = (
                log_size + sizes[base] <= max_size
                and idx + index_bytes(base, names.offset_index_file, 8) <= max_index_size
                and tidx + index_bytes(base, names.time_index_file, 12) <= max_index_size
                and (sizes[base] == 0 or estimated_last - group[0] <= _INT32_MAX)
            )
            if not fits:
                break
            log_size += sizes[base]
            idx += index_bytes(base, names.offset_index_file, 8)
            tidx += index_bytes(base, names.time_index_file, 12)
            group.append(remaining.pop(0))
        groups.append(group)
    return groups


class _BatchRecords:
    """One batch's records as the cleaner reads them, checked as `RecordBatch.records` checks them.

    A magic-2 batch is framed and its keys probed by :meth:`OffsetMap.retained` (the native core);
    a legacy batch's records are decoded. Records are built (:meth:`records`) only for a batch
    being rebuilt.
    """

    __slots__ = ("_batch", "_decoded", "keyed")

    def __init__(self, batch: Batch) -> None:
        self._batch = batch
        if isinstance(batch, LegacyBatch):
            self._decoded = batch.records()
            self.keyed = [(r.offset, r.key, r.value is None) for r in self._decoded]

    def retained(self, offset_map: OffsetMap, latest: int, probe: int) -> tuple[int, int, int, int, int]:
        """:meth:`OffsetMap.retained` for this batch's records (a legacy batch's computed here, alike)."""
        batch = self._batch
        if isinstance(batch, RecordBatch):
            return batch.frame_with(
                lambda data, count: offset_map.retained(
                    data,
                    count,
                    base_offset=batch.base_offset,
                    last_offset=batch.last_offset,
                    latest=latest,
                    probe=probe,
                )
            )
        above = later = null_key = tombstone = 0
        for index, (offset, key, is_tombstone) in enumerate(self.keyed):
            bit = 1 << index
            null_key |= bit if key is None else 0
            tombstone |= bit if is_tombstone else 0
            if offset > latest:
                above |= bit
            elif key is not None and probe != PROBE_NONE and offset_map.get(key) > offset:
                later |= bit
        return len(self.keyed), above, later, null_key, tombstone

    def records(self, indexes: list[int]) -> list[Record]:
        """The records at `indexes`."""
        batch = self._batch
        if isinstance(batch, LegacyBatch):
            return [self._decoded[index] for index in indexes]
        data, frames = batch.record_frames()
        return batch.records_at(data, (frames[index] for index in indexes))


def _filter_batch(batch: Batch, ctx: PassContext, *, mapped: bool) -> bytes | None:
    """The bytes to keep for one batch (the original, a rebuilt one, an empty header) or None.

    `mapped`: the batch lies in the map phase's region (:class:`MapScan`), so the map's
    superseded bits name its own records: a superseded record goes without a lookup, and a batch
    whose records are all superseded (hence all framed by the map phase) is not framed again.
    The records are decided on as bit masks, bit i for record i (:meth:`OffsetMap.retained`).
    """
    legacy = isinstance(batch, LegacyBatch)
    if legacy:
        can_discard = False
    elif batch.is_control:
        can_discard = ctx.tracker.on_control_batch_read(batch)
    else:
        can_discard = ctx.tracker.on_batch_read(batch)
    horizon = batch.delete_horizon_ms
    # A control batch's records go only once its delete horizon has passed.
    discard_records = can_discard and (not batch.is_control or (horizon is not None and horizon <= ctx.now_ms))
    producer = ctx.active_producers.get(batch.producer_id) if batch.producer_id >= 0 else None
    last_of_active = producer is not None and (
        batch.last_offset == producer.last_data_offset
        if producer.last_data_offset is not None
        else batch.is_control and batch.producer_epoch == producer.epoch
    )
    if (batch.producer_id >= 0 and last_of_active) or batch.next_offset == ctx.first_uncleanable_offset:
        retention = _Retention.RETAIN_EMPTY
    elif discard_records:
        retention = _Retention.DELETE
    else:
        retention = _Retention.DELETE_EMPTY
    superseded = 0  # bit i: offset base + i was superseded in the map
    if mapped and not discard_records and not batch.is_control:
        superseded = ctx.offset_map.superseded_in(batch.base_offset, batch.last_offset)
    scanned = None
    count = kept = tombstones = 0  # kept, tombstones: masks over the records
    if retention is not _Retention.DELETE and not (superseded and superseded.bit_count() == batch.records_count):
        scanned = _BatchRecords(batch)
        probe = PROBE_NONE if discard_records else PROBE_SUPERSEDED if superseded else PROBE_LOOKUP
        count, above, later, null_key, tombstones = scanned.retained(
            ctx.offset_map, ctx.offset_map.latest_offset, probe
        )
        every = (1 << count) - 1
        if discard_records:
            kept = 0
        elif batch.is_control:
            kept = every
        else:
            retain_deletes = ctx.retain_legacy_deletes if legacy else horizon is None or ctx.now_ms < horizon
            below = every & ~above
            kept = above | (below & ~null_key & ~later & (every if retain_deletes else ~tombstones))
            ctx.stats.invalid_messages_read += (below & null_key).bit_count()
    ctx.stats.messages_read += count if count else batch.records_count
    if retention is _Retention.DELETE:
        return None
    marker_for_empty_txn = can_discard and batch.is_control
    needs_horizon = not legacy and horizon is None and bool(kept) and (marker_for_empty_txn or bool(kept & tombstones))
    kept_count = kept.bit_count()
    ctx.stats.messages_written += kept_count
    if kept and kept_count == count and not needs_horizon:
        return bytes(batch.raw)
    if not kept and retention is not _Retention.RETAIN_EMPTY:
        return None
    kept_records = scanned.records([i for i in range(count) if kept >> i & 1]) if scanned else []
    log_append = batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    if kept and legacy:
        return build_legacy_messages(
            kept_records,
            magic=batch.magic,
            compression=batch.compression,
            log_append_time_ms=batch.max_timestamp if log_append else None,
        )
    return build_batch(
        kept_records,
        base_offset=batch.base_offset,
        compression=batch.compression,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional,
        is_control=batch.is_control,
        partition_leader_epoch=batch.partition_leader_epoch,
        delete_horizon_ms=(ctx.now_ms + ctx.config.delete_retention_ms if needs_horizon else horizon) if kept else None,
        log_append_time_ms=batch.max_timestamp if log_append else None,
        last_offset_delta=batch.last_offset - batch.base_offset,
        max_timestamp=batch.max_timestamp,
    )


def clean_group(
    dir_path: Path,
    group: list[int],
    bases: list[int],
    ctx: PassContext,
    *,
    legacy_horizon_ms: int,
    log_start_offset: int,
    fs: FileSystem,
) -> list[LoadAction]:
    """Clean one group of segments into `<first base>.*.cleaned` and swap it in; one action per file changed."""
    out_base = group[0]
    for suffix in names.SEGMENT_SUFFIXES:
        fs.delete(dir_path / (names.filename_prefix(out_base) + suffix + names.CLEANED_SUFFIX))
    dest = LogSegment.open(
        dir_path,
        out_base,
        index_interval_bytes=ctx.config.index_interval_bytes,
        segment_index_bytes=ctx.config.segment_index_bytes,
        file_suffix=names.CLEANED_SUFFIX,
        create=True,
        fs=fs,
    )
    ctx.tracker.cleaned_index = dest.txn_index
    last_mtime = 0
    for i, base in enumerate(group):
        log = names.log_file(dir_path, base)
        upper = group[i + 1] if i + 1 < len(group) else _next_offset(dir_path, base, fs)
        ctx.tracker.add_aborted(
            collect_aborted_txns(
                dir_path, bases, start_offset=base, upper_offset=upper, log_start_offset=log_start_offset, fs=fs
            )
        )
        last_mtime = fs.mtime_ms(log)
        ctx.retain_legacy_deletes = last_mtime > legacy_horizon_ms
        writer = _ChunkWriter(dest, ctx.stats)
        region = ctx.mapped_region
        for batch in iterate_batches(fs.mmap(log)):
            writer.read(batch.size_in_bytes)
            mapped = region is not None and region[0] <= (base, batch.position) < region[1]
            kept = _filter_batch(batch, ctx, mapped=mapped)
            if kept is not None:
                writer.keep(kept)
        writer.flush()
    dest.on_become_inactive()
    dest.flush()
    dest.close()
    for path in (
        names.log_file(dir_path, out_base, names.CLEANED_SUFFIX),
        names.offset_index_file(dir_path, out_base, names.CLEANED_SUFFIX),
        names.time_index_file(dir_path, out_base, names.CLEANED_SUFFIX),
    ):
        fs.set_mtime_ms(path, last_mtime)
    changes = replace_segments(dir_path, new_bases=[out_base], old_bases=group, fs=fs)
    return swap_actions(ActionKind.CLEAN_SEGMENT, changes, f"segments {group} cleaned into segment {out_base}")


class _ChunkWriter:
    """Appends kept batches to the cleaned segment one read-buffer chunk at a time, as the cleaner
    does (one `append` per chunk; its index entries batch by batch, :meth:`LogSegment.append`)."""

    def __init__(self, dest: LogSegment, stats: CleanerStats) -> None:
        self._dest = dest
        self._stats = stats
        self._parts: list[bytes] = []
        self._source_bytes = 0
        self._max_offset = -1

    def read(self, size: int) -> None:
        """Account for a source batch; a full read buffer ends the chunk first."""
        if self._source_bytes and self._source_bytes + size > READ_BUFFER_BYTES:
            self.flush()
        self._source_bytes += size
        self._stats.bytes_read += size

    def keep(self, data: bytes) -> None:
        self._parts.append(data)
        self._max_offset = max(self._max_offset, next(iterate_batches(data)).last_offset)

    def flush(self) -> None:
        if self._parts:
            data = b"".join(self._parts)
            self._dest.append(largest_offset=self._max_offset, records=data)
            self._stats.bytes_written += len(data)
        self._parts, self._source_bytes, self._max_offset = [], 0, -1


def _next_offset(dir_path: Path, base: int, fs: FileSystem) -> int:
    last = base
    for batch in iterate_batches(fs.mmap(names.log_file(dir_path, base))):
        last = batch.next_offset
    return last
