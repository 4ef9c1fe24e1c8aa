"""Nothing recovery removes is lost: every record byte it cuts or deletes is in the quarantine first."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from storage_core import names
from storage_core.errors import StorageError
from storage_core.fs import FaultInjectingFileSystem, LocalFileSystem, SimulatedCrash
from storage_core.load_actions import ActionKind, FileChange, LoadAction
from storage_core.loader import LoadOptions, LoadResult, load_partition
from storage_core.meta_properties import MetaProperties, write_meta_properties
from storage_core.quarantine import log_dir_id, parse_piece_name, piece_name
from storage_core.records.file_records import scan_valid_prefix
from tests.faults import PowerLossFileSystem
from tests.storage_core.records.peer import peer_batch, peer_read

T0 = 1_700_000_000_000
FS = LocalFileSystem()


def _batches(first: int, count: int) -> list[bytes]:
    return [
        peer_batch([(0, T0 + o, b"k%d" % o, b"v" * 50, [])], codec=0, base_offset=o)
        for o in range(first, first + count)
    ]


def _partition(root: Path) -> tuple[Path, dict[str, bytes]]:
    """Three segments of 10 kafka-python batches, loaded once (indexes, snapshots); then the middle one
    gets a torn batch at its end."""
    part = root / "logs" / "t-0"
    part.mkdir(parents=True)
    for base in (0, 10, 20):
        names.log_file(part, base).write_bytes(b"".join(_batches(base, 10)))
    _load(part, None)
    with names.log_file(part, 10).open("ab") as f:
        f.write(_batches(20, 1)[0][:-20])
    return part, {p.name: p.read_bytes() for p in part.glob("*.log")}


def _load(part: Path, quarantine: Path | None, *, fs=FS, dry_run: bool = False) -> LoadResult:
    options = LoadOptions(
        had_clean_shutdown=False,
        recovery_point=0,
        log_start_offset=0,
        now_ms=T0,
        quarantine_dir=quarantine,
        dry_run=dry_run,
    )
    return load_partition(part, options, fs=fs)


def _quarantined(result: LoadResult) -> list[LoadAction]:
    return [a for a in result.actions if a.change == FileChange.QUARANTINE]


def _records(data: bytes) -> list[int]:
    return [record.offset for batch in peer_read(data) for record in batch]


def _state(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_torn_tail_and_the_segments_after_it_are_copied_out_before_they_are_removed(tmp_path: Path) -> None:
    part, original = _partition(tmp_path)
    quarantine = tmp_path / "quarantine"
    result = _load(part, quarantine)
    tail, later = _quarantined(result)
    torn_at = len(b"".join(_batches(10, 10)))
    assert (tail.file, tail.target) == (
        "00000000000000000010.log",
        str(quarantine / piece_name("00000000000000000010.log", torn_at, len(original["00000000000000000010.log"]))),
    )
    assert Path(tail.target).read_bytes() == original["00000000000000000010.log"][torn_at:]
    assert (tail.first_offset, tail.last_offset) == (-1, -1)  # a torn batch: no record a reader would return
    assert Path(later.target).read_bytes() == original["00000000000000000020.log"]
    assert (later.first_offset, later.last_offset, later.bytes) == (20, 29, len(original["00000000000000000020.log"]))
    for action in (tail, later):
        assert action.sha256 == hashlib.sha256(Path(action.target).read_bytes()).hexdigest()
    kept = b"".join(p.read_bytes() for p in sorted(part.glob("*.log")))
    assert _records(kept) + _records(Path(later.target).read_bytes()) == list(range(30))
    assert [a.change for a in result.actions if a.file == later.file] == [FileChange.QUARANTINE, FileChange.DELETE]
    assert result.records_quarantined == (later,)


def test_leftovers_of_an_interrupted_clean_are_quarantined(tmp_path: Path) -> None:
    part, original = _partition(tmp_path)
    cleaned = names.log_file(part, 0, names.CLEANED_SUFFIX)
    swap = names.log_file(part, 10, names.SWAP_SUFFIX)
    cleaned.write_bytes(original["00000000000000000000.log"][:300])
    swap.write_bytes(b"not even a batch")
    result = _load(part, tmp_path / "quarantine")
    pieces = {a.file: Path(a.target).read_bytes() for a in _quarantined(result)}
    assert pieces[cleaned.name] == original["00000000000000000000.log"][:300]
    assert pieces[swap.name] == b"not even a batch"
    assert not cleaned.exists()
    assert not swap.exists()


def test_a_log_end_below_the_log_start_quarantines_every_segment(tmp_path: Path) -> None:
    part, original = _partition(tmp_path)
    result = load_partition(
        part,
        LoadOptions(
            had_clean_shutdown=True, recovery_point=0, log_start_offset=500, now_ms=T0, quarantine_dir=tmp_path / "q"
        ),
    )
    pieces: dict[str, bytes] = {}
    for action in sorted(_quarantined(result), key=lambda a: (a.file, a.target)):
        pieces[action.file] = pieces.get(action.file, b"") + Path(action.target).read_bytes()
    assert pieces == original  # the torn tail (a recovery after the clean load found no index), then the rest
    assert result.log_start_offset == 500


def test_without_a_quarantine_nothing_is_removed(tmp_path: Path) -> None:
    part, original = _partition(tmp_path)
    before = _state(part)
    with pytest.raises(StorageError, match="no quarantine location"):
        _load(part, None)
    assert {n: b for n, b in _state(part).items() if n.endswith(".log")} == {n: before[n] for n in original}


def test_a_dry_run_reports_the_pieces_and_writes_none(tmp_path: Path) -> None:
    part, _ = _partition(tmp_path)
    before = _state(tmp_path)
    plan = _load(part, tmp_path / "quarantine", dry_run=True)
    assert _state(tmp_path) == before
    real = _load(part, tmp_path / "quarantine")
    assert _quarantined(plan) == _quarantined(real)


@pytest.mark.parametrize("power_loss", [False, True], ids=["crash", "power-loss"])
def test_a_crash_at_every_operation_loses_nothing_and_a_rerun_ends_where_one_run_does(
    tmp_path: Path, power_loss: bool
) -> None:
    reference, _ = _partition(tmp_path / "reference")
    counting = FaultInjectingFileSystem()
    _load(reference, tmp_path / "reference" / "quarantine", fs=counting)
    expected = _state(tmp_path / "reference")
    ops = counting.operations
    assert sum(1 for op, path in ops if op == "rename" and path.name.endswith(".partial")) == 2
    for n in range(1, len(ops) + 1):
        root = tmp_path / f"crash-{n}"
        part, _ = _partition(root)
        fs = PowerLossFileSystem(fail_at=n) if power_loss else FaultInjectingFileSystem(fail_at=n)
        with pytest.raises(SimulatedCrash):
            _load(part, root / "quarantine", fs=fs)
        if power_loss:
            fs.power_loss()
        files = [*part.glob("*.log"), *(root / "quarantine").glob("*.log")]
        readable = [o for f in files for o in _records(f.read_bytes()[: scan_valid_prefix(f.read_bytes()).valid_bytes])]
        assert set(range(30)) <= set(readable), f"records lost by a crash at {ops[n - 1]}"
        _load(part, root / "quarantine")  # the same run again: the same quarantine directory
        assert _state(root) == expected, f"crash at {ops[n - 1]}"


def test_piece_names_hold_the_file_and_the_byte_range() -> None:
    assert piece_name("00000000000000000010.log.swap", 0, 77) == "00000000000000000010.log.swap.0-77.log"
    assert parse_piece_name("00000000000000000010.log.swap.0-77.log") == ("00000000000000000010.log.swap", 0, 77)
    assert parse_piece_name("00000000000000000010.log") is None


def test_the_log_dir_id_is_its_directory_id_when_it_has_one(tmp_path: Path) -> None:
    write_meta_properties(
        tmp_path / names.META_PROPERTIES,
        MetaProperties(version=1, cluster_id="c", node_id=1, directory_id="J8aAPcfLQt2bqs1JT_rMgQ"),
        now_ms=T0,
    )
    assert log_dir_id(tmp_path, fs=FS) == "J8aAPcfLQt2bqs1JT_rMgQ"
    other = tmp_path / "logs-1"
    other.mkdir()
    assert log_dir_id(other, fs=FS).startswith("logs-1-")
    assert log_dir_id(other, fs=FS) != log_dir_id(tmp_path / "elsewhere" / "logs-1", fs=FS)


def test_actions_record_why_bytes_were_cut(tmp_path: Path) -> None:
    part, _ = _partition(tmp_path)
    result = _load(part, tmp_path / "quarantine")
    truncate = next(a for a in result.actions if a.kind == ActionKind.TRUNCATE_SEGMENT)
    assert "batch runs past the end of the file" in truncate.reason
