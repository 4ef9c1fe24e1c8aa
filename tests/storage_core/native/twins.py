"""Running storage_core on the pure-Python twins inside one process, whatever the switch chose.

Every caller reaches the native core through attributes of the `storage_core.native` package at
call time, so replacing those attributes with the twins of `storage_core.native.pure` runs the
same code on the reference implementation.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import storage_core.native
from storage_core.native import pure

TWINNED = ("crc32c", "md5", "walk", "frame_records", "map_put_keys", "map_put_records", "map_get", "map_retained")


@contextmanager
def pure_python() -> Iterator[None]:
    """storage_core on the pure-Python twins until the block ends."""
    with pytest.MonkeyPatch.context() as patch:
        for name in TWINNED:
            patch.setattr(storage_core.native, name, getattr(pure, name))
        yield


native_built = pytest.mark.skipif(
    storage_core.native.IMPLEMENTATION != "native", reason="compares the compiled core with its twins"
)
