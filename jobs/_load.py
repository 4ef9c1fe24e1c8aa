"""One load path for every job: each partition is loaded as Kafka loads it before anything else is done.

A broker loads every log at startup (`LogLoader`), also after a clean shutdown: it finishes
interrupted swaps, removes temp files, rebuilds a segment's missing or broken indexes and its
producer state. Recover is that load; retention, compact and stats run it first on a cleanly shut
down log dir too, so that they see the log a broker would serve (retention's time rule reads the
rebuilt time index, not the `.log`'s mtime), and report what it changed. Every load quarantines the
record bytes it must remove (:mod:`storage_core.quarantine`), under the run's quarantine directory.

A dry run gives each task an overlay file system (:mod:`storage_core.overlay_fs`) for the load and
the job's own step after it, and the driver one for the log dirs' marker and checkpoints: the
rows are exactly what a real run would report, and no file changes. `maintain --dry-run` keeps the
overlays between its steps in a scratch directory (`dry_run_state`), so that retention sees the
log recovery would leave, and so on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from jobs._args import JobArgs
from jobs._log_dirs import PartitionTask
from storage_core.fs import FileSystem, default_fs
from storage_core.load_actions import ActionKind, LoadAction, actions_on_failure
from storage_core.loader import LoadOptions, LoadResult, load_partition
from storage_core.log_dir import LogDirState
from storage_core.names import TopicPartition
from storage_core.overlay_fs import OverlayFileSystem
from storage_core.partition_segments import SegmentSettings
from storage_core.quarantine import log_dir_id


@contextmanager
def job_fs(dry_run: bool, state: Path | None = None, key: str = "driver") -> Iterator[FileSystem]:
    """The file system of a job's driver or of one task: the real one, or in a dry run an overlay
    over it, restored from and saved to `state` (a scratch directory) when given.

    Args:
        dry_run: whether to change nothing.
        state: where overlays are kept between the steps of one dry run, or None.
        key: whose overlay: "driver" (the log dirs' own files) or a partition directory's path.
    """
    if not dry_run:
        yield default_fs()
        return
    path = None if state is None else state / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.overlay"
    base = default_fs()
    fs = OverlayFileSystem.restore(path, base) if path is not None and base.exists(path) else OverlayFileSystem(base)
    try:
        yield fs
    finally:
        if path is not None:
            fs.save(path)


@contextmanager
def loaded_first(
    part: PartitionTask, options: LoadOptions, dry_run_state: Path | None
) -> Iterator[tuple[FileSystem, LoadResult]]:
    """Load a partition (its task's file system, an overlay in a dry run) before a job's own step, in
    the block; if the step fails, its exception carries the load's actions too (the failed row
    reports every change made)."""
    dir_path = Path(part.log_dir) / part.dir_name
    done: list[LoadAction] = []
    with job_fs(options.dry_run, dry_run_state, str(dir_path)) as fs, actions_on_failure(done):
        loaded = load_partition(dir_path, options, fs=fs)
        done += loaded.actions
        yield fs, loaded


def quarantine_roots(common: JobArgs) -> dict[Path, Path | None]:
    """Per log dir, `<quarantine dir>/<run id>/<log dir id>` (None without a quarantine location)."""
    fs = default_fs()
    return {
        log_dir: None
        if common.quarantine_dir is None
        else common.quarantine_dir / common.run_id / log_dir_id(log_dir, fs=fs)
        for log_dir in common.log_dirs
    }


def load_options(
    common: JobArgs,
    state: LogDirState,
    part: PartitionTask,
    roots: dict[Path, Path | None],
    key: TopicPartition | None,
    *,
    deep_verify: bool = False,
    recover_corrupt_segments: bool = False,
) -> LoadOptions:
    """How to load one partition: its checkpoints, its topic's settings, its quarantine directory
    (`recover_corrupt_segments`: compact's load, see :class:`LoadOptions`).

    `key` is the partition's checkpoint entry (:func:`jobs._log_dirs.checkpoint_keys`), None for a
    dir that owns none (a `-stray` or `-delete` dir, a `-future` one beside its live dir): it reads
    recovery point 0 and log start 0, so all of it is recovered and kept."""
    config = common.cluster.topic_config(part.log_dir, part.topic).config
    root = roots[Path(part.log_dir)]
    return LoadOptions(
        had_clean_shutdown=state.had_clean_shutdown,
        recovery_point=0 if key is None else state.recovery_points.get(key, 0),
        log_start_offset=0 if key is None else state.log_start_offsets.get(key, 0),
        now_ms=common.now_ms,
        settings=SegmentSettings(config.index_interval_bytes, config.segment_index_bytes),
        producer_id_expiration_ms=common.cluster.layers(part.log_dir).broker.producer_id_expiration_ms,
        deep_verify=deep_verify,
        dry_run=common.dry_run,
        recover_corrupt_segments=recover_corrupt_segments,
        quarantine_dir=None if root is None else root / part.dir_name,
    )


def load_status(result: LoadResult) -> dict[str, str]:
    """The row fields a load decides: `status` (corrupt, truncated or ok), `error_type`, `error_message`."""
    if result.corruption_found:
        reason = next(a.reason for a in result.actions if a.kind == ActionKind.CORRUPTION_DETECTED)
        return {"status": "corrupt", "error_type": "CorruptDataBelowRecoveryPoint", "error_message": reason}
    quarantined = result.records_quarantined
    if quarantined:
        pieces = "; ".join(
            f"offsets {a.first_offset}-{a.last_offset} of {a.file} ({a.reason}) kept in {a.target}" for a in quarantined
        )
        return {
            "status": "truncated",
            "error_type": "RecordsQuarantined",
            "error_message": f"records removed from the live log, kept in the quarantine: {pieces}",
        }
    return {"status": "ok", "error_type": "", "error_message": ""}
