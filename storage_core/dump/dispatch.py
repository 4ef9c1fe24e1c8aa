"""`DumpLogSegments.main`: dump each file by the suffix after the last `.` of its name, then print
what verification found.

Dispatch (kafka-format.md §12): `.log` and `.checkpoint` (KRaft snapshots) -> log dump; `.index`;
`.timeindex`; `.snapshot`; `.txnindex`. We also read the checkpoint text files Kafka's tool does not
(:mod:`storage_core.dump.checkpoint_dump`). Every file starts with `Dumping <file>`; anything else
then gets `Ignoring unknown file <file>` on stderr (so `x.log.deleted` is ignored, as in Kafka).

Where Kafka's tool would die with an exception on bad content (a name without an offset, a corrupt
index or record), one line goes to stderr and the dump goes on with the next file. An `OSError`
(missing or unreadable file) propagates to the caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

from storage_core import names
from storage_core.dump.checkpoint_dump import TEXT_CHECKPOINTS, dump_checkpoint
from storage_core.dump.diagnostics import Diagnostics
from storage_core.dump.index_dump import dump_offset_index, dump_time_index, dump_txn_index
from storage_core.dump.log_dump import dump_log
from storage_core.dump.options import DumpOptions
from storage_core.dump.render import DumpLine, Field
from storage_core.dump.snapshot_dump import dump_snapshot
from storage_core.errors import StorageError
from storage_core.fs import FileSystem, default_fs


class _Dumper(Protocol):
    def __call__(
        self, file: str, *, options: DumpOptions, diagnostics: Diagnostics, fs: FileSystem
    ) -> Iterator[DumpLine]: ...


def _dump_snapshot(file: str, *, options: DumpOptions, diagnostics: Diagnostics, fs: FileSystem) -> Iterator[DumpLine]:
    return dump_snapshot(file, fs=fs)


def _dump_txn_index(file: str, *, options: DumpOptions, diagnostics: Diagnostics, fs: FileSystem) -> Iterator[DumpLine]:
    return dump_txn_index(file, fs=fs)


def _dump_checkpoint(
    file: str, *, options: DumpOptions, diagnostics: Diagnostics, fs: FileSystem
) -> Iterator[DumpLine]:
    return dump_checkpoint(file, fs=fs)


_BY_SUFFIX: dict[str, _Dumper] = {
    names.LOG_SUFFIX: dump_log,
    names.KRAFT_SNAPSHOT_SUFFIX: dump_log,
    names.INDEX_SUFFIX: dump_offset_index,
    names.TIME_INDEX_SUFFIX: dump_time_index,
    names.SNAPSHOT_SUFFIX: _dump_snapshot,
    names.TXN_INDEX_SUFFIX: _dump_txn_index,
}


def _dumper(name: str) -> _Dumper | None:
    """Kafka's dispatch on the text after the last `.`; our checkpoint text files by their names."""
    if name in TEXT_CHECKPOINTS:
        return _dump_checkpoint
    dot = name.rfind(".")
    return None if dot < 0 else _BY_SUFFIX.get(name[dot:])


def dump_file(
    file: str | Path, options: DumpOptions, *, diagnostics: Diagnostics, fs: FileSystem | None = None
) -> Iterator[DumpLine]:
    """The lines `kafka-dump-log.sh` prints for one file, `Dumping <file>` first.

    Args:
        file: the path, printed as given.
        options: the flags.
        diagnostics: collects verification findings; print them with :meth:`Diagnostics.lines`.
        fs: the file system.

    Raises:
        OSError: the file cannot be read.
    """
    fs = fs or default_fs()
    file = str(file)
    yield DumpLine("file", (Field("file", file),), template="Dumping {file}")
    dumper = _dumper(Path(file).name)
    if dumper is None:
        yield DumpLine("ignored", (Field("file", file),), template="Ignoring unknown file {file}", stderr=True)
        return
    try:
        yield from dumper(file, options=options, diagnostics=diagnostics, fs=fs)
    except StorageError as exc:
        yield DumpLine(
            "error",
            (Field("file", file), Field("error", f"{type(exc).__name__}: {exc}")),
            template="Cannot dump {file}: {error}",
            stderr=True,
        )


def dump_files(
    files: Iterable[str | Path], options: DumpOptions, *, fs: FileSystem | None = None
) -> Iterator[DumpLine]:
    """Every file's lines in order, then the verification findings (stderr), as Kafka's tool prints them.

    Raises:
        OSError: a file cannot be read.
    """
    diagnostics = Diagnostics()
    for file in files:
        yield from dump_file(file, options, diagnostics=diagnostics, fs=fs)
    yield from diagnostics.lines()
