"""Log dirs compared file by file, and the records a partition holds, read with storage_core."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.records.file_records import iterate_batches

METADATA_DIR = "__cluster_metadata-0"


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` by its relative path (`events-0/00000000000000000000.log`), but `.lock`."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name != names.LOCK_FILE
    }


def differing(a: dict[str, bytes], b: dict[str, bytes]) -> set[str]:
    """The paths only one tree has, or whose bytes differ."""
    return {path for path in a.keys() | b.keys() if a.get(path) != b.get(path)}


def partition_dirs(root: Path) -> list[str]:
    """The partition dirs of a log dir (not the metadata log)."""
    return sorted(p.name for p in root.iterdir() if p.is_dir() and p.name != METADATA_DIR)


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """A data record as a segment holds it."""

    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    transactional: bool
    producer_id: int


def segment_bases(dir_path: Path) -> list[int]:
    """The base offsets of a partition's segments (`.log` files), ascending."""
    return sorted(int(p.name[: -len(names.LOG_SUFFIX)]) for p in dir_path.glob("*" + names.LOG_SUFFIX))


def stored_records(dir_path: Path) -> list[StoredRecord]:
    """Every data record of a partition's segments, in offset order (control batches left out)."""
    out = []
    for base in segment_bases(dir_path):
        for batch in iterate_batches(names.log_file(dir_path, base).read_bytes()):
            if batch.is_control:
                continue
            for record in batch.records():
                headers = tuple(record.headers)
                out.append(
                    StoredRecord(
                        record.offset, record.key, record.value, headers, batch.is_transactional, batch.producer_id
                    )
                )
    return out


def control_batches(dir_path: Path) -> list[tuple[int, int]]:
    """(base offset, producer id) of every control batch (transaction markers) of a partition."""
    return [
        (batch.base_offset, batch.producer_id)
        for base in segment_bases(dir_path)
        for batch in iterate_batches(names.log_file(dir_path, base).read_bytes())
        if batch.is_control
    ]
