"""A process that holds a log dir's `.lock` as a running broker does (stdlib only: Airflow's
virtualenv imports it too)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_HOLDER = """
import fcntl, os, sys, time
fd = os.open(os.path.join(sys.argv[1], ".lock"), os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
time.sleep(300)
"""


def hold_log_dir_lock(log_dir: Path) -> subprocess.Popen[str]:
    """Start a process holding `log_dir/.lock` (fcntl, like the JDK's FileChannel.tryLock); returns
    once it holds it. The caller kills it."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(log_dir)], stdout=subprocess.PIPE, text=True)
    line = holder.stdout.readline().strip() if holder.stdout is not None else ""
    if line != "locked":
        holder.kill()
        raise RuntimeError(f"the lock holder did not take {log_dir}/.lock")
    return holder
