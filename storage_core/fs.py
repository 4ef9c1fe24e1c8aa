"""The file-system layer: the only module of storage_core that touches files.

Every open, write, truncate, fsync, rename, delete and mmap of storage_core goes through a
:class:`FileSystem`, passed keyword-only as `fs=` and defaulting to :func:`default_fs`. That
single seam is what lets tests inject a crash (or an I/O error) at the n-th mutating operation
of any procedure and check that recovery ends in a consistent state.

Durability rules (Kafka's `Utils.atomicMoveWithFallback`, KAFKA-3968):

* :meth:`FileSystem.rename_atomic` renames with `os.replace` and then fsyncs the parent directory,
  so the rename survives a power loss.
* :meth:`FileSystem.write_atomic` writes `<name>.tmp`, fsyncs it, renames it over `<name>` and
  fsyncs the directory: readers see the old or the new content, never a mix.
* Appends and in-place writes are durable only after :meth:`FileHandle.fsync`.

Fault injection: :class:`FaultInjectingFileSystem` counts mutating operations and, at the
configured one, raises :class:`SimulatedCrash` (a `BaseException`, so no `except Exception`
handler can swallow it, like `kill -9`), exits the process with status 137, or raises an
`OSError(EIO)` (a failed write or fsync). Setting `LOGKEEPER_FAULT_AFTER=n` (and optionally
`LOGKEEPER_FAULT_KIND=crash|exit|eio`) makes :func:`default_fs` return such a file system, so a
crash can be injected into a whole job, Spark executors included; the count is job-wide (driver
and every executor task share it, :mod:`storage_core.fault_control`).
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from stat import S_ISDIR
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

if TYPE_CHECKING:
    from storage_core.fault_control import SharedFaultControl

FaultKind = Literal["crash", "exit", "eio"]


class SimulatedCrash(BaseException):
    """Raised by :class:`FaultInjectingFileSystem` in place of a mutating operation."""

    def __init__(self, operation: str, path: Path | str) -> None:
        super().__init__(f"simulated crash before {operation} {path}")
        self.operation = operation
        self.path = Path(path)


class FileIdentity(NamedTuple):
    """Which file a path or handle names: `st_dev` and `st_ino`."""

    device: int
    inode: int


class FileHandle(Protocol):
    """An open file: positional reads and writes, FileChannel-style."""

    @property
    def path(self) -> Path:
        """The file's path."""
        ...

    def read_at(self, position: int, size: int) -> bytes:
        """Read up to `size` bytes at `position` (fewer at end of file)."""
        ...

    def write_at(self, position: int, data: bytes | bytearray | memoryview) -> None:
        """Write all of `data` at `position`."""
        ...

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write `data` at the end of the file; returns the position it was written at."""
        ...

    def truncate(self, size: int) -> None:
        """Set the file's length (shrinks or zero-extends)."""
        ...

    def fsync(self) -> None:
        """Flush the file's data to stable storage."""
        ...

    def size(self) -> int:
        """The file's current length in bytes."""
        ...

    def identity(self) -> FileIdentity:
        """The file's device and inode: the same file while it is renamed, a new one when replaced."""
        ...

    def drop_cache(self, position: int, size: int) -> None:
        """Advise the kernel that `size` bytes at `position` will not be read again
        (`posix_fadvise(POSIX_FADV_DONTNEED)`): a scrub leaves the page cache to the broker."""
        ...

    def close(self) -> None:
        """Release the handle."""
        ...


class FileSystem(Protocol):
    """The operations storage_core may perform on files and directories."""

    def open(self, path: Path, *, writable: bool = False, create: bool = False) -> FileHandle:
        """Open a file for positional I/O; `create` creates it (empty) if missing."""
        ...

    def read_bytes(self, path: Path) -> bytes:
        """The whole content of a file."""
        ...

    def mmap(self, path: Path) -> mmap.mmap | bytes:
        """A read-only map of the whole file (`b""` for an empty file)."""
        ...

    def write_file(self, path: Path, data: bytes, *, fsync: bool = True) -> None:
        """Create or overwrite `path` with `data` in place (not atomic)."""
        ...

    def write_atomic(self, path: Path, data: bytes, *, sync_dir: bool = True) -> None:
        """Replace `path` by `data` atomically: `.tmp`, fsync, rename, fsync the directory.

        With `sync_dir=False` the caller fsyncs the directory itself, once after several writes;
        until then a power loss may bring back the old file (never a partial new one).
        """
        ...

    def truncate(self, path: Path, size: int) -> None:
        """Set a file's length."""
        ...

    def fsync(self, path: Path) -> None:
        """fsync a file by path."""
        ...

    def fsync_dir(self, path: Path) -> None:
        """fsync a directory, making creations, renames and deletions in it durable."""
        ...

    def rename_atomic(self, source: Path, target: Path, *, sync_dir: bool = True) -> None:
        """Rename `source` to `target` (replacing it) and fsync the parent directory (unless `sync_dir=False`)."""
        ...

    def delete(self, path: Path) -> None:
        """Delete a file; a missing file is not an error."""
        ...

    def make_dirs(self, path: Path) -> None:
        """Create `path` and its missing parents, each creation made durable (its parent fsynced)."""
        ...

    def remove_dir(self, path: Path) -> None:
        """Remove an empty directory (a missing one is not an error); the caller fsyncs its parent."""
        ...

    def list_dir(self, path: Path) -> list[str]:
        """The names in a directory, sorted."""
        ...

    def exists(self, path: Path) -> bool:
        """True if the path exists."""
        ...

    def is_dir(self, path: Path) -> bool:
        """True if the path is a directory."""
        ...

    def size(self, path: Path) -> int:
        """A file's length in bytes."""
        ...

    def mtime_ms(self, path: Path) -> int:
        """A file's last-modified time in milliseconds since the epoch."""
        ...

    def set_mtime_ms(self, path: Path, mtime_ms: int) -> None:
        """Set a file's last-modified time (the cleaner keeps the source segments' time)."""
        ...

    def is_symlink(self, path: Path) -> bool:
        """True if the path itself is a symbolic link (dangling or not)."""
        ...

    def real_path(self, path: Path) -> Path:
        """The path with every symbolic link resolved (`realpath`; a dangling link's target as written)."""
        ...

    def try_lock(self, path: Path) -> int | None:
        """Take an exclusive POSIX (fcntl) lock on the file `path` names now; the fd, or None if held.

        The file is created if missing, never through a symlink. The lock is only returned once the
        locked file is still the one at `path` (a file unlinked or replaced meanwhile is let go and
        the path tried again), so two processes can never both hold "the" lock of `path`.

        Raises:
            IsADirectoryError: `path` is a directory.
            FileNotFoundError: `path` is a dangling symlink (or its directory is missing).
        """
        ...

    def unlock(self, fd: int) -> None:
        """Release a lock taken by :meth:`try_lock`."""
        ...

    def identity(self, path: Path) -> FileIdentity | None:
        """The device and inode `path` names now, or None if nothing does."""
        ...

    def lock_holder(self, path: Path) -> int | None:
        """The pid of a process holding a POSIX (fcntl) lock on `path`, or None.

        Asks with `F_GETLK` on a read-only descriptor: takes no lock, creates nothing, and a missing
        file is None. Our own process's locks are never reported (POSIX locks do not conflict with
        their owner).
        """
        ...


_FLOCK = struct.Struct("hhqqi4x")


class LocalFileHandle:
    """A :class:`FileHandle` over an OS file descriptor."""

    def __init__(self, path: Path, fd: int, fs: LocalFileSystem) -> None:
        self._path = path
        self._fd = fd
        self._fs = fs

    @property
    def path(self) -> Path:
        return self._path

    def read_at(self, position: int, size: int) -> bytes:
        return os.pread(self._fd, size, position)

    def write_at(self, position: int, data: bytes | bytearray | memoryview) -> None:
        self._fs._before("write", self._path)
        view = memoryview(data)
        with self._naming_the_file():
            while view:
                written = os.pwrite(self._fd, view, position)
                view = view[written:]
                position += written

    @contextmanager
    def _naming_the_file(self) -> Iterator[None]:
        """An OSError of a call on the descriptor (a full disk, EIO) names the file, as one by path does."""
        try:
            yield
        except OSError as exc:
            if exc.filename is not None:
                raise
            raise OSError(exc.errno, exc.strerror, str(self._path)) from exc

    def append(self, data: bytes | bytearray | memoryview) -> int:
        position = os.fstat(self._fd).st_size
        self.write_at(position, data)
        return position

    def truncate(self, size: int) -> None:
        self._fs._before("truncate", self._path)
        with self._naming_the_file():
            os.ftruncate(self._fd, size)

    def fsync(self) -> None:
        self._fs._before("fsync", self._path)
        with self._naming_the_file():
            os.fsync(self._fd)

    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def identity(self) -> FileIdentity:
        stat = os.fstat(self._fd)
        return FileIdentity(stat.st_dev, stat.st_ino)

    def drop_cache(self, position: int, size: int) -> None:
        if hasattr(os, "posix_fadvise"):  # Linux and most Unixes; elsewhere the cache is the OS's business
            os.posix_fadvise(self._fd, position, size, os.POSIX_FADV_DONTNEED)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> LocalFileHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalFileSystem:
    """The real file system. Subclasses hook :meth:`_before` to inject faults."""

    def _before(self, operation: str, path: Path, target: Path | None = None) -> None:
        """Called before every mutating operation (`target`: a rename's); the real file system does nothing."""

    def open(self, path: Path, *, writable: bool = False, create: bool = False) -> LocalFileHandle:
        flags = os.O_RDWR if writable else os.O_RDONLY
        if create:
            if not os.path.exists(path):
                self._before("create", path)
            flags |= os.O_CREAT
        return LocalFileHandle(Path(path), os.open(path, flags | os.O_CLOEXEC, 0o644), self)

    def read_bytes(self, path: Path) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def mmap(self, path: Path) -> mmap.mmap | bytes:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return b""
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

    def write_file(self, path: Path, data: bytes, *, fsync: bool = True) -> None:
        with self.open(path, writable=True, create=True) as handle:
            handle.truncate(0)
            handle.write_at(0, data)
            if fsync:
                handle.fsync()

    def write_atomic(self, path: Path, data: bytes, *, sync_dir: bool = True) -> None:
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        try:
            self.write_file(tmp, data, fsync=True)
        except OSError:  # a full disk, EIO: leave no half-written temp file behind (a crash may: recover removes it)
            with suppress(OSError):
                self.delete(tmp)
            raise
        self.rename_atomic(tmp, path, sync_dir=sync_dir)

    def truncate(self, path: Path, size: int) -> None:
        self._before("truncate", path)
        os.truncate(path, size)

    def fsync(self, path: Path) -> None:
        self._before("fsync", path)
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def fsync_dir(self, path: Path) -> None:
        self._before("fsync_dir", path)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def rename_atomic(self, source: Path, target: Path, *, sync_dir: bool = True) -> None:
        self._before("rename", source, Path(target))
        os.replace(source, target)
        if sync_dir:
            self.fsync_dir(Path(target).parent)

    def delete(self, path: Path) -> None:
        if os.path.lexists(path):
            self._before("delete", path)
            os.unlink(path)

    def remove_dir(self, path: Path) -> None:
        if os.path.isdir(path):
            self._before("rmdir", Path(path))
            os.rmdir(path)

    def make_dirs(self, path: Path) -> None:
        path = Path(path)
        missing = []
        while not os.path.isdir(path):
            missing.append(path)
            path = path.parent
        for directory in reversed(missing):
            self._before("mkdir", directory)
            try:
                os.mkdir(directory)
            except FileExistsError:
                if not os.path.isdir(directory):
                    raise
                continue  # another process made it meanwhile
            self.fsync_dir(directory.parent)

    def list_dir(self, path: Path) -> list[str]:
        return sorted(os.listdir(path))

    def exists(self, path: Path) -> bool:
        return os.path.exists(path)

    def is_dir(self, path: Path) -> bool:
        return os.path.isdir(path)

    def size(self, path: Path) -> int:
        return os.stat(path).st_size

    def mtime_ms(self, path: Path) -> int:
        return os.stat(path).st_mtime_ns // 1_000_000

    def set_mtime_ms(self, path: Path, mtime_ms: int) -> None:
        self._before("utime", path)
        os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))

    def is_symlink(self, path: Path) -> bool:
        return os.path.islink(path)

    def real_path(self, path: Path) -> Path:
        return Path(os.path.realpath(path))

    def try_lock(self, path: Path) -> int | None:
        while True:
            fd = self._open_lock_file(path)
            try:
                # Java's FileChannel.tryLock is an fcntl record lock on Linux: use the same namespace.
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EACCES, errno.EAGAIN):
                    return None
                raise
            locked = os.fstat(fd)
            try:
                current = os.stat(path)
            except FileNotFoundError:
                current = None
            if current is not None and (current.st_dev, current.st_ino) == (locked.st_dev, locked.st_ino):
                return fd
            os.close(fd)  # we locked a file no longer at `path`: that lock guards nothing, try again

    @staticmethod
    def _open_lock_file(path: Path) -> int:
        """Open `path` read-write as Java's FileChannel.open(CREATE, READ, WRITE), except that a missing
        file is created only where no symlink stands (`O_EXCL` never follows one)."""
        while True:
            try:
                return os.open(path, os.O_RDWR | os.O_CLOEXEC)
            except FileNotFoundError:
                if os.path.islink(path) and not os.path.exists(path):
                    raise FileNotFoundError(errno.ENOENT, "dangling symbolic link", str(path)) from None
                if os.path.lexists(path):
                    continue  # created by another process since our open: open it
            try:
                return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            except FileExistsError:
                continue  # another process created it (or a link) meanwhile: open what is there

    def unlock(self, fd: int) -> None:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        os.close(fd)

    def identity(self, path: Path) -> FileIdentity | None:
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            return None
        return FileIdentity(stat.st_dev, stat.st_ino)

    def lock_holder(self, path: Path) -> int | None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            # struct flock {short l_type, l_whence; off_t l_start, l_len; pid_t l_pid} (Linux, 64-bit off_t).
            query = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
            l_type, _, _, _, l_pid = _FLOCK.unpack(fcntl.fcntl(fd, fcntl.F_GETLK, query))
        finally:
            os.close(fd)
        return None if l_type == fcntl.F_UNLCK else l_pid


class FaultInjectingFileSystem(LocalFileSystem):
    """A real file system that fails at the n-th mutating operation (1-based).

    Mutating operations are: create, write, truncate, fsync, fsync_dir, rename, delete, utime, mkdir, rmdir.
    `operations` records every one that ran, so a test can first count the operations of an
    uninterrupted run and then crash at each of them in turn. After a crash (`crash`), every later
    operation fails too: the process is dead, not even a `finally` block may change a file.

    Args:
        fail_at: the 1-based number of the operation that fails; None never fails.
        kind: `crash` raises :class:`SimulatedCrash`; `exit` ends the process with status 137
            (as `kill -9` would); `eio` raises `OSError(EIO)` for that operation only.
        control: count job-wide instead (:class:`~storage_core.fault_control.SharedFaultControl`:
            every process of a run shares one count, and the control decides where to fail);
            `fail_at` and `kind` are then the control's.
    """

    def __init__(
        self, *, fail_at: int | None = None, kind: FaultKind = "crash", control: SharedFaultControl | None = None
    ) -> None:
        self.fail_at = fail_at
        self.kind = kind
        self.control = control
        self.operations: list[tuple[str, Path]] = []
        self._crashed = False

    def _before(self, operation: str, path: Path, target: Path | None = None) -> None:
        if self.control is not None:
            self.control.before(operation, Path(path), target)
            self.operations.append((operation, Path(path)))
            return
        if self._crashed:
            raise SimulatedCrash(operation, path)
        number = len(self.operations) + 1
        if number == self.fail_at:
            if self.kind == "exit":
                os._exit(137)
            if self.kind == "eio":
                self.operations.append((operation, Path(path)))
                raise OSError(errno.EIO, f"injected I/O error in {operation}", str(path))
            self._crashed = True
            raise SimulatedCrash(operation, path)
        self.operations.append((operation, Path(path)))


class SpaceUsed(NamedTuple):
    """What one directory entry takes: `st_size` (what `du -b` adds), `st_blocks * 512` (what `du -B1`
    adds: a preallocated or sparse index file takes less than its size), and its identity (hard links
    count once, as in `du`)."""

    apparent_bytes: int
    allocated_bytes: int
    is_dir: bool
    identity: FileIdentity


def space_used(path: Path) -> SpaceUsed:
    """The space `path` itself takes (`lstat`: a symlink is its own entry, never followed).

    Raises:
        FileNotFoundError: it is gone (a live broker deleted it since the listing).
    """
    stat = os.lstat(path)
    return SpaceUsed(stat.st_size, stat.st_blocks * 512, S_ISDIR(stat.st_mode), FileIdentity(stat.st_dev, stat.st_ino))


FAULT_AFTER_ENV = "LOGKEEPER_FAULT_AFTER"
FAULT_KIND_ENV = "LOGKEEPER_FAULT_KIND"
_LOCAL = LocalFileSystem()


def default_fs() -> FileSystem:
    """The local file system, or a fault-injecting one that counts job-wide.

    With `LOGKEEPER_FAULT_DIR` set (see :mod:`storage_core.fault_control`), every file system of
    every process of the run shares that directory's count and fault plan. `LOGKEEPER_FAULT_AFTER=n`
    alone (one run from a shell) makes such a directory on the first call and exports it, so that
    Spark's Python workers, started later by the driver, inherit it.
    """
    from storage_core.fault_control import FAULT_DIR_ENV, SharedFaultControl

    directory = os.environ.get(FAULT_DIR_ENV)
    if directory:
        return FaultInjectingFileSystem(control=SharedFaultControl(Path(directory)))
    fail_at = os.environ.get(FAULT_AFTER_ENV)
    if not fail_at:
        return _LOCAL
    kind = os.environ.get(FAULT_KIND_ENV, "exit")
    if kind not in ("crash", "exit", "eio"):
        raise ValueError(f"{FAULT_KIND_ENV} must be crash, exit or eio, not {kind!r}")
    control = SharedFaultControl.start(fail_at=int(fail_at), kind=kind)  # type: ignore[arg-type]
    os.environ[FAULT_DIR_ENV] = str(control.directory)
    return FaultInjectingFileSystem(control=control)
