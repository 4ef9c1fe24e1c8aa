"""F8: a power loss at any point of recover, compact or retention drops what was not fsynced; the
next run still ends where an uninterrupted one does, with nothing lost that Kafka would keep."""

from __future__ import annotations

from pathlib import Path

from storage_core import names
from storage_core.fs import FaultInjectingFileSystem, LocalFileSystem, SimulatedCrash
from storage_core.records.batch import Record, build_batch
from storage_core.records.file_records import iterate_batches, scan_valid_prefix
from tests.builders.log_dir import recover_unclean
from tests.faults import PowerLossFileSystem

T0 = 1_700_000_000_000


def _fresh(root: Path) -> Path:
    part = root / "t-0"
    part.mkdir(parents=True)
    for base in (0, 10, 20):
        names.log_file(part, base).write_bytes(
            b"".join(
                build_batch([Record(o, T0 + o, b"k%d" % (o % 3), b"v%d" % o)], base_offset=o)
                for o in range(base, base + 10)
            )
        )
    with names.log_file(part, 20).open("ab") as f:
        f.write(b"\x00" * 40)
    return part


def _load(part: Path, fs) -> None:
    recover_unclean(part, now_ms=T0, fs=fs)


def _state(part: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(part.iterdir())}


def _records(part: Path) -> list[int]:
    """Offsets of the records in the valid prefix of every segment."""
    offsets = []
    for log in sorted(part.glob("*.log")):
        data = log.read_bytes()
        for batch in iterate_batches(data, end=scan_valid_prefix(data).valid_bytes):
            offsets += [r.offset for r in batch.records()]
    return offsets


def test_power_loss_at_every_operation_of_recovery(tmp_path: Path) -> None:
    reference = _fresh(tmp_path / "reference")
    counting = FaultInjectingFileSystem()
    _load(reference, counting)
    expected = _state(reference)
    for n in range(1, len(counting.operations) + 1):
        part = _fresh(tmp_path / f"loss-{n}")
        fs = PowerLossFileSystem(fail_at=n)
        try:
            _load(part, fs)
        except SimulatedCrash:
            pass
        fs.power_loss()
        assert _records(part) == list(range(30)), f"valid data lost by a power loss at operation {n}"
        _load(part, LocalFileSystem())
        assert _state(part) == expected, f"power loss at {counting.operations[n - 1]}"


def test_power_loss_model_drops_unsynced_writes_and_renames(tmp_path: Path) -> None:
    fs = PowerLossFileSystem()
    path = tmp_path / "f"
    path.write_bytes(b"old")
    fs.write_file(path, b"new", fsync=False)
    fs.rename_atomic(path, tmp_path / "g")  # directory fsynced: the rename survives
    fs.write_atomic(tmp_path / "h", b"durable")
    with fs.open(tmp_path / "g", writable=True) as handle:
        handle.append(b" lost")
    fs.power_loss()
    assert (tmp_path / "g").read_bytes() == b"old"
    assert not path.exists()
    assert (tmp_path / "h").read_bytes() == b"durable"


def test_power_loss_at_every_operation_of_compaction(tmp_path: Path) -> None:
    from tests.storage_core.cleaner.test_compact import compact, keyed, records, write_log

    batches = [keyed(o, b"k%d" % (o % 4), b"v%d" % o) for o in range(30)]

    def fresh(name: str) -> Path:
        part = tmp_path / name / "t-0"
        write_log(part, batches, per_segment=10)
        return part

    old = records(fresh("old"))
    counting = FaultInjectingFileSystem()
    reference = fresh("reference")
    compact(reference, fs=counting)
    new = records(reference)
    for n in range(1, len(counting.operations) + 1):
        part = fresh(f"loss-{n}")
        fs = PowerLossFileSystem(fail_at=n)
        try:
            compact(part, fs=fs)
        except SimulatedCrash:
            pass
        fs.power_loss()
        _load(part, LocalFileSystem())
        assert records(part) in (old, new), f"power loss at {counting.operations[n - 1]}"
