"""The host-wide token bucket: processes sharing the bucket file share the rate."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs._throttle import HostTokenBucket
from tests.jobs.conftest import REPO

RATE = 2_000_000
BURST = 64 * 1024
PER_PROCESS = 1_000_000
CHUNK = 50_000

_READER = """
import sys
from pathlib import Path
from jobs._throttle import HostTokenBucket
bucket = HostTokenBucket(Path(sys.argv[1]), rate_bytes_per_s={rate}, burst_bytes={burst})
for _ in range({per} // {chunk}):
    bucket.acquire({chunk})
"""


def test_two_processes_on_one_bucket_together_stay_under_the_rate(tmp_path: Path) -> None:
    script = _READER.format(rate=RATE, burst=BURST, per=PER_PROCESS, chunk=CHUNK)
    started = time.monotonic()
    readers = [
        subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "scrub.bucket")], cwd=REPO) for _ in range(2)
    ]
    for reader in readers:
        assert reader.wait(timeout=60) == 0
    elapsed = time.monotonic() - started
    # a lower bound only (it holds on any machine): 2 MB at 2 MB/s, less one burst, cannot go faster
    assert elapsed >= (2 * PER_PROCESS - BURST - CHUNK) / RATE


def test_a_rate_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="positive"):
        HostTokenBucket(tmp_path / "b", rate_bytes_per_s=0, burst_bytes=1)
