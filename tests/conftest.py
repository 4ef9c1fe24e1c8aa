"""Test-session setup shared by every test directory."""

from __future__ import annotations

import importlib.util
import os
import sys

# A pytest-xdist worker runs as `python -c ...`: its __main__ has neither __spec__ nor __file__, which
# pyspark.sql.connect (imported by Great Expectations) takes for a doctest run without Spark Connect's
# dependencies, and it calls sys.exit(0) on import (pyspark/sql/connect/utils.py, check_dependencies).
# The worker's __main__ names this file instead (a worker never runs __main__ again).
_main = sys.modules["__main__"]
if os.environ.get("PYTEST_XDIST_WORKER") and _main.__spec__ is None and not hasattr(_main, "__file__"):
    _main.__file__ = __file__

# The DAG tests need Airflow, which lives in its own virtualenv (.venv-airflow): `./dev test` runs
# them there. In the pipeline virtualenv they are not collected.
collect_ignore = [] if importlib.util.find_spec("airflow") else ["airflow_dags"]


def pytest_collection_modifyitems(config, items) -> None:
    """Deselect the `full_sweep` tests unless the `-m` expression names them (they take hours: CI runs
    them as their own step, `.ci/full-sweep`). The crash sweeps (minutes each) run first, so that the
    pytest-xdist workers of `./dev test` share the rest of the tests around them, not wait for the
    last one at the end."""
    items.sort(key=lambda item: not item.nodeid.startswith("tests/reliability/"))  # stable: the rest keeps its order
    if "full_sweep" in (config.option.markexpr or ""):
        return
    kept = [item for item in items if item.get_closest_marker("full_sweep") is None]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


_COUNTED: list[tuple[str, object]] = []  # the user properties of every test that ran (its teardown report)


def pytest_runtest_logreport(report) -> None:
    if report.when == "teardown":  # it carries every property, set by the test or by its fixtures' teardown
        _COUNTED.extend(report.user_properties)


def pytest_terminal_summary(terminalreporter) -> None:
    """Report what the tests counted, from their reports' user properties (so under pytest-xdist too):
    the hypothesis campaign's cases and refused loads (tests/storage_core/test_fuzz.py), and the
    operations each crash sweep reached (tests/reliability/test_job_sweep.py)."""
    properties = _COUNTED
    cases = [value for name, value in properties if name == "fuzz cases"]
    if cases:
        refused: dict[str, int] = {}
        for name, value in properties:
            if name == "fuzz refused loads":
                for what, count in value.items():
                    refused[what] = refused.get(what, 0) + count
        detail = ", ".join(f"{what}: {count}" for what, count in sorted(refused.items())) or "none"
        terminalreporter.write_line(f"fuzz cases run: {sum(cases)}; loads refused (changing nothing): {detail}")
    for line in sorted(value for name, value in properties if name == "crash sweep"):
        terminalreporter.write_line(f"crash sweep: {line}")
