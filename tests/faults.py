"""A file system that simulates a power loss: whatever was not fsynced is lost (fault class F8).

Built on the real file system: before each mutating operation a
:class:`~storage_core.fault_control.DurabilityJournal` records what a power loss would take back.
File contents are durable from their last `fsync` (or from before the run); creations, renames,
deletions and new directories are durable once their directory is fsynced. :func:`revert_power_loss`
reverts everything else, newest first, as a crash of the machine (not just of the process) would. A
file created and never fsynced comes back empty if its directory entry survived.

The same journal is kept job-wide (every process of a Spark job) by
:class:`~storage_core.fault_control.SharedFaultControl` in power-loss mode; :func:`revert_power_loss`
applies either.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from storage_core.fault_control import DurabilityJournal
from storage_core.fs import FaultInjectingFileSystem


def _write(path: str, content: bytes | None) -> None:
    with open(path, "wb") as f:
        f.write(content or b"")


def revert_power_loss(journal: DurabilityJournal) -> None:
    """Revert every unsynced namespace change (newest first), then every unsynced file content."""
    durable = journal.durable
    for kind, path, target, previous in reversed(journal.dir_ops):
        if kind == "create" and os.path.isfile(path):
            os.unlink(path)
            durable.pop(path, None)
        elif kind == "mkdir" and os.path.isdir(path):
            shutil.rmtree(path)  # its entry in the parent is gone, and everything below it
        elif kind == "delete" and previous is not None:
            _write(path, previous)
        elif kind == "rename" and target is not None and os.path.exists(target):
            os.replace(target, path)
            durable[path], durable[target] = durable.get(target), previous
            if previous is not None:
                _write(target, previous)
    journal.dir_ops.clear()
    for path, content in durable.items():
        if os.path.isfile(path) and Path(path).read_bytes() != (content or b""):
            _write(path, content)


class PowerLossFileSystem(FaultInjectingFileSystem):
    """Crashes at the n-th mutating operation like its parent; then :meth:`power_loss` drops unsynced work."""

    def __init__(self, *, fail_at: int | None = None) -> None:
        super().__init__(fail_at=fail_at, kind="crash")
        self.journal = DurabilityJournal()

    def _before(self, operation: str, path: Path, target: Path | None = None) -> None:
        super()._before(operation, path, target)  # raises on the failing operation: it is not recorded
        self.journal.observe(operation, Path(path), target)

    def power_loss(self) -> None:
        """Revert every unsynced namespace change (newest first), then every unsynced file content."""
        revert_power_loss(self.journal)
