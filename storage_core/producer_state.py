"""Producer state: the per-producer sequence/epoch/transaction table that Kafka rebuilds on load.

Mirrors `ProducerStateManager.java`, `ProducerStateEntry.java` and `ProducerAppendInfo.java` with
`AppendOrigin.REPLICATION` semantics (replaying the log: epoch and coordinator-epoch regressions are
tolerated, sequences are not checked), which is what `LogSegment.recover` and
`UnifiedLog.rebuildProducerState` use.

State kept per producer id: the epoch, up to 5 recent batches (last sequence, last offset, offset
delta, timestamp), the coordinator epoch of the last transaction marker, the last timestamp and the
first offset of the ongoing transaction. Ongoing transactions are also kept ordered by first offset
so that the last stable offset of a completed transaction can be computed.

Snapshots (`<offset>.snapshot`, see :mod:`storage_core.producer_snapshot`) hold the table as of an
offset (exclusive). Crash story: a snapshot is written atomically (`.tmp` + rename), so a crash leaves
the old set of snapshots; a corrupt snapshot is deleted and the next older one is used, as Kafka does.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from storage_core import names
from storage_core.errors import CorruptRecordError, CorruptSnapshotError, StorageError
from storage_core.fs import FileSystem, default_fs
from storage_core.load_actions import ActionKind, FileChange, LoadAction, written
from storage_core.producer_snapshot import ProducerSnapshotEntry, encode_snapshot, list_snapshot_offsets, read_snapshot

NUM_BATCHES_TO_RETAIN = 5
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000
_INT32_MAX = 2**31 - 1


class InvalidTxnStateError(StorageError):
    """A non-transactional batch from a producer whose transaction is still open (Kafka's InvalidTxnStateException)."""


class ReplayedBatch(Protocol):
    """The batch fields producer state reads (satisfied by RecordBatch and LegacyBatch)."""

    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def last_sequence(self) -> int: ...
    @property
    def base_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def max_timestamp(self) -> int: ...
    @property
    def is_transactional(self) -> bool: ...
    @property
    def is_control(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction closed by a COMMIT or ABORT marker (`CompletedTxn.java`)."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """One remembered batch of a producer (`BatchMetadata.java`)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        """`lastSeq - offsetDelta`, wrapping below 0 back to int32 max like Kafka's `decrementSequence`."""
        if self.last_seq < self.offset_delta:
            return _INT32_MAX - (self.offset_delta - self.last_seq) + 1
        return self.last_seq - self.offset_delta


@dataclass(slots=True)
class ProducerStateEntry:
    """The state of one producer id (`ProducerStateEntry.java`)."""

    producer_id: int
    producer_epoch: int = -1
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int | None = None
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def _maybe_update_epoch(self, epoch: int) -> None:
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def to_snapshot_entry(self) -> ProducerSnapshotEntry:
        return ProducerSnapshotEntry(
            producer_id=self.producer_id,
            epoch=self.producer_epoch,
            last_sequence=self.last_seq,
            last_offset=self.last_data_offset,
            offset_delta=self.last_offset_delta,
            timestamp=self.last_timestamp,
            coordinator_epoch=self.coordinator_epoch,
            current_txn_first_offset=-1 if self.current_txn_first_offset is None else self.current_txn_first_offset,
        )

    @classmethod
    def from_snapshot_entry(cls, entry: ProducerSnapshotEntry) -> ProducerStateEntry:
        state = cls(
            producer_id=entry.producer_id,
            producer_epoch=entry.epoch,
            coordinator_epoch=entry.coordinator_epoch,
            last_timestamp=entry.timestamp,
            current_txn_first_offset=entry.current_txn_first_offset if entry.current_txn_first_offset >= 0 else None,
        )
        if entry.last_offset >= 0:
            state.batches.append(
                BatchMetadata(entry.last_sequence, entry.last_offset, entry.offset_delta, entry.timestamp)
            )
        return state


class ProducerStateManager:
    """The producer table of one partition plus its snapshot files.

    Args:
        dir_path: the partition directory holding the `.snapshot` files.
        producer_id_expiration_ms: producers idle this long (and without an open transaction) are
            dropped when a snapshot is loaded (`producer.id.expiration.ms`).
        fs: the file system.
    """

    def __init__(
        self,
        dir_path: Path,
        *,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        fs: FileSystem | None = None,
    ) -> None:
        self.dir_path = Path(dir_path)
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._fs = fs or default_fs()
        self.producers: dict[int, ProducerStateEntry] = {}
        self._ongoing: dict[int, int] = {}  # first offset -> producer id, open transactions
        self.map_end_offset = 0
        self._last_snap_offset = 0
        self.snapshots: list[int] = list_snapshot_offsets(self.dir_path, fs=self._fs)
        self.changes: list[LoadAction] = []  # snapshot files written and deleted, for the audit trail

    # -- snapshot files -------------------------------------------------------------------------

    def take_changes(self) -> list[LoadAction]:
        """The snapshot files written and deleted since the last call (one action per file)."""
        changes, self.changes = self.changes, []
        return changes

    def _delete_snapshot(self, offset: int, reason: str) -> None:
        if offset in self.snapshots:
            self.snapshots.remove(offset)
        path = names.snapshot_file(self.dir_path, offset)
        if self._fs.exists(path):
            size = self._fs.size(path)
            self._fs.delete(path)
            self.changes.append(
                LoadAction(ActionKind.DELETE_SNAPSHOT, path.name, offset, size, reason, FileChange.DELETE)
            )

    def mark_snapshot_for_deletion(self, offset: int) -> Path | None:
        """Rename `<offset>.snapshot` to `.snapshot.deleted` (`removeAndMarkSnapshotForDeletion`)."""
        if offset not in self.snapshots:
            return None
        self.snapshots.remove(offset)
        source = names.snapshot_file(self.dir_path, offset)
        target = names.snapshot_file(self.dir_path, offset, names.DELETED_SUFFIX)
        if not self._fs.exists(source):
            return None
        self._fs.rename_atomic(source, target)
        return target

    @property
    def latest_snapshot_offset(self) -> int | None:
        return self.snapshots[-1] if self.snapshots else None

    def remove_stray_snapshots(self, segment_base_offsets: list[int]) -> None:
        """Keep snapshots at segment bases plus the largest stray at or above the last base."""
        bases = set(segment_base_offsets)
        stray: int | None = None
        for offset in list(self.snapshots):
            if offset not in bases:
                if stray is not None:
                    self._delete_snapshot(stray, "stray: not at a segment base offset")
                stray = offset
        if stray is not None and bases and stray < max(bases):
            self._delete_snapshot(stray, "stray: not at a segment base offset")

    def take_snapshot(self, *, sync_dir: bool = True) -> Path | None:
        """Write `<map_end_offset>.snapshot` if the map moved past the last snapshot (`sync_dir`: as
        :func:`~storage_core.producer_snapshot.write_snapshot`)."""
        if self.map_end_offset <= self._last_snap_offset:
            return None
        path = names.snapshot_file(self.dir_path, self.map_end_offset)
        content = encode_snapshot(e.to_snapshot_entry() for e in self.producers.values())
        existed = self._fs.exists(path)
        self._fs.write_atomic(path, content, sync_dir=sync_dir)
        self.changes.append(
            written(
                ActionKind.WRITE_SNAPSHOT,
                path.name,
                content,
                existed=existed,
                base_offset=self.map_end_offset,
                reason="producer state at this offset",
            )
        )
        if self.map_end_offset not in self.snapshots:
            self.snapshots.append(self.map_end_offset)
            self.snapshots.sort()
        self._last_snap_offset = self.map_end_offset
        return path

    def _load_from_snapshot(self, log_start_offset: int, now_ms: int) -> None:
        while self.snapshots:
            offset = self.snapshots[-1]
            try:
                entries = read_snapshot(names.snapshot_file(self.dir_path, offset), fs=self._fs)
            except CorruptSnapshotError as exc:
                self._delete_snapshot(offset, f"corrupt: {exc}")
                continue
            for entry in entries:
                if entry.current_txn_first_offset < 0 and now_ms - entry.timestamp >= self.producer_id_expiration_ms:
                    continue
                state = ProducerStateEntry.from_snapshot_entry(entry)
                self.producers[state.producer_id] = state
                if state.current_txn_first_offset is not None:
                    self._ongoing[state.current_txn_first_offset] = state.producer_id
            self._last_snap_offset = offset
            self.map_end_offset = offset
            return
        self._last_snap_offset = log_start_offset
        self.map_end_offset = log_start_offset

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, now_ms: int) -> None:
        """Drop snapshots outside (log_start_offset, log_end_offset] and reload from the newest one."""
        for offset in list(self.snapshots):
            if offset > log_end_offset or offset <= log_start_offset:
                self._delete_snapshot(
                    offset, f"out of range: not in (log start offset {log_start_offset}, end offset {log_end_offset}]"
                )
        if log_end_offset != self.map_end_offset:
            self.producers.clear()
            self._ongoing.clear()
            self._load_from_snapshot(log_start_offset, now_ms)
        else:
            self.on_log_start_offset_incremented(log_start_offset)

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        self.map_end_offset = max(self.map_end_offset, log_start_offset)
        latest = self.latest_snapshot_offset
        self._last_snap_offset = log_start_offset if latest is None else latest

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Forget every producer and delete every snapshot; the map restarts at `offset`."""
        self.producers.clear()
        self._ongoing.clear()
        for snapshot in list(self.snapshots):
            self._delete_snapshot(snapshot, f"producer state reset to start at {offset}")
        self._last_snap_offset = 0
        self.map_end_offset = offset

    @property
    def is_empty(self) -> bool:
        return not self.producers

    # -- replay ---------------------------------------------------------------------------------

    def apply_batch(self, batch: ReplayedBatch, *, marker: tuple[bool, int, int] | None = None) -> CompletedTxn | None:
        """Replay one batch that has a producer id (`prepareUpdate` + `append` + `update`).

        Args:
            batch: a batch with `producer_id >= 0`.
            marker: for a control batch, `(is_abort, coordinator_epoch, record_timestamp)` of its
                end-transaction marker, or None when the control batch has no records.

        Returns:
            The transaction this batch completed, or None.

        Raises:
            InvalidTxnStateError: a non-transactional data batch while the producer's transaction is open.
        """
        producer_id = batch.producer_id
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = ProducerStateEntry(producer_id)
            self.producers[producer_id] = entry
        if batch.is_control:
            if marker is None:
                return None
            is_abort, coordinator_epoch, timestamp = marker
            completed = None
            if entry.current_txn_first_offset is not None:
                completed = CompletedTxn(producer_id, entry.current_txn_first_offset, batch.base_offset, is_abort)
            entry._maybe_update_epoch(batch.producer_epoch)
            entry.coordinator_epoch = coordinator_epoch
            entry.current_txn_first_offset = None
            entry.last_timestamp = timestamp
            return completed
        first_offset = batch.base_offset
        entry._maybe_update_epoch(batch.producer_epoch)
        entry.batches.append(
            BatchMetadata(batch.last_sequence, batch.last_offset, batch.last_offset - first_offset, batch.max_timestamp)
        )
        entry.last_timestamp = batch.max_timestamp
        if entry.current_txn_first_offset is not None and not batch.is_transactional:
            raise InvalidTxnStateError(
                f"producer {producer_id} wrote a non-transactional batch at offset {first_offset} "
                f"while its transaction from offset {entry.current_txn_first_offset} is open"
            )
        if entry.current_txn_first_offset is None and batch.is_transactional:
            entry.current_txn_first_offset = first_offset
            self._ongoing[first_offset] = producer_id
        return None

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """First offset of the earliest open transaction of another producer, else `last_offset + 1`."""
        for first_offset in sorted(self._ongoing):
            if self._ongoing[first_offset] != completed.producer_id:
                return first_offset
        return completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        """Mark a transaction complete (it no longer holds back the last stable offset)."""
        if self._ongoing.pop(completed.first_offset, None) is None:
            raise CorruptRecordError(
                f"transaction of producer {completed.producer_id} from offset {completed.first_offset} "
                "completed but was never started"
            )

    @property
    def first_undecided_offset(self) -> int | None:
        """First offset of the earliest open transaction, if any."""
        return min(self._ongoing) if self._ongoing else None
