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
