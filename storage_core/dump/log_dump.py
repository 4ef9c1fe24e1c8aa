"""Dump a `.log` (or KRaft `.checkpoint`) file the way `DumpLogSegments.dumpLog` prints it."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

from storage_core import names
from storage_core.dump.lines import BracedCrc, DumpLine, OptionalLong, Value
from storage_core.errors import CorruptRecordError, InvalidNameError
from storage_core.fs import FileSystem
from storage_core.records.control import ControlRecordType, EndTxnMarker, control_type_name, parse_control_key
from storage_core.records.file_records import Batch, iterate_batches
from storage_core.records.legacy import LegacyBatch
from storage_core.records.record import Record


def batch_fields(batch: Batch) -> tuple[tuple[str, Value], ...]:
    """The fields of Kafka's batch line."""
    common: tuple[tuple[str, Value], ...] = (
        ("position", batch.position),
        (batch.timestamp_type.kafka_name, batch.max_timestamp),
        ("size", batch.size_in_bytes),
        ("magic", batch.magic),
        ("compresscodec", batch.compression.kafka_name),
        ("crc", batch.crc),
        ("isvalid", batch.is_valid()),
    )
    if isinstance(batch, LegacyBatch):
        return (("offset", batch.last_offset), *common)
    return (
        ("baseOffset", batch.base_offset),
        ("lastOffset", batch.last_offset),
        ("count", batch.records_count),
        ("baseSequence", batch.base_sequence),
        ("lastSequence", batch.last_sequence),
        ("producerId", batch.producer_id),
        ("producerEpoch", batch.producer_epoch),
        ("partitionLeaderEpoch", batch.partition_leader_epoch),
        ("isTransactional", batch.is_transactional),
        ("isControl", batch.is_control),
        ("deleteHorizonMs", OptionalLong(batch.delete_horizon_ms)),
        *common,
    )


def _snapshot_record_json(value: bytes, *, with_timestamp: bool) -> str:
    """SnapshotHeaderRecord / SnapshotFooterRecord as Kafka's JsonConverter writes them."""
    (version,) = struct.unpack_from(">h", value)
    if with_timestamp:
        (timestamp,) = struct.unpack_from(">q", value, 2)
        return f'{{"version":{version},"lastContainedLogTimestamp":{timestamp}}}'
    return f'{{"version":{version}}}'


def _control_fields(record: Record) -> tuple[tuple[str, Value], ...]:
    code = parse_control_key(record.key or b"")
    if code in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        marker = EndTxnMarker.decode(record.value or b"")
        return (("endTxnMarker", control_type_name(code)), ("coordinatorEpoch", marker.coordinator_epoch))
    if code == ControlRecordType.SNAPSHOT_HEADER:
        return (("SnapshotHeader", _snapshot_record_json(record.value or b"", with_timestamp=True)),)
    if code == ControlRecordType.SNAPSHOT_FOOTER:
        return (("SnapshotFooter", _snapshot_record_json(record.value or b"", with_timestamp=False)),)
    return (("controlType", f"{control_type_name(code)}({code})"),)


def record_line(batch: Batch, record: Record, *, print_data: bool, skip_metadata: bool) -> DumpLine:
    """Kafka's `| offset: ...` line for one record."""
    fields: list[tuple[str, Value]] = []
    if not skip_metadata:
        fields += [
            ("offset", record.offset),
            (batch.timestamp_type.kafka_name, record.timestamp),
            ("keySize", -1 if record.key is None else len(record.key)),
            ("valueSize", -1 if record.value is None else len(record.value)),
        ]
        if batch.magic >= 2:
            fields += [("sequence", record.sequence), ("headerKeys", [key for key, _ in record.headers])]
        else:
            fields += [("isValid", True), ("crc", BracedCrc(record.crc or 0))]
        if batch.is_control:
            fields += _control_fields(record)
    if print_data and not batch.is_control:
        if record.key is not None:
            fields.append(("key", record.key))
        if record.value is not None:
            fields.append(("payload", record.value))
    return DumpLine("record", tuple(fields), prefix="| ")


def dump_log(
    path: Path, *, deep_iteration: bool, print_data: bool, skip_metadata: bool, max_bytes: int | None, fs: FileSystem
) -> Iterator[DumpLine]:
    """Lines for a `.log` file: the starting offset, one line per batch (and per record), invalid bytes."""
    try:
        start = names.offset_from_file_name(path.name)
    except InvalidNameError:
        start = 0
    yield DumpLine("log_start", (("Log starting offset", start),))
    data = fs.mmap(path)
    end = len(data) if max_bytes is None else min(len(data), max_bytes)
    valid_bytes = 0
    last_offset: int | None = None
    non_consecutive: list[tuple[int, int]] = []
    try:
        for batch in iterate_batches(data, end=end):
            yield DumpLine("batch", batch_fields(batch))
            if deep_iteration or print_data:
                for record in batch.records():
                    if last_offset is not None and record.offset != last_offset + 1:
                        non_consecutive.append((last_offset, record.offset))
                    last_offset = record.offset
                    yield record_line(batch, record, print_data=print_data, skip_metadata=skip_metadata)
            valid_bytes = batch.position + batch.size_in_bytes
    except CorruptRecordError as exc:
        yield DumpLine("error", (("error", str(exc)),), text=f"Found corrupt data: {exc}", stderr=True)
    if max_bytes is None and len(data) > valid_bytes:
        yield DumpLine(
            "invalid_bytes",
            (("invalidBytes", len(data) - valid_bytes), ("file", path.name)),
            text=f"Found {len(data) - valid_bytes} invalid bytes at the end of {path.name}",
        )
    if non_consecutive:
        yield DumpLine("non_consecutive", text=f"Non-consecutive offsets in {path.resolve()}", stderr=True)
        for before, after in non_consecutive:
            yield DumpLine(
                "non_consecutive",
                (("from", before), ("to", after)),
                text=f"  {before} is followed by {after}",
                stderr=True,
            )
