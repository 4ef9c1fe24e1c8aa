"""Load and recover one partition directory, exactly as Kafka's LogLoader does at broker start.

Mirrors `LogLoader.java` (`load`, `removeTempFilesAndCollectSwapFiles`, `loadSegmentFiles`,
`recoverLog`, `recoverSegment`) and the tool discipline of kafka-maintenance.md §9.2. The passes:

1. Delete `.deleted` files; delete `.swap` files at or above the smallest `.cleaned` offset (an
   interrupted clean or split); delete every `.cleaned` file.
2. Compute the range [smallest swap base offset, largest swap next offset) of the `.log.swap` files.
3. Delete every non-swap file whose offset lies in that range (the segments the swap replaces).
4. Rename the remaining `.swap` files to their final names: the interrupted swap is completed.
5. Load segments: delete orphan index files; recover a segment whose offset index is missing, whose
   txn index fails its sanity check, or (beyond Kafka, which trusts them) whose offset or time index
   fails its sanity check or is a zero-filled preallocated file, or (`recover_corrupt_segments`,
   before compaction) whose batches fail their CRC; give a segment with a missing time index an
   empty one.
6. Unless the log dir had a clean shutdown, recover every segment from the one holding the recovery
   point on: CRC-validate every batch, cut the log at the first invalid one or at the first batch
   whose offsets do not increase (:mod:`storage_core.offset_order`; Kafka empties the whole segment
   there), rebuild the indexes, the txn index, the producer state and the leader-epoch cache. A
   segment that is cut takes every later segment with it: they are deleted (and the directory
   fsynced) just before the cut, so that a crash in between leaves a cut still to do, which the next
   load finishes the same way. A log end offset below the log start offset deletes every segment.
7. An empty log gets an empty segment at the log start offset.
8. Truncate the leader-epoch cache to [log start offset, log end offset) (the effective log start: the
   checkpoint's or the first segment's base offset, whichever is larger); rebuild producer state up
   to the log end offset and snapshot it, as a clean close would.
9. fsync the directory. The caller then checkpoints the recovery point (= log end offset, since
   everything is flushed) and the log start offset, and writes `.kafka_cleanshutdown`.

Nothing is lost: every record byte the passes remove (a torn or corrupt tail, the segments after a
truncation or below the log start, a segment whose offsets cannot be served, the copies an
interrupted clean or split left) is first copied to the quarantine (:mod:`storage_core.quarantine`).
Every file change is one action of the result, in order (:mod:`storage_core.load_actions`).

Crash story: every step is one of Kafka's own file changes in Kafka's order, so a crash at any
point leaves a directory that this loader (or a broker) recovers to the same end state. A crash
between a quarantine copy and the removal it precedes leaves the bytes in the log dir and a copy
that the next run rewrites or keeps (:mod:`storage_core.quarantine`). In a dry run the same passes
run over an overlay file system (:mod:`storage_core.overlay_fs`): no file changes, and the result
lists exactly what a real run would do.

Deep verify (`deep_verify=True`) also CRC-checks the segments below the recovery point, which Kafka
never re-reads, and reports a bad batch there as `corruption_detected` without truncating history.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from storage_core import names
from storage_core.cleaner.swap import swap_actions
from storage_core.errors import CorruptIndexError, InvalidOffsetError, OffsetOverflowError, StorageError
from storage_core.fs import FileSystem, default_fs
from storage_core.leader_epoch import LeaderEpochCache, format_leader_epoch_checkpoint, read_leader_epoch_checkpoint
from storage_core.load_actions import ActionKind, FileChange, LoadAction, actions_on_failure, written
from storage_core.offset_order import first_out_of_order
from storage_core.overlay_fs import OverlayFileSystem
from storage_core.partition_segments import PartitionSegments, SegmentSettings
from storage_core.producer_rebuild import RecoveredBatchReplay, rebuild_producer_state
from storage_core.producer_state import ProducerStateManager
from storage_core.quarantine import QuarantineArea, quarantine
from storage_core.records.file_records import scan_valid_prefix
from storage_core.split import split_overflowed_segment
from storage_core.temp_files import complete_swaps_and_remove_temp_files


@dataclass(frozen=True, slots=True)
class LoadOptions:
    """How to load a partition.

    Attributes:
        had_clean_shutdown: the log dir had `.kafka_cleanshutdown` (then only segments with a
            missing or broken index are recovered).
        recovery_point: the recovery-point checkpoint for the partition (0 if absent).
        log_start_offset: the log-start-offset checkpoint for the partition (0 if absent).
        now_ms: the clock (producer expiration when snapshots are loaded).
        settings: index and segment sizes (`index.interval.bytes`, `segment.index.bytes`).
        producer_id_expiration_ms: `producer.id.expiration.ms`.
        deep_verify: also CRC-check segments below the recovery point and report bad batches.
        dry_run: change nothing; report what would be done (the load runs over an overlay file
            system unless it is given one).
        recover_corrupt_segments: also CRC-check every segment, and recover one with invalid bytes (or
            offsets out of order) as if its index were missing: cut at the first bad batch, the rest
            quarantined. The cleaner needs it: it rewrites whole segments, so it must not meet bytes it
            cannot read (Kafka's cleaner gives the partition up as uncleanable there).
        quarantine_dir: where this partition's removed record bytes go
            (`<quarantine dir>/<run id>/<log dir id>/<partition dir name>`), None if nowhere: then a
            load that must remove record bytes fails before removing them.
    """

    had_clean_shutdown: bool
    recovery_point: int
    log_start_offset: int
    now_ms: int
    settings: SegmentSettings = field(default_factory=SegmentSettings)
    producer_id_expiration_ms: int = 86_400_000
    deep_verify: bool = False
    dry_run: bool = False
    recover_corrupt_segments: bool = False
    quarantine_dir: Path | None = None


@dataclass(frozen=True, slots=True)
class LoadResult:
    """The outcome of loading one partition directory.

    Attributes:
        log_start_offset: the log start offset after load.
        log_end_offset: the next offset to be written.
        first_segment_base_offset: base offset of the first segment after load.
        actions: every change made (or, in a dry run, planned), in order.
        corruption_found: deep verify found bad batches it did not truncate.
    """

    log_start_offset: int
    log_end_offset: int
    first_segment_base_offset: int
    actions: tuple[LoadAction, ...]
    corruption_found: bool

    @property
    def truncated_bytes(self) -> int:
        return sum(a.bytes for a in self.actions if a.kind == ActionKind.TRUNCATE_SEGMENT)

    @property
    def segments_deleted(self) -> int:
        return sum(1 for a in self.actions if a.kind == ActionKind.DELETE_SEGMENT and a.file.endswith(names.LOG_SUFFIX))

    @property
    def segments_recovered(self) -> int:
        return sum(1 for a in self.actions if a.kind == ActionKind.RECOVER_SEGMENT)

    @property
    def records_quarantined(self) -> tuple[LoadAction, ...]:
        """The quarantine actions that took whole, CRC-valid batches out of live segments: records a
        reader would have returned are no longer in the log (a torn tail holds none)."""
        return tuple(
            a
            for a in self.actions
            if a.change == FileChange.QUARANTINE and a.file.endswith(names.LOG_SUFFIX) and a.first_offset >= 0
        )


def load_partition(dir_path: Path, options: LoadOptions, *, fs: FileSystem | None = None) -> LoadResult:
    """Load (and if needed recover) one partition directory in Kafka's order.

    Args:
        dir_path: the partition directory (`<topic>-<partition>`, or a `-future`/`-stray` replica).
        options: checkpoints, clock and mode.
        fs: the file system.

    Returns:
        The offsets after load and the list of actions.

    Raises:
        StorageError: corruption Kafka itself cannot load past (e.g. a non-transactional batch inside
            an open transaction), or an offset overflow that needs a segment split.
        OSError: an I/O error; the directory must be treated as offline.
    """
    fs = fs or default_fs()
    if options.dry_run and not isinstance(fs, OverlayFileSystem):
        fs = OverlayFileSystem(fs)
    return _Loader(Path(dir_path), options, fs).load()


class _Loader:
    def __init__(self, dir_path: Path, options: LoadOptions, fs: FileSystem) -> None:
        self.dir = dir_path
        self.options = options
        self.fs = fs
        self.actions: list[LoadAction] = []
        self.area = QuarantineArea(options.quarantine_dir, options.dry_run)
        self.segments = PartitionSegments(dir_path, options.settings, area=self.area, fs=fs)
        epoch_path = dir_path / names.LEADER_EPOCH_CHECKPOINT
        self._epochs_existed = fs.exists(epoch_path)
        self._epochs_before = read_leader_epoch_checkpoint(epoch_path, fs=fs) if self._epochs_existed else []
        self.epochs = LeaderEpochCache(list(self._epochs_before))
        self.epoch_starts = _EpochStarts()  # what recovered batches say, applied to `epochs` in offset order
        self.psm = ProducerStateManager(dir_path, producer_id_expiration_ms=options.producer_id_expiration_ms, fs=fs)
        self.corruption_found = False

    def load(self) -> LoadResult:
        with actions_on_failure(self.actions):
            return self._load()

    def _load(self) -> LoadResult:
        options = self.options
        # Passes 1-4: temp files and interrupted swaps.
        self.actions += complete_swaps_and_remove_temp_files(self.dir, self.segments.view, area=self.area, fs=self.fs)
        # Passes 5 and 6 (load segment files, recover after an unclean shutdown), retried after
        # splitting a segment whose offsets overflow, as Kafka's retryOnOffsetOverflow does.
        while True:
            try:
                self._load_segment_files()
                log_end_offset = self._recover_log()
                break
            except OffsetOverflowError as exc:
                self._split(names.offset_from_file_name(exc.segment.name))
        # Leader epochs, log start offset, producer state.
        self.epoch_starts.apply_to(self.epochs)
        self.epochs.truncate_from_end(log_end_offset)
        first_base = self.segments.base_offsets()[0]  # there is always one: an empty log gets one
        log_start_offset = max(options.log_start_offset, first_base)
        # Kafka's load truncates from the checkpoint's log start only and leaves entries below the first
        # segment to the next log-start increment; a retention that crashed between deleting segments
        # and rewriting the epochs would leave one there for good. The effective start does it now.
        self.epochs.truncate_from_start(log_start_offset)
        self._write_leader_epochs()
        self._rebuild_producer_state(log_end_offset)
        self.segments.flush_dir()
        return LoadResult(
            log_start_offset=log_start_offset,
            log_end_offset=log_end_offset,
            first_segment_base_offset=first_base,
            actions=tuple(self.actions),
            corruption_found=self.corruption_found,
        )

    def _split(self, base_offset: int) -> None:
        new_bases, changes = split_overflowed_segment(
            self.dir,
            base_offset,
            index_interval_bytes=self.options.settings.index_interval_bytes,
            segment_index_bytes=self.options.settings.segment_index_bytes,
            fs=self.fs,
        )
        reason = f"offsets overflow the segment's relative range: split at {new_bases}"
        self.actions += swap_actions(ActionKind.SPLIT_SEGMENT, changes, reason)
        self.segments = PartitionSegments(self.dir, self.options.settings, area=self.area, fs=self.fs)

    # -- pass 5 ---------------------------------------------------------------------------------

    def _load_segment_files(self) -> None:
        self.actions += self.segments.delete_orphan_indexes()
        for base_offset in self.segments.base_offsets():
            reason = self.segments.index_problem(base_offset)
            if reason is None and self.options.recover_corrupt_segments:
                corruption = self.segments.find_corruption(base_offset)
                if corruption is not None:
                    reason = f"{corruption[1]} at position {corruption[0]}: recovered before it is cleaned"
            if reason is None:
                self.actions += self.segments.ensure_time_index(base_offset)
                continue
            self._recover_segment(base_offset, reason=reason)

    # -- pass 6 ---------------------------------------------------------------------------------

    def _recover_log(self) -> int:
        options = self.options
        bases = self.segments.base_offsets()
        if not options.had_clean_shutdown:
            unflushed = _from_floor(bases, options.recovery_point)
            if options.deep_verify:
                self._deep_verify([b for b in bases if b not in unflushed])
            for i, base_offset in enumerate(unflushed):
                truncated = self._recover_segment(
                    base_offset, reason="unclean shutdown: at or above the recovery point", later=unflushed[i + 1 :]
                )
                if truncated > 0:
                    break
        elif options.deep_verify:
            self._deep_verify(bases)
        log_end_offset: int | None = None
        if self.segments.base_offsets():
            log_end_offset = self.segments.read_next_offset(self.segments.base_offsets()[-1])
            if log_end_offset < options.log_start_offset:
                for base_offset in self.segments.base_offsets():
                    self.actions += self.segments.delete_segment(
                        base_offset,
                        reason=(
                            f"log end offset {log_end_offset} is below the log start offset {options.log_start_offset}"
                        ),
                    )
                self.epochs.clear()
                self._delete_all_snapshots(options.log_start_offset)
                log_end_offset = None
        if not self.segments.base_offsets():
            self.actions += self.segments.create_segment(options.log_start_offset)
            log_end_offset = options.log_start_offset
        if log_end_offset is None:
            log_end_offset = self.segments.read_next_offset(self.segments.base_offsets()[-1])
        return log_end_offset

    def _recover_segment(self, base_offset: int, *, reason: str, later: Sequence[int] = ()) -> int:
        """`LogLoader.recoverSegment`: producer state up to the segment, then `LogSegment.recover`,
        cut at the first invalid batch or at the first batch whose offsets do not increase; the
        bytes cut are quarantined first.

        A segment that is cut takes the `later` segments with it (`LogLoader.recoverLog`): they are
        quarantined and deleted, and the directory fsynced, *before* the cut. Kafka cuts first; in
        this order a crash anywhere leaves either the cut still to do, which the next load does,
        deleting what is left of the later segments, or the finished result, so every run ends in
        the same state.
        """
        bases = self.segments.base_offsets()
        earlier = [s for s in self.segments.batch_sources() if s.base_offset < base_offset]
        following = [b for b in bases if b > base_offset]
        psm = ProducerStateManager(
            self.dir, producer_id_expiration_ms=self.options.producer_id_expiration_ms, fs=self.fs
        )
        rebuild_producer_state(
            psm,
            earlier,
            log_start_offset=self.options.log_start_offset,
            last_offset=base_offset,
            reload_from_clean_shutdown=False,
            now_ms=self.options.now_ms,
        )
        self.actions += psm.take_changes()
        segment = self.segments.open(base_offset)
        log_name = segment.log.path.name
        out_of_order = first_out_of_order(segment.log.buffer(), next_segment_base=following[0] if following else None)
        self.actions.append(LoadAction(ActionKind.RECOVER_SEGMENT, log_name, base_offset, 0, reason))
        cut_reason = "invalid bytes at the end"

        def keep_what_is_cut(valid_bytes: int, size: int, why: str | None = None) -> None:
            """Quarantine bytes [valid_bytes, size), then the later segments whole, before the cut."""
            nonlocal cut_reason
            if why is None and out_of_order is not None and valid_bytes == out_of_order[0]:
                why = out_of_order[1]
            elif why is None:
                tail = memoryview(segment.log.buffer())[valid_bytes:size]
                why = scan_valid_prefix(tail).invalid_reason or "invalid bytes"
            cut_reason = f"{why} (position {valid_bytes} of {size})"
            self.actions.extend(
                quarantine(
                    self.area,
                    self.dir,
                    log_name,
                    valid_bytes,
                    size,
                    reason=cut_reason,
                    fs=self.fs,
                    base_offset=base_offset,
                )
            )
            for following_base in later:
                self.actions.extend(
                    self.segments.delete_segment(
                        following_base, reason=f"follows segment {base_offset}, which is cut at position {valid_bytes}"
                    )
                )
                self.actions.extend(self._mark_snapshot_deleted(following_base))
            if later:
                self.segments.flush_dir()

        try:
            truncated = segment.recover(
                on_batch=RecoveredBatchReplay(psm=psm, epochs=self.epoch_starts, txn_index=lambda: segment.txn_index),
                end=None if out_of_order is None else out_of_order[0],
                before_truncate=keep_what_is_cut,
            )
        except OffsetOverflowError:
            segment.close()
            raise
        except (InvalidOffsetError, CorruptIndexError) as exc:
            # Kafka: "Found invalid offset during recovery. Deleting the corrupt segment and creating an empty one".
            # Kafka also does this on an IOException; we do not: an I/O error is the device failing, not
            # the data, and emptying a segment for it would lose data (fault class F9). It propagates
            # and the partition fails, so its log dir is not marked clean.
            mapping = segment.translate_offset(base_offset)
            if mapping is not None:
                keep_what_is_cut(
                    mapping.position, segment.log.size_in_bytes, f"invalid offsets ({exc}): segment emptied"
                )
            truncated = segment.truncate_to(base_offset)
            segment.flush()  # `recover` flushes what it writes; this path wrote past it
        segment.close()
        if truncated > 0:
            self.actions.append(
                LoadAction(
                    ActionKind.TRUNCATE_SEGMENT, log_name, base_offset, truncated, cut_reason, FileChange.TRUNCATE
                )
            )
        for path, change, content in segment.index_writes:
            self.actions.append(
                written(
                    ActionKind.REBUILD_INDEX,
                    path.name,
                    content,
                    existed=change == FileChange.REWRITE,
                    base_offset=base_offset,
                    reason="rebuilt by segment recovery",
                )
            )
        psm.take_snapshot(sync_dir=False)  # the directory is fsynced once, at the end of the load
        self.actions += psm.take_changes()
        self.psm.snapshots = psm.snapshots
        return truncated

    def _deep_verify(self, bases: list[int]) -> None:
        for base_offset in bases:
            problem = self.segments.find_corruption(base_offset)
            if problem is not None:
                position, why = problem
                self.corruption_found = True
                self.actions.append(
                    LoadAction(
                        ActionKind.CORRUPTION_DETECTED,
                        names.log_file(self.dir, base_offset).name,
                        base_offset,
                        0,
                        f"{why} at position {position}, below the recovery point: kept, as Kafka would",
                    )
                )

    # -- producer state and epochs ----------------------------------------------------------------

    def _mark_snapshot_deleted(self, base_offset: int) -> list[LoadAction]:
        if base_offset not in self.psm.snapshots:
            return []
        path = names.snapshot_file(self.dir, base_offset)
        size = self.fs.size(path) if self.fs.exists(path) else 0
        marked = self.psm.mark_snapshot_for_deletion(base_offset)
        if marked is None:
            return []
        self.fs.delete(marked)
        return [
            LoadAction(
                ActionKind.DELETE_SNAPSHOT, path.name, base_offset, size, "its segment was deleted", FileChange.DELETE
            )
        ]

    def _delete_all_snapshots(self, start_offset: int) -> None:
        self.psm.truncate_fully_and_start_at(start_offset)
        self.actions += self.psm.take_changes()

    def _rebuild_producer_state(self, log_end_offset: int) -> None:
        self.psm.remove_stray_snapshots(self.segments.base_offsets())
        rebuild_producer_state(
            self.psm,
            self.segments.batch_sources(),
            log_start_offset=self.options.log_start_offset,
            last_offset=log_end_offset,
            reload_from_clean_shutdown=self.options.had_clean_shutdown,
            now_ms=self.options.now_ms,
        )
        self.actions += self.psm.take_changes()

    def _write_leader_epochs(self) -> None:
        entries = self.epochs.entries
        if entries == self._epochs_before:
            return
        path = self.dir / names.LEADER_EPOCH_CHECKPOINT
        content = format_leader_epoch_checkpoint(entries)
        self.fs.write_atomic(path, content)
        self.actions.append(
            written(
                ActionKind.UPDATE_LEADER_EPOCHS,
                path.name,
                content,
                existed=self._epochs_existed,
                reason=f"{len(self._epochs_before)} -> {len(entries)} entries",
            )
        )


class _EpochStarts:
    """The leader epochs recovered batches carry, each at the first offset it was seen at.

    Kafka assigns them to the cache as each segment is recovered, in recovery order; a segment whose
    index was missing is recovered in pass 5, before the earlier segments pass 6 recovers, so the
    cache would depend on which indexes a crashed run had already rebuilt. Applied in offset order
    at the end of the load instead (`assign` for each epoch newer than the cache's latest, as
    `LogSegment.recover` does), the cache is the same whatever was recovered first.
    """

    latest_epoch = None  # `replay_recovered_batch` then offers every batch's epoch

    def __init__(self) -> None:
        self._starts: dict[int, int] = {}

    def assign(self, epoch: int, start_offset: int) -> None:
        self._starts[epoch] = min(start_offset, self._starts.get(epoch, start_offset))

    def apply_to(self, cache: LeaderEpochCache) -> None:
        for epoch, start_offset in sorted(self._starts.items(), key=lambda item: (item[1], item[0])):
            latest = cache.latest_epoch
            if latest is None or epoch > latest:
                cache.assign(epoch, start_offset)


def _from_floor(bases: list[int], offset: int) -> list[int]:
    """`LogSegments.values(offset, +inf)`: the segment holding `offset` and every later one."""
    floor = [b for b in bases if b <= offset]
    start = bases.index(floor[-1]) if floor else 0
    return bases[start:]


__all__ = ["LoadOptions", "LoadResult", "StorageError", "load_partition"]
