"""Replaying batches into producer state, the txn index and the leader-epoch cache.

Two Kafka procedures share the per-batch replay here:

* `LogSegment.recover` (via :func:`replay_recovered_batch`): for every valid batch of magic >= 2,
  assign its partition leader epoch to the cache if it is newer, replay its producer fields, append an
  `AbortedTxn` to the segment's `.txnindex` when it closes an aborted transaction, and advance the
  producer map's end offset.
* `UnifiedLog.rebuildProducerState` (:func:`rebuild_producer_state`): bring a
  :class:`~storage_core.producer_state.ProducerStateManager` from its newest usable snapshot up to an
  offset by scanning the segments in between, taking snapshots at the last two segment bases and at
  the end offset.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from storage_core.errors import CorruptRecordError
from storage_core.index.txn_index import AbortedTxn, TransactionIndex
from storage_core.producer_state import ProducerStateManager
from storage_core.records.batch import RecordBatch
from storage_core.records.control import ControlRecordType, EndTxnMarker, parse_control_key
from storage_core.records.legacy import LegacyBatch

Batch = RecordBatch | LegacyBatch
_INT32_MAX = 2**31 - 1


class BatchSource(Protocol):
    """A segment as producer-state rebuild sees it: a base offset and its batches in order."""

    @property
    def base_offset(self) -> int: ...

    def batches_from(self, offset: int) -> Iterator[Batch]:
        """Batches whose last offset is >= `offset`, in log order."""
        ...


def end_txn_marker_of(batch: RecordBatch) -> tuple[bool, int, int] | None:
    """`(is_abort, coordinator_epoch, timestamp)` of a transaction-marker control batch, None if empty.

    Raises:
        CorruptRecordError: the control record is not a COMMIT/ABORT marker (Kafka's
            `EndTransactionMarker.deserialize` rejects it the same way).
    """
    records = batch.records()
    if not records:
        return None
    record = records[0]
    if record.key is None or record.value is None:
        raise CorruptRecordError("control record without key or value", position=batch.position)
    control_type = parse_control_key(record.key)
    if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise CorruptRecordError(
            f"control record type {control_type} is not an end-transaction marker", position=batch.position
        )
    marker = EndTxnMarker.decode(record.value)
    return control_type == ControlRecordType.ABORT, marker.coordinator_epoch, record.timestamp


def replay_producer_batch(psm: ProducerStateManager, batch: Batch, txn_index: TransactionIndex | None) -> None:
    """Replay one batch's producer fields (`LogSegment.updateProducerState`)."""
    if batch.producer_id >= 0:
        marker = end_txn_marker_of(batch) if batch.is_control and isinstance(batch, RecordBatch) else None
        completed = psm.apply_batch(batch, marker=marker)
        if completed is not None:
            last_stable_offset = psm.last_stable_offset(completed)
            if completed.is_aborted and txn_index is not None:
                txn_index.append(
                    AbortedTxn(
                        producer_id=completed.producer_id,
                        first_offset=completed.first_offset,
                        last_offset=completed.last_offset,
                        last_stable_offset=last_stable_offset,
                    )
                )
            psm.complete_txn(completed)
    psm.map_end_offset = batch.last_offset + 1


class EpochSink(Protocol):
    """Where recovery offers the leader epochs of batches: a :class:`LeaderEpochCache` or a collector."""

    @property
    def latest_epoch(self) -> int | None: ...

    def assign(self, epoch: int, start_offset: int) -> object: ...


def replay_recovered_batch(
    batch: Batch,
    *,
    psm: ProducerStateManager,
    epochs: EpochSink | None,
    txn_index: TransactionIndex,
) -> None:
    """What `LogSegment.recover` does with each valid batch after indexing it."""
    if batch.magic < 2:
        return
    epoch = batch.partition_leader_epoch
    if epochs is not None and epoch >= 0:
        latest = epochs.latest_epoch
        if latest is None or epoch > latest:
            epochs.assign(epoch, batch.base_offset)
    replay_producer_batch(psm, batch, txn_index)


class RecoveredBatchReplay:
    """:func:`replay_recovered_batch` as `LogSegment.recover`'s `on_batch`, for the batches that
    need it (a :class:`~storage_core.segment.SelectiveBatchObserver`).

    A v2 batch without a producer id whose leader epoch is not above the sink's latest, nor above
    the newest epoch this segment's walk has offered, changes nothing but the producer map's end
    offset (in one segment offsets grow, so such an epoch is already recorded at a lower offset, or
    lies below an epoch that starts earlier, which the sink ignores when it applies them in offset
    order), so the walk passes such batches by and reports only the last one's last offset
    (:meth:`skipped_to`): the state ends as if each had been replayed.
    `txn_index` returns the segment's txn index when a batch is replayed (recovery replaces the
    segment's index with one it builds in memory).
    """

    def __init__(
        self,
        *,
        psm: ProducerStateManager,
        epochs: EpochSink | None,
        txn_index: Callable[[], TransactionIndex],
    ) -> None:
        self.psm = psm
        self.epochs = epochs
        self.txn_index = txn_index
        self._walk_latest = -1  # the newest leader epoch this segment's walk offered

    def __call__(self, batch: Batch) -> None:
        replay_recovered_batch(batch, psm=self.psm, epochs=self.epochs, txn_index=self.txn_index())
        if batch.magic >= 2:
            self._walk_latest = max(self._walk_latest, batch.partition_leader_epoch)

    @property
    def epoch_floor(self) -> int:
        if self.epochs is None:
            return _INT32_MAX  # no epoch is wanted
        latest = self.epochs.latest_epoch
        return max(self._walk_latest, -1 if latest is None else latest)

    def skipped_to(self, last_offset: int) -> None:
        self.psm.map_end_offset = last_offset + 1


def rebuild_producer_state(
    psm: ProducerStateManager,
    segments: Iterable[BatchSource],
    *,
    log_start_offset: int,
    last_offset: int,
    reload_from_clean_shutdown: bool,
    now_ms: int,
) -> None:
    """Bring `psm` up to `last_offset` (`UnifiedLog.rebuildProducerState`, record version 2).

    Args:
        psm: the producer state manager of the partition directory.
        segments: the loaded segments, in base-offset order.
        log_start_offset: the log start offset (snapshots at or below it are dropped).
        last_offset: the offset to rebuild up to (exclusive).
        reload_from_clean_shutdown: the log dir had a clean-shutdown marker.
        now_ms: the clock, for producer expiration when a snapshot is loaded.
    """
    ordered = sorted(segments, key=lambda s: s.base_offset)
    bases = [s.base_offset for s in ordered]
    offsets_to_snapshot = [*bases[-2:], last_offset]
    if psm.latest_snapshot_offset is None and reload_from_clean_shutdown:
        for offset in offsets_to_snapshot:
            psm.map_end_offset = offset
            psm.take_snapshot()
        return
    empty_before_truncation = psm.is_empty and psm.map_end_offset >= last_offset
    psm.truncate_and_reload(log_start_offset, last_offset, now_ms)
    if last_offset > psm.map_end_offset and not empty_before_truncation:
        for segment in _segments_in_range(ordered, psm.map_end_offset, last_offset):
            start = max(segment.base_offset, psm.map_end_offset, log_start_offset)
            psm.map_end_offset = start
            if segment.base_offset in offsets_to_snapshot:
                psm.take_snapshot()
            for batch in segment.batches_from(start):
                if batch.last_offset >= last_offset:
                    break
                if batch.producer_id >= 0:
                    replay_producer_batch(psm, batch, None)
    psm.map_end_offset = last_offset
    psm.take_snapshot()


def _segments_in_range(ordered: list[BatchSource], start: int, end: int) -> list[BatchSource]:
    """`LogSegments.values(start, end)`: the floor segment of `start` and every later one below `end`."""
    floor = 0
    for i, segment in enumerate(ordered):
        if segment.base_offset <= start:
            floor = i
    return [s for s in ordered[floor:] if s.base_offset < end]
