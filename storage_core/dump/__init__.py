"""Kafka's DumpLogSegments (`kafka-dump-log.sh`) over storage_core, as structured lines.

:func:`dump_file` dispatches on the text after the last `.` of the name, as Kafka does (`.log` and
`.checkpoint` record files, `.index`, `.timeindex`, `.txnindex`, `.snapshot`), plus the checkpoint
text files Kafka's tool does not read. Each line renders as Kafka's text or as JSON
(:mod:`storage_core.dump.lines`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.dump.index_dump import dump_offset_index, dump_time_index, dump_txn_index
from storage_core.dump.lines import DumpLine, render_json, render_text
from storage_core.dump.log_dump import dump_log
from storage_core.dump.state_dump import OFFSET_CHECKPOINTS, dump_checkpoint, dump_snapshot
from storage_core.fs import FileSystem, default_fs

__all__ = ["DumpLine", "DumpOptions", "dump_file", "render_json", "render_text"]


@dataclass(frozen=True, slots=True)
class DumpOptions:
    """DumpLogSegments' flags."""

    print_data_log: bool = False
    deep_iteration: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    skip_record_metadata: bool = False
    max_bytes: int | None = None


def dump_file(path: Path, options: DumpOptions, *, fs: FileSystem | None = None) -> Iterator[DumpLine]:
    """The lines Kafka's tool prints for one file (`Dumping <file>` first)."""
    fs = fs or default_fs()
    path = Path(path)
    suffix = path.suffix
    if path.name in (*OFFSET_CHECKPOINTS, names.LEADER_EPOCH_CHECKPOINT):
        yield DumpLine("file", (("file", str(path)),), text=f"Dumping {path}")
        yield from dump_checkpoint(path, fs=fs)
        return
    dumpers = {
        ".log": lambda: dump_log(
            path,
            deep_iteration=options.deep_iteration,
            print_data=options.print_data_log,
            skip_metadata=options.skip_record_metadata,
            max_bytes=options.max_bytes,
            fs=fs,
        ),
        ".index": lambda: dump_offset_index(
            path, verify_only=options.verify_index_only, sanity_only=options.index_sanity_check, fs=fs
        ),
        ".timeindex": lambda: dump_time_index(
            path, verify_only=options.verify_index_only, sanity_only=options.index_sanity_check, fs=fs
        ),
        ".txnindex": lambda: dump_txn_index(path, fs=fs),
        ".snapshot": lambda: dump_snapshot(path, fs=fs),
    }
    dumpers[".checkpoint"] = dumpers[".log"]
    if suffix not in dumpers:
        yield DumpLine("ignored", (("file", str(path)),), text=f"Ignoring unknown file {path}", stderr=True)
        return
    yield DumpLine("file", (("file", str(path)),), text=f"Dumping {path}")
    yield from dumpers[suffix]()
