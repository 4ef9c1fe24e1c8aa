"""The scrub cursor: what `scrub` has verified of one partition, kept in the warehouse, never in a log dir.

One JSON file per partition, `<cursor dir>/<host>/<log dir key>/<partition dir>.json`, where the
log dir key is the first 16 hex digits of the SHA-256 of the log dir's absolute path (brokers of a
fleet share paths, hosts do not share files, so the host name comes first):

```
{"version": 1, "log_dir": "/var/kafka-logs", "dir_name": "orders-0",
 "segments": {"1200": {"size": 1073741100, "sha256": "9f...", "verified_ms": 1764000000000, "status": "ok"}}}
```

`segments` maps a closed segment's base offset to the length and SHA-256 of what was verified (the
header of every whole, valid batch, each carrying the CRC checked against its body), when, and the
outcome (`ok` or `corrupt`). A segment is due again when it has no entry, was corrupt (every run
reports it until it is repaired), its size changed (the cleaner replaced it), or
`verified_ms + recheck_ms <= now_ms`. Due segments are taken never-verified first, then the
longest-unverified, so a nightly window with a budget works through a large broker over several nights.

Crash story: the file is rewritten atomically after every verified segment (`.tmp`, fsync, rename,
fsync dir), so a scrub stopped at any point resumes after the last segment it finished; an
unreadable cursor is reported and treated as empty (everything is due: re-verifying loses nothing).
"""

from __future__ import annotations

import hashlib
import json
import socket
from dataclasses import dataclass, field
from pathlib import Path

from storage_core.fs import FileSystem, default_fs

CURSOR_VERSION = 1


@dataclass(frozen=True, slots=True)
class VerifiedSegment:
    """One segment's entry in the cursor."""

    size: int
    sha256: str
    verified_ms: int
    status: str


@dataclass(frozen=True, slots=True)
class ScrubCursor:
    """What has been verified of one partition (see the module docstring)."""

    log_dir: str
    dir_name: str
    segments: dict[int, VerifiedSegment] = field(default_factory=dict)

    def is_due(self, base_offset: int, size: int, *, now_ms: int, recheck_ms: int) -> bool:
        """True if the segment must be verified (again); a corrupt one always is, until it is repaired."""
        entry = self.segments.get(base_offset)
        if entry is None or entry.status != "ok" or entry.size != size:
            return True
        return entry.verified_ms + recheck_ms <= now_ms

    def due_order(self, base_offsets: list[int]) -> list[int]:
        """`base_offsets` never verified first (in offset order), then the longest-unverified first."""
        return sorted(
            base_offsets,
            key=lambda b: (b in self.segments, self.segments[b].verified_ms if b in self.segments else 0, b),
        )

    def with_segment(self, base_offset: int, entry: VerifiedSegment, present: set[int]) -> ScrubCursor:
        """The cursor with `entry` recorded and entries of segments no longer `present` dropped."""
        segments = {b: e for b, e in self.segments.items() if b in present}
        segments[base_offset] = entry
        return ScrubCursor(self.log_dir, self.dir_name, segments)


def cursor_path(cursor_dir: Path, log_dir: Path, dir_name: str, *, host: str | None = None) -> Path:
    """Where the cursor of `log_dir/dir_name` lives under `cursor_dir`."""
    key = hashlib.sha256(str(Path(log_dir).absolute()).encode()).hexdigest()[:16]
    return Path(cursor_dir) / (host or socket.gethostname()) / key / f"{dir_name}.json"


def read_cursor(path: Path, *, log_dir: str, dir_name: str, fs: FileSystem | None = None) -> tuple[ScrubCursor, str]:
    """The cursor at `path` (empty if absent), and a warning ("" if none) when it could not be read."""
    fs = fs or default_fs()
    empty = ScrubCursor(log_dir, dir_name)
    if not fs.exists(path):
        return empty, ""
    try:
        body = json.loads(fs.read_bytes(path))
        if body.get("version") != CURSOR_VERSION:
            return empty, f"{path}: cursor version {body.get('version')!r} unknown, starting over"
        segments = {int(b): VerifiedSegment(**e) for b, e in body["segments"].items()}
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        return empty, f"{path}: unreadable cursor ({exc}), starting over"
    return ScrubCursor(log_dir, dir_name, segments), ""


def write_cursor(path: Path, cursor: ScrubCursor, *, fs: FileSystem | None = None) -> None:
    """Replace the cursor at `path` atomically (its directories are created)."""
    fs = fs or default_fs()
    body = {
        "version": CURSOR_VERSION,
        "log_dir": cursor.log_dir,
        "dir_name": cursor.dir_name,
        "segments": {
            str(b): {"size": e.size, "sha256": e.sha256, "verified_ms": e.verified_ms, "status": e.status}
            for b, e in sorted(cursor.segments.items())
        },
    }
    fs.make_dirs(Path(path).parent)
    fs.write_atomic(Path(path), json.dumps(body, indent=1).encode() + b"\n")
