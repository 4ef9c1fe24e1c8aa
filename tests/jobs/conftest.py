from __future__ import annotations

from collections.abc import Iterator

import pytest

from jobs._common import get_spark

MASTER = "local[2]"


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """The one SparkSession of the test run; jobs reuse it through getOrCreate."""
    session = get_spark(MASTER, "logkeeper-tests")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _run_in_tmp(tmp_path, monkeypatch) -> None:
    """Jobs write their Delta tables under ./warehouse by default: keep them in the test's tmp dir."""
    monkeypatch.chdir(tmp_path)
