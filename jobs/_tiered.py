"""Tiered storage on the driver: each tiered partition's uploads, from the `__remote_log_metadata` on these disks.

`__remote_log_metadata` is an ordinary topic: the brokers hold its partitions in their own log dirs.
Before retention (or disk-usage) plans a tiered partition (`remote.storage.enable=true`), the driver
replays the metadata partitions found among `--log-dirs`, each
up to its high watermark (:mod:`storage_core.tiered.uploads`), and gives every tiered partition its
:class:`~storage_core.tiered.local_retention.RemoteCopies`. They are known only when the metadata
partition that holds the partition's events (:func:`storage_core.tiered.partitioner.metadata_partition`,
with the metadata topic's partition count from the cluster's metadata image) was read; otherwise none
of its segments counts as uploaded, and the reason says which metadata partition is missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from jobs._cluster import ClusterView
from jobs._log_dirs import PartitionTask
from storage_core import names
from storage_core.fs import default_fs
from storage_core.log_dir import open_log_dir
from storage_core.messages.schemas.remote_log_metadata import RemoteLogSegmentState
from storage_core.names import TopicPartition
from storage_core.overlay_fs import OverlayFileSystem
from storage_core.tiered.local_retention import RemoteCopies
from storage_core.tiered.partitioner import metadata_partition
from storage_core.tiered.uploads import REMOTE_LOG_METADATA_TOPIC, RemoteLogMetadata, read_remote_log_metadata

# The settings a tiered topic's retention decides with too.
TIERED_SETTINGS = ("local.retention.ms", "local.retention.bytes", "remote.storage.enable", "remote.log.copy.disable")


def metadata_dirs(log_dirs: Iterable[Path]) -> list[tuple[Path, int | None]]:
    """Every `__remote_log_metadata-<n>` dir of the log dirs with its high watermark (None: not in its
    log dir's replication-offset-checkpoint). Read-only: the log dirs' state is read over an overlay."""
    found = []
    for log_dir in map(Path, log_dirs):
        dirs = sorted(log_dir.glob(f"{REMOTE_LOG_METADATA_TOPIC}-*"))
        if not dirs:
            continue
        state = open_log_dir(log_dir, fs=OverlayFileSystem(default_fs()))
        for dir_path in dirs:
            tp = names.parse_partition_dir_name(dir_path.name).topic_partition
            if names.parse_partition_dir_name(dir_path.name).kind == names.DirKind.LIVE:
                found.append((dir_path, state.high_watermarks.get(TopicPartition(tp.topic, tp.partition))))
    return found


def read_uploads(log_dirs: Sequence[Path]) -> RemoteLogMetadata:
    """The remote state of every partition whose events are in the metadata partitions of `log_dirs`."""
    return read_remote_log_metadata(metadata_dirs(log_dirs))


def remote_copies(view: ClusterView, metadata: RemoteLogMetadata, part: PartitionTask) -> RemoteCopies:
    """What is known of one partition's uploads (see the module docstring)."""
    tp = TopicPartition(part.topic, part.partition)
    topic_id = view.topology(part.log_dir, part.dir_name, tp).topic_id
    if not topic_id:
        return RemoteCopies(False, why_unknown=f"{part.dir_name} has no topic id (partition.metadata)")
    image = view.image
    topic = None if image is None else image.topics.get(REMOTE_LOG_METADATA_TOPIC)
    if topic is None or not topic.partitions:
        why = (
            "no cluster metadata" if image is None else f"no {REMOTE_LOG_METADATA_TOPIC} topic in the cluster metadata"
        )
        return RemoteCopies(
            False, why_unknown=f"{why}: which {REMOTE_LOG_METADATA_TOPIC} partition holds its events is unknown"
        )
    number = metadata_partition(topic_id, part.partition, len(topic.partitions))
    if number not in metadata.read:
        return RemoteCopies(
            False,
            why_unknown=f"its events are in {REMOTE_LOG_METADATA_TOPIC}-{number}, which is not on these log dirs "
            "(no replica of it on this broker)",
        )
    remote = metadata.of(topic_id, part.partition)
    if remote is None:
        return RemoteCopies(True)
    started = tuple(
        (s.start_offset, s.end_offset) for s in remote.segments if s.state == RemoteLogSegmentState.COPY_SEGMENT_STARTED
    )
    return RemoteCopies(True, remote.uploaded_ranges(), started)


def tiered_copies(
    view: ClusterView, parts: Iterable[PartitionTask], log_dirs: Sequence[Path]
) -> Mapping[tuple[str, str], RemoteCopies]:
    """(log dir, dir name) -> uploads, for the partitions of tiered topics among `parts`; the metadata
    partitions are replayed only when there is one."""
    tiered = [p for p in parts if view.topic_config(p.log_dir, p.topic).config.tiered]
    if not tiered:
        return {}
    metadata = read_uploads(log_dirs)
    return {(p.log_dir, p.dir_name): remote_copies(view, metadata, p) for p in tiered}
