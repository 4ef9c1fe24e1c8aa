"""The `logkeeper` command: one entry point, one subcommand per job.

Job modules are imported only when their subcommand runs, so `logkeeper dump` never imports
pyspark (and never starts a JVM). Every job follows the same conventions: exit 0 ok, 1 some
partition failed, 2 bad arguments or configuration, 3 refused (a live broker holds a `.lock`).
An unexpected error prints one line (set LOGKEEPER_DEBUG=1 for the traceback) and exits 1.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback

SUBCOMMANDS = {
    "dump": ("jobs.dump", "dump Kafka log, index, snapshot and checkpoint files (kafka-dump-log.sh)"),
    "recover": ("jobs.recover", "recover log dirs after an unclean shutdown, as Kafka's LogLoader"),
    "rebuild-indexes": ("jobs.rebuild_indexes", "verify or rebuild offset, time and txn indexes"),
    "compact": ("jobs.compact", "compact topics with cleanup.policy=compact, as Kafka's log cleaner"),
    "maintain": ("jobs.maintain", "recover, then retention, compact and stats, in one run"),
    "stats": ("jobs.stats", "write per-segment statistics to the Delta table segment_stats"),
    "audit": ("jobs.audit", "run an audit query (conf/audit/*.sql) over the Delta tables"),
    "retention": ("jobs.retention", "delete segments by time, size and log start offset, as Kafka's retention"),
}

USAGE = "usage: logkeeper <subcommand> [options]\n\nsubcommands:\n" + "".join(
    f"  {name:<16} {help_text}\n" for name, (_, help_text) in SUBCOMMANDS.items()
)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"logkeeper: unknown subcommand {name!r}\n{USAGE}", end="", file=sys.stderr)
        return 2
    module = importlib.import_module(SUBCOMMANDS[name][0])
    try:
        return int(module.main(rest))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    except Exception as exc:
        if os.environ.get("LOGKEEPER_DEBUG"):
            traceback.print_exc()
        print(f"logkeeper {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
