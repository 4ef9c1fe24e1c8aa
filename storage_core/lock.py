"""The log dir's `.lock` (kafka-format.md §1.7; `LogManager.lockLogDirs`, `server-common/.../util/FileLock.java`).

A broker holds an exclusive `FileChannel.tryLock()` on `<log dir>/.lock` (an empty file, created if
missing) for as long as it runs. On Linux the JDK implements that lock with `fcntl(F_SETLK)`, a POSIX
record lock, so we take the same kind on the same file (`fcntl.lockf` through
:meth:`FileSystem.try_lock`, never `flock`, whose namespace is separate): while we hold it a broker
cannot start on the directory ("A Kafka instance in another process or thread is using this
directory"), and while a broker holds it :func:`acquire_log_dir_lock` refuses with
:class:`LogDirLockedError` before anything is touched. The lock dies with its process, so a crashed
holder never leaves the dir locked.

The protocol (why two holders can never overlap):

* a lock is only as good as the inode it is on, so **we never unlink `.lock`**: a contender may have
  opened the file and be about to lock it; if we deleted it, that contender would lock an inode no
  longer at the path while a third process creates and locks a fresh `.lock` (three processes
  looping on acquire/release overlapped thousands of times when release deleted the file). Release
  only unlocks and closes; the empty `.lock` stays, as after any broker crash, and a broker reuses it;
* after locking, :meth:`FileSystem.try_lock` checks that the locked inode is still the one at the path
  and otherwise lets it go and tries again, so we never hold a lock on a file a holder deleted on its
  way out (Kafka's `FileLock.destroy` at broker shutdown unlocks, then deletes). What no protocol on
  our side can prevent: a broker shutting down in the instant after we locked deletes the file we
  hold, and a broker started right after then locks a fresh `.lock`. Stop brokers before maintenance;
  do not start them during it;
* `.lock` is created only where nothing stands (`O_EXCL`), never through a symlink; an existing
  file, or a symlink to one, is locked where it is, as the broker's `FileChannel.open` would. A
  `.lock` that is a directory or a dangling symlink is refused with :class:`InvalidLogDirError`
  (a broker could not start there either).

POSIX record locks belong to the *process*: a second lock by the same process always succeeds, and
closing *any* descriptor of the file drops all of the process's locks on it. Java guards against the
first with `OverlappingFileLockException`; we keep a registry of the dirs this process holds, so a
second acquisition of a held dir raises :class:`LogDirLockedError`, and :func:`is_log_dir_locked`
answers True for them without opening the file (which would silently unlock it).
"""

from __future__ import annotations

import threading
from pathlib import Path

from storage_core.errors import InvalidLogDirError, LogDirLockedError
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
        """Unlock and close `.lock`, which stays in place (see the protocol above); a second call does nothing."""
        fd = self._fd
        if fd is None:
            return
        self._fd = None
        try:
            self._fs.unlock(fd)
        finally:
            with _HELD_GUARD:
                _HELD.discard(self.path)

    def __enter__(self) -> LogDirLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def check_lock_file(log_dir: Path, *, fs: FileSystem | None = None) -> None:
    """Refuse a `.lock` that cannot be a lock file: a directory, or a dangling symlink (which we would
    have to create a file through). Opens nothing.

    Raises:
        InvalidLogDirError: naming the `.lock` and what it is.
    """
    fs = fs or default_fs()
    path = Path(log_dir) / LOCK_FILE
    if fs.is_dir(path):
        raise InvalidLogDirError(
            f"{LOCK_FILE} is a directory, not a lock file (a broker cannot start on this log dir either): move it away",
            path=path,
        )
    if fs.is_symlink(path) and not fs.exists(path):
        raise InvalidLogDirError(
            f"{LOCK_FILE} is a dangling symlink (to {fs.real_path(path)}): logkeeper creates no file through a "
            "symlink; remove the link",
            path=path,
        )


def acquire_log_dir_lock(log_dir: Path, *, fs: FileSystem | None = None) -> LogDirLock:
    """Take a log dir's `.lock`, creating the file if needed.

    Raises:
        LogDirLockedError: another process (a running broker) holds the lock, or this process
            already does.
        InvalidLogDirError: `.lock` is a directory or a dangling symlink.
    """
    fs = fs or default_fs()
    path = _lock_path(log_dir)
    with _HELD_GUARD:
        if path in _HELD:
            raise LogDirLockedError(log_dir)
        check_lock_file(path.parent, fs=fs)
        fd = fs.try_lock(path)
        if fd is None:
            raise LogDirLockedError(log_dir)
        _HELD.add(path)
    return LogDirLock(log_dir, path=path, fd=fd, fs=fs)


def is_log_dir_locked(log_dir: Path, *, fs: FileSystem | None = None) -> bool:
    """True if a process (another one, or this one) holds the log dir's lock.

    Probes by taking and releasing the lock; a dir without `.lock` is unlocked and is left without one,
    and so is one whose `.lock` is a directory or a dangling symlink (nothing can hold such a lock).
    """
    fs = fs or default_fs()
    path = _lock_path(log_dir)
    with _HELD_GUARD:
        if path in _HELD:
            return True
        if not fs.exists(path) or fs.is_dir(path):
            return False
        fd = fs.try_lock(path)
        if fd is None:
            return True
        fs.unlock(fd)
        return False
