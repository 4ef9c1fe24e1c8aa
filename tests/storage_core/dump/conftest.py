"""A `dump` fixture: run the dump over files and split the rendered text into stdout and stderr."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from storage_core.dump import DumpOptions, dump_files, render_text

DumpRun = Callable[..., tuple[list[str], list[str]]]


@pytest.fixture
def dump() -> DumpRun:
    """`dump(path, ..., deep_iteration=True)` -> (stdout lines, stderr lines) as Kafka's tool prints them."""

    def run(*files: Path | str, **flags: object) -> tuple[list[str], list[str]]:
        out: list[str] = []
        err: list[str] = []
        for line in dump_files(files, DumpOptions(**flags)):  # type: ignore[arg-type]
            (err if line.stderr else out).append(render_text(line))
        return out, err

    return run
