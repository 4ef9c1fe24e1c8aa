"""Logging of the `logkeeper` commands: one logger tree (`logkeeper.<job>`), stderr, two formats.

Everything a command tells its operator (progress lines, summaries, one-line errors) is a log
record; what the user asked for as data (`dump`'s output, `audit`'s rows, `configs`) goes to stdout.

- `text` (default): the message alone, one line per record, as a terminal shows it;
- `json` (`--log-format json`, for schedulers): one JSON object per line, `ts` (UTC, ISO 8601),
  `level`, `logger`, `message`, plus the record's structured fields (`job`, `run_id`, `partition`,
  `status`, ... when the call passed them as `extra={"fields": {...}}`).

`-q` keeps warnings and errors only, `-v` adds debug records and lets Spark's own INFO/WARN lines
through (:func:`spark_log_level`); by default Spark logs only its errors.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import sys
from typing import Any

ROOT = "logkeeper"
FORMATS = ("text", "json")
_SPARK_LEVEL_ENV = "LOGKEEPER_SPARK_LOG_LEVEL"


class _Stderr(logging.StreamHandler):
    """A handler writing to whatever `sys.stderr` is when a record is emitted (tests swap it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:  # StreamHandler.__init__ sets it; the property ignores it
        pass


class JsonFormatter(logging.Formatter):
    """One JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "ts": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        body.update(getattr(record, "fields", {}))
        if record.exc_info:
            body["exception"] = self.formatException(record.exc_info)
        return json.dumps(body, default=str)


def configure(*, verbosity: int = 0, fmt: str = "text") -> None:
    """(Re)configure the `logkeeper` loggers: `verbosity` -1 quiet, 0 normal, 1 verbose."""
    root = logging.getLogger(ROOT)
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = _Stderr()
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter("%(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.WARNING if verbosity < 0 else logging.DEBUG if verbosity > 0 else logging.INFO)
    root.propagate = False
    os.environ[_SPARK_LEVEL_ENV] = "INFO" if verbosity > 0 else "ERROR"


def spark_log_level() -> str:
    """Spark's log level for this command: ERROR unless `-v` (INFO)."""
    return os.environ.get(_SPARK_LEVEL_ENV, "ERROR")


def get(name: str) -> logging.Logger:
    """The logger of one command or module (`logkeeper.<name>`), configured with defaults on first use."""
    if not logging.getLogger(ROOT).handlers:
        configure()
    return logging.getLogger(f"{ROOT}.{name}")
