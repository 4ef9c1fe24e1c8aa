"""`python -m jobs <subcommand> ...`: the same as the `logkeeper` command (what spark-submit runs)."""

from jobs.cli import main

raise SystemExit(main())
