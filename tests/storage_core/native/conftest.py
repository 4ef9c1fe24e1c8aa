"""The compiled core, for the tests that compare it with its twins (:data:`twins.compiled_core_required`)."""

from __future__ import annotations

import os

import pytest

import storage_core.native
from tests.storage_core.native.twins import REQUIRE_NATIVE_ENV


@pytest.fixture(scope="module")
def compiled_core() -> None:
    """Skip where the compiled core is not active (a machine without a C compiler installs the
    twins alone), but fail where `LOGKEEPER_REQUIRE_NATIVE=1` (.ci/run sets it): CI must not lose the
    comparison silently because the extension did not build."""
    if storage_core.native.IMPLEMENTATION == "native":
        return
    why = f"compares the compiled core with its twins, and storage_core runs {storage_core.native.describe()}"
    if os.environ.get(REQUIRE_NATIVE_ENV) == "1":
        pytest.fail(f"{why}; {REQUIRE_NATIVE_ENV}=1 requires the compiled core", pytrace=False)
    pytest.skip(why)
