"""Dump the checkpoint text files of a log dir and of a partition: our own shape, one line per entry.

Kafka's tool does not read these (kafka-format.md §1.4, §10.1). The per-log-dir offset checkpoints
(`recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`, `replication-offset-checkpoint`,
`cleaner-offset-checkpoint`) print `topic: T partition: P offset: O`; a `leader-epoch-checkpoint`
prints `epoch: E startOffset: O`. Entries keep the file's order. A file that does not parse prints
its error on stderr.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from storage_core import names
from storage_core.checkpoint import read_offset_checkpoint
from storage_core.dump.render import DumpLine, Field
from storage_core.errors import CorruptCheckpointError
from storage_core.fs import FileSystem
from storage_core.leader_epoch import read_leader_epoch_checkpoint

OFFSET_CHECKPOINTS = (
    names.RECOVERY_POINT_CHECKPOINT,
    names.LOG_START_OFFSET_CHECKPOINT,
    names.REPLICATION_OFFSET_CHECKPOINT,
    names.CLEANER_OFFSET_CHECKPOINT,
)
TEXT_CHECKPOINTS = (*OFFSET_CHECKPOINTS, names.LEADER_EPOCH_CHECKPOINT)


def _entry_lines(path: Path, fs: FileSystem) -> Iterator[DumpLine]:
    if path.name == names.LEADER_EPOCH_CHECKPOINT:
        for entry in read_leader_epoch_checkpoint(path, fs=fs):
            yield DumpLine("epoch_entry", (Field("epoch", entry.epoch), Field("startOffset", entry.start_offset)))
        return
    for tp, offset in read_offset_checkpoint(path, fs=fs).items():
        yield DumpLine(
            "checkpoint_entry", (Field("topic", tp.topic), Field("partition", tp.partition), Field("offset", offset))
        )


def dump_checkpoint(file: str, *, fs: FileSystem) -> Iterator[DumpLine]:
    """The lines of a checkpoint text file (one of :data:`TEXT_CHECKPOINTS`) after `Dumping <file>`."""
    try:
        lines = list(_entry_lines(Path(file), fs))
    except CorruptCheckpointError as exc:
        yield DumpLine(
            "corrupt_checkpoint", (Field("file", file), Field("error", str(exc))), template="{error}", stderr=True
        )
        return
    yield from lines
