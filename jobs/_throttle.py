"""A token bucket shared by every scrub task of a host: `--max-bytes-per-second` holds per host, not per task.

Like Kafka's cleaner throttler (`log.cleaner.io.max.bytes.per.second`, `Throttler.scala`), but the
tasks are separate Python workers, so the bucket's state is a file every worker of the host opens:
`<throttle dir>/<name>.bucket`, 8 bytes, the "theoretical arrival time" of the generic cell-rate
algorithm (GCRA) in CLOCK_MONOTONIC nanoseconds (one clock for every process of a host). Under an
exclusive `lockf` of the file, a task reserves `size` bytes: the schedule advances by
`size / rate`; the task then sleeps (outside the lock) until its slot, less a burst allowance. Over
any window the host reads at most `rate * window + burst` bytes, whatever the number of tasks.

POSIX record locks belong to processes, so the bucket serialises processes (Spark's Python workers
run one task each), not threads of one process.

Crash story: the file holds no data of ours; a torn or stale value (a reboot resets the monotonic
clock) is clamped to now, which at worst admits one burst early.
"""

from __future__ import annotations

import fcntl
import os
import struct
import tempfile
import time
from pathlib import Path

_STATE = struct.Struct("<q")
_MAX_AHEAD_NS = 3600 * 10**9  # a schedule further ahead than an hour is stale (another boot)


def default_throttle_dir() -> Path:
    """A host-wide directory every worker of this user shares (`$TMPDIR/logkeeper-throttle-<uid>`)."""
    return Path(tempfile.gettempdir()) / f"logkeeper-throttle-{os.getuid()}"


class HostTokenBucket:
    """Admits `rate_bytes_per_s` bytes a second across every process of the host using the same file.

    Args:
        path: the bucket file (created if missing).
        rate_bytes_per_s: the host's rate.
        burst_bytes: bytes that may go at once after an idle spell.
    """

    def __init__(self, path: Path, *, rate_bytes_per_s: int, burst_bytes: int) -> None:
        if rate_bytes_per_s <= 0:
            raise ValueError("the rate must be positive")
        self.path = Path(path)
        self.rate = rate_bytes_per_s
        self.burst_ns = burst_bytes * 10**9 // rate_bytes_per_s
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def acquire(self, size: int) -> None:
        """Return once `size` more bytes may be read."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX)
            now = time.monotonic_ns()
            raw = os.pread(fd, _STATE.size, 0)
            tat = _STATE.unpack(raw)[0] if len(raw) == _STATE.size else now
            if not now - _MAX_AHEAD_NS < tat < now + _MAX_AHEAD_NS:
                tat = now
            start = max(tat, now - self.burst_ns)
            os.pwrite(fd, _STATE.pack(start + size * 10**9 // self.rate), 0)
        finally:
            os.close(fd)  # closing drops the lock
        wait_ns = start - now
        if wait_ns > 0:
            time.sleep(wait_ns / 1e9)
