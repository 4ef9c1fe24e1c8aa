"""The log dir's `.lock` (kafka-format.md §1.7; `LogManager.lockLogDirs`, `FileLock.java`).

A broker holds an exclusive `FileChannel.tryLock()` on `<log dir>/.lock` while it runs. On Linux
that is an fcntl (POSIX record) lock, so we take the same kind of lock: while we hold it a broker
cannot start on the directory, and while a broker holds it we refuse to touch anything.
The file itself is left in place on release (a broker deletes it only on its own shutdown, and its
presence means nothing without the lock).
"""

from __future__ import annotations

from pathlib import Path

from storage_core.errors import LogDirLockedError
from storage_core.fs import FileSystem, default_fs
from storage_core.names import LOCK_FILE


class LogDirLock:
    """An exclusive lock on one log dir; release it with :meth:`release` or a `with` block."""

    def __init__(self, log_dir: Path, fd: int, fs: FileSystem) -> None:
        self.log_dir = log_dir
        self._fd: int | None = fd
        self._fs = fs

    def release(self) -> None:
        if self._fd is not None:
            self._fs.unlock(self._fd)
            self._fd = None

    def __enter__(self) -> LogDirLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def acquire_log_dir_lock(log_dir: Path, *, fs: FileSystem | None = None) -> LogDirLock:
    """Lock a log dir.

    Raises:
        LogDirLockedError: another process (a running broker) holds the lock.
    """
    fs = fs or default_fs()
    log_dir = Path(log_dir)
    fd = fs.try_lock(log_dir / LOCK_FILE)
    if fd is None:
        raise LogDirLockedError(log_dir)
    return LogDirLock(log_dir, fd, fs)


def is_log_dir_locked(log_dir: Path, *, fs: FileSystem | None = None) -> bool:
    """True if another process holds the log dir's lock (probes without keeping it)."""
    fs = fs or default_fs()
    path = Path(log_dir) / LOCK_FILE
    if not fs.exists(path):
        return False
    fd = fs.try_lock(path)
    if fd is None:
        return True
    fs.unlock(fd)
    return False
