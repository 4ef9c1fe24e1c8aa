"""Test-only builders of Kafka log dirs, written with storage_core's own batch builder.

`LogDirBuilder(tmp_path / "logs").partition("orders", 0, segments=3, batches_per_segment=10)`
writes segments with Kafka-valid indexes (by recovering them once, as a broker would have them)
and the per-log-dir checkpoints; every log dir gets a `meta.properties` (:func:`kafka_log_dir`).
"""

from __future__ import annotations

from pathlib import Path

from storage_core import names
from storage_core.checkpoint import write_offset_checkpoint
from storage_core.fs import FileSystem
from storage_core.loader import LoadOptions, LoadResult, load_partition
from storage_core.meta_properties import MetaProperties, write_meta_properties
from storage_core.names import TopicPartition
from storage_core.records.batch import Record, build_batch

T0 = 1_700_000_000_000
CLUSTER_ID = "4L6g3nShT-eMCtK--X86sw"


def kafka_log_dir(path: Path) -> Path:
    """`path` made a log dir a broker has used: the directory and its `meta.properties` (ZooKeeper-mode
    v0, broker 0), without which jobs refuse it. Returns `path`."""
    path.mkdir(parents=True, exist_ok=True)
    meta = path / names.META_PROPERTIES
    if not meta.exists():
        write_meta_properties(meta, MetaProperties(0, CLUSTER_ID, broker_id=0), now_ms=T0)
    return path


def recover_unclean(
    part: Path, *, now_ms: int = T0, quarantine: Path | None = None, fs: FileSystem | None = None
) -> LoadResult:
    """Load `part` as after an unclean shutdown from offset 0 (checkpoints empty), quarantining what it
    removes under `quarantine` (default: `quarantine/` beside the partition directory)."""
    options = LoadOptions(
        had_clean_shutdown=False,
        recovery_point=0,
        log_start_offset=0,
        now_ms=now_ms,
        quarantine_dir=quarantine if quarantine is not None else part.parent / "quarantine",
    )
    return load_partition(part, options, fs=fs)


class LogDirBuilder:
    """Builds one log dir."""

    def __init__(self, path: Path) -> None:
        self.path = kafka_log_dir(path)
        self.recovery_points: dict[TopicPartition, int] = {}

    def partition(
        self, topic: str, partition: int, *, segments: int = 2, batches_per_segment: int = 10, value_size: int = 100
    ) -> Path:
        """A partition of `segments` segments of one-record batches at consecutive offsets."""
        dir_path = self.path / f"{topic}-{partition}"
        dir_path.mkdir()
        offset = 0
        for _ in range(segments):
            base = offset
            data = []
            for _ in range(batches_per_segment):
                data.append(
                    build_batch(
                        [Record(offset, T0 + offset, b"key-%d" % (offset % 7), b"v" * value_size)],
                        base_offset=offset,
                        partition_leader_epoch=0,
                    )
                )
                offset += 1
            names.log_file(dir_path, base).write_bytes(b"".join(data))
        recover_unclean(dir_path, quarantine=self.path.parent / "quarantine")
        self.recovery_points[TopicPartition(topic, partition)] = offset
        return dir_path

    def checkpoints(self) -> LogDirBuilder:
        write_offset_checkpoint(self.path / names.RECOVERY_POINT_CHECKPOINT, self.recovery_points)
        write_offset_checkpoint(self.path / names.LOG_START_OFFSET_CHECKPOINT, {})
        return self
