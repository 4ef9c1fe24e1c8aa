"""The `logkeeper` command: one entry point, one subcommand per job (`python -m jobs` is the same).

Job modules are imported only when their subcommand runs, so `logkeeper dump` never imports
pyspark (and never starts a JVM). Every job follows the same conventions: exit 0 ok, 1 some
partition failed, 2 bad arguments or configuration, 3 refused (a live broker holds a `.lock`).
An unexpected error prints one line (set LOGKEEPER_DEBUG=1 for the traceback) and exits 1.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
import traceback

EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130

SUBCOMMANDS = {
    "recover": ("jobs.recover", "recover log dirs after an unclean shutdown, as Kafka's LogLoader"),
    "rebuild-indexes": ("jobs.rebuild_indexes", "verify or rebuild offset, time and txn indexes"),
    "retention": ("jobs.retention", "delete segments by time, size and log start offset, as Kafka's retention"),
    "compact": ("jobs.compact", "compact topics with cleanup.policy=compact, as Kafka's log cleaner"),
    "stats": ("jobs.stats", "write per-segment statistics to the Delta table segment_stats"),
    "scrub": ("jobs.scrub", "CRC-check closed segments and their indexes beside live brokers, throttled, resumable"),
    "maintain": ("jobs.maintain", "recover, then retention, compact and stats, in one run"),
    "configs": ("jobs.configs", "each topic's effective log config and where every value came from; no Spark"),
    "audit": ("jobs.audit", "run an audit query (conf/audit/*.sql) over the Delta tables; no Spark by default"),
    "report": ("jobs.report", "write a self-contained HTML report (plots and tables) of the Delta tables; no Spark"),
    "dump": ("jobs.dump", "dump Kafka log, index, snapshot and checkpoint files (kafka-dump-log.sh); no Spark"),
}

USAGE = (
    "usage: logkeeper <subcommand> [options]    (logkeeper <subcommand> --help for its options)\n"
    "       logkeeper --version                 (and which storage_core implementation runs)\n\n"
    "subcommands:\n" + "".join(f"  {name:<16} {help_text}\n" for name, (_, help_text) in SUBCOMMANDS.items())
)


def version() -> str:
    """`logkeeper X.Y.Z (storage_core: native (...))` or `... pure Python (why))`: which core runs."""
    from storage_core import native

    return f"logkeeper {importlib.metadata.version('logkeeper')} (storage_core: {native.describe()})"


def _fail(name: str, exc: BaseException) -> int:
    """One line for an unexpected error (the first line of its message), or the traceback when debugging."""
    if os.environ.get("LOGKEEPER_DEBUG") == "1":
        traceback.print_exception(exc)
    lines = str(exc).strip().splitlines()
    detail = f": {lines[0]}" if lines else ""
    print(f"logkeeper {name}: {type(exc).__name__}{detail}", file=sys.stderr)
    return EXIT_FAILED


def main(argv: list[str] | None = None) -> int:
    """Run `logkeeper <subcommand> [options]` and return its exit code."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--version"]:
        print(version())
        return 0
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, end="", file=sys.stdout if argv else sys.stderr)
        return 0 if argv else EXIT_USAGE
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"logkeeper: unknown subcommand {name!r}\n{USAGE}", end="", file=sys.stderr)
        return EXIT_USAGE
    module_name = SUBCOMMANDS[name][0]
    if importlib.util.find_spec(module_name) is None:
        print(f"logkeeper: {name} is not implemented yet", file=sys.stderr)
        return EXIT_USAGE
    try:
        module = importlib.import_module(module_name)
        return int(module.main(rest))
    except SystemExit as exc:  # argparse's --help (0) or a job's own exit
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    except KeyboardInterrupt:
        print(f"logkeeper {name}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        return _fail(name, exc)


if __name__ == "__main__":
    raise SystemExit(main())
