"""What remote storage holds, per topic partition: `__remote_log_metadata` replayed, as its consumer does.

Kafka's `RemoteLogMetadataCache` (one per topic partition) applies the events of
:mod:`storage_core.tiered.events` in the order of their metadata partition's log:

1. a RemoteLogSegmentMetadata (state COPY_SEGMENT_STARTED) adds segment `id` with its offsets
   [start, end]; a second one for the same id is refused;
2. an update moves segment `id` on, if `RemoteLogSegmentState.isValidTransition` allows it
   (STARTED -> FINISHED or DELETE_STARTED, FINISHED -> DELETE_STARTED, DELETE_STARTED ->
   DELETE_FINISHED, or the same state again); an update of an unknown id or an invalid move is
   refused (Kafka logs it and goes on);
3. DELETE_SEGMENT_FINISHED forgets the segment; a RemotePartitionDeleteMetadata marks the whole
   partition's remote data as deleted (no local segment can then count as uploaded).

Only events below the metadata partition's high watermark (the `replication-offset-checkpoint` of
its log dir) count: a consumer never reads above it, so nothing uncommitted says "uploaded". A
batch that fails its CRC, or a torn tail, ends the partition's events there (what follows is not
trusted). Each refused event is kept as a note.

A segment is *uploaded* when its state is COPY_SEGMENT_FINISHED: :meth:`RemotePartition.covers`
tells whether every offset of a local range is in such a segment. This is stricter than the broker,
which trusts the highest uploaded offset (`highestOffsetInRemoteStorage`) and so would treat a gap
(a lost upload) below it as uploaded; offline, only offsets in a finished copy count.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from storage_core import names
from storage_core.errors import CorruptDataError, StorageError, UnsupportedFormatError
from storage_core.fs import FileSystem, default_fs
from storage_core.messages.schemas.remote_log_metadata import RemoteLogSegmentState, RemotePartitionDeleteState
from storage_core.records.batch import RecordBatch
from storage_core.records.file_records import iterate_batches
from storage_core.tiered.events import (
    PartitionDelete,
    RemoteLogEvent,
    SegmentMetadata,
    TopicIdPartition,
    read_event,
)

REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"

_VALID_MOVES = {
    RemoteLogSegmentState.COPY_SEGMENT_STARTED: {
        RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
        RemoteLogSegmentState.DELETE_SEGMENT_STARTED,
    },
    RemoteLogSegmentState.COPY_SEGMENT_FINISHED: {RemoteLogSegmentState.DELETE_SEGMENT_STARTED},
    RemoteLogSegmentState.DELETE_SEGMENT_STARTED: {RemoteLogSegmentState.DELETE_SEGMENT_FINISHED},
}


@dataclass(frozen=True, slots=True)
class RemoteSegment:
    """A remote segment's offsets, size and current state."""

    segment_id: str
    start_offset: int
    end_offset: int
    size_bytes: int
    state: RemoteLogSegmentState


@dataclass(frozen=True, slots=True)
class RemotePartition:
    """What remote storage holds of one topic partition.

    Attributes:
        partition: the topic id, name and number.
        segments: the segments not yet fully deleted, by start offset.
        deleted: the partition's remote data is marked or being deleted (None: not).
    """

    partition: TopicIdPartition
    segments: tuple[RemoteSegment, ...]
    deleted: RemotePartitionDeleteState | None = None

    def uploaded_ranges(self) -> tuple[tuple[int, int], ...]:
        """The offset ranges [first, last] of the finished copies, merged where they touch or overlap."""
        if self.deleted is not None:
            return ()
        ranges: list[list[int]] = []
        finished = (s for s in self.segments if s.state == RemoteLogSegmentState.COPY_SEGMENT_FINISHED)
        for segment in sorted(finished, key=lambda s: s.start_offset):
            if ranges and segment.start_offset <= ranges[-1][1] + 1:
                ranges[-1][1] = max(ranges[-1][1], segment.end_offset)
            else:
                ranges.append([segment.start_offset, segment.end_offset])
        return tuple((first, last) for first, last in ranges)

    def covers(self, first: int, last: int) -> bool:
        """Every offset of [first, last] is in a finished copy."""
        return any(lo <= first and last <= hi for lo, hi in self.uploaded_ranges())

    @property
    def highest_uploaded_offset(self) -> int:
        """The largest offset of a finished copy (-1: none), the broker's `highestOffsetInRemoteStorage`."""
        return max((hi for _, hi in self.uploaded_ranges()), default=-1)


@dataclass(slots=True)
class _Partition:
    segments: dict[str, RemoteSegment] = field(default_factory=dict)
    deleted: RemotePartitionDeleteState | None = None


@dataclass(frozen=True, slots=True)
class RemoteLogMetadata:
    """Every topic partition's remote state, from the metadata partitions that were read.

    Attributes:
        partitions: by topic id and partition number.
        read: the `__remote_log_metadata` partition numbers read, and up to which offset (exclusive).
        notes: events Kafka's cache refuses too, and where a metadata partition's events stop early.
    """

    partitions: Mapping[tuple[str, int], RemotePartition]
    read: Mapping[int, int]
    notes: tuple[str, ...] = ()

    def of(self, topic_id: str, partition: int) -> RemotePartition | None:
        return self.partitions.get((topic_id, partition))


class RemoteLogMetadataReplayer:
    """Applies events in log order (the steps of the module docstring)."""

    def __init__(self) -> None:
        self._partitions: dict[tuple[str, int], tuple[TopicIdPartition, _Partition]] = {}
        self.notes: list[str] = []

    def _state(self, tp: TopicIdPartition) -> _Partition:
        key = (tp.topic_id, tp.partition)
        if key not in self._partitions:
            self._partitions[key] = (tp, _Partition())
        return self._partitions[key][1]

    def apply(self, event: RemoteLogEvent, where: str) -> None:
        if isinstance(event, PartitionDelete):
            self._state(event.partition).deleted = event.state
            return
        state = self._state(event.partition)
        if isinstance(event, SegmentMetadata):
            if event.snapshot:
                return  # snapshot records live in the broker's own snapshot files, never in this topic
            if event.segment_id in state.segments or event.state != RemoteLogSegmentState.COPY_SEGMENT_STARTED:
                self.notes.append(f"{where}: segment {event.segment_id} added again or not as COPY_SEGMENT_STARTED")
                return
            state.segments[event.segment_id] = RemoteSegment(
                event.segment_id, event.start_offset, event.end_offset, event.size_bytes, event.state
            )
            return
        segment = state.segments.get(event.segment_id)
        if segment is None:
            self.notes.append(f"{where}: update of unknown segment {event.segment_id} ({event.state.name})")
            return
        if event.state != segment.state and event.state not in _VALID_MOVES.get(segment.state, set()):
            self.notes.append(f"{where}: segment {event.segment_id}: {segment.state.name} -> {event.state.name}")
            return
        if event.state == RemoteLogSegmentState.DELETE_SEGMENT_FINISHED:
            del state.segments[event.segment_id]
        else:
            state.segments[event.segment_id] = RemoteSegment(
                segment.segment_id, segment.start_offset, segment.end_offset, segment.size_bytes, event.state
            )

    def result(self, read: Mapping[int, int]) -> RemoteLogMetadata:
        partitions = {
            key: RemotePartition(tp, tuple(sorted(p.segments.values(), key=lambda s: s.start_offset)), p.deleted)
            for key, (tp, p) in self._partitions.items()
        }
        return RemoteLogMetadata(partitions, dict(read), tuple(self.notes))


def _events(
    dir_path: Path, high_watermark: int, notes: list[str], fs: FileSystem
) -> Iterator[tuple[int, RemoteLogEvent]]:
    """(offset, event) of one metadata partition dir, below its high watermark."""
    for base in names.log_base_offsets(fs.list_dir(dir_path)):
        path = names.log_file(dir_path, base)
        try:
            for batch in iterate_batches(fs.mmap(path)):
                if not isinstance(batch, RecordBatch) or not batch.is_valid():
                    notes.append(f"{path}: an invalid batch at position {batch.position}; later events not read")
                    return
                if batch.is_control:
                    continue
                for record in batch.records():
                    if record.offset >= high_watermark:
                        return
                    try:
                        yield record.offset, read_event(record.value or b"")
                    except StorageError as exc:
                        notes.append(f"{path}: offset {record.offset}: {exc}; skipped (as Kafka's consumer task)")
        except (CorruptDataError, UnsupportedFormatError) as exc:
            notes.append(f"{path}: {exc}; later events not read")
            return


def read_remote_log_metadata(
    dirs: Iterable[tuple[Path, int | None]], *, fs: FileSystem | None = None
) -> RemoteLogMetadata:
    """Replay `__remote_log_metadata` partition dirs.

    Args:
        dirs: each `__remote_log_metadata-<n>` dir with its high watermark (None: not known, so
            none of its events count).
        fs: the file system.
    """
    fs = fs or default_fs()
    replayer = RemoteLogMetadataReplayer()
    read: dict[int, int] = {}
    for dir_path, high_watermark in dirs:
        number = names.parse_partition_dir_name(dir_path.name).topic_partition.partition
        if high_watermark is None:
            replayer.notes.append(f"{dir_path}: no high watermark in replication-offset-checkpoint; not read")
            continue
        for offset, event in _events(dir_path, high_watermark, replayer.notes, fs):
            replayer.apply(event, f"{dir_path.name}@{offset}")
        read[number] = high_watermark
    return replayer.result(read)
