"""Test-session setup shared by every test directory."""

from __future__ import annotations

import importlib.util

# The DAG tests need Airflow, which lives in its own virtualenv (.venv-airflow): `./dev test` runs
# them there. In the pipeline virtualenv they are not collected.
collect_ignore = [] if importlib.util.find_spec("airflow") else ["airflow_dags"]


def pytest_collection_modifyitems(config, items) -> None:
    """Deselect the `full_sweep` tests unless the `-m` expression names them (they take hours: CI runs
    them as their own step, `.ci/full-sweep`)."""
    if "full_sweep" in (config.option.markexpr or ""):
        return
    kept = [item for item in items if item.get_closest_marker("full_sweep") is None]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


def pytest_terminal_summary(terminalreporter) -> None:
    """Report how many fuzz cases the hypothesis campaign ran (tests/storage_core/test_fuzz.py)."""
    import sys

    fuzz = sys.modules.get("tests.storage_core.test_fuzz")
    if fuzz is not None:
        terminalreporter.write_line(f"fuzz cases run: {fuzz.CASES['count']}")
