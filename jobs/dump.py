"""`logkeeper dump`: Kafka's kafka-dump-log.sh over storage_core. Needs no Spark (no JVM starts).

Exit 0 after dumping every file; exit 2 with a one-line error for bad flags or a missing or
unreadable file.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from storage_core.dump import DumpOptions, dump_file, render_json, render_text
from storage_core.errors import StorageError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"logkeeper dump: {message}", file=sys.stderr)
        raise SystemExit(2)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = _Parser(prog="logkeeper dump", description="Dump Kafka log, index, snapshot and checkpoint files.")
    parser.add_argument("--files", required=True, help="comma-separated files to dump")
    parser.add_argument("--print-data-log", action="store_true", help="print record keys and payloads")
    parser.add_argument("--deep-iteration", action="store_true", help="print every record")
    parser.add_argument("--verify-index-only", action="store_true", help="check indexes against the log")
    parser.add_argument("--index-sanity-check", action="store_true", help="run Kafka's index sanity check only")
    parser.add_argument("--skip-record-metadata", action="store_true", help="print only keys and payloads")
    parser.add_argument("--max-bytes", type=int, default=None, help="read at most this many bytes of a .log")
    parser.add_argument("--max-message-size", type=int, default=5 * 1024 * 1024, help="accepted for compatibility")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    files = [Path(f) for f in args.files.split(",") if f]
    for path in files:
        if not path.is_file():
            print(f"logkeeper dump: cannot read {path}: no such file", file=sys.stderr)
            return 2
    options = DumpOptions(
        print_data_log=args.print_data_log,
        deep_iteration=args.deep_iteration,
        verify_index_only=args.verify_index_only,
        index_sanity_check=args.index_sanity_check,
        skip_record_metadata=args.skip_record_metadata,
        max_bytes=args.max_bytes,
    )
    render = render_json if args.json else render_text
    for path in files:
        try:
            for line in dump_file(path, options):
                print(render(line), file=sys.stderr if line.stderr else sys.stdout)
        except BrokenPipeError:  # the reader went away (`| head`): stop quietly
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the interpreter's flush at exit
            return 0
        except (StorageError, OSError) as exc:
            print(f"logkeeper dump: {path}: {exc}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
