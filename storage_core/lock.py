"""The log dir's `.lock` (kafka-format.md §1.7; `LogManager.lockLogDirs`, `server-common/.../util/FileLock.java`).

A broker holds an exclusive `FileChannel.tryLock()` on `<log dir>/.lock` (an empty file, created if
missing) for as long as it runs. On Linux the JDK implements that lock with `fcntl(F_SETLK)`, a POSIX
record lock, so we take the same kind (`fcntl.lockf` through :meth:`FileSystem.try_lock`, never
`flock`, whose namespace is separate): while we hold it a broker cannot start on the directory
("A Kafka instance in another process or thread is using this directory"), and while a broker
holds it :func:`acquire_log_dir_lock` refuses with :class:`LogDirLockedError` before anything is
touched. The lock dies with its process, so a crashed holder never leaves the dir locked.

POSIX record locks belong to the *process*: a second lock by the same process always succeeds, and
closing *any* descriptor of the file drops all of the process's locks on it. Java guards against the
first with `OverlappingFileLockException`; we keep a registry of the dirs this process holds, so a
second acquisition of a held dir raises :class:`LogDirLockedError`, and :func:`is_log_dir_locked`
answers True for them without opening the file (which would silently unlock it).

Release mirrors `FileLock.destroy` on a clean broker shutdown: the `.lock` file is deleted, so a run
leaves no trace. We delete it while still holding the lock and only then unlock: a process that
opens the path after the deletion creates a fresh file, and one that opened it before can only lock
the unlinked file if it retries in the instant between our unlink and unlock (Kafka unlocks first
and deletes after, which leaves a wider window). If the deletion fails the file stays behind, which
is harmless: a broker reuses it, as after any crash.
"""

from __future__ import annotations

import threading
from pathlib import Path

from storage_core.errors import LogDirLockedError
from storage_core.fs import FileSystem, default_fs
from storage_core.names import LOCK_FILE

_HELD: set[Path] = set()
"""Lock files held by this process, resolved."""
_HELD_GUARD = threading.Lock()


def _lock_path(log_dir: Path) -> Path:
    # Resolving reads symlinks only (opens nothing), so two spellings of one dir share an entry.
    return Path(log_dir).resolve() / LOCK_FILE


class LogDirLock:
    """An exclusive lock on one log dir, held until :meth:`release` (or the end of a `with` block).

    Built by :func:`acquire_log_dir_lock`.
    """

    def __init__(self, log_dir: Path, *, path: Path, fd: int, fs: FileSystem) -> None:
        self.log_dir = Path(log_dir)
        self.path = path
        self._fd: int | None = fd
        self._fs = fs

    @property
    def held(self) -> bool:
        """True until released."""
        return self._fd is not None

    def release(self) -> None:
        """Delete `.lock`, then unlock it (`FileLock.destroy`); a second call does nothing."""
        fd = self._fd
        if fd is None:
            return
        self._fd = None
        try:
            try:
                self._fs.delete(self.path)
            except OSError:
                pass  # a `.lock` left behind is harmless: the next holder reuses it
        finally:
            try:
                self._fs.unlock(fd)
            finally:
                with _HELD_GUARD:
                    _HELD.discard(self.path)

    def __enter__(self) -> LogDirLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def acquire_log_dir_lock(log_dir: Path, *, fs: FileSystem | None = None) -> LogDirLock:
    """Take a log dir's `.lock`, creating the file if needed.

    Raises:
        LogDirLockedError: another process (a running broker) holds the lock, or this process
            already does.
    """
    fs = fs or default_fs()
    path = _lock_path(log_dir)
    with _HELD_GUARD:
        if path in _HELD:
            raise LogDirLockedError(log_dir)
        fd = fs.try_lock(path)
        if fd is None:
            raise LogDirLockedError(log_dir)
        _HELD.add(path)
    return LogDirLock(log_dir, path=path, fd=fd, fs=fs)


def is_log_dir_locked(log_dir: Path, *, fs: FileSystem | None = None) -> bool:
    """True if a process (another one, or this one) holds the log dir's lock.

    Probes by taking and releasing the lock; a dir without `.lock` is unlocked and is left without one.
    """
    fs = fs or default_fs()
    path = _lock_path(log_dir)
    with _HELD_GUARD:
        if path in _HELD:
            return True
        if not fs.exists(path):
            return False
        fd = fs.try_lock(path)
        if fd is None:
            return True
        fs.unlock(fd)
        return False
