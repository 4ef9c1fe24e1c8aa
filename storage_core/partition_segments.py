"""The segments of one partition directory, as the loader loads, recovers and deletes them.

A thin map from base offset to segment files over a :class:`~storage_core.dir_view.DirView`;
segments are opened as :class:`~storage_core.segment.LogSegment` and recovered in place (a dry run
does the same over an overlay file system). Every file change is returned as one action.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.dir_view import DirView
from storage_core.errors import CorruptIndexError
from storage_core.fs import FileSystem
from storage_core.index.offset_index import OffsetIndex
from storage_core.index.time_index import TimeIndex
from storage_core.index.txn_index import TransactionIndex
from storage_core.load_actions import ActionKind, FileChange, LoadAction, written
from storage_core.quarantine import QuarantineArea, quarantine
from storage_core.records.batch import RecordBatch
from storage_core.records.file_records import ScanResult, iterate_batches, scan_valid_prefix
from storage_core.records.legacy import LegacyBatch
from storage_core.segment import LogSegment, read_next_offset


@dataclass(frozen=True, slots=True)
class SegmentSettings:
    """Segment and index sizes from the topic config (Kafka defaults)."""

    index_interval_bytes: int = 4096
    segment_index_bytes: int = 10_485_760


class _FileBatches:
    """A segment's batches read straight from its `.log` file (works in a dry run too)."""

    def __init__(self, base_offset: int, path: Path, fs: FileSystem) -> None:
        self.base_offset = base_offset
        self._path = path
        self._fs = fs

    def batches_from(self, offset: int) -> Iterator[RecordBatch | LegacyBatch]:
        buffer = self._fs.mmap(self._path)
        for batch in iterate_batches(buffer):
            if batch.last_offset >= offset:
                yield batch


class PartitionSegments:
    """Segment files of a partition directory keyed by base offset.

    Args:
        dir_path: the partition directory.
        settings: index interval and index size.
        area: where record bytes go before they are deleted.
        fs: the file system.
    """

    def __init__(
        self, dir_path: Path, settings: SegmentSettings, *, area: QuarantineArea | None = None, fs: FileSystem
    ) -> None:
        self.dir = dir_path
        self.settings = settings
        self.area = area or QuarantineArea(None)
        self.fs = fs
        self.view = DirView(dir_path, fs=fs)

    def _name(self, base_offset: int, suffix: str) -> str:
        return names.filename_prefix(base_offset) + suffix

    def base_offsets(self) -> list[int]:
        """Base offsets of the `.log` files present, ascending."""
        return sorted(
            names.offset_from_file_name(n)
            for n in self.view.names()
            if n.endswith(names.LOG_SUFFIX) and names.is_segment_file_name(n)
        )

    def delete_orphan_indexes(self) -> list[LoadAction]:
        """Delete index files whose `.log` does not exist."""
        actions = []
        for name in self.view.names():
            if names.is_segment_file_name(name) and name.endswith(names.INDEX_SUFFIXES):
                base_offset = names.offset_from_file_name(name)
                if not self.view.exists(self._name(base_offset, names.LOG_SUFFIX)):
                    size = self.view.delete(name)
                    actions.append(
                        LoadAction(
                            ActionKind.DELETE_ORPHAN_INDEX,
                            name,
                            base_offset,
                            size,
                            "no .log for this index",
                            FileChange.DELETE,
                        )
                    )
        return actions

    def index_problem(self, base_offset: int) -> str | None:
        """Why this segment's indexes cannot be trusted, or None.

        Kafka recovers a segment whose offset index is missing or whose txn index fails its sanity
        check. We also recover one whose offset or time index fails its sanity check, or is a
        zero-filled preallocated file left by a crash: rebuilding an index never loses data.
        """
        index_name = self._name(base_offset, names.INDEX_SUFFIX)
        if not self.view.exists(index_name):
            return "offset index missing"
        for index_type, suffix in ((OffsetIndex, names.INDEX_SUFFIX), (TimeIndex, names.TIME_INDEX_SUFFIX)):
            name = self._name(base_offset, suffix)
            if self.view.exists(name):
                problem = index_type.open(self.view.path(name), base_offset, fs=self.fs).find_problem()
                if problem is not None:
                    return f"{name}: {problem}"
        txn_name = self._name(base_offset, names.TXN_INDEX_SUFFIX)
        if self.view.exists(txn_name):
            try:
                TransactionIndex.open(self.view.path(txn_name), base_offset, fs=self.fs).sanity_check()
            except CorruptIndexError as exc:
                return f"{txn_name}: corrupt: {exc}"
        return None

    def ensure_time_index(self, base_offset: int) -> list[LoadAction]:
        """Kafka gives a segment whose `.timeindex` is missing an empty one (it is not rebuilt)."""
        name = self._name(base_offset, names.TIME_INDEX_SUFFIX)
        if self.view.exists(name):
            return []
        self.fs.write_file(self.dir / name, b"")
        self.view.add(name)
        return [
            written(
                ActionKind.CREATE_TIME_INDEX,
                name,
                b"",
                existed=False,
                base_offset=base_offset,
                reason="time index missing: empty one created",
            )
        ]

    def open(self, base_offset: int) -> LogSegment:
        """Open a segment for recovery."""
        return LogSegment.open(
            self.dir,
            base_offset,
            index_interval_bytes=self.settings.index_interval_bytes,
            segment_index_bytes=self.settings.segment_index_bytes,
            fs=self.fs,
        )

    def batch_sources(self) -> list[_FileBatches]:
        return [_FileBatches(b, self.view.path(self._name(b, names.LOG_SUFFIX)), self.fs) for b in self.base_offsets()]

    def _scan(self, base_offset: int, *, check_offsets: bool = False) -> ScanResult:
        buffer = self.fs.mmap(self.view.path(self._name(base_offset, names.LOG_SUFFIX)))
        return scan_valid_prefix(buffer, check_offsets=check_offsets)

    def find_corruption(self, base_offset: int) -> tuple[int, str] | None:
        """Deep verify: the position and reason of the first invalid batch (or offset regression), or None."""
        scan = self._scan(base_offset, check_offsets=True)
        if scan.invalid_position is None:
            return None
        return scan.invalid_position, scan.invalid_reason or "invalid batch"

    def read_next_offset(self, base_offset: int) -> int:
        """The next offset after the segment's last batch."""
        index_name = self._name(base_offset, names.INDEX_SUFFIX)
        return read_next_offset(
            self.view.path(self._name(base_offset, names.LOG_SUFFIX)),
            base_offset=base_offset,
            index_path=self.view.path(index_name) if self.view.exists(index_name) else None,
            fs=self.fs,
        )

    def delete_segment(self, base_offset: int, *, reason: str) -> list[LoadAction]:
        """Quarantine the segment's `.log`, then rename its files to `.deleted` and delete them
        (`file.delete.delay.ms` = 0); one action per file."""
        actions = []
        log_name = self._name(base_offset, names.LOG_SUFFIX)
        if self.view.exists(log_name):
            size = self.view.size(log_name)
            actions += quarantine(
                self.area, self.dir, log_name, 0, size, reason=reason, base_offset=base_offset, fs=self.fs
            )
        for suffix in names.SEGMENT_SUFFIXES:
            name = self._name(base_offset, suffix)
            if self.view.exists(name):
                deleted = name + names.DELETED_SUFFIX
                self.view.rename(name, deleted)
                size = self.view.delete(deleted)
                actions.append(
                    LoadAction(ActionKind.DELETE_SEGMENT, name, base_offset, size, reason, FileChange.DELETE)
                )
        return actions

    def create_segment(self, base_offset: int) -> list[LoadAction]:
        """An empty segment (empty `.log`, `.index`, `.timeindex`) for an empty log."""
        actions = []
        for suffix in (names.LOG_SUFFIX, names.INDEX_SUFFIX, names.TIME_INDEX_SUFFIX):
            name = self._name(base_offset, suffix)
            self.fs.write_file(self.dir / name, b"")
            self.view.add(name)
            actions.append(
                written(
                    ActionKind.CREATE_SEGMENT,
                    name,
                    b"",
                    existed=False,
                    base_offset=base_offset,
                    reason="the log is empty",
                )
            )
        return actions

    def flush_dir(self) -> None:
        self.fs.fsync_dir(self.dir)
