"""Invariant helpers over real partition dirs, read through kafka-python (an independent reader).

`latest_values(dir)` is what compaction must keep: for every key, the offset and value of its last
committed record (records of aborted transactions never count; a transaction's records count once
its COMMIT marker is read). `assert_latest_values_kept(before, dir)` checks that each of them is
still there with the same offset and value; a tombstone may be gone (removed past its horizon).
"""

from __future__ import annotations

import struct
from pathlib import Path

from kafka.record.memory_records import MemoryRecords

KeyedValue = tuple[int, bytes | None]
_COMMIT = 1  # ControlRecordType: ABORT = 0, COMMIT = 1


def records(dir_path: Path) -> list[tuple[int, int, bool, bool, bytes | None, bytes | None]]:
    """(offset, producer id, transactional, control, key, value) of every record, in offset order."""
    out = []
    for log in sorted(Path(dir_path).glob("*.log")):
        memory = MemoryRecords(log.read_bytes())
        while (batch := memory.next_batch()) is not None:
            transactional = batch.magic == 2 and bool(batch.is_transactional)
            control = batch.magic == 2 and bool(batch.is_control_batch)
            producer_id = batch.producer_id if batch.magic == 2 else -1
            for record in batch:
                out.append((record.offset, producer_id, transactional, control, record.key, record.value))
    return sorted(out, key=lambda r: r[0])


def latest_values(dir_path: Path) -> dict[bytes, KeyedValue]:
    """Each key's last committed (offset, value) in a partition dir."""
    latest: dict[bytes, KeyedValue] = {}
    pending: dict[int, list[tuple[bytes, KeyedValue]]] = {}
    for offset, producer_id, transactional, control, key, value in records(dir_path):
        if control:
            ended = pending.pop(producer_id, [])
            if key is not None and struct.unpack(">hh", key[:4])[1] == _COMMIT:
                latest.update(ended)
        elif key is None:
            continue
        elif transactional:
            pending.setdefault(producer_id, []).append((key, (offset, value)))
        else:
            latest[key] = (offset, value)
    return latest


def assert_latest_values_kept(before: dict[bytes, KeyedValue], dir_path: Path) -> None:
    """Every key's latest value of `before` is still in `dir_path` at its offset (tombstones may go)."""
    after = {offset: (key, value) for offset, _, _, control, key, value in records(dir_path) if not control}
    lost = [
        (key, offset)
        for key, (offset, value) in before.items()
        if value is not None and after.get(offset) != (key, value)
    ]
    assert not lost, f"{dir_path.name}: {len(lost)} keys lost their latest value, e.g. {lost[:3]}"
