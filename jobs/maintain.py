"""`logkeeper maintain`: recover -> retention -> compact -> stats in one run with one run id.

Recovery goes first; a log dir whose recovery failed gets no `.kafka_cleanshutdown`, so the
destructive steps after it (retention, compact) refuse that dir and leave it as it is. A partition
recovery truncated (records moved to the quarantine) is consistent and goes on to the next steps.
Every step appends to the maintenance log under the same run id (`--run-id`, else a new one, given
to every step; a retried maintain replaces each step's rows of the first try), and quarantines into
the same run directory; the exit code is the worst of the steps.
A dry run keeps what each step would have changed for the next one (:mod:`jobs._load`), so it
reports what a real run of the four steps would do. Common options go to every step; a step's own
options (`--deep-verify`, `--handle-strays`, `--high-watermark-source`, `--file-delete-delay-ms`,
`--dedupe-buffer-bytes`) only to the steps that take them. Every step's arguments are validated,
including the destructive steps' refusal to guess a topic's config
(:func:`jobs._cluster.refuse_before_changes`), before the first step runs: a refused run exits 2
with nothing changed.
Every log dir is checked and locked once for the whole run (no process can take a dir between two
steps).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from jobs import _log, compact, recover, retention, stats
from jobs._args import job_parser
from jobs._audit import write_maintenance_log
from jobs._common import EXIT_FAILED, EXIT_USAGE, FAILED_STATUSES, UsageError, new_run_id, summary_line
from jobs._driver import RUN_ERRORS, report_result_json, report_run_error
from jobs._log_dirs import holding_log_dirs
from jobs._probe import ProbeError, probe_if_on_a_cluster
from jobs._results import settings_lines

log = _log.get("maintain")

STEPS = (("recover", recover), ("retention", retention), ("compact", compact), ("stats", stats))
# step-specific option -> (takes a value, steps that accept it)
STEP_OPTIONS = {
    "--deep-verify": (False, {"recover"}),
    "--handle-strays": (False, {"recover"}),
    "--high-watermark-source": (True, {"retention", "compact"}),
    "--file-delete-delay-ms": (True, {"retention"}),
    "--dedupe-buffer-bytes": (True, {"compact"}),
}


def argv_for(step: str, argv: list[str]) -> list[str]:
    """The options of `argv` that `step` takes."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        option = argv[i].split("=", 1)[0]
        if option in STEP_OPTIONS:
            takes_value, steps = STEP_OPTIONS[option]
            width = 2 if takes_value and "=" not in argv[i] else 1
            if step in steps:
                out += argv[i : i + width]
            i += width
            continue
        out.append(argv[i])
        i += 1
    return out


def parser() -> argparse.ArgumentParser:
    """maintain's own parser: the common options and every step's own options (for `--help`, and to
    refuse an option no step takes before any step runs)."""
    parser = job_parser(
        "maintain",
        "Recover, then apply retention, compact and write statistics, in one run.",
        conflict_handler="resolve",  # retention and compact share --high-watermark-source
    )
    for _, module in STEPS:
        if hasattr(module, "add_options"):
            module.add_options(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        parser().parse_args(argv)
    except UsageError as exc:
        log.error(f"logkeeper maintain: {exc}")
        return EXIT_USAGE
    if not any(a == "--run-id" or a.startswith("--run-id=") for a in argv):
        argv = [*argv, "--run-id", new_run_id()]
    if "--dry-run" not in argv:
        return _steps(argv)
    state = Path(tempfile.mkdtemp(prefix="logkeeper-dry-run-"))  # each step's overlays, for the next step
    try:
        return _steps([*argv, "--dry-run-state", str(state)])
    finally:
        shutil.rmtree(state, ignore_errors=True)


def _steps(argv: list[str]) -> int:
    parsed = []
    for name, module in STEPS:  # every step's options and configuration, before the first change
        try:
            parsed.append((name, module, module.parse_args(argv_for(name, argv))))
        except UsageError as exc:
            log.error(f"logkeeper maintain ({name}): {exc}")
            return EXIT_USAGE
    common = parsed[0][2].common
    try:  # the steps share the log dirs: one probe before the first changes anything
        probe_if_on_a_cluster(common.master, common.log_dirs, "logkeeper maintain")
    except ProbeError as exc:
        log.error(f"logkeeper maintain: {exc}")
        return EXIT_USAGE
    try:
        # One hold of every log dir's lock for all the steps: no process can take a dir between two.
        with holding_log_dirs(
            common.log_dirs, allow_missing_meta_properties=common.allow_missing_meta_properties, dry_run=common.dry_run
        ):
            return _run_steps(parsed)
    except RUN_ERRORS as exc:  # refused before anything changed, or the driver's own I/O failed
        return report_run_error("maintain", exc)


def _run_steps(parsed: list[tuple[str, ModuleType, Any]]) -> int:
    worst = 0
    for name, module, args in parsed:
        log.info(f"logkeeper maintain: {name}")
        try:
            summary = module.run(args)
        except stats.StatsValidationError as exc:
            log.error(f"logkeeper maintain ({name}): {exc}")
            worst = max(worst, 1)
            continue
        write_maintenance_log(args.common.warehouse, summary)
        result_json = args.common.result_json
        step_json = None if result_json is None else result_json.with_name(f"{name}-{result_json.name}")
        if not report_result_json(f"maintain ({name})", step_json, summary):
            worst = max(worst, EXIT_FAILED)
        log.info(summary_line(f"maintain: {name}", summary))
        for row in summary.rows:
            if row.status in FAILED_STATUSES and row.error_message:
                log.warning(f"  {row.log_dir}/{row.dir_name}: {row.error_type} {row.error_message}")
        if summary.dry_run and (lines := settings_lines(summary.rows)):
            log.info("\n".join(lines))
        worst = max(worst, summary.exit_code)
    return worst


if __name__ == "__main__":
    raise SystemExit(main())
