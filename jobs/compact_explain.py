"""`logkeeper compact --explain`: why each compacted partition is (not) cleaned, into `compaction_explain`.

Read-only, beside live brokers: no `.lock`, no clean-shutdown marker needed, nothing loaded or
changed. For every partition of a topic whose `cleanup.policy` has `compact`, an executor explains
the cleaner's choice (:func:`storage_core.cleaner.explain.explain_cleaning`): the dirty ratio against
`min.cleanable.dirty.ratio`, the compaction lags, the first uncleanable offset and what set it
(`active_segment`, `min_compaction_lag`, `open_transaction`, `high_watermark`), `max.compaction.lag.ms`
overdue, the bytes a clean would free and whether the dedupe buffer holds the dirty keys. Each
partition's row has a `clean_explain` action (its `reason_code`: the plan's, due or not and why),
one line per partition goes to the log, and one row per partition to the Delta table
`<warehouse>/compaction_explain` (the `compaction_stuck` audit query reads it).

Never guesses: a topic whose own configs are unknown is not explained but named (`config_unknown`),
and the others still are; stray replicas and `-future`/`-delete` dirs are skipped, as the cleaner
skips them.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from jobs import _log
from jobs._common import (
    ActionRow,
    JobArgs,
    JobSummary,
    PartitionRow,
    PartitionTask,
    checkpoint_keys,
    discover_log_dirs,
    get_spark,
    high_watermark,
    locked_log_dirs,
    partition_row,
    run_partition_tasks,
    run_partition_work,
    skipped_row,
)
from jobs._delta import write_run
from jobs._fleet import log_dir_identity
from jobs._load import job_fs
from jobs._schema import to_arrow
from jobs._tables import COMPACTION_EXPLAIN
from storage_core.cleaner.explain import CleaningExplanation, explain_cleaning
from storage_core.config import LogConfig
from storage_core.config_layers import ConfigValue
from storage_core.log_dir import open_log_dir
from storage_core.names import TopicPartition

log = _log.get("compact")


@dataclass(frozen=True, slots=True)
class ExplainTask:
    partition: PartitionTask
    config: LogConfig
    settings: tuple[ConfigValue, ...]
    cleaner_checkpoint: int | None
    log_start_offset: int
    high_watermark: int | None
    dedupe_buffer_bytes: int
    load_factor: float
    now_ms: int


@dataclass(frozen=True, slots=True)
class ExplainRow:
    row: PartitionRow
    explanation: CleaningExplanation | None


@dataclass(frozen=True, slots=True)
class CompactionExplainRow:
    """One row of `compaction_explain` (docs/tables.md): the cleaner's choice for one partition."""

    run_id: str
    run_ts: datetime.datetime
    ts: datetime.datetime
    date: datetime.date
    log_dir: str
    cluster_id: str | None
    node_id: int | None
    host: str
    topic: str
    partition: int
    dir_name: str
    reason_code: str
    is_candidate: bool
    dirty_ratio: float
    min_cleanable_ratio: float
    clean_bytes: int
    cleanable_bytes: int
    first_dirty_offset: int
    first_uncleanable_offset: int
    uncleanable_reason: str
    last_stable_offset: int
    first_dirty_timestamp: datetime.datetime | None
    dirty_lag_ms: int | None
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int
    overdue_ms: int | None
    dirty_keys: int
    dedupe_buffer_keys: int
    buffer_fits: bool
    reclaimable_bytes: int
    superseded_records: int
    scanned_records: int
    summary: str


def explain_one(task: ExplainTask) -> ExplainRow:
    """Executor side: explain the cleaner's choice for one partition."""
    part = task.partition
    explanation: CleaningExplanation | None = None

    def explain(started: float) -> PartitionRow:
        nonlocal explanation
        explanation = explain_cleaning(
            Path(part.log_dir) / part.dir_name,
            config=task.config,
            cleaner_checkpoint=task.cleaner_checkpoint,
            log_start_offset=task.log_start_offset,
            high_watermark=task.high_watermark,
            now_ms=task.now_ms,
            dedupe_buffer_bytes=task.dedupe_buffer_bytes,
            load_factor=task.load_factor,
        )
        plan = explanation.plan
        action = ActionRow(
            "clean_explain",
            "",
            plan.first_dirty_offset,
            explanation.reclaimable_bytes,
            explanation.summary(),
            code=plan.reason_code,
            dirty_ratio=plan.cleanable_ratio,
            min_cleanable_ratio=plan.min_cleanable_ratio,
            cleanable_bytes=plan.cleanable_bytes,
            first_uncleanable_offset=plan.first_uncleanable_offset,
        )
        return partition_row(part, "ok", started=started, actions=(action,), settings=task.settings)

    row = run_partition_work(task, explain, read_only=True)
    return ExplainRow(row, explanation)


def explain_table(
    run_id: str, done: list[ExplainRow], tasks: list[ExplainTask], *, run_ts: datetime.datetime, ts: datetime.datetime
) -> pa.Table:
    configs = {(t.partition.log_dir, t.partition.dir_name): t.config for t in tasks}
    rows = []
    for d in done:
        e = d.explanation
        if e is None:
            continue
        config = configs[(d.row.log_dir, d.row.dir_name)]
        who = log_dir_identity(d.row.log_dir)
        plan = e.plan
        first_ts = e.first_dirty_timestamp_ms
        rows.append(
            CompactionExplainRow(
                run_id,
                run_ts,
                ts,
                ts.date(),
                d.row.log_dir,
                who.cluster_id,
                who.node_id,
                who.host,
                d.row.topic,
                d.row.partition,
                d.row.dir_name,
                plan.reason_code,
                plan.is_candidate,
                plan.cleanable_ratio,
                plan.min_cleanable_ratio,
                plan.clean_bytes,
                plan.cleanable_bytes,
                plan.first_dirty_offset,
                plan.first_uncleanable_offset,
                e.uncleanable_reason.value,
                e.last_stable_offset,
                None if first_ts is None else datetime.datetime.fromtimestamp(first_ts / 1000, tz=datetime.UTC),
                e.dirty_lag_ms,
                config.min_compaction_lag_ms,
                config.max_compaction_lag_ms,
                e.overdue_ms,
                e.dirty_keys,
                e.dedupe_buffer_keys,
                e.buffer_fits,
                e.reclaimable_bytes,
                e.superseded_records,
                e.scanned_records,
                e.summary(),
            )
        )
    return to_arrow(rows, CompactionExplainRow)


def run_explain(
    common: JobArgs, *, settings: tuple[str, ...], dedupe_buffer_bytes: int | None, source: str
) -> JobSummary:
    """`compact --explain` (`settings`: the ones compact decides with; `source`: --high-watermark-source)."""
    view = common.cluster
    with locked_log_dirs(
        common.log_dirs, allow_missing_meta_properties=common.allow_missing_meta_properties, read_only=True
    ):
        with job_fs(dry_run=True) as overlay:  # reads only
            states = {log_dir: open_log_dir(log_dir, fs=overlay) for log_dir in common.log_dirs}
        found, rows = discover_log_dirs(common.log_dirs)
        keys = checkpoint_keys(found)
        tasks = []
        for part in found:
            tp = TopicPartition(part.topic, part.partition)
            if part.kind != "live":
                rows.append(skipped_row(part, f"{part.kind} replica: Kafka's log cleaner cleans live logs only"))
                continue
            topology = view.topology(part.log_dir, part.dir_name, tp)
            if topology.is_stray:
                rows.append(skipped_row(part, f"stray replica: {topology.stray_reason}; never cleaned"))
                continue
            layers = view.layers(part.log_dir)
            if not layers.knows(part.topic) and not common.assume_broker_defaults:
                why = f"config_unknown: the topic's own configs are unknown ({view.unknown_reason(part.log_dir)})"
                rows.append(skipped_row(part, why))
                continue
            topic = view.topic_config(part.log_dir, part.topic)
            if not topic.config.compact:
                rows.append(skipped_row(part, f"{topic.value('cleanup.policy').value} has no compact"))
                continue
            state = states[Path(part.log_dir)]
            key = keys.get((part.log_dir, part.dir_name))
            tasks.append(
                ExplainTask(
                    part,
                    topic.config,
                    topic.values(*settings),
                    state.cleaner_offsets.get(key) if key else None,
                    state.log_start_offsets.get(key, 0) if key else 0,
                    high_watermark(state, key, source),
                    min(dedupe_buffer_bytes or layers.broker.offset_map_bytes, 2**31 - 1),
                    layers.broker.dedupe_buffer_load_factor,
                    common.now_ms,
                )
            )
        spark = get_spark(common.master, "logkeeper compact --explain")
        done = run_partition_tasks(spark, tasks, explain_one, description=f"explain {len(tasks)} partitions")
    ts = datetime.datetime.now(datetime.UTC)
    table = explain_table(common.run_id, done, tasks, run_ts=common.run_ts, ts=ts)
    if table.num_rows and not common.dry_run:
        log_dirs = [str(d) for d in common.log_dirs]
        write_run(common.warehouse / COMPACTION_EXPLAIN, table, run_id=common.run_id, log_dirs=log_dirs)
    for d in done:
        if d.explanation is not None:
            log.info(f"  {d.row.log_dir}/{d.row.dir_name}: {d.explanation.summary()}")
    return JobSummary("compact", common.run_id, True, tuple(rows + [d.row for d in done]), (), common.run_ts)
