"""The options every logkeeper job takes, validated before anything is touched (a bad one exits 2).

    logkeeper <job> --log-dirs D[,D] [--server-properties F] [--topic-config F] [--warehouse W]
                    [--master M] [--now-ms T] [--dry-run] [--result-json F]   (+ the job's own flags)

`--server-properties` is a broker's own server.properties (Kafka's names: `log.retention.hours`,
`log.cleanup.policy`, ...); without `--log-dirs` its `log.dirs` are maintained. `--topic-config`
is a TOML file of `[topics."name"]` tables with topic-level keys (storage_core.config).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, TypeVar

from storage_core.config import BrokerConfig, TopicOverrides, load_broker_config, load_topic_overrides
from storage_core.errors import InvalidConfigError

C = TypeVar("C")


class UsageError(Exception):
    """Bad arguments or configuration: one line on stderr, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def job_parser(job: str, description: str) -> argparse.ArgumentParser:
    """An argument parser with the common options; a job adds its own flags to it.

    Args:
        job: the subcommand (`recover`, `rebuild-indexes`, ...), for usage and messages.
        description: one line for `--help`.
    """
    parser = _Parser(prog=f"logkeeper {job}", description=description)
    parser.add_argument("--log-dirs", help="comma-separated Kafka log dirs (default: log.dirs of --server-properties)")
    parser.add_argument("--server-properties", type=Path, help="a broker's server.properties (defaults, log.dirs)")
    parser.add_argument("--topic-config", type=Path, help='TOML per-topic overrides: [topics."name"] tables')
    parser.add_argument("--warehouse", type=Path, default=Path("warehouse"), help="Delta warehouse directory")
    parser.add_argument(
        "--master",
        default=os.environ.get("LOGKEEPER_SPARK_MASTER"),
        help="Spark master (default: spark-submit's, else spark.master of conf/spark-defaults.conf, else local[*])",
    )
    parser.add_argument("--now-ms", type=int, default=None, help="the clock, in ms since the epoch (default: now)")
    parser.add_argument("--dry-run", action="store_true", help="report what would change, change nothing")
    parser.add_argument("--result-json", type=Path, help="write the per-partition results as JSON here")
    return parser


HIGH_WATERMARK_SOURCES = ("checkpoint", "log-end")


def add_high_watermark_source(parser: argparse.ArgumentParser) -> None:
    """`--high-watermark-source` (retention, compact): see :func:`jobs._log_dirs.high_watermark`."""
    parser.add_argument(
        "--high-watermark-source",
        choices=HIGH_WATERMARK_SOURCES,
        default="checkpoint",
        help="checkpoint: replication-offset-checkpoint (as a starting broker); log-end: the log end offset",
    )


@dataclass(frozen=True, slots=True)
class JobArgs:
    """The parsed common options (a job's own args dataclass holds one as `common`)."""

    log_dirs: tuple[Path, ...]
    broker: BrokerConfig
    topics: TopicOverrides
    warehouse: Path
    master: str | None
    now_ms: int
    dry_run: bool
    result_json: Path | None


def _load_config(option: str, path: Path | None, load: Callable[[Path | None], C]) -> C:
    """`load(path)` for the file given with `option`; a missing file or bad config is a UsageError."""
    if path is not None and not path.is_file():
        raise UsageError(f"{option} {path}: no such file")
    try:
        return load(path)
    except InvalidConfigError as exc:
        raise UsageError(f"{option} {path}: {exc}") from None


def _log_dirs(option: str | None, broker: BrokerConfig, server_properties: Path | None) -> tuple[Path, ...]:
    """`--log-dirs`, else `log.dirs` of the broker; each must be a directory; duplicates are dropped."""
    source = "--log-dirs" if option else f"log.dirs of {server_properties}"
    raw = option.split(",") if option else list(broker.log_dirs)
    log_dirs: list[Path] = []
    seen: set[Path] = set()
    for text in (t.strip() for t in raw):
        if not text:
            continue
        log_dir = Path(text)
        if not log_dir.is_dir():
            raise UsageError(f"log dir {log_dir} (from {source}) does not exist or is not a directory")
        if log_dir.resolve() not in seen:
            seen.add(log_dir.resolve())
            log_dirs.append(log_dir)
    if not log_dirs:
        raise UsageError("no log dirs: give --log-dirs or a --server-properties with log.dirs")
    return tuple(log_dirs)


def common_args(namespace: argparse.Namespace) -> JobArgs:
    """Validate the common options of a parsed command line.

    Raises:
        UsageError: a missing or invalid file, a bad config key or value, no or missing log dirs,
            a negative `--now-ms`; the message is one operator-readable line.
    """
    if namespace.now_ms is not None and namespace.now_ms < 0:
        raise UsageError(f"--now-ms must be milliseconds since the epoch (got {namespace.now_ms})")
    broker = _load_config("--server-properties", namespace.server_properties, load_broker_config)
    topics = _load_config("--topic-config", namespace.topic_config, load_topic_overrides)
    return JobArgs(
        log_dirs=_log_dirs(namespace.log_dirs, broker, namespace.server_properties),
        broker=broker,
        topics=topics,
        warehouse=namespace.warehouse,
        master=namespace.master,
        now_ms=namespace.now_ms if namespace.now_ms is not None else int(time.time() * 1000),
        dry_run=namespace.dry_run,
        result_json=namespace.result_json,
    )
