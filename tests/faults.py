"""A file system that simulates a power loss: whatever was not fsynced is lost (fault class F8).

Built on the real file system: each mutating operation records what a power loss would take back.
File contents are durable from their last `fsync` (or from before the run); creations, renames and
deletions are durable once their directory is fsynced. :meth:`power_loss` reverts everything else,
newest first, as a crash of the machine (not just of the process) would. A file created and never
fsynced comes back empty if its directory entry survived.
"""

from __future__ import annotations

import os
from pathlib import Path

from storage_core.fs import FaultInjectingFileSystem


class PowerLossFileSystem(FaultInjectingFileSystem):
    """Crashes at the n-th mutating operation like its parent; then :meth:`power_loss` drops unsynced work."""

    def __init__(self, *, fail_at: int | None = None) -> None:
        super().__init__(fail_at=fail_at, kind="crash")
        self._durable: dict[Path, bytes | None] = {}  # file -> content at its last fsync (None: not on disk)
        self._dir_ops: list[tuple[str, Path, Path | None, bytes | None]] = []  # unsynced namespace changes
        self._rename_target: Path | None = None

    @staticmethod
    def _content(path: Path) -> bytes | None:
        return path.read_bytes() if path.is_file() else None

    def _remember(self, path: Path) -> None:
        if path not in self._durable:
            self._durable[path] = self._content(path)

    def _before(self, operation: str, path: Path) -> None:
        path = Path(path)
        if operation in ("write", "truncate", "delete"):
            self._remember(path)
        if operation == "rename" and self._rename_target is not None:
            self._remember(path)
            self._remember(self._rename_target)
        super()._before(operation, path)  # raises on the failing operation: nothing below is recorded for it
        if operation == "fsync":
            self._durable[path] = self._content(path)
        elif operation == "create":
            self._dir_ops.append(("create", path, None, None))
        elif operation == "delete":
            self._dir_ops.append(("delete", path, None, self._durable[path]))
        elif operation == "rename" and self._rename_target is not None:
            self._dir_ops.append(("rename", path, self._rename_target, self._durable[self._rename_target]))
            # The content follows the name: the target is now durable as the source was.
            self._durable[self._rename_target] = self._durable[path]
            self._durable[path] = None
        elif operation == "fsync_dir":
            self._dir_ops = [op for op in self._dir_ops if op[1].parent != path]

    def rename_atomic(self, source: Path, target: Path, *, sync_dir: bool = True) -> None:
        self._rename_target = Path(target)
        try:
            super().rename_atomic(source, target, sync_dir=sync_dir)
        finally:
            self._rename_target = None

    def power_loss(self) -> None:
        """Revert every unsynced namespace change (newest first), then every unsynced file content."""
        for kind, path, target, previous in reversed(self._dir_ops):
            if kind == "create" and path.exists():
                os.unlink(path)
                self._durable.pop(path, None)
            elif kind == "delete" and previous is not None:
                path.write_bytes(previous)
            elif kind == "rename" and target is not None and target.exists():
                os.replace(target, path)
                self._durable[path], self._durable[target] = self._durable.get(target), previous
                if previous is not None:
                    target.write_bytes(previous)
        self._dir_ops.clear()
        for path, content in self._durable.items():
            if path.exists() and path.read_bytes() != (content or b""):
                path.write_bytes(content or b"")
