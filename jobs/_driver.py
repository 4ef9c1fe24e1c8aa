"""The shared `main` of a logkeeper job: parse, run, write the results, map the outcome to an exit code.

Exit 2 with one line for bad arguments or configuration, a run that refuses to guess a topic's
config, a log dir that must not be maintained (:mod:`storage_core.log_dir_check`), or executors
that do not see the log dirs as the driver does (:mod:`jobs._probe`) (nothing touched), 3 with one
line when a live process holds a log dir's `.lock` (nothing touched), otherwise 1 if any partition
failed, is corrupt or was truncated (records moved to the quarantine), or the driver's own I/O failed
(one line naming the file), and 0 if none did. The per-partition rows go to the Delta maintenance
log, then `--result-json`; each failed, corrupt or truncated partition gets one line on stderr saying
why.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from jobs import _log
from jobs._args import UsageError
from jobs._probe import probe_if_on_a_cluster
from jobs._results import (
    EXIT_FAILED,
    EXIT_REFUSED,
    EXIT_USAGE,
    FAILED_STATUSES,
    JobSummary,
    os_error_line,
    settings_lines,
    summary_line,
    write_result_json,
)
from storage_core.errors import InvalidLogDirError, LogDirLockedError

log = _log.get("driver")


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
        probe_if_on_a_cluster(args.common.master, args.common.log_dirs, f"logkeeper {job}")
    except UsageError as exc:
        log.error(f"logkeeper {job}: {_one_line(exc)}")
        return EXIT_USAGE
    try:
        summary = run(args)
    except RUN_ERRORS as exc:
        return report_run_error(job, exc)
    from jobs._audit import write_maintenance_log  # imports pyarrow/deltalake only when a job ran

    write_maintenance_log(args.common.warehouse, summary)  # first: the audit trail never depends on the JSON
    reported = report_result_json(job, args.common.result_json, summary)
    log.info(summary_line(job, summary))
    if summary.dry_run and (lines := settings_lines(summary.rows)):
        log.info("settings used, per topic (value and where it came from):")
        log.info("\n".join(lines))
    for row in summary.rows:
        if row.status in FAILED_STATUSES:
            where = f"{row.log_dir}/{row.dir_name}"
            log.warning(f"  {where}: {row.status}: {row.error_type} {row.error_message}")
    return summary.exit_code if reported else max(summary.exit_code, EXIT_FAILED)


RUN_ERRORS = (UsageError, InvalidLogDirError, LogDirLockedError, OSError)
"""What a job's `run` may raise before (or instead of) its partitions' work; see :func:`report_run_error`."""


def report_run_error(job: str, exc: Exception) -> int:
    """One line on stderr for an error of :data:`RUN_ERRORS`, and its exit code: 2 for a refusal to
    guess a topic's config (UsageError) or a log dir that must not be maintained, 3 for a live
    broker's lock (nothing touched in either case), 1 for an OSError on the driver (a partition's
    own errors are rows)."""
    if isinstance(exc, UsageError):
        log.error(f"logkeeper {job}: {_one_line(exc)}")
        return EXIT_USAGE
    if isinstance(exc, OSError):
        log.error(f"logkeeper {job}: failed: {os_error_line(exc)}")
        return EXIT_FAILED
    log.error(f"logkeeper {job}: refused: {_one_line(exc)}")
    return EXIT_REFUSED if isinstance(exc, LogDirLockedError) else EXIT_USAGE


def report_result_json(job: str, path: Path | None, summary: JobSummary) -> bool:
    """Write `--result-json` (if given); a failure is one line on stderr (the run's changes are in the
    maintenance log already). Returns False if it could not be written."""
    if path is None:
        return True
    try:
        write_result_json(path, summary)
    except OSError as exc:
        log.error(f"logkeeper {job}: could not write --result-json {path}: {exc.strerror or exc}")
        return False
    return True
