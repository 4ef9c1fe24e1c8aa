"""The options every logkeeper job takes, validated before anything is touched (a bad one exits 2).

    logkeeper <job> --log-dirs D[,D] [--server-properties F] [--topic-config F] [--warehouse W]
                    [--master M] [--now-ms T] [--dry-run] [--result-json F] [--run-id R]
                    [--quarantine-dir Q] [--metadata-log-dir D | --no-metadata-log]
                    [--assume-broker-defaults] [--inventory F [--broker ID]]
                    (+ the job's own flags)

`--server-properties` is a broker's own server.properties (Kafka's names: `log.retention.hours`,
`log.cleanup.policy`, ...); without `--log-dirs` its `log.dirs` are maintained. `--topic-config`
is a TOML file of `[topics."name"]` tables with topic-level keys, or the text `kafka-configs.sh
--describe [--all] --entity-type topics` prints (storage_core.config). The cluster's own configs
come from its KRaft metadata log, found in the log dirs unless `--no-metadata-log`
(:mod:`jobs._cluster`); `--assume-broker-defaults` lets destructive jobs apply the broker's defaults
to topics whose own configs are unknown (dangerous).

Log dirs are made absolute and normalised here, on the driver (`os.path.abspath`: `.`/`..` and
doubled slashes removed, symlinks kept as spelled), so executors that run in their worker's own
directory see the same paths and the audit tables hold one spelling per dir. `host:/path` in
`--log-dirs` and `--inventory F [--broker ID]` name broker-local log dirs (:mod:`jobs._inventory`):
only this host's are maintained.

`--run-id` names the run in every row it writes (default: a new one); a retried run given the same
id (an Airflow retry) replaces its own rows in the Delta tables instead of adding to them and reuses
its own quarantine pieces. Record bytes a job must remove go to
the quarantine (:mod:`storage_core.quarantine`): `--quarantine-dir`, else `<warehouse>/quarantine`
when the warehouse is a local path; it must be outside every log dir. A job that loads logs (recover,
retention, compact, stats) and has no quarantine location is refused (exit 2) unless it is a dry run.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, TypeVar

from jobs._cluster import ClusterView, load_cluster_view, refuse_before_changes
from jobs._errors import UsageError
from jobs._fleet import read_identity
from jobs._inventory import is_this_host, load_inventory, refuse_other_host, select_broker, split_host
from jobs._results import new_run_id
from jobs._tables import TableVersionError, check_versions
from storage_core.config import BrokerConfig, TopicOverrides, load_broker_config, load_topic_overrides
from storage_core.errors import InvalidConfigError
from storage_core.log_dir_check import ALLOW_MISSING_META_PROPERTIES

C = TypeVar("C")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def job_parser(job: str, description: str, *, conflict_handler: str = "error") -> argparse.ArgumentParser:
    """An argument parser with the common options; a job adds its own flags to it.

    Args:
        job: the subcommand (`recover`, `rebuild-indexes`, ...), for usage and messages.
        description: one line for `--help`.
        conflict_handler: argparse's; `resolve` lets a parser take two jobs' options that share one.
    """
    parser = _Parser(prog=f"logkeeper {job}", description=description, conflict_handler=conflict_handler)
    add_config_options(parser)
    parser.add_argument(
        "--assume-broker-defaults",
        action="store_true",
        help="DANGEROUS: apply the broker's defaults to topics whose own configs are unknown (no metadata log "
        "and not in --topic-config); a compacted topic is then treated as cleanup.policy=delete and loses data",
    )
    parser.add_argument("--warehouse", type=Path, default=Path("warehouse"), help="Delta warehouse directory")
    parser.add_argument(
        "--master",
        default=os.environ.get("LOGKEEPER_SPARK_MASTER"),
        help="Spark master (default: spark-submit's, else spark.master of conf/spark-defaults.conf, else local[*])",
    )
    parser.add_argument("--now-ms", type=int, default=None, help="the clock, in ms since the epoch (default: now)")
    parser.add_argument("--dry-run", action="store_true", help="report what would change, change nothing")
    parser.add_argument("--result-json", type=Path, help="write the per-partition results as JSON here")
    parser.add_argument(
        "--run-id", help="the run's id in every row (default: a new one); a retried run replaces its own rows"
    )
    parser.add_argument("--dry-run-state", type=Path, help=argparse.SUPPRESS)  # maintain's steps share a dry run
    parser.add_argument(
        "--quarantine-dir",
        type=Path,
        help="where removed record bytes are kept, outside every log dir (default: <warehouse>/quarantine)",
    )
    parser.add_argument(
        ALLOW_MISSING_META_PROPERTIES,
        action="store_true",
        help="maintain log dirs without meta.properties (old ZooKeeper-mode brokers); otherwise refused",
    )
    return parser


def config_parser(job: str, description: str) -> argparse.ArgumentParser:
    """An argument parser with only the options that decide topic configs (jobs without Spark)."""
    parser = _Parser(prog=f"logkeeper {job}", description=description)
    add_config_options(parser)
    return parser


def add_config_options(parser: argparse.ArgumentParser) -> None:
    """The log dirs and every source of topic configs."""
    parser.add_argument(
        "--log-dirs",
        help="comma-separated Kafka log dirs, host:/path for a host's (default: log.dirs of --server-properties)",
    )
    parser.add_argument(
        "--inventory",
        type=Path,
        help="TOML broker inventory ([[brokers]] id, host, log_dirs): maintain this host's broker's log dirs",
    )
    parser.add_argument("--broker", type=int, help="with --inventory: the broker id (default: the one on this host)")
    parser.add_argument("--server-properties", type=Path, help="a broker's server.properties (defaults, log.dirs)")
    parser.add_argument(
        "--topic-config",
        type=Path,
        help='per-topic configs over the cluster\'s: TOML [topics."name"] tables, or the output of '
        "kafka-configs.sh --describe --all --entity-type topics",
    )
    metadata = parser.add_mutually_exclusive_group()
    metadata.add_argument(
        "--metadata-log-dir",
        type=Path,
        help="the dir holding the KRaft metadata log __cluster_metadata-0 (default: metadata.log.dir of "
        "--server-properties, else found among --log-dirs)",
    )
    metadata.add_argument(
        "--no-metadata-log",
        action="store_true",
        help="do not read the cluster's configs from its KRaft metadata log (topic configs only from --topic-config)",
    )


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
    cluster: ClusterView  # the topic configs (layered) and topology, read when the arguments were validated
    warehouse: Path
    master: str | None
    now_ms: int
    dry_run: bool
    result_json: Path | None
    assume_broker_defaults: bool = False
    run_id: str = ""
    quarantine_dir: Path | None = None
    dry_run_state: Path | None = None  # a dry run's overlays, kept between the steps of `maintain`
    allow_missing_meta_properties: bool = False

    @property
    def run_ts(self) -> datetime.datetime:
        """The job's logical now (`--now-ms`, else when it started) as a UTC timestamp."""
        return datetime.datetime.fromtimestamp(self.now_ms / 1000, tz=datetime.UTC)


# Airflow's own run ids (`scheduled__2026-11-24T00:00:00+00:00`) fit: its default
# `allowed_run_id_pattern` is these characters; no `/`, and no leading `.`, so it is one plain name.
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._~:+-]{0,127}")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/")


def _run_id(value: str | None) -> str:
    """`--run-id` (it names a quarantine directory: letters, digits, `.`, `_`, `~`, `:`, `+`, `-`), else a new one."""
    if value is None:
        return new_run_id()
    if not _RUN_ID.fullmatch(value):
        raise UsageError(
            f"--run-id {value!r}: use 1-128 letters, digits, '.', '_', '~', ':', '+' or '-', "
            "starting with a letter or digit"
        )
    return value


def _quarantine_dir(option: Path | None, warehouse: Path, log_dirs: tuple[Path, ...]) -> Path | None:
    """`--quarantine-dir`, else `<warehouse>/quarantine` for a local warehouse; never inside a log dir."""
    quarantine = option if option is not None else None if _URI.match(str(warehouse)) else warehouse / "quarantine"
    if quarantine is None:
        return None
    quarantine = quarantine.absolute()  # it is written in the audit rows
    resolved = quarantine.resolve()
    for log_dir in log_dirs:
        if resolved.is_relative_to(log_dir.resolve()):
            source = "--quarantine-dir" if option is not None else f"<warehouse>/quarantine ({quarantine})"
            raise UsageError(
                f"{source} is inside log dir {log_dir}: a broker would load it as a partition; put it elsewhere"
            )
    return quarantine


def _load_config(option: str, path: Path | None, load: Callable[[Path | None], C]) -> C:
    """`load(path)` for the file given with `option`; a missing file or bad config is a UsageError."""
    if path is not None and not path.is_file():
        raise UsageError(f"{option} {path}: no such file")
    try:
        return load(path)
    except InvalidConfigError as exc:
        raise UsageError(f"{option} {path}: {exc}") from None


def _log_dirs(
    option: str | None,
    broker: BrokerConfig,
    server_properties: Path | None,
    *,
    inventory: Path | None = None,
    broker_id: int | None = None,
) -> tuple[Path, ...]:
    """`--log-dirs`, else the `--inventory` broker's, else `log.dirs` of the broker; each must be a
    directory of this host (`host:/path` of another host is refused); duplicates are dropped."""
    if inventory is not None:
        if option:
            raise UsageError("give --log-dirs or --inventory, not both")
        chosen = select_broker(load_inventory(inventory), broker_id, path=inventory)
        source, raw = f"broker {chosen.id} of --inventory {inventory}", list(chosen.log_dirs)
    elif broker_id is not None:
        raise UsageError("--broker needs --inventory")
    else:
        source = "--log-dirs" if option else f"log.dirs of {server_properties}"
        raw = option.split(",") if option else list(broker.log_dirs)
    log_dirs: list[Path] = []
    seen: set[Path] = set()
    for text in (t.strip() for t in raw):
        if not text:
            continue
        host, text = split_host(text)
        if host is not None and not is_this_host(host):
            raise refuse_other_host(host, text)
        log_dir = Path(os.path.abspath(text))
        if not log_dir.is_dir():
            raise UsageError(f"log dir {log_dir} (from {source}) does not exist or is not a directory")
        if inventory is not None and read_identity(log_dir).node_id not in (chosen.id, None):
            raise UsageError(
                f"log dir {log_dir} belongs to broker {read_identity(log_dir).node_id} (meta.properties), "
                f"not to broker {chosen.id} of --inventory {inventory}"
            )
        if log_dir.resolve() not in seen:
            seen.add(log_dir.resolve())
            log_dirs.append(log_dir)
    if not log_dirs:
        raise UsageError("no log dirs: give --log-dirs, --inventory or a --server-properties with log.dirs")
    return tuple(log_dirs)


@dataclass(frozen=True, slots=True)
class ConfigArgs:
    """The validated log dirs and topic-config sources (:func:`add_config_options`)."""

    log_dirs: tuple[Path, ...]
    broker: BrokerConfig
    topics: TopicOverrides
    cluster: ClusterView


def config_args(namespace: argparse.Namespace) -> ConfigArgs:
    """Validate the options of :func:`add_config_options` and read the cluster's metadata log.

    Raises:
        UsageError: a missing or invalid file, a bad config key or value, no or missing log dirs, a
            metadata log that cannot be read or holds an invalid config.
    """
    broker = _load_config("--server-properties", namespace.server_properties, load_broker_config)
    topics = _load_config("--topic-config", namespace.topic_config, load_topic_overrides)
    log_dirs = _log_dirs(
        namespace.log_dirs,
        broker,
        namespace.server_properties,
        inventory=namespace.inventory,
        broker_id=namespace.broker,
    )
    cluster = load_cluster_view(
        log_dirs,
        broker,
        topics,
        metadata_log_dir=namespace.metadata_log_dir,
        use_metadata_log=not namespace.no_metadata_log,
    )
    return ConfigArgs(log_dirs, broker, topics, cluster)


def _result_json(path: Path | None) -> Path | None:
    """`--result-json`: its directory must exist (or be creatable) and be writable, checked before the
    run so that a job never does its work and then fails to report it."""
    if path is None:
        return None
    if path.is_dir():
        raise UsageError(f"--result-json {path}: is a directory")
    parent = next((p for p in (path.parent, *path.parent.parents) if p.exists()), Path("."))
    writable = parent.is_dir() and os.access(parent, os.W_OK | os.X_OK)
    if not writable or (path.exists() and not os.access(path, os.W_OK)):
        raise UsageError(f"--result-json {path}: cannot be written (no write permission on {parent})")
    return path


def common_args(namespace: argparse.Namespace, *, destructive: str | None = None, quarantines: bool = False) -> JobArgs:
    """Validate the common options of a parsed command line.

    Args:
        namespace: the parsed command line.
        destructive: for a job that changes topics by their configs (retention, compact), what it
            does to them ("compact"), for the message of :func:`jobs._cluster.refuse_before_changes`:
            its topics' own configs must be known, unless `--assume-broker-defaults`.
        quarantines: the job loads logs, so it may have to quarantine record bytes: a real run needs
            a quarantine location.

    Raises:
        UsageError: a missing or invalid file, a bad config key or value, no or missing log dirs,
            a negative `--now-ms`, a bad `--run-id`, a quarantine location inside a log dir or
            missing where needed, a metadata log that cannot be read, topics whose configs a
            destructive job would have to guess, a warehouse table written by a newer logkeeper;
            the message is one operator-readable line.
    """
    if namespace.now_ms is not None and namespace.now_ms < 0:
        raise UsageError(f"--now-ms must be milliseconds since the epoch (got {namespace.now_ms})")
    try:
        check_versions(namespace.warehouse)
    except TableVersionError as exc:
        raise UsageError(str(exc)) from None
    run_id = _run_id(namespace.run_id)
    configs = config_args(namespace)
    quarantine_dir = _quarantine_dir(namespace.quarantine_dir, namespace.warehouse, configs.log_dirs)
    if quarantines and quarantine_dir is None and not namespace.dry_run:
        raise UsageError(
            f"the warehouse {namespace.warehouse} is not a local path: give --quarantine-dir, where record bytes "
            "that must be removed from a log dir are kept"
        )
    if destructive is not None:
        refuse_before_changes(
            configs.log_dirs, configs.cluster, assume_broker_defaults=namespace.assume_broker_defaults, job=destructive
        )
    return JobArgs(
        log_dirs=configs.log_dirs,
        broker=configs.broker,
        topics=configs.topics,
        cluster=configs.cluster,
        warehouse=namespace.warehouse,
        master=namespace.master,
        now_ms=namespace.now_ms if namespace.now_ms is not None else int(time.time() * 1000),
        dry_run=namespace.dry_run,
        result_json=_result_json(namespace.result_json),
        assume_broker_defaults=namespace.assume_broker_defaults,
        run_id=run_id,
        quarantine_dir=quarantine_dir,
        dry_run_state=namespace.dry_run_state if namespace.dry_run else None,
        allow_missing_meta_properties=namespace.allow_missing_meta_properties,
    )
