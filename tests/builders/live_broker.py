"""A broker-like writer for live-read tests: `python -m tests.builders.live_broker LOG_DIR TOPIC-PARTITION`.

Holds `LOG_DIR/.lock` (fcntl, as a running broker), then until `LOG_DIR/../stop` appears (or 120 s):
appends one-record batches to the active segment in two writes (a reader may see half a batch),
rolls every `--batches-per-segment` batches the way `LocalLog.roll` does (the old segment's
preallocated `.index`/`.timeindex` trimmed first, then the new segment's files created, its indexes
preallocated zero-filled), and keeps `--keep` segments by deleting the oldest as retention does
(every file renamed to `.deleted`, then deleted a moment later). Prints `ready` once it holds the
lock and has rolled once. Closed segment `b` holds exactly the offsets `b .. b + batches - 1`.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import sys
import time
from pathlib import Path

from storage_core import names
from storage_core.records.batch import Record, build_batch

T0 = 1_700_000_000_000
PREALLOCATED_INDEX_BYTES = 4096


def _create_segment(dir_path: Path, base: int) -> None:
    names.log_file(dir_path, base).write_bytes(b"")
    for index in (names.offset_index_file(dir_path, base), names.time_index_file(dir_path, base)):
        index.write_bytes(bytes(PREALLOCATED_INDEX_BYTES))


def _close_segment(dir_path: Path, base: int) -> None:
    for index in (names.offset_index_file(dir_path, base), names.time_index_file(dir_path, base)):
        os.truncate(index, 0)  # no entries written: a valid (sparse) index


def _delete_segment(dir_path: Path, base: int) -> list[Path]:
    renamed = []
    for path in (
        names.log_file(dir_path, base),
        names.offset_index_file(dir_path, base),
        names.time_index_file(dir_path, base),
    ):
        target = path.with_name(path.name + names.DELETED_SUFFIX)
        path.rename(target)
        renamed.append(target)
    return renamed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("log_dir", type=Path)
    parser.add_argument("partition_dir")
    parser.add_argument("--batches-per-segment", type=int, default=30)
    parser.add_argument("--keep", type=int, default=4)
    parser.add_argument("--value-bytes", type=int, default=300)
    args = parser.parse_args()
    lock = os.open(args.log_dir / names.LOCK_FILE, os.O_RDWR | os.O_CREAT)
    fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    dir_path = args.log_dir / args.partition_dir
    dir_path.mkdir(exist_ok=True)
    segments = [0]
    _create_segment(dir_path, 0)
    pending: list[Path] = []
    offset = 0
    stop = args.log_dir.parent / "stop"
    deadline = time.monotonic() + 120
    ready = False
    while not stop.exists() and time.monotonic() < deadline:
        batch = build_batch(
            [Record(offset, T0 + offset, b"key-%d" % offset, b"v" * args.value_bytes)], base_offset=offset
        )
        with names.log_file(dir_path, segments[-1]).open("ab", buffering=0) as log:
            log.write(batch[: len(batch) // 2])
            time.sleep(0.0005)
            log.write(batch[len(batch) // 2 :])
        offset += 1
        if offset - segments[-1] == args.batches_per_segment:
            _close_segment(dir_path, segments[-1])
            segments.append(offset)
            _create_segment(dir_path, offset)
            for path in pending:
                path.unlink()
            pending = []
            if len(segments) > args.keep:
                pending = _delete_segment(dir_path, segments.pop(0))
            if not ready:
                print("ready", flush=True)
                ready = True
        time.sleep(0.001)
    print(offset, flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
