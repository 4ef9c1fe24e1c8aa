"""`python -m jobs <subcommand> ...`: the same as the `logkeeper` command (what spark-submit runs)."""

from __future__ import annotations

from jobs.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
