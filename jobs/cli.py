"""The `logkeeper` command: one entry point, one subcommand per job (`python -m jobs` is the same).

Job modules are imported only when their subcommand runs, so `logkeeper dump` never imports
pyspark (and never starts a JVM). Every job follows the same conventions: exit 0 ok, 1 some
partition failed, 2 bad arguments or configuration, 3 refused (a live broker holds a `.lock`).
An unexpected error prints one line (set LOGKEEPER_DEBUG=1 for the traceback) and exits 1.
Messages are log records on stderr (`-v`, `-q`, `--log-format json`: :mod:`jobs._log`); the
SparkContext a job started is stopped before the command returns.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import logging
import os
import sys
import traceback

from jobs import _log

EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130

SUBCOMMANDS = {
    "recover": ("jobs.recover", "recover log dirs after an unclean shutdown, as Kafka's LogLoader"),
    "rebuild-indexes": ("jobs.rebuild_indexes", "verify or rebuild offset, time and txn indexes"),
    "retention": ("jobs.retention", "delete segments by time, size and log start offset, as Kafka's retention"),
    "compact": ("jobs.compact", "compact topics with cleanup.policy=compact, as Kafka's log cleaner"),
    "stats": ("jobs.stats", "write per-segment statistics to the Delta table segment_stats"),
    "scrub": ("jobs.scrub", "CRC-check closed segments and their indexes beside live brokers, throttled, resumable"),
    "disk-usage": (
        "jobs.disk_usage",
        "classify every byte of the log dirs and what would free it; beside live brokers",
    ),
    "move": ("jobs.move", "move partitions between the log dirs of a stopped broker, through Kafka's -future protocol"),
    "maintain": ("jobs.maintain", "recover, then retention, compact and stats, in one run"),
    "configs": ("jobs.configs", "each topic's effective log config and where every value came from; no Spark"),
    "audit": ("jobs.audit", "run an audit query (conf/audit/*.sql) over the Delta tables; no Spark by default"),
    "report": ("jobs.report", "write a self-contained HTML report (plots and tables) of the Delta tables; no Spark"),
    "dump": ("jobs.dump", "dump Kafka log, index, snapshot and checkpoint files (kafka-dump-log.sh); no Spark"),
}


def version() -> str:
    """`logkeeper X.Y.Z (storage_core: native (...))` or `... pure Python (why))`: which core runs."""
    from storage_core import native

    return f"logkeeper {importlib.metadata.version('logkeeper')} (storage_core: {native.describe()})"


class _PrintVersion(argparse.Action):
    """`--version`: :func:`version` on one line (argparse's own action wraps it at the terminal width)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(version())
        parser.exit()


def parser() -> argparse.ArgumentParser:
    """The top-level parser: global options, then one subparser per job. A subcommand's own options
    are parsed by its module (imported only when it runs), so `logkeeper <job> --help` is the job's."""
    top = argparse.ArgumentParser(
        prog="logkeeper",
        description="Kafka log-dir maintenance at fleet scale (logkeeper <subcommand> --help for its options).",
        epilog="-v/-q/--log-format may also follow the subcommand. Exit codes: 0 ok, 1 a partition failed or "
        "corruption was found, 2 bad arguments or configuration (nothing changed), 3 refused (a live broker's lock).",
    )
    top.add_argument("--version", action=_PrintVersion, help="print the version and which core runs")
    add_logging_options(top)
    commands = top.add_subparsers(dest="subcommand", metavar="<subcommand>", title="subcommands")
    for name, (_, help_text) in SUBCOMMANDS.items():
        commands.add_parser(name, help=help_text, add_help=False)
    return top


def add_logging_options(parser: argparse.ArgumentParser) -> None:
    """`-v/--verbose`, `-q/--quiet` and `--log-format text|json` (see :mod:`jobs._log`)."""
    level = parser.add_mutually_exclusive_group()
    level.add_argument("-v", "--verbose", action="store_true", help="debug messages, and Spark's own INFO/WARN lines")
    level.add_argument("-q", "--quiet", action="store_true", help="warnings and errors only")
    parser.add_argument(
        "--log-format", choices=_log.FORMATS, default="text", help="text (default) or json: one object per line"
    )


def _logging_options(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """The logging options wherever they stand in `argv` (before or after the subcommand), and the rest."""
    options = argparse.ArgumentParser(add_help=False)
    add_logging_options(options)
    found, rest = options.parse_known_args(argv)
    return found, rest


def _active_spark() -> object | None:
    """The active SparkSession of this process, if pyspark is loaded and one runs."""
    if "pyspark" not in sys.modules:
        return None
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def _stop_spark(before: object | None) -> None:
    """Stop the SparkSession the command started (not one the caller had before), so its Python
    workers end cleanly: an abrupt JVM exit makes pyspark's daemon print a BrokenPipeError traceback
    on a successful run."""
    session = _active_spark()
    if session is not None and session is not before:
        from jobs._spark import stop_spark

        stop_spark(session)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    """Run `logkeeper [global options] <subcommand> [options]` and return its exit code."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        found, argv = _logging_options(argv)
    except SystemExit:
        return EXIT_USAGE
    _log.configure(verbosity=1 if found.verbose else -1 if found.quiet else 0, fmt=found.log_format)
    log = _log.get("cli")
    try:
        args, rest = parser().parse_known_args(argv[:1])
    except SystemExit as exc:  # --help, --version (0) or a bad subcommand (2, argparse's one line)
        return EXIT_USAGE if exc.code else 0
    if args.subcommand is None:
        parser().print_usage(sys.stderr)
        return EXIT_USAGE
    name, rest = args.subcommand, argv[1:]
    before = _active_spark()
    try:
        module = importlib.import_module(SUBCOMMANDS[name][0])
        return int(module.main(rest))
    except SystemExit as exc:  # argparse's --help (0) or a job's own exit
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    except KeyboardInterrupt:
        log.error(f"logkeeper {name}: interrupted")
        return EXIT_INTERRUPTED
    except Exception as exc:
        return _fail(log, name, exc)
    finally:
        _stop_spark(before)


def _fail(log: logging.Logger, name: str, exc: BaseException) -> int:
    """One line for an unexpected error (the first line of its message), or the traceback when debugging."""
    if os.environ.get("LOGKEEPER_DEBUG") == "1":
        traceback.print_exception(exc)
    lines = str(exc).strip().splitlines()
    detail = f": {lines[0]}" if lines else ""
    log.error(f"logkeeper {name}: {type(exc).__name__}{detail}")
    return EXIT_FAILED


if __name__ == "__main__":
    raise SystemExit(main())
