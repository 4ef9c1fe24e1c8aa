"""Idle I/O priority for a scrub task, restored afterwards (Python workers are reused by later tasks).

Linux `ioprio_set(IOPRIO_WHO_PROCESS, 0, IOPRIO_CLASS_IDLE)` on the calling thread: the block layer
serves its reads only when no other process wants the disk. Only the BFQ (and the old CFQ) I/O
schedulers honour I/O classes; with `mq-deadline` or `none` (common on NVMe) the throttle is what
protects the broker. There is no ioprio in Python's `os`, so the syscall goes through ctypes; where
the platform has none (not Linux, unknown architecture, seccomp) nothing changes. The CPU niceness is
raised too (`os.setpriority`), and lowered back where the process may (an unprivileged process
cannot: then the worker stays nice, which only makes later tasks of this worker polite).
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Iterator
from contextlib import contextmanager

_SYSCALLS = {"x86_64": (251, 252), "aarch64": (30, 31)}  # (ioprio_set, ioprio_get)
_WHO_PROCESS = 1
_CLASS_SHIFT = 13
_CLASS_IDLE = 3
_NICE = 10


def _syscall() -> tuple[ctypes._CFuncPtr, int, int] | None:  # type: ignore[name-defined]
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None or platform.system() != "Linux":
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall, numbers[0], numbers[1]


@contextmanager
def idle_io_priority() -> Iterator[bool]:
    """Run the block with idle I/O class and a lower CPU priority; yields whether the I/O class was set."""
    call = _syscall()
    previous_io = call[0](call[2], _WHO_PROCESS, 0) if call else -1
    io_set = (
        previous_io >= 0 and call is not None and call[0](call[1], _WHO_PROCESS, 0, _CLASS_IDLE << _CLASS_SHIFT) == 0
    )
    previous_nice = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        os.setpriority(os.PRIO_PROCESS, 0, max(previous_nice, _NICE))
    except OSError:
        pass
    try:
        yield io_set
    finally:
        if io_set and call is not None:
            call[0](call[1], _WHO_PROCESS, 0, previous_io)
        try:
            os.setpriority(os.PRIO_PROCESS, 0, previous_nice)
        except OSError:
            pass  # lowering niceness needs CAP_SYS_NICE
