"""The shared `main` of a logkeeper job: parse, run, write the results, map the outcome to an exit code.

Exit 2 with one line for bad arguments or configuration, or a run that refuses to guess a topic's
config (nothing touched), 3 with one line when a live process holds a log dir's `.lock` (nothing
touched), otherwise 1 if any partition failed, is corrupt or was truncated (records moved to the
quarantine), and 0 if none did. The per-partition rows go to `--result-json` and the Delta
maintenance log; each failed, corrupt or truncated partition gets one line on stderr saying why.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from jobs._args import UsageError
from jobs._results import EXIT_REFUSED, EXIT_USAGE, FAILED_STATUSES, JobSummary, settings_lines, write_result_json
from storage_core.errors import LogDirLockedError


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def run_main(job: str, parse: Callable[[list[str]], Any], run: Callable[[Any], JobSummary], argv: list[str]) -> int:
    """Run one job from its command line.

    Args:
        job: the subcommand, for messages.
        parse: the job's `parse_args` (raises UsageError); its result has the common options as `common`.
        run: the job's `run`, returning the summary (raises LogDirLockedError if refused).
        argv: the job's arguments.

    Returns:
        The exit code.
    """
    try:
        args = parse(argv)
    except UsageError as exc:
        print(f"logkeeper {job}: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    try:
        summary = run(args)
    except UsageError as exc:  # e.g. topics whose configs are unknown: refused before any change
        print(f"logkeeper {job}: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except LogDirLockedError as exc:
        print(f"logkeeper {job}: refused: {_one_line(exc)}", file=sys.stderr)
        return EXIT_REFUSED
    if args.common.result_json is not None:
        write_result_json(args.common.result_json, summary)
    from jobs._audit import write_maintenance_log  # imports pyarrow/deltalake only when a job ran

    write_maintenance_log(args.common.warehouse, summary)
    print(
        f"logkeeper {job}: {len(summary.rows)} partitions, {summary.status_counts()}"
        + (" (dry run: nothing changed)" if summary.dry_run else ""),
        file=sys.stderr,
    )
    if summary.dry_run and (lines := settings_lines(summary.rows)):
        print("settings used, per topic (value and where it came from):", file=sys.stderr)
        print("\n".join(lines), file=sys.stderr)
    for row in summary.rows:
        if row.status in FAILED_STATUSES:
            where = f"{row.log_dir}/{row.dir_name}"
            print(f"  {where}: {row.status}: {row.error_type} {row.error_message}", file=sys.stderr)
    return summary.exit_code
