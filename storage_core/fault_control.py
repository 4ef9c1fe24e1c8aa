"""Job-wide fault injection: one count of mutating operations for every process of a run.

A logkeeper job changes files from several processes: the driver (locks, the clean-shutdown marker,
checkpoints) and Spark's Python workers (one task per partition). A crash sweep must be able to
stop the job at *each* of those operations, in one order, so the count cannot live in one
process's file system object. It lives in a directory named by `LOGKEEPER_FAULT_DIR`, which every
process of the run inherits from the driver's environment (Spark starts its workers after the
driver's first file operation, with the driver's environment):

```
<dir>/lock              an fcntl lock held while one operation is counted (plus a thread lock)
<dir>/plan.json         {"fail_at": n | null, "kind": "crash" | "exit" | "eio", "power_loss": bool}
<dir>/count             how many operations ran so far (decimal)
<dir>/operations.tsv    one line per operation that ran: number, operation, path, process id
<dir>/fired.json        {"number", "operation", "path", "pid"} of the operation the fault replaced
<dir>/journal           power-loss mode: per operation, what a :class:`DurabilityJournal` observes
                        (the operation, and the content of the files it may have to remember)
```

Each process's :class:`~storage_core.fs.FaultInjectingFileSystem` calls
:meth:`SharedFaultControl.before` before every mutating operation. At operation `fail_at` the plan's
fault happens: `crash` raises :class:`~storage_core.fs.SimulatedCrash`, `exit` ends the process
with status 137, `eio` raises `OSError(EIO)` for that operation only. After a crash or an exit
every later operation of every process of the run fails the same way: the job is dead, no other
task and no `finally` block may change a file. A plan can be changed between runs (the sweep of
`tests/reliability` reuses one Spark session and one directory for many runs): it is read at every
operation.

Power-loss mode records, before each operation, what a power loss right after the crash would take
back (file contents since their last fsync, namespace changes since their directory's last fsync);
`tests/faults.py` then reverts it. The order of operations is deterministic when Spark runs one task
at a time (`local[1]`): tasks then run in partition order, the driver waits for them.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pickle
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from storage_core.fs import FaultKind, LocalFileSystem, SimulatedCrash

FAULT_DIR_ENV = "LOGKEEPER_FAULT_DIR"
_THREADS = threading.Lock()
_FS = LocalFileSystem()  # the control's own files, and reads of the files it watches: never faulted


def _content(path: str) -> bytes | None:
    try:
        return _FS.read_bytes(Path(path))
    except (FileNotFoundError, IsADirectoryError):
        return None


@dataclass
class DurabilityJournal:
    """What a power loss would take back at this point of a run (fault class F8).

    File contents are durable from their last fsync (or from before the run); creations, renames,
    deletions and new directories are durable once their directory is fsynced.

    Attributes:
        durable: path -> its content at its last fsync (None: not on disk), for every file changed
            since.
        dir_ops: the namespace changes not yet made durable, oldest first: (kind, path, rename
            target, the target's or deleted file's durable content).
    """

    durable: dict[str, bytes | None] = field(default_factory=dict)
    dir_ops: list[tuple[str, str, str | None, bytes | None]] = field(default_factory=list)

    def _remember(self, path: str, contents: dict[str, bytes | None] | None) -> None:
        if path not in self.durable:
            self.durable[path] = contents[path] if contents is not None else _content(path)

    def observe(
        self,
        operation: str,
        path: Path,
        target: Path | None = None,
        contents: dict[str, bytes | None] | None = None,
    ) -> None:
        """Record an operation that is about to run.

        Args:
            operation: the operation.
            path: its file.
            target: a rename's target.
            contents: the files' contents as the operation found them (:func:`contents_before`);
                read now when None.
        """
        name = str(path)
        if operation in ("write", "truncate", "delete"):
            self._remember(name, contents)
        if operation == "fsync":
            self.durable[name] = contents[name] if contents is not None else _content(name)
        elif operation in ("create", "mkdir"):
            self.dir_ops.append((operation, name, None, None))
        elif operation == "delete":
            self.dir_ops.append(("delete", name, None, self.durable[name]))
        elif operation == "rename" and target is not None:
            to = str(target)
            self._remember(name, contents)
            self._remember(to, contents)
            self.dir_ops.append(("rename", name, to, self.durable[to]))
            self.durable[to] = self.durable[name]  # the content follows the name
            self.durable[name] = None
        elif operation == "fsync_dir":
            self.dir_ops = [op for op in self.dir_ops if os.path.dirname(op[1]) != name]


def contents_before(operation: str, path: Path, target: Path | None) -> dict[str, bytes | None]:
    """The contents of the files an operation's observation may need, read before it runs."""
    paths = [path] if operation in ("write", "truncate", "delete", "fsync") else []
    if operation == "rename" and target is not None:
        paths = [path, target]
    return {str(p): _content(str(p)) for p in paths}


class SharedFaultControl:
    """The fault plan and operation count of one run, shared through a directory (see the module doc).

    Args:
        directory: the control directory (made by :meth:`start`).
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    @classmethod
    def start(
        cls,
        directory: Path | None = None,
        *,
        fail_at: int | None = None,
        kind: FaultKind = "crash",
        power_loss: bool = False,
    ) -> SharedFaultControl:
        """Set (or reset) a control directory for a run: count from 0 and fail as planned.

        Args:
            directory: where; a new temporary directory when None.
            fail_at: the 1-based number of the operation that fails; None only counts.
            kind: crash, exit or eio (see :class:`~storage_core.fs.FaultInjectingFileSystem`).
            power_loss: keep the :class:`DurabilityJournal` of the run.
        """
        directory = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="logkeeper-faults-"))
        _FS.make_dirs(directory)
        control = cls(directory)
        with control._locked():
            control._write("plan.json", json.dumps({"fail_at": fail_at, "kind": kind, "power_loss": power_loss}))
            control._write("count", "0")
            control._write("operations.tsv", "")
            _FS.delete(directory / "fired.json")
            _FS.write_file(directory / "journal", b"", fsync=False)
        return control

    def _read(self, name: str) -> str:
        return _FS.read_bytes(self.directory / name).decode()

    def _write(self, name: str, text: str) -> None:
        _FS.write_file(self.directory / name, text.encode(), fsync=False)

    def _append(self, name: str, data: bytes) -> None:
        handle = _FS.open(self.directory / name, writable=True)
        try:
            handle.append(data)
        finally:
            handle.close()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Exclusive across threads (a lock) and processes (an fcntl lock on `<dir>/lock`)."""
        with _THREADS:
            while (fd := _FS.try_lock(self.directory / "lock")) is None:
                time.sleep(0.0005)
            try:
                yield
            finally:
                _FS.unlock(fd)

    def before(self, operation: str, path: Path, target: Path | None = None) -> None:
        """Count one operation that is about to run, and inject the plan's fault if it is due.

        Raises:
            SimulatedCrash: a planned crash, at this operation or earlier in the run.
            OSError: a planned EIO at this operation.
        """
        with self._locked():
            plan = json.loads(self._read("plan.json"))
            kind = plan["kind"]
            if kind != "eio" and _FS.exists(self.directory / "fired.json"):
                if kind == "exit":
                    os._exit(137)
                raise SimulatedCrash(operation, path)
            number = int(self._read("count")) + 1
            if number == plan["fail_at"]:
                self._write(
                    "fired.json",
                    json.dumps({"number": number, "operation": operation, "path": str(path), "pid": os.getpid()}),
                )
                if kind == "exit":
                    os._exit(137)
                if kind != "eio":
                    raise SimulatedCrash(operation, path)
            failing = number == plan["fail_at"]  # only eio gets here: the operation counts, then fails
            if plan["power_loss"] and not failing:
                record = pickle.dumps(
                    (operation, str(path), target and str(target), contents_before(operation, path, target))
                )
                self._append("journal", len(record).to_bytes(8, "big") + record)
            self._write("count", str(number))
            self._append("operations.tsv", f"{number}\t{operation}\t{path}\t{os.getpid()}\n".encode())
            if failing:
                raise OSError(errno.EIO, f"injected I/O error in {operation}", str(path))

    def operations(self) -> list[tuple[str, str]]:
        """(operation, path) of every operation that ran, in order."""
        lines = self._read("operations.tsv").splitlines()
        return [(fields[1], fields[2]) for fields in (line.split("\t") for line in lines)]

    def pids(self) -> list[int]:
        """The process id of every operation that ran, in order (the driver's, or a worker's)."""
        return [int(line.split("\t")[3]) for line in self._read("operations.tsv").splitlines()]

    def fired(self) -> dict[str, object] | None:
        """The operation the fault replaced, or None if it has not fired."""
        return json.loads(self._read("fired.json")) if _FS.exists(self.directory / "fired.json") else None

    def journal(self) -> DurabilityJournal:
        """The power-loss journal of the run (power-loss mode only), replayed from its records."""
        journal = DurabilityJournal()
        data = _FS.read_bytes(self.directory / "journal")
        position = 0
        while position < len(data):
            size = int.from_bytes(data[position : position + 8], "big")
            operation, path, target, contents = pickle.loads(data[position + 8 : position + 8 + size])
            journal.observe(operation, Path(path), target and Path(target), contents)
            position += 8 + size
        return journal
