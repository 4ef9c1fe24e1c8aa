"""`logkeeper compact`: Kafka's log cleaner over every compacted partition, on Spark executors.

Driver: lock every log dir, list its partitions and decide each topic's config from the cluster's
metadata log and the topic-config file (:mod:`jobs._cluster`: a topic whose own configs are
unknown is refused, exit 2, before anything is touched; stray replicas are left alone); then read
cleaner-offset-checkpoint, log start offsets, high watermarks and the clean-shutdown marker (a dir
that was not cleanly shut down is refused: run `recover` first). The `clean_plan` row and the
skipped rows of topics without `compact` name the settings used and where they came from.
Executors load each partition whose `cleanup.policy` has `compact` as a broker would
(:mod:`jobs._load`), then clean it until it is no longer a candidate
(:func:`storage_core.cleaner.compact.compact_partition`), largest first. The driver then writes
cleaner-offset-checkpoint atomically and re-creates the clean-shutdown marker. Kafka's stats lines
of every pass go to the log and to the result JSON; every file a pass rewrote or deleted is an
action. A dry run cleans over overlay file systems: the same rows, no change.
`--explain` cleans nothing: it says for each compacted partition why it is (not) cleaned
(:mod:`jobs.compact_explain`, the Delta table `compaction_explain`).
`--dry-run` only reads: it takes no `.lock`, and on a log dir a live broker holds it does not
require the marker (the broker deleted it when it started), so it plans beside a running broker over
the log as it is (elsewhere it refuses what the real run refuses); a partition that changes
while it is planned is reported `changed_during_read`.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path

from jobs import _log
from jobs._cluster import select_configured
from jobs._common import (
    ActionRow,
    JobArgs,
    JobSummary,
    PartitionDir,
    PartitionRow,
    UsageError,
    action_rows,
    add_high_watermark_source,
    checkpoint_keys,
    close_log_dirs,
    common_args,
    discover_log_dirs,
    failed_log_dir_row,
    get_spark,
    high_watermark,
    job_parser,
    locked_log_dirs,
    log_dir_rows,
    partition_row,
    refused_unclean,
    run_main,
    run_partition_tasks,
    run_partition_work,
    skipped_row,
)
from jobs._load import job_fs, load_options, load_status, loaded_first, quarantine_roots
from storage_core.cleaner.compact import compact_partition
from storage_core.config import LogConfig, check_offset_map
from storage_core.config_layers import ConfigValue
from storage_core.errors import InvalidConfigError
from storage_core.live import is_live
from storage_core.loader import LoadOptions
from storage_core.log_dir import open_log_dir, write_cleaner_offsets
from storage_core.names import TopicPartition

log = _log.get("compact")

# The settings the cleaner decides with (their values and sources go into every row).
SETTINGS = (
    "cleanup.policy",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "max.compaction.lag.ms",
    "delete.retention.ms",
)


@dataclass(frozen=True, slots=True)
class CompactArgs:
    common: JobArgs
    dedupe_buffer_bytes: int | None
    high_watermark_source: str
    explain: bool = False


@dataclass(frozen=True, slots=True)
class CompactTask:
    partition: PartitionDir
    load: LoadOptions
    config: LogConfig
    settings: tuple[ConfigValue, ...]
    cleaner_checkpoint: int | None
    high_watermark: int | None
    dedupe_buffer_bytes: int
    load_factor: float
    dry_run_state: Path | None = None


@dataclass(frozen=True, slots=True)
class CompactRow:
    """A partition's row (the cleaner's stats lines are in its actions) and the new cleaner checkpoint offset."""

    row: PartitionRow
    cleaner_offset: int


def add_options(parser: argparse.ArgumentParser) -> None:
    """compact's own options (`maintain` takes them too)."""
    parser.add_argument("--dedupe-buffer-bytes", type=int, help="offset map memory (log.cleaner.dedupe.buffer.size)")
    add_high_watermark_source(parser)


def parse_args(argv: list[str]) -> CompactArgs:
    parser = job_parser("compact", "Compact Kafka topics with cleanup.policy=compact, as the broker's log cleaner.")
    add_options(parser)
    parser.add_argument(
        "--explain",
        action="store_true",
        help="clean nothing: say why each compacted partition is (not) cleaned (read-only, beside live brokers)",
    )
    namespace = parser.parse_args(argv)
    # --explain reads only and never guesses: topics with unknown configs are named, not refused.
    common = common_args(
        namespace, destructive=None if namespace.explain else "compact", quarantines=not namespace.explain
    )
    if namespace.dedupe_buffer_bytes is not None:
        try:
            check_offset_map(
                namespace.dedupe_buffer_bytes, common.broker.dedupe_buffer_load_factor, key="--dedupe-buffer-bytes"
            )
        except InvalidConfigError as exc:
            raise UsageError(str(exc)) from None
    return CompactArgs(common, namespace.dedupe_buffer_bytes, namespace.high_watermark_source, namespace.explain)


def compact_one(task: CompactTask) -> CompactRow:
    """Executor side: clean one partition until it is no longer a candidate."""
    part = task.partition
    cleaner_offset = task.cleaner_checkpoint or 0  # kept when the partition fails

    def clean(started: float) -> PartitionRow:
        nonlocal cleaner_offset
        with loaded_first(part, task.load, task.dry_run_state) as (fs, loaded):
            result = compact_partition(
                Path(part.log_dir) / part.dir_name,
                config=task.config,
                cleaner_checkpoint=task.cleaner_checkpoint,
                log_start_offset=task.load.log_start_offset,
                high_watermark=task.high_watermark,
                now_ms=task.load.now_ms,
                dedupe_buffer_bytes=task.dedupe_buffer_bytes,
                load_factor=task.load_factor,
                dry_run=task.load.dry_run,
                fs=fs,
            )
        cleaner_offset = result.cleaner_offset
        plan = result.initial_plan
        actions = [
            *action_rows(loaded.actions),
            ActionRow(
                "clean_plan",
                "",
                plan.first_dirty_offset,
                0,
                f"dirty ratio {plan.cleanable_ratio:.3f} (min.cleanable.dirty.ratio {plan.min_cleanable_ratio}); "
                f"cleanable [{plan.first_dirty_offset}, {plan.first_uncleanable_offset}); "
                + ("candidate" if plan.is_candidate else "not a candidate")
                + "; settings: "
                + ", ".join(map(str, task.settings)),
                code=plan.reason_code,
                dirty_ratio=plan.cleanable_ratio,
                min_cleanable_ratio=plan.min_cleanable_ratio,
                cleanable_bytes=plan.cleanable_bytes,
                first_uncleanable_offset=plan.first_uncleanable_offset,
            ),
        ]
        for done in result.passes:
            actions.append(
                ActionRow(
                    "clean_pass",
                    "",
                    done.first_dirty_offset,
                    done.stats.bytes_read - done.stats.bytes_written,
                    " | ".join(done.summary[1:]),
                )
            )
            actions += action_rows(done.actions)
            for line in done.summary:
                log.info(f"  {line}")
        return partition_row(
            part,
            started=started,
            log_start_offset=result.log_start_offset,
            log_end_offset=result.log_end_offset,
            truncated_bytes=loaded.truncated_bytes,
            bytes_deleted=sum(p.stats.bytes_read - p.stats.bytes_written for p in result.passes),
            indexes_rebuilt=loaded.segments_recovered,
            actions=tuple(actions),
            settings=task.settings,
            **load_status(loaded),
        )

    row = run_partition_work(task, clean, read_only=task.load.dry_run)
    return CompactRow(row, cleaner_offset)


def run(args: CompactArgs) -> JobSummary:
    common = args.common
    if args.explain:
        from jobs.compact_explain import run_explain

        return run_explain(
            common, settings=SETTINGS, dedupe_buffer_bytes=args.dedupe_buffer_bytes, source=args.high_watermark_source
        )
    with (
        job_fs(common.dry_run, common.dry_run_state) as fs,
        locked_log_dirs(
            common.log_dirs, allow_missing_meta_properties=common.allow_missing_meta_properties, dry_run=common.dry_run
        ) as locks,
    ):
        found, rows = discover_log_dirs(common.log_dirs)
        keys = checkpoint_keys(found)
        configured, strays = select_configured(
            found, common.cluster, assume_broker_defaults=common.assume_broker_defaults, job="compact"
        )
        rows += strays
        states = {log_dir: open_log_dir(log_dir, fs=fs) for log_dir in common.log_dirs}
        live = {log_dir: is_live(log_dir) for log_dir in common.log_dirs}  # a dry run plans beside a broker
        eligible = []
        for item in configured:
            part, policy = item.partition, item.config.value("cleanup.policy")
            if part.kind != "live":  # select_configured left -stray dirs out; -future ones remain
                rows.append(skipped_row(part, f"{part.kind} replica: Kafka's log cleaner cleans live logs only"))
            elif not item.config.config.compact:
                skipped = skipped_row(part, f"{policy} has no compact")
                rows.append(dataclasses.replace(skipped, settings=item.config.values(*SETTINGS)))
            elif not states[Path(part.log_dir)].had_clean_shutdown and not (
                common.dry_run and live[Path(part.log_dir)]
            ):
                rows.append(refused_unclean(part))
            else:
                eligible.append(item)
        roots = quarantine_roots(common)
        tasks = []
        for item in eligible:
            part = item.partition
            state = states[Path(part.log_dir)]
            tp = keys.get((part.log_dir, part.dir_name))
            broker = common.cluster.layers(part.log_dir).broker
            tasks.append(
                CompactTask(
                    part,
                    load_options(common, state, part, roots, tp, recover_corrupt_segments=True),
                    item.config.config,
                    item.config.values(*SETTINGS),
                    state.cleaner_offsets.get(tp),
                    high_watermark(state, tp, args.high_watermark_source),
                    min(args.dedupe_buffer_bytes or broker.offset_map_bytes, 2**31 - 1),
                    broker.dedupe_buffer_load_factor,
                    common.dry_run_state,
                )
            )
        spark = get_spark(common.master, "logkeeper compact")
        done = run_partition_tasks(
            spark, tasks, compact_one, description=f"compact {len(tasks)} partitions", dry_run=common.dry_run
        )
        checkpoints = {}
        for log_dir, state in states.items():
            if not state.had_clean_shutdown:
                continue
            mine = [d for d in done if d.row.log_dir == str(log_dir)]
            present = {tp for (dir_, _), tp in keys.items() if dir_ == str(log_dir)}
            updates = {
                TopicPartition(d.row.topic, d.row.partition): d.cleaner_offset
                for d in mine
                if d.row.status not in ("failed", "skipped")
            }
            try:
                action = write_cleaner_offsets(state, updates, present, fs=fs)
            except OSError as exc:  # the old checkpoint stays (atomic write); the dir gets no marker
                rows.append(failed_log_dir_row(log_dir, exc))
                continue
            checkpoints[log_dir] = [] if action is None else [action]
        closed = close_log_dirs(states, rows + [d.row for d in done], require_clean=True, offsets_unchanged=True, fs=fs)
        rows += closed.failures
    log_dirs = log_dir_rows(common.log_dirs, locks, opened=states, closed=closed.written, more=checkpoints)
    return JobSummary(
        "compact", common.run_id, common.dry_run, tuple(rows + [d.row for d in done]), log_dirs, common.run_ts
    )


def main(argv: list[str] | None = None) -> int:
    return run_main("compact", parse_args, run, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    raise SystemExit(main())
