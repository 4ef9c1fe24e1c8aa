"""`logkeeper recover`: Kafka's LogManager.loadLogs + LogLoader over every partition, on Spark executors.

Driver: lock every log dir (refuse a held `.lock`), read each dir's clean-shutdown marker and
checkpoints and delete the marker, discover partitions, run :func:`recover_partition` on executors
largest first, then per log dir write the recovery-point and log-start-offset checkpoints and, only
if every partition of the dir recovered, `.kafka_cleanshutdown` (so a broker starts without
recovery). Record bytes recovery removes are quarantined first (`--quarantine-dir`); a partition
whose whole, valid records went there is `truncated` (exit 1). A dry run does all of it over
overlay file systems (:mod:`jobs._load`): the same rows, no change.

With the cluster's metadata image (:mod:`jobs._cluster`), each partition dir is also checked as a
KRaft broker checks it at startup (:mod:`storage_core.topology`): a stray replica (no topic id, a
topic id the cluster no longer has, a partition not assigned to this broker) is reported with a
`stray_replica` action, and with `--handle-strays` renamed aside to `<topic>-<partition>.<uuid>-stray`
after it is recovered, as Kafka 3.7+ does (`rename_stray` action). Each row names the index
settings used and where they came from.

Checkpoint entries belong to the live dir of each partition (:func:`jobs._log_dirs.checkpoint_keys`):
`-stray` dirs (and dirs renamed aside) are recovered from offset 0 and write none.
`<checkpoint or marker>.tmp` files left by an interrupted write are deleted, each an action of the
log dir's own row.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

from jobs import _log
from jobs._cluster import ClusterView
from jobs._common import (
    JobArgs,
    JobSummary,
    PartitionDir,
    PartitionRow,
    action_rows,
    checkpoint_keys,
    close_log_dirs,
    common_args,
    discover_log_dirs,
    get_spark,
    job_parser,
    locked_log_dirs,
    log_dir_rows,
    partition_row,
    run_main,
    run_partition_tasks,
    run_partition_work,
)
from jobs._load import job_fs, load_options, load_status, quarantine_roots
from storage_core.config_layers import ConfigValue
from storage_core.fs import FileSystem
from storage_core.load_actions import ActionKind, FileChange, LoadAction
from storage_core.loader import LoadOptions, load_partition
from storage_core.log_dir import open_log_dir, partition_stale_temp_files, remove_stale_temp_files
from storage_core.names import TopicPartition
from storage_core.topology import rename_stray

log = _log.get("recover")


@dataclass(frozen=True, slots=True)
class RecoverArgs:
    common: JobArgs
    deep_verify: bool
    handle_strays: bool = False


# The settings recovery uses (index entry spacing and index size), named with their sources in every row.
SETTINGS = ("index.interval.bytes", "segment.index.bytes")


@dataclass(frozen=True, slots=True)
class RecoverTask:
    """One partition to load, with everything the executor needs (picklable)."""

    partition: PartitionDir
    options: LoadOptions
    dry_run_state: Path | None = None
    settings: tuple[ConfigValue, ...] = ()
    stray_reason: str = ""  # the metadata image says the dir is a stray replica
    stray_unique_id: str = ""  # rename it aside with this id after recovery (--handle-strays)


DESCRIPTION = "Recover Kafka log dirs after an unclean shutdown, as the broker's LogLoader."


def add_options(parser: argparse.ArgumentParser) -> None:
    """recover's own options (`maintain` takes them too)."""
    parser.add_argument("--deep-verify", action="store_true", help="also CRC-check segments below the recovery point")
    parser.add_argument(
        "--handle-strays",
        action="store_true",
        help="rename stray replicas (per the metadata log) aside to <topic>-<partition>.<uuid>-stray, as Kafka 3.7+",
    )


def parse_args(argv: list[str]) -> RecoverArgs:
    parser = job_parser("recover", DESCRIPTION)
    add_options(parser)
    namespace = parser.parse_args(argv)
    return RecoverArgs(common_args(namespace, quarantines=True), namespace.deep_verify, namespace.handle_strays)


def _stray_action(task: RecoverTask, dir_path: Path, fs: FileSystem) -> LoadAction | None:
    """Report a stray replica; with `--handle-strays` rename it aside through `fs` (an overlay in a
    dry run, which then reports the same rename and changes nothing)."""
    if not task.stray_reason:
        return None
    if not task.stray_unique_id:
        reason = f"{task.stray_reason} (kept as is: --handle-strays renames it)"
        return LoadAction(ActionKind.STRAY_REPLICA, dir_path.name, reason=reason)
    target = rename_stray(dir_path, task.stray_unique_id, fs=fs)
    reason = f"renamed aside: {task.stray_reason}"
    return LoadAction(
        ActionKind.RENAME_STRAY, dir_path.name, reason=reason, change=FileChange.RENAME, target=target.name
    )


def recover_partition(task: RecoverTask) -> PartitionRow:
    """Executor side: load one partition directory; any storage or I/O error becomes a failed row."""
    part = task.partition

    def load(started: float) -> PartitionRow:
        dir_path = Path(part.log_dir) / part.dir_name
        with job_fs(task.options.dry_run, task.dry_run_state, str(dir_path)) as fs:
            temps = remove_stale_temp_files(
                dir_path, temp_names=partition_stale_temp_files(fs.list_dir(dir_path)), fs=fs
            )
            result = load_partition(dir_path, task.options, fs=fs)
            stray = _stray_action(task, dir_path, fs)  # Kafka loads a stray log, then renames it
        return partition_row(
            part,
            started=started,
            log_start_offset=result.log_start_offset,
            log_end_offset=result.log_end_offset,
            first_segment_base_offset=result.first_segment_base_offset,
            truncated_bytes=result.truncated_bytes,
            segments_deleted=result.segments_deleted,
            indexes_rebuilt=result.segments_recovered,
            actions=action_rows((*temps, *result.actions, *([stray] if stray else []))),
            settings=task.settings,
            **load_status(result),
        )

    return run_partition_work(task, load)


def run(args: RecoverArgs) -> JobSummary:
    common = args.common
    view = common.cluster
    with (
        job_fs(common.dry_run, common.dry_run_state) as fs,
        locked_log_dirs(
            common.log_dirs, allow_missing_meta_properties=common.allow_missing_meta_properties, dry_run=common.dry_run
        ) as locks,
    ):
        found, skipped = discover_log_dirs(common.log_dirs)
        # Everything that may refuse (a bad topic config in the metadata log) before anything changes.
        configs = [view.topic_config(part.log_dir, part.topic) for part in found]
        strays = [_stray_reason(view, part) for part in found]
        states = {log_dir: open_log_dir(log_dir, fs=fs) for log_dir in common.log_dirs}
        log_dir_temps = {log_dir: remove_stale_temp_files(log_dir, fs=fs) for log_dir in common.log_dirs}
        roots = quarantine_roots(common)
        keys = checkpoint_keys(found)
        tasks = []
        for part, topic_config, stray_reason in zip(found, configs, strays, strict=True):
            options = load_options(
                common,
                states[Path(part.log_dir)],
                part,
                roots,
                keys.get((part.log_dir, part.dir_name)),
                deep_verify=args.deep_verify,
            )
            unique_id = uuid.uuid4().hex if stray_reason and args.handle_strays else ""
            tasks.append(
                RecoverTask(
                    part,
                    options,
                    common.dry_run_state,
                    topic_config.values(*SETTINGS),
                    stray_reason,
                    unique_id,
                )
            )
        spark = get_spark(common.master, "logkeeper recover")
        rows = run_partition_tasks(
            spark, tasks, recover_partition, description=f"recover {len(tasks)} partitions", dry_run=common.dry_run
        )
        closed = close_log_dirs(states, skipped + rows, require_clean=False, offsets_unchanged=False, fs=fs)
        rows += closed.failures
    for row in rows:
        for action in (a for a in row.actions if a.kind in ("stray_replica", "rename_stray")):
            log.warning(f"logkeeper recover: stray replica {row.log_dir}/{row.dir_name}: {action.reason}")
    log_dirs = log_dir_rows(common.log_dirs, locks, opened=states, closed=closed.written, more=log_dir_temps)
    return JobSummary("recover", common.run_id, common.dry_run, tuple(skipped + rows), log_dirs, common.run_ts)


def _stray_reason(view: ClusterView, part: PartitionDir) -> str:
    """Why the metadata image makes a live or `-future` partition dir a stray replica ("" if it does not)."""
    if part.kind not in ("live", "future"):
        return ""
    return view.topology(part.log_dir, part.dir_name, TopicPartition(part.topic, part.partition)).stray_reason


def main(argv: list[str] | None = None) -> int:
    return run_main("recover", parse_args, run, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    raise SystemExit(main())
