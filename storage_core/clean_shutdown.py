"""The clean-shutdown marker `.kafka_cleanshutdown` (kafka-format.md §1.6, kafka-maintenance.md §1.3).

Mirrors `storage/.../checkpoint/CleanShutdownFileHandler.java`.

```
CleanShutdown => {"version":0,"brokerEpoch":<Int64>}    one line of JSON, no trailing newline
```

Its *presence* in a log dir means the broker shut down cleanly, so loading skips the recovery of
segments above the recovery point. Kafka 3.7+ (KIP-966) writes the JSON above (`brokerEpoch` -1 when
unknown); older brokers created an empty file. The content only matters for the broker epoch:
unknown JSON fields are ignored, and an empty or unparseable file still counts as a marker, just
without an epoch (Kafka's `read` then returns an empty OptionalLong).

Crash story: the marker must never outlive a partially done run, or the next load would skip the
recovery that run needs. So the caller deletes it before touching any partition, and
:func:`delete_clean_shutdown` fsyncs the directory so that the deletion survives a power loss.
Kafka writes the marker in place and fsyncs the file; :func:`write_clean_shutdown` writes it
atomically (`.tmp`, fsync, rename, fsync the directory), so it is either absent or complete.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from storage_core.fs import FileSystem, default_fs
from storage_core.names import CLEAN_SHUTDOWN_FILE

CLEAN_SHUTDOWN_VERSION = 0
UNKNOWN_BROKER_EPOCH = -1
_INT64 = range(-(2**63), 2**63)


@dataclass(frozen=True, slots=True)
class CleanShutdownMarker:
    """A marker that was found.

    Attributes:
        broker_epoch: the epoch it records; None when the file does not carry one (empty,
            unparseable, or written by a broker before Kafka 3.7).
    """

    broker_epoch: int | None


def parse_clean_shutdown(data: bytes) -> CleanShutdownMarker:
    """The marker for a file holding `data`: always a marker, with the broker epoch if readable."""
    try:
        content = json.loads(data)
    except ValueError:  # includes JSONDecodeError and UnicodeDecodeError
        return CleanShutdownMarker(None)
    epoch = content.get("brokerEpoch") if isinstance(content, dict) else None
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch not in _INT64:
        return CleanShutdownMarker(None)
    return CleanShutdownMarker(epoch)


def read_clean_shutdown(log_dir: Path, *, fs: FileSystem | None = None) -> CleanShutdownMarker | None:
    """The marker of a log dir, or None if the dir has none."""
    fs = fs or default_fs()
    path = Path(log_dir) / CLEAN_SHUTDOWN_FILE
    if not fs.exists(path):
        return None
    return parse_clean_shutdown(fs.read_bytes(path))


def format_clean_shutdown(broker_epoch: int = UNKNOWN_BROKER_EPOCH) -> bytes:
    """The marker's bytes as Kafka's Jackson writes them: `{"version":0,"brokerEpoch":-1}`."""
    return json.dumps({"version": CLEAN_SHUTDOWN_VERSION, "brokerEpoch": broker_epoch}, separators=(",", ":")).encode()


def write_clean_shutdown(
    log_dir: Path, *, broker_epoch: int = UNKNOWN_BROKER_EPOCH, fs: FileSystem | None = None
) -> None:
    """Write the marker atomically (`.tmp`, fsync, rename, fsync the directory)."""
    (fs or default_fs()).write_atomic(Path(log_dir) / CLEAN_SHUTDOWN_FILE, format_clean_shutdown(broker_epoch))


def delete_clean_shutdown(log_dir: Path, *, fs: FileSystem | None = None) -> bool:
    """Delete the marker durably (unlink, then fsync the directory).

    Returns:
        True if there was a marker.
    """
    fs = fs or default_fs()
    log_dir = Path(log_dir)
    path = log_dir / CLEAN_SHUTDOWN_FILE
    if not fs.exists(path):
        return False
    fs.delete(path)
    fs.fsync_dir(log_dir)
    return True
