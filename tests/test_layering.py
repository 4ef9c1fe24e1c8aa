"""Layering rules of the house style, checked on the source tree."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN_IMPORT = re.compile(r"^\s*(from|import) (pyspark|deltalake|airflow|great_expectations|jobs|udfs)\b", re.M)
BARE_OPEN = re.compile(r"(?<![\w.])(?<!def )open\(")


def test_storage_core_imports_no_spark_delta_or_airflow_and_opens_no_file_outside_fs() -> None:
    for path in (ROOT / "storage_core").rglob("*.py"):
        text = path.read_text()
        assert not FORBIDDEN_IMPORT.search(text), path
        if path.name != "fs.py":
            assert not BARE_OPEN.search(text), f"{path}: files are opened through storage_core.fs"
            assert "os.utime" not in text, path
            assert "os.replace" not in text, path


def test_file_names_are_built_only_in_names() -> None:
    for path in (ROOT / "storage_core").rglob("*.py"):
        if path.name != "names.py":
            assert "020d" not in path.read_text(), path
