"""The log dir lock against a real second process holding it, as a broker would."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from storage_core.errors import LogDirLockedError
from storage_core.lock import acquire_log_dir_lock, is_log_dir_locked

HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
time.sleep(60)
"""


def test_a_lock_held_by_another_process_refuses_and_is_free_after_it_exits(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path / ".lock")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert is_log_dir_locked(tmp_path)
        with pytest.raises(LogDirLockedError) as error:
            acquire_log_dir_lock(tmp_path)
        assert error.value.path == tmp_path
    finally:
        holder.kill()
        holder.wait()
    deadline = time.monotonic() + 5
    while is_log_dir_locked(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    with acquire_log_dir_lock(tmp_path):
        assert (tmp_path / ".lock").exists()
    assert not is_log_dir_locked(tmp_path)


def test_unlocked_dir_without_lock_file() -> None:
    assert not is_log_dir_locked(Path("/nonexistent-logkeeper-dir"))
