"""Dump a producer-state `.snapshot` file as `DumpLogSegments.dumpProducerIdSnapshot` prints it.

One line per producer (kafka-format.md §9, §12.1):

```
producerId: P producerEpoch: E coordinatorEpoch: C currentTxnFirstOffset: OptionalLong[..] lastTimestamp: T
    firstSequence: FS lastSequence: LS lastOffset: LO offsetDelta: D timestamp: T
```

The second half is Kafka's `BatchMetadata`, present only when the entry's LastOffset is >= 0; the first
half always ends with a space in Kafka's output, so a producer without batch metadata prints a line
ending in `lastTimestamp: T ` (kept on purpose). A corrupt snapshot prints its error on stderr, as
Kafka prints the `CorruptSnapshotException` message.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from storage_core.dump.render import DumpLine, Field, OptionalLong
from storage_core.errors import CorruptSnapshotError
from storage_core.fs import FileSystem
from storage_core.producer_snapshot import ProducerSnapshotEntry, read_snapshot
from storage_core.producer_state import BatchMetadata


def producer_line(entry: ProducerSnapshotEntry) -> DumpLine:
    """The line of one producer."""
    txn_first_offset = entry.current_txn_first_offset
    fields = [
        Field("producerId", entry.producer_id),
        Field("producerEpoch", entry.epoch),
        Field("coordinatorEpoch", entry.coordinator_epoch),
        Field("currentTxnFirstOffset", OptionalLong(txn_first_offset if txn_first_offset >= 0 else None)),
        Field("lastTimestamp", entry.timestamp),
    ]
    if entry.last_offset < 0:
        return DumpLine("producer", tuple(fields), suffix=" ")
    metadata = BatchMetadata(entry.last_sequence, entry.last_offset, entry.offset_delta, entry.timestamp)
    fields += [
        Field("firstSequence", metadata.first_seq),
        Field("lastSequence", metadata.last_seq),
        Field("lastOffset", metadata.last_offset),
        Field("offsetDelta", metadata.offset_delta),
        Field("timestamp", metadata.timestamp),
    ]
    return DumpLine("producer", tuple(fields))


def dump_snapshot(file: str, *, fs: FileSystem) -> Iterator[DumpLine]:
    """The lines of a `.snapshot` file after `Dumping <file>`."""
    try:
        entries = read_snapshot(Path(file), fs=fs)
    except CorruptSnapshotError as exc:
        yield DumpLine(
            "corrupt_snapshot", (Field("file", file), Field("error", str(exc))), template="{error}", stderr=True
        )
        return
    for entry in entries:
        yield producer_line(entry)
