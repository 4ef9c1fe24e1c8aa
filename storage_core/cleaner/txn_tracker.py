"""Kafka's `CleanedTransactionMetadata`: which transactional batches and markers a cleaning pass may drop.

Aborted transactions come from the txn indexes (`collect_aborted_txns`). While batches are read in
offset order, an aborted transaction becomes "ongoing" once its first offset is reached; its data
batches are discardable; its ABORT marker is kept (and the AbortedTxn copied to the cleaned txn
index) only if some of its data was seen in this pass. A COMMIT marker is discardable only if none
of its transaction's data was seen in this pass.
"""

from __future__ import annotations

import heapq
from pathlib import Path

from storage_core import names
from storage_core.fs import FileSystem
from storage_core.index.txn_index import AbortedTxn, TransactionIndex
from storage_core.records.batch import RecordBatch
from storage_core.records.control import ControlRecordType, parse_control_key


def collect_aborted_txns(
    dir_path: Path, bases: list[int], *, start_offset: int, upper_offset: int, log_start_offset: int, fs: FileSystem
) -> list[AbortedTxn]:
    """Aborted transactions overlapping [start_offset, upper_offset), from the floor segment of start on."""
    floor = max((b for b in bases if b <= start_offset), default=bases[0] if bases else 0)
    found = []
    for base in (b for b in bases if b >= floor):
        index = TransactionIndex.open(names.txn_index_file(dir_path, base), base, fs=fs)
        entries = index.all_entries()
        found += [t for t in entries if t.last_offset >= log_start_offset and t.first_offset < upper_offset]
        if any(t.last_stable_offset >= upper_offset for t in entries):
            break
    return found


class TransactionTracker:
    """The per-pass transaction state of the cleaner."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, AbortedTxn]] = []
        self._ongoing_aborted: dict[int, tuple[AbortedTxn, int | None]] = {}
        self._ongoing_committed: set[int] = set()
        self.cleaned_index: TransactionIndex | None = None
        self._sequence = 0

    def add_aborted(self, txns: list[AbortedTxn]) -> None:
        for txn in txns:
            self._sequence += 1
            heapq.heappush(self._heap, (txn.first_offset, self._sequence, txn))

    def _consume_up_to(self, offset: int) -> None:
        while self._heap and self._heap[0][0] <= offset:
            _, _, txn = heapq.heappop(self._heap)
            self._ongoing_aborted.setdefault(txn.producer_id, (txn, None))

    def on_batch_read(self, batch: RecordBatch) -> bool:
        """A data batch: True if it belongs to an aborted transaction (discardable)."""
        self._consume_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        ongoing = self._ongoing_aborted.get(batch.producer_id)
        if ongoing is not None:
            self._ongoing_aborted[batch.producer_id] = (ongoing[0], batch.last_offset)
            return True
        self._ongoing_committed.add(batch.producer_id)
        return False

    def on_control_batch_read(self, batch: RecordBatch) -> bool:
        """A control batch: True if the marker may be discarded."""
        self._consume_up_to(batch.last_offset)
        records = batch.records()
        if not records or records[0].key is None:
            return True
        control_type = parse_control_key(records[0].key)
        if control_type == ControlRecordType.ABORT:
            ongoing = self._ongoing_aborted.pop(batch.producer_id, None)
            if ongoing is not None and ongoing[1] is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(ongoing[0])
                return False
            return True
        if control_type == ControlRecordType.COMMIT:
            if batch.producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(batch.producer_id)
                return False
            return True
        return False
