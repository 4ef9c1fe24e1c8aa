"""A partition dir against the cluster's topology: is it a replica this broker should hold, or a stray?

Mirrors `LogManager.isStrayKraftReplica` (Kafka 3.7+, KAFKA-14616/KAFKA-15776), which a KRaft broker
applies to every log it loads (not `-delete` or `-stray` ones) against its metadata image:

1. no topic id (no `partition.metadata`): stray. Kafka writes the file before the first append,
   so a log without one holds no data it can lose;
2. the image has no partition `<topic id>`/`<partition>`: stray (the topic was deleted, or deleted
   and re-created under a new id, or lost that partition);
3. the partition's replica set does not hold this broker's node id: stray (reassigned away).

Kafka renames a stray log's directory to `<topic>-<partition>.<uuid>-stray`
(`LocalLog.logStrayDirName`, :func:`storage_core.names.stray_dir_name`) and keeps it aside, never
deleting it; :func:`rename_stray` does the same.

Crash story: the rename is one atomic `rename(2)` followed by an fsync of the log dir
(`Utils.atomicMoveWithFallback`); after a crash the directory has its old name (the next run, or
the broker, finds it stray again) or its new one (loaded as a stray). Nothing inside it changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from storage_core import names
from storage_core.errors import CorruptCheckpointError
from storage_core.fs import FileSystem, default_fs
from storage_core.names import TopicPartition
from storage_core.partition_metadata import read_partition_metadata

if TYPE_CHECKING:
    from storage_core.metadata import MetadataImage


@dataclass(frozen=True, slots=True)
class ReplicaTopology:
    """What the cluster's metadata says of one partition dir.

    Attributes:
        topic_id: the topic id in its `partition.metadata` ("" if it has none or it is unreadable).
        cluster_topic_id: the id the metadata image gives the topic's name ("" if no such topic).
        is_replica_of_this_broker: this broker is in the partition's replica set (None: unknown,
            no metadata image or no node id).
        stray_reason: why the dir is a stray replica ("" if it is not, or if that is unknown).
        problem: a `partition.metadata` that cannot be read ("" if none); such a dir is not
            called stray: a broker would fail to load it, not set it aside.
    """

    topic_id: str = ""
    cluster_topic_id: str = ""
    is_replica_of_this_broker: bool | None = None
    stray_reason: str = ""
    problem: str = ""

    @property
    def is_stray(self) -> bool:
        return bool(self.stray_reason)


def read_topic_id(dir_path: Path, *, fs: FileSystem | None = None) -> tuple[str, str]:
    """The topic id of a partition dir's `partition.metadata` and a problem reading it.

    Returns:
        (topic id, "") if the file reads; ("", "") if there is none; ("", why) if it is corrupt.
    """
    fs = fs or default_fs()
    path = Path(dir_path) / names.PARTITION_METADATA
    if not fs.exists(path):
        return "", ""
    try:
        return read_partition_metadata(path, fs=fs).topic_id, ""
    except CorruptCheckpointError as exc:
        return "", f"unreadable {names.PARTITION_METADATA}: {exc}"


def check_replica(
    dir_path: Path,
    tp: TopicPartition,
    *,
    image: MetadataImage | None,
    node_id: int | None,
    fs: FileSystem | None = None,
) -> ReplicaTopology:
    """Compare one partition dir with the metadata image, as a KRaft broker does at startup.

    Args:
        dir_path: the partition dir (a live or `-future` one).
        tp: its topic and partition.
        image: the cluster's metadata image; None gives only the dir's own topic id.
        node_id: this broker's node id (meta.properties); None skips the replica-set check.
        fs: the file system.
    """
    topic_id, problem = read_topic_id(dir_path, fs=fs)
    if image is None:
        return ReplicaTopology(topic_id=topic_id, problem=problem)
    named = image.topics.get(tp.topic)
    cluster_topic_id = named.topic_id if named is not None else ""
    if problem:
        return ReplicaTopology(topic_id, cluster_topic_id, problem=problem)
    if not topic_id:
        reason = f"no topic id ({names.PARTITION_METADATA} missing): Kafka treats it as a stray log"
        return ReplicaTopology(topic_id, cluster_topic_id, stray_reason=reason)
    topic = image.topic_by_id(topic_id)
    if topic is None:
        reason = f"topic id {topic_id} is not in the cluster metadata" + (
            f" (topic {tp.topic!r} now has id {cluster_topic_id}: deleted and re-created)"
            if cluster_topic_id
            else f" (topic {tp.topic!r} was deleted)"
        )
        return ReplicaTopology(topic_id, cluster_topic_id, stray_reason=reason)
    partition = topic.partitions.get(tp.partition)
    if partition is None:
        reason = f"topic {topic.name!r} ({topic_id}) has no partition {tp.partition} in the cluster metadata"
        return ReplicaTopology(topic_id, cluster_topic_id, stray_reason=reason)
    if node_id is None:
        return ReplicaTopology(topic_id, cluster_topic_id)
    if node_id not in partition.replicas:
        reason = f"replicas {list(partition.replicas)} of {tp} do not include this broker ({node_id})"
        return ReplicaTopology(topic_id, cluster_topic_id, is_replica_of_this_broker=False, stray_reason=reason)
    return ReplicaTopology(topic_id, cluster_topic_id, is_replica_of_this_broker=True)


def rename_stray(dir_path: Path, unique_id: str, *, fs: FileSystem | None = None) -> Path:
    """Rename a stray partition dir to `<topic>-<partition>.<unique_id>-stray` (crash story above).

    Args:
        dir_path: the partition dir (a live `<topic>-<partition>` one).
        unique_id: 32 hex digits (a random UUID's, as Kafka).
        fs: the file system.

    Returns:
        The new path.
    """
    fs = fs or default_fs()
    dir_path = Path(dir_path)
    tp = names.parse_partition_dir_name(dir_path.name).topic_partition
    target = dir_path.parent / names.stray_dir_name(tp, unique_id)
    fs.rename_atomic(dir_path, target)
    return target
