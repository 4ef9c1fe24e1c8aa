"""The clean-shutdown marker `.kafka_cleanshutdown` (kafka-format.md §1.6; `CleanShutdownFileHandler.java`).

Its presence in a log dir means the broker shut down cleanly, so loading skips recovery. Kafka 3.7+
writes `{"version":0,"brokerEpoch":<long>}` (no trailing newline); older brokers an empty file.
Unparseable content still counts as present, without a broker epoch. Written atomically.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from storage_core.fs import FileSystem, default_fs
from storage_core.names import CLEAN_SHUTDOWN_FILE


@dataclass(frozen=True, slots=True)
class CleanShutdownMarker:
    """A marker that was found; `broker_epoch` is None when the file does not carry one."""

    broker_epoch: int | None


def read_clean_shutdown(log_dir: Path, *, fs: FileSystem | None = None) -> CleanShutdownMarker | None:
    """The marker of a log dir, or None if there is none."""
    fs = fs or default_fs()
    path = Path(log_dir) / CLEAN_SHUTDOWN_FILE
    if not fs.exists(path):
        return None
    try:
        content = json.loads(fs.read_bytes(path))
        epoch = content.get("brokerEpoch") if isinstance(content, dict) else None
    except (ValueError, UnicodeDecodeError):
        epoch = None
    return CleanShutdownMarker(epoch if isinstance(epoch, int) else None)


def format_clean_shutdown(broker_epoch: int = -1) -> bytes:
    return json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":")).encode()


def write_clean_shutdown(log_dir: Path, *, broker_epoch: int = -1, fs: FileSystem | None = None) -> None:
    """Write the marker (Kafka 3.7+ JSON form) atomically."""
    (fs or default_fs()).write_atomic(Path(log_dir) / CLEAN_SHUTDOWN_FILE, format_clean_shutdown(broker_epoch))


def delete_clean_shutdown(log_dir: Path, *, fs: FileSystem | None = None) -> None:
    (fs or default_fs()).delete(Path(log_dir) / CLEAN_SHUTDOWN_FILE)
