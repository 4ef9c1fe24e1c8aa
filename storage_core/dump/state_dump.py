"""Dump producer snapshots (as `DumpLogSegments` prints them) and checkpoint text files (our own shape)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from storage_core import names
from storage_core.checkpoint import read_offset_checkpoint
from storage_core.dump.lines import DumpLine, OptionalLong
from storage_core.fs import FileSystem
from storage_core.leader_epoch import read_leader_epoch_checkpoint
from storage_core.producer_snapshot import read_snapshot
from storage_core.producer_state import BatchMetadata

OFFSET_CHECKPOINTS = (
    names.RECOVERY_POINT_CHECKPOINT,
    names.LOG_START_OFFSET_CHECKPOINT,
    names.REPLICATION_OFFSET_CHECKPOINT,
    names.CLEANER_OFFSET_CHECKPOINT,
)


def dump_snapshot(path: Path, *, fs: FileSystem) -> Iterator[DumpLine]:
    for entry in read_snapshot(path, fs=fs):
        fields = [
            ("producerId", entry.producer_id),
            ("producerEpoch", entry.epoch),
            ("coordinatorEpoch", entry.coordinator_epoch),
            (
                "currentTxnFirstOffset",
                OptionalLong(entry.current_txn_first_offset if entry.current_txn_first_offset >= 0 else None),
            ),
            ("lastTimestamp", entry.timestamp),
        ]
        suffix = " "
        if entry.last_offset >= 0:
            metadata = BatchMetadata(entry.last_sequence, entry.last_offset, entry.offset_delta, entry.timestamp)
            fields += [
                ("firstSequence", metadata.first_seq),
                ("lastSequence", entry.last_sequence),
                ("lastOffset", entry.last_offset),
                ("offsetDelta", entry.offset_delta),
                ("timestamp", entry.timestamp),
            ]
            suffix = ""
        yield DumpLine("producer", tuple(fields), suffix=suffix)


def dump_checkpoint(path: Path, *, fs: FileSystem) -> Iterator[DumpLine]:
    if path.name == names.LEADER_EPOCH_CHECKPOINT:
        for entry in read_leader_epoch_checkpoint(path, fs=fs):
            yield DumpLine("epoch_entry", (("epoch", entry.epoch), ("startOffset", entry.start_offset)))
        return
    for tp, offset in sorted(read_offset_checkpoint(path, fs=fs).items(), key=lambda i: (i[0].topic, i[0].partition)):
        yield DumpLine("checkpoint_entry", (("topic", tp.topic), ("partition", tp.partition), ("offset", offset)))
