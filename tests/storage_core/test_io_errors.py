"""F9: an I/O error (EIO) in any write or fsync aborts that partition's maintenance, never claims success."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage_core import names
from storage_core.clean_shutdown import read_clean_shutdown
from storage_core.fs import FaultInjectingFileSystem, LocalFileSystem
from storage_core.log_dir import PartitionOutcome, close_log_dir, open_log_dir
from storage_core.names import TopicPartition
from storage_core.records.batch import Record, build_batch
from tests.builders.log_dir import recover_unclean

T0 = 1_700_000_000_000


def _log_dir(root: Path) -> Path:
    part = root / "logs" / "t-0"
    part.mkdir(parents=True)
    names.log_file(part, 0).write_bytes(
        b"".join(build_batch([Record(o, T0, b"k", b"v")], base_offset=o) for o in range(10)) + b"\x01" * 20
    )
    return part.parent


def _run(log_dir: Path, fs) -> bool:
    """The recover job's per-dir sequence; an OSError fails the partition, as the executor does."""
    state = open_log_dir(log_dir, fs=LocalFileSystem())
    tp = TopicPartition("t", 0)
    try:
        result = recover_unclean(log_dir / "t-0", now_ms=T0, quarantine=log_dir.parent / "quarantine", fs=fs)
        outcome = PartitionOutcome(tp, True, result.log_start_offset, result.log_end_offset, 0)
    except OSError:
        outcome = PartitionOutcome(tp, False)
    close_log_dir(state, [outcome], fs=LocalFileSystem())
    return outcome.succeeded


def test_eio_at_every_operation_fails_the_partition_and_a_rerun_recovers(tmp_path: Path) -> None:
    counting = FaultInjectingFileSystem()
    _run(_log_dir(tmp_path / "reference"), counting)
    for n in range(1, len(counting.operations) + 1):
        log_dir = _log_dir(tmp_path / f"eio-{n}")
        assert not _run(log_dir, FaultInjectingFileSystem(fail_at=n, kind="eio"))
        assert read_clean_shutdown(log_dir) is None, f"EIO at {counting.operations[n - 1]} still marked clean"
        assert _run(log_dir, LocalFileSystem())
        assert read_clean_shutdown(log_dir) is not None
        assert names.log_file(log_dir / "t-0", 0).stat().st_size == 10 * 70


@pytest.mark.parametrize("operation", ["fsync", "rename", "write"])
def test_the_error_surfaces_as_oserror(tmp_path: Path, operation: str) -> None:
    log_dir = _log_dir(tmp_path)
    counting = FaultInjectingFileSystem()
    recover_unclean(log_dir / "t-0", now_ms=T0, quarantine=tmp_path / "q", fs=counting)
    first = next(i for i, (op, _) in enumerate(counting.operations, start=1) if op == operation)
    fresh = _log_dir(tmp_path / "again")
    with pytest.raises(OSError, match="injected I/O error"):
        recover_unclean(
            fresh / "t-0", now_ms=T0, quarantine=tmp_path / "q", fs=FaultInjectingFileSystem(fail_at=first, kind="eio")
        )
