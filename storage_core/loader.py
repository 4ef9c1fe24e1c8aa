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
   fails its sanity check or is a zero-filled preallocated file; give a segment with a missing time
   index an empty one.
6. Unless the log dir had a clean shutdown, recover every segment from the one holding the recovery
   point on: CRC-validate every batch, cut the log at the first invalid one, rebuild the indexes, the
   txn index, the producer state and the leader-epoch cache. After a truncation every later segment
   is deleted. A log end offset below the log start offset deletes every segment.
7. An empty log gets an empty segment at the log start offset.
8. Truncate the leader-epoch cache to [log start offset, log end offset); rebuild producer state up
   to the log end offset and snapshot it, as a clean close would.
9. fsync the directory. The caller then checkpoints the recovery point (= log end offset, since
   everything is flushed) and the log start offset, and writes `.kafka_cleanshutdown`.

Crash story: every step is one of Kafka's own file changes in Kafka's order, so a crash at any
point leaves a directory that this loader (or a broker) recovers to the same end state. In a dry
run no file changes; the result lists what a real run would do.

Deep verify (`deep_verify=True`) also CRC-checks the segments below the recovery point, which Kafka
never re-reads, and reports a bad batch there as `corruption_detected` without truncating history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from storage_core import names
from storage_core.errors import CorruptIndexError, InvalidOffsetError, OffsetOverflowError, StorageError
from storage_core.fs import FileSystem, default_fs
from storage_core.leader_epoch import LeaderEpochCache, read_leader_epoch_checkpoint, write_leader_epoch_checkpoint
from storage_core.load_actions import ActionKind, LoadAction
from storage_core.partition_segments import PartitionSegments, SegmentSettings
from storage_core.producer_rebuild import rebuild_producer_state, replay_recovered_batch
from storage_core.producer_state import ProducerStateManager
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
        dry_run: change nothing; report what would be done.
    """

    had_clean_shutdown: bool
    recovery_point: int
    log_start_offset: int
    now_ms: int
    settings: SegmentSettings = field(default_factory=SegmentSettings)
    producer_id_expiration_ms: int = 86_400_000
    deep_verify: bool = False
    dry_run: bool = False


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
        return sum(1 for a in self.actions if a.kind == ActionKind.DELETE_SEGMENT)

    @property
    def segments_recovered(self) -> int:
        return sum(1 for a in self.actions if a.kind == ActionKind.RECOVER_SEGMENT)


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
    return _Loader(Path(dir_path), options, fs).load()


class _Loader:
    def __init__(self, dir_path: Path, options: LoadOptions, fs: FileSystem) -> None:
        self.dir = dir_path
        self.options = options
        self.fs = fs
        self.actions: list[LoadAction] = []
        self.segments = PartitionSegments(dir_path, options.settings, dry_run=options.dry_run, fs=fs)
        epoch_path = dir_path / names.LEADER_EPOCH_CHECKPOINT
        self._epochs_before = read_leader_epoch_checkpoint(epoch_path, fs=fs) if fs.exists(epoch_path) else []
        self.epochs = LeaderEpochCache(list(self._epochs_before))
        self.psm = ProducerStateManager(dir_path, producer_id_expiration_ms=options.producer_id_expiration_ms, fs=fs)
        self.corruption_found = False

    def load(self) -> LoadResult:
        options = self.options
        # Passes 1-4: temp files and interrupted swaps.
        self.actions += complete_swaps_and_remove_temp_files(self.dir, self.segments.view, fs=self.fs)
        # Passes 5 and 6 (load segment files, recover after an unclean shutdown), retried after
        # splitting a segment whose offsets overflow, as Kafka's retryOnOffsetOverflow does.
        while True:
            try:
                self._load_segment_files()
                log_end_offset = self._recover_log()
                break
            except OffsetOverflowError as exc:
                if options.dry_run:
                    raise
                self._split(names.offset_from_file_name(exc.segment.name))
        # Leader epochs, log start offset, producer state.
        self.epochs.truncate_from_end(log_end_offset)
        first_base = self.segments.base_offsets()[0]  # there is always one: an empty log gets one
        log_start_offset = max(options.log_start_offset, first_base)
        self.epochs.truncate_from_start(options.log_start_offset)
        self._write_leader_epochs()
        self._rebuild_producer_state(log_end_offset)
        if not options.dry_run:
            self.segments.flush_dir()
        return LoadResult(
            log_start_offset=log_start_offset,
            log_end_offset=log_end_offset,
            first_segment_base_offset=first_base,
            actions=tuple(self.actions),
            corruption_found=self.corruption_found,
        )

    def _split(self, base_offset: int) -> None:
        new_bases = split_overflowed_segment(
            self.dir,
            base_offset,
            index_interval_bytes=self.options.settings.index_interval_bytes,
            segment_index_bytes=self.options.settings.segment_index_bytes,
            fs=self.fs,
        )
        self.actions.append(
            LoadAction(
                ActionKind.SPLIT_SEGMENT,
                names.log_file(self.dir, base_offset).name,
                base_offset,
                0,
                f"offsets overflow the segment's relative range: split at {new_bases}",
            )
        )
        self.segments = PartitionSegments(self.dir, self.options.settings, dry_run=False, fs=self.fs)

    # -- pass 5 ---------------------------------------------------------------------------------

    def _load_segment_files(self) -> None:
        self.actions += self.segments.delete_orphan_indexes()
        for base_offset in self.segments.base_offsets():
            reason = self.segments.index_problem(base_offset)
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
                    base_offset, reason="unclean shutdown: at or above the recovery point"
                )
                if truncated > 0:
                    for later in unflushed[i + 1 :]:
                        self.actions += self.segments.delete_segment(
                            later, reason=f"follows segment {base_offset}, which was truncated"
                        )
                        self._mark_snapshot_deleted(later)
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

    def _recover_segment(self, base_offset: int, *, reason: str) -> int:
        """`LogLoader.recoverSegment`: producer state up to the segment, then `LogSegment.recover`."""
        earlier = [s for s in self.segments.batch_sources() if s.base_offset < base_offset]
        if self.options.dry_run:
            return self._record_recovery(base_offset, self.segments.predict_truncation(base_offset), reason)
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
        segment = self.segments.open(base_offset)
        try:
            truncated = segment.recover(
                on_batch=lambda batch: replay_recovered_batch(
                    batch, psm=psm, epochs=self.epochs, txn_index=segment.txn_index
                )
            )
        except OffsetOverflowError:
            segment.close()
            raise
        except (InvalidOffsetError, CorruptIndexError) as exc:
            # Kafka: "Found invalid offset during recovery. Deleting the corrupt segment and creating an empty one".
            # Kafka also does this on an IOException; we do not: an I/O error is the device failing, not
            # the data, and emptying a segment for it would lose data (fault class F9). It propagates
            # and the partition fails, so its log dir is not marked clean.
            truncated = segment.truncate_to(base_offset)
            reason = f"{reason}; invalid offsets ({exc}): segment emptied"
            segment.flush()  # `recover` flushes what it writes; this path wrote past it
        segment.close()
        written = psm.take_snapshot(sync_dir=False)  # the directory is fsynced once, at the end of the load
        if written is not None:
            self.actions.append(
                LoadAction(ActionKind.WRITE_SNAPSHOT, written.name, base_offset, 0, "after segment recovery")
            )
        self.psm.snapshots = psm.snapshots
        return self._record_recovery(base_offset, truncated, reason)

    def _record_recovery(self, base_offset: int, truncated: int, reason: str) -> int:
        log_name = names.log_file(self.dir, base_offset).name
        self.actions.append(LoadAction(ActionKind.RECOVER_SEGMENT, log_name, base_offset, 0, reason))
        if truncated > 0:
            self.actions.append(
                LoadAction(ActionKind.TRUNCATE_SEGMENT, log_name, base_offset, truncated, "invalid bytes at the end")
            )
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

    def _mark_snapshot_deleted(self, base_offset: int) -> None:
        if base_offset not in self.psm.snapshots:
            return
        name = names.snapshot_file(self.dir, base_offset).name
        self.actions.append(LoadAction(ActionKind.DELETE_SNAPSHOT, name, base_offset, 0, "its segment was deleted"))
        if self.options.dry_run:
            self.psm.snapshots.remove(base_offset)
            return
        marked = self.psm.mark_snapshot_for_deletion(base_offset)
        if marked is not None:
            self.fs.delete(marked)

    def _delete_all_snapshots(self, start_offset: int) -> None:
        for offset in list(self.psm.snapshots):
            name = names.snapshot_file(self.dir, offset).name
            self.actions.append(LoadAction(ActionKind.DELETE_SNAPSHOT, name, offset, 0, "producer state reset"))
        if self.options.dry_run:
            self.psm.snapshots.clear()
            self.psm.map_end_offset = start_offset
        else:
            self.psm.truncate_fully_and_start_at(start_offset)

    def _rebuild_producer_state(self, log_end_offset: int) -> None:
        if self.options.dry_run:
            return
        before = set(self.psm.snapshots)
        self.psm.remove_stray_snapshots(self.segments.base_offsets())
        rebuild_producer_state(
            self.psm,
            self.segments.batch_sources(),
            log_start_offset=self.options.log_start_offset,
            last_offset=log_end_offset,
            reload_from_clean_shutdown=self.options.had_clean_shutdown,
            now_ms=self.options.now_ms,
        )
        after = set(self.psm.snapshots)
        for offset in sorted(before - after):
            name = names.snapshot_file(self.dir, offset).name
            self.actions.append(LoadAction(ActionKind.DELETE_SNAPSHOT, name, offset, 0, "stray or out of range"))
        for offset in sorted(after - before):
            name = names.snapshot_file(self.dir, offset).name
            self.actions.append(LoadAction(ActionKind.WRITE_SNAPSHOT, name, offset, 0, "producer state"))

    def _write_leader_epochs(self) -> None:
        entries = self.epochs.entries
        if entries == self._epochs_before:
            return
        self.actions.append(
            LoadAction(
                ActionKind.UPDATE_LEADER_EPOCHS,
                names.LEADER_EPOCH_CHECKPOINT,
                -1,
                0,
                f"{len(self._epochs_before)} -> {len(entries)} entries",
            )
        )
        if not self.options.dry_run:
            write_leader_epoch_checkpoint(self.dir / names.LEADER_EPOCH_CHECKPOINT, entries, fs=self.fs)


def _from_floor(bases: list[int], offset: int) -> list[int]:
    """`LogSegments.values(offset, +inf)`: the segment holding `offset` and every later one."""
    floor = [b for b in bases if b <= offset]
    start = bases.index(floor[-1]) if floor else 0
    return bases[start:]


__all__ = ["LoadOptions", "LoadResult", "StorageError", "load_partition"]
