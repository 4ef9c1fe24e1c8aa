"""Load the cluster metadata image from a KRaft log dir's `__cluster_metadata-0`, read-only.

The directory holds (`KafkaMetadataLog`, `Snapshots`):

```
__cluster_metadata-0/
  <20-digit offset>.log (+ .index .timeindex)   the metadata log: batches of metadata records,
                                                 and control batches (LeaderChange, KRaftVersion,
                                                 KRaftVoters) that carry no metadata
  <20-digit end offset>-<10-digit epoch>.checkpoint   snapshots: every record of the image up to
                                                 end offset - 1, as batches whose offsets start at
                                                 0, between a SnapshotHeader and a SnapshotFooter
                                                 control batch (`.checkpoint.part` files are
                                                 unfinished and `.deleted` ones on their way out)
  quorum-state, leader-epoch-checkpoint, partition.metadata
```

Replay, as the broker's `MetadataLoader` does at startup:

1. Pick the newest usable snapshot: complete (header first, footer last, every batch whole and
   CRC-valid) and adjacent to the log (the log holds every offset from its end offset on, or
   nothing after it). A newer snapshot that is not usable is skipped and named in `source`.
   Without one, the log must start at offset 0.
2. Replay the snapshot's records, then the log's records from the snapshot's end offset on, in
   offset order (segments by base offset), control batches skipped, metadata transactions
   honoured (:mod:`storage_core.metadata.replay`).
3. Stop at the first batch that is torn, fails its CRC or its framing: Kafka's log recovery
   truncates there, so nothing after it is part of the log. The stop is named in `source`.

Committed records only. A broker replays records up to the quorum's high watermark, which it
learns from the leader; the high watermark of `__cluster_metadata` is never written to disk
(`quorum-state` keeps the leader, epoch and voters; the offset checkpoints skip the metadata
partition). Offline, we take every whole, CRC-valid batch on disk as committed: exact for a
single-voter quorum (Kafka's dev and single-node clusters: the only voter commits what it
appends, and on restart commits its whole log), and for a stopped broker it can only add the
records the leader replicated in the last instant before the stop and had not yet committed,
which the quorum commits in nearly every case. A caller that knows the high watermark passes it
(`high_watermark`: records at or above it are not applied).

Read-only: files are listed and read through `fs`, nothing is written, renamed or deleted; a live
broker's directory can be read (a segment appended meanwhile ends in a torn batch, where we stop).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.errors import CorruptDataError, CorruptRecordError, MetadataLogError, UnsupportedFormatError
from storage_core.fs import FileSystem, default_fs
from storage_core.messages import MetadataRecord, read_metadata_record
from storage_core.metadata.image import MetadataImage
from storage_core.metadata.replay import MetadataReplayer, ReplayError
from storage_core.records.batch import RecordBatch
from storage_core.records.control import ControlRecordType, parse_control_key
from storage_core.records.file_records import iterate_batches

METADATA_PARTITION_DIR = f"{names.METADATA_TOPIC}-0"
QUORUM_STATE = "quorum-state"


def find_metadata_log_dir(log_dirs: Sequence[Path], *, fs: FileSystem | None = None) -> Path | None:
    """The `__cluster_metadata-0` directory in the first of `log_dirs` that has one, or None
    (a ZooKeeper-mode broker, or a KRaft broker whose `metadata.log.dir` is elsewhere)."""
    fs = fs or default_fs()
    for log_dir in log_dirs:
        candidate = Path(log_dir) / METADATA_PARTITION_DIR
        if fs.is_dir(candidate):
            return candidate
    return None


@dataclass(frozen=True, slots=True)
class _Snapshot:
    path: Path
    end_offset: int
    epoch: int


class _Stop(Exception):
    """The log ends here for Kafka: a torn or invalid batch (recovery truncates at it)."""


def _batches(path: Path, fs: FileSystem) -> Iterator[RecordBatch]:
    """Whole, CRC-valid magic-2 batches of a file; raises _Stop at the first other thing."""
    data = fs.mmap(path)
    position = 0
    try:
        for batch in iterate_batches(data):
            if not isinstance(batch, RecordBatch):
                raise _Stop(f"a magic {batch.magic} batch at position {batch.position} of {path.name}")
            if not batch.is_valid():
                raise _Stop(f"a batch failing its CRC at position {batch.position} of {path.name}")
            position = batch.position + batch.size_in_bytes
            yield batch
    except (CorruptDataError, UnsupportedFormatError) as exc:
        raise _Stop(f"corrupt data at position {position} of {path.name}: {exc}") from None
    if position < len(data):
        raise _Stop(f"{len(data) - position} torn bytes at position {position} of {path.name}")


def _records(batch: RecordBatch, path: Path) -> Iterator[tuple[int, MetadataRecord]]:
    """(offset, record) of a data batch's metadata records."""
    try:
        records = batch.records()
    except (CorruptDataError, UnsupportedFormatError) as exc:
        raise CorruptRecordError(f"metadata batch does not decode: {exc}", path=path, position=batch.position) from None
    for record in records:
        try:
            yield record.offset, read_metadata_record(record.value or b"")
        except CorruptRecordError as exc:
            raise CorruptRecordError(
                f"metadata record at offset {record.offset} does not decode: {exc}", path=path, position=batch.position
            ) from None
        except UnsupportedFormatError as exc:
            exc.add_note(f"metadata record at offset {record.offset} of {path}")
            raise


def _control_types(batch: RecordBatch) -> list[int]:
    return [parse_control_key(r.key or b"") for r in batch.records()]


def _read_snapshot(snapshot: _Snapshot, fs: FileSystem) -> list[tuple[int, MetadataRecord]]:
    """The records of a complete snapshot.

    Raises:
        _Stop: the snapshot is incomplete or damaged (a torn or invalid batch, no header or footer).
        StorageError: a record does not decode.
    """
    batches = list(_batches(snapshot.path, fs))
    if (
        not batches
        or not batches[0].is_control
        or _control_types(batches[0])[:1] != [ControlRecordType.SNAPSHOT_HEADER]
    ):
        raise _Stop(f"{snapshot.path.name} does not start with a SnapshotHeader")
    if not batches[-1].is_control or ControlRecordType.SNAPSHOT_FOOTER not in _control_types(batches[-1]):
        raise _Stop(f"{snapshot.path.name} does not end with a SnapshotFooter (unfinished snapshot)")
    return [entry for batch in batches if not batch.is_control for entry in _records(batch, snapshot.path)]


def _quorum_state(dir_path: Path, fs: FileSystem) -> str:
    """`leader L, epoch E, voters [..]` from quorum-state, for the source text ("" when unreadable)."""
    path = dir_path / QUORUM_STATE
    try:
        state = json.loads(fs.read_bytes(path))
        voters = [v.get("voterId") for v in state.get("currentVoters") or []]
        return f"; quorum-state: leader {state.get('leaderId')}, epoch {state.get('leaderEpoch')}, voters {voters}"
    except (OSError, ValueError, AttributeError, TypeError):
        return ""


class _Log:
    """The segments of the metadata log, read in offset order."""

    def __init__(self, dir_path: Path, file_names: list[str], fs: FileSystem) -> None:
        self.dir_path = dir_path
        self.fs = fs
        self.base_offsets = names.log_base_offsets(file_names)

    @property
    def start_offset(self) -> int | None:
        """The first offset the log holds (its first batch's, else its first segment's), None when empty."""
        for base in self.base_offsets:
            try:
                for batch in iterate_batches(self.fs.mmap(names.log_file(self.dir_path, base))):
                    return batch.base_offset
            except CorruptDataError:
                return base
        return None

    def batches(self) -> Iterator[tuple[Path, RecordBatch]]:
        for base in self.base_offsets:
            path = names.log_file(self.dir_path, base)
            for batch in _batches(path, self.fs):
                yield path, batch


def _snapshots(file_names: list[str], dir_path: Path) -> list[_Snapshot]:
    """Complete snapshot files, newest first."""
    found = []
    for name in file_names:
        parsed = names.parse_kraft_snapshot_name(name)
        if parsed is not None:
            found.append(_Snapshot(dir_path / name, *parsed))
    return sorted(found, key=lambda s: (s.end_offset, s.epoch), reverse=True)


def load_metadata_image(
    metadata_log_dir: Path, *, fs: FileSystem | None = None, high_watermark: int | None = None
) -> MetadataImage:
    """Replay `metadata_log_dir` (a `__cluster_metadata-0` dir) into the image a broker would hold.

    Args:
        metadata_log_dir: the metadata partition dir (:func:`find_metadata_log_dir`).
        fs: the file system (read only).
        high_watermark: apply only records below this offset, when the caller knows it.

    Returns:
        The image; its `source` names the dir, the snapshot and the offsets replayed, and anything
        skipped or where the log stopped.

    Raises:
        MetadataLogError: no usable snapshot and a log that does not start at offset 0, a gap
            between the snapshot and the log, or a record that contradicts the image.
        UnknownMessageTypeError, UnsupportedMessageVersionError: a record this version of
            logkeeper does not know (the note names its offset and file).
        CorruptRecordError: a record inside a valid batch that does not decode.
        OSError: the directory or a file cannot be read.
    """
    fs = fs or default_fs()
    dir_path = Path(metadata_log_dir)
    file_names = fs.list_dir(dir_path)
    log = _Log(dir_path, file_names, fs)
    log_start = log.start_offset
    notes: list[str] = []
    replayer = MetadataReplayer()
    snapshot_used: _Snapshot | None = None
    last_offset = -1

    # 1. The newest usable snapshot.
    for snapshot in _snapshots(file_names, dir_path):
        if log_start is not None and log_start > snapshot.end_offset:
            notes.append(f"snapshot {snapshot.path.name} skipped: the log starts after it, at {log_start}")
            continue
        try:
            records = _read_snapshot(snapshot, fs)
        except _Stop as stop:
            notes.append(f"snapshot {snapshot.path.name} skipped: {stop}")
            continue
        for offset, record in records:
            _replay(replayer, record, offset=offset, path=snapshot.path)
        snapshot_used = snapshot
        last_offset = snapshot.end_offset - 1
        break
    if snapshot_used is None and log_start not in (None, 0):
        raise MetadataLogError(
            f"no usable snapshot and the metadata log starts at offset {log_start}, not 0: the records before it "
            f"are gone ({'; '.join(notes) or 'no snapshot'})",
            path=dir_path,
        )

    # 2. The log after the snapshot, in offset order; 3. stop where recovery would truncate.
    first_log_offset: int | None = None
    open_transaction_at: int | None = None
    try:
        for path, batch in log.batches():
            if batch.last_offset <= last_offset:
                continue  # below the snapshot's end offset: already in the image
            if high_watermark is not None and batch.base_offset >= high_watermark:
                break
            if first_log_offset is None:
                first_log_offset = max(batch.base_offset, last_offset + 1)
                if first_log_offset > last_offset + 1:
                    raise MetadataLogError(
                        f"gap in the metadata log: offsets {last_offset + 1} to {first_log_offset - 1} are missing",
                        path=path,
                    )
            if not batch.is_control:
                for offset, record in _records(batch, path):
                    if offset <= last_offset or (high_watermark is not None and offset >= high_watermark):
                        continue
                    was_open = replayer.in_transaction
                    _replay(replayer, record, offset=offset, path=path)
                    if not was_open and replayer.in_transaction:
                        open_transaction_at = offset
                    last_offset = offset
            else:
                last_offset = batch.last_offset
    except _Stop as stop:
        notes.append(f"log stopped at {stop} (Kafka's recovery truncates there)")

    if replayer.in_transaction and open_transaction_at is not None:
        notes.append(f"metadata transaction open since offset {open_transaction_at} left out")
        last_offset = open_transaction_at - 1
    source = f"{dir_path}: " + (f"snapshot {snapshot_used.path.name}" if snapshot_used is not None else "no snapshot")
    source += (
        f", log offsets {first_log_offset}..{last_offset}"
        if first_log_offset is not None
        else ", no log records after it"
    )
    source += _quorum_state(dir_path, fs)
    if notes:
        source += "; " + "; ".join(notes)
    return replayer.image(last_offset=last_offset, source=source)


def _replay(replayer: MetadataReplayer, record: MetadataRecord, *, offset: int, path: Path) -> None:
    try:
        replayer.replay(record)
    except ReplayError as exc:
        raise MetadataLogError(
            f"record at offset {offset} ({record.spec.name}) cannot be applied: {exc}", path=path
        ) from None
