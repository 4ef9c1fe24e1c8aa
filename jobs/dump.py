"""`logkeeper dump`: Kafka's kafka-dump-log.sh over storage_core. Needs no Spark (no JVM starts).

    logkeeper dump --files F[,F...] [--print-data-log] [--deep-iteration] [--verify-index-only]
                   [--index-sanity-check] [--max-message-size N] [--max-bytes N]
                   [--skip-record-metadata] [--json]
                   [--offsets-decoder | --transaction-log-decoder | --cluster-metadata-decoder |
                    --remote-log-metadata-decoder]

A decoder prints record keys and payloads decoded (and implies --print-data-log): group
coordinator records of `__consumer_offsets`, transaction records of `__transaction_state`, or KRaft
metadata records of `__cluster_metadata` segments and `.checkpoint` snapshots, as JSON.

Exit 0 after dumping every file; exit 2 with a one-line error for bad flags or a missing or
unreadable file (checked before anything is printed).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path

from jobs import _log
from storage_core.dump import DumpOptions, RecordDecoder, dump_files, render_json, render_text
from storage_core.dump.options import MAX_BYTES_DEFAULT, MAX_MESSAGE_SIZE_DEFAULT

log = _log.get("dump")

PROG = "logkeeper dump"
_DECODER_FLAGS = (
    ("--offsets-decoder", RecordDecoder.OFFSETS, "offset and group data of __consumer_offsets"),
    ("--transaction-log-decoder", RecordDecoder.TRANSACTION_LOG, "transaction metadata of __transaction_state"),
    ("--cluster-metadata-decoder", RecordDecoder.CLUSTER_METADATA, "KRaft cluster metadata records"),
    (
        "--remote-log-metadata-decoder",
        RecordDecoder.REMOTE_LOG_METADATA,
        "tiered storage metadata of __remote_log_metadata (TopicBasedRemoteLogMetadataManager)",
    ),
)


class UsageError(Exception):
    """Bad flags: reported in one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def _size(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 <= value <= MAX_BYTES_DEFAULT:
        raise argparse.ArgumentTypeError(f"must be between 0 and {MAX_BYTES_DEFAULT}: {text}")
    return value


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The parsed flags (Kafka's names and defaults).

    Raises:
        UsageError: unknown or malformed flags.
    """
    parser = _Parser(prog=PROG, description="Dump Kafka log, index, snapshot and checkpoint files (kafka-dump-log.sh).")
    parser.add_argument("--files", required=True, help="REQUIRED: comma-separated files to dump")
    parser.add_argument("--print-data-log", action="store_true", help="print record keys and payloads")
    parser.add_argument("--deep-iteration", action="store_true", help="print every record (implied by print-data-log)")
    parser.add_argument("--verify-index-only", action="store_true", help="verify indexes, print only errors")
    parser.add_argument("--index-sanity-check", action="store_true", help="only run the broker's index sanity check")
    parser.add_argument(
        "--max-message-size", type=_size, default=MAX_MESSAGE_SIZE_DEFAULT, help="bytes read per .index entry"
    )
    parser.add_argument("--max-bytes", type=_size, default=MAX_BYTES_DEFAULT, help="read at most this much of a .log")
    parser.add_argument("--skip-record-metadata", action="store_true", help="leave record metadata out")
    parser.add_argument("--json", action="store_true", help="one JSON object per line, same field names")
    decoders = parser.add_mutually_exclusive_group()
    for flag, decoder, what in _DECODER_FLAGS:
        decoders.add_argument(
            flag, dest="decoder", action="store_const", const=decoder, help=f"decode records as {what}"
        )
    parser.set_defaults(decoder=RecordDecoder.NONE)
    return parser.parse_args(argv)


def _unreadable(path: Path) -> str | None:
    """Why `path` cannot be dumped, or None."""
    if not path.exists():
        return "no such file"
    if not path.is_file():
        return "not a regular file"
    if not os.access(path, os.R_OK):
        return "permission denied"
    return None


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit code."""
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        log.error(f"{PROG}: {exc}")
        return 2
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    files = [name for name in args.files.split(",") if name]
    if not files:
        log.error(f"{PROG}: --files names no file")
        return 2
    for name in files:
        problem = _unreadable(Path(name))
        if problem is not None:
            log.error(f"{PROG}: cannot read {name}: {problem}")
            return 2
    options = DumpOptions(
        print_data_log=args.print_data_log,
        decoder=args.decoder,
        deep_iteration=args.deep_iteration,
        verify_index_only=args.verify_index_only,
        index_sanity_check=args.index_sanity_check,
        skip_record_metadata=args.skip_record_metadata,
        max_message_size=args.max_message_size,
        max_bytes=args.max_bytes,
    )
    render = render_json if args.json else render_text
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")  # a payload that the terminal's encoding cannot show
    try:
        for line in dump_files(files, options):
            print(render(line), file=sys.stderr if line.stderr else sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError as exc:
        log.error(f"{PROG}: {exc}")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
