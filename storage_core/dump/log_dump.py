"""Dump a `.log` segment or a KRaft `.checkpoint` snapshot as `DumpLogSegments.dumpLog` prints it.

Mirrors `core/src/main/scala/kafka/tools/DumpLogSegments.scala` (`dumpLog`, `printBatchLevel`) and
kafka-format.md §12.1:

```
Log starting offset: <base offset>            (.log; a KRaft snapshot prints
                                               `Snapshot end offset: O, epoch: E` or, for
                                               bootstrap.checkpoint, `KRaft bootstrap snapshot`)
baseOffset: B lastOffset: L count: C ... deleteHorizonMs: H position: P <TsType>: T size: S
    magic: M compresscodec: CODEC crc: CRC isvalid: true|false                 (magic 2)
offset: L position: P <TsType>: T size: S magic: M compresscodec: CODEC crc: CRC isvalid: V  (magic 0/1)
| offset: O <TsType>: T keySize: K valueSize: V sequence: S headerKeys: [h]   (deep iteration, v2)
| offset: O <TsType>: T keySize: K valueSize: V isValid: V crc: CRC}          (deep iteration, v0/v1)
    ... endTxnMarker: COMMIT coordinatorEpoch: N | SnapshotHeader {json} | LeaderChange: {json} ...
    ... key: K payload: V          (--print-data-log; decoded by a decoder flag: storage_core.dump.decoders)
Found N invalid bytes at the end of <file name>   (bytes after the last whole batch; not with --max-bytes)
```

A quarantined piece (:mod:`storage_core.quarantine`, `<file>.<start>-<end>.log`) is a `.log` like any
other; its dump starts with `Quarantined bytes [start, end) of <file>` (positions are the piece's
own: byte P of the piece was byte start + P of the file).

`position` is the running total of batch sizes, as Kafka computes it. Iteration stops silently at a
torn tail; a size below 14 or an unknown magic is corrupt: Kafka throws there, we print the error on
stderr, then the invalid-bytes line, and go on with the next file. A batch whose records do not
decode is reported the same way and the dump goes on with the next batch.

KRaft control values are read as version 0 and printed with the version their own `Version`
field names (`ControlRecordUtils`, the `*JsonConverter.write(value, value.version())` calls), from
the declarations in :mod:`storage_core.messages.schemas.raft_control`.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path

from storage_core import names
from storage_core.dump.decoders import parse_record
from storage_core.dump.diagnostics import Diagnostics
from storage_core.dump.options import MAX_BYTES_DEFAULT, DumpOptions
from storage_core.dump.render import DumpLine, Field, JsonText, LegacyCrc, OptionalLong
from storage_core.errors import CorruptDataError, InvalidNameError, UnsupportedFormatError
from storage_core.fs import FileSystem
from storage_core.messages import read_message, to_json
from storage_core.messages.schemas.raft_control import BY_CONTROL_TYPE, CONTROL_RECORD_VERSION
from storage_core.quarantine import parse_piece_name
from storage_core.records.control import ControlRecordType, EndTxnMarker, control_type_name, parse_control_key
from storage_core.records.file_records import Batch, iterate_batches
from storage_core.records.record import Record

# KRaft control types whose value Kafka prints as JSON (`printControlRecord`): (label, separator).
_KRAFT_CONTROL_LABELS = {
    ControlRecordType.LEADER_CHANGE: ("LeaderChange", ": "),
    ControlRecordType.SNAPSHOT_HEADER: ("SnapshotHeader", " "),
    ControlRecordType.SNAPSHOT_FOOTER: ("SnapshotFooter", " "),
    ControlRecordType.KRAFT_VERSION: ("KRaftVersion", " "),
    ControlRecordType.KRAFT_VOTERS: ("KRaftVoters", " "),
}


def batch_line(batch: Batch, *, position: int) -> DumpLine:
    """`printBatchLevel`: one line per batch (v2 header fields, or just `offset` for v0/v1)."""
    if batch.magic >= 2:
        head: tuple[Field, ...] = (
            Field("baseOffset", batch.base_offset),
            Field("lastOffset", batch.last_offset),
            Field("count", batch.records_count),
            Field("baseSequence", batch.base_sequence),
            Field("lastSequence", batch.last_sequence),
            Field("producerId", batch.producer_id),
            Field("producerEpoch", batch.producer_epoch),
            Field("partitionLeaderEpoch", batch.partition_leader_epoch),
            Field("isTransactional", batch.is_transactional),
            Field("isControl", batch.is_control),
            Field("deleteHorizonMs", OptionalLong(batch.delete_horizon_ms)),
        )
    else:
        head = (Field("offset", batch.last_offset),)
    return DumpLine(
        "batch",
        (
            *head,
            Field("position", position),
            Field(batch.timestamp_type.kafka_name, batch.max_timestamp),
            Field("size", batch.size_in_bytes),
            Field("magic", batch.magic),
            Field("compresscodec", batch.compression.kafka_name),
            Field("crc", batch.crc),
            Field("isvalid", batch.is_valid()),
        ),
    )


def _control_fields(record: Record) -> tuple[Field, ...]:
    code = parse_control_key(record.key or b"")
    value = record.value or b""
    if code in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        marker = EndTxnMarker.decode(value)
        return (Field("endTxnMarker", control_type_name(code)), Field("coordinatorEpoch", marker.coordinator_epoch))
    if code in _KRAFT_CONTROL_LABELS:
        control_type = ControlRecordType(code)
        label, separator = _KRAFT_CONTROL_LABELS[control_type]
        # ControlRecordUtils reads version 0; the JsonConverter writes the version the value names.
        spec = BY_CONTROL_TYPE[control_type]
        message, _ = read_message(spec, value, CONTROL_RECORD_VERSION)
        version = int(message["Version"])  # type: ignore[call-overload]
        return (Field(label, JsonText(to_json(spec, message, version)), separator),)
    return (Field("controlType", f"{control_type_name(code)}({code})"),)


def record_line(batch: Batch, record: Record, *, options: DumpOptions) -> DumpLine:
    """The `| offset: ...` line of one record (deep iteration).

    Raises:
        CorruptRecordError: a control record's key or value does not parse.
    """
    fields: list[Field] = []
    prefix = "| "
    if not options.skip_record_metadata:
        fields += [
            Field("offset", record.offset),
            Field(batch.timestamp_type.kafka_name, record.timestamp),
            Field("keySize", -1 if record.key is None else len(record.key)),
            Field("valueSize", -1 if record.value is None else len(record.value)),
        ]
        if batch.magic >= 2:
            fields += [Field("sequence", record.sequence), Field("headerKeys", [key for key, _ in record.headers])]
        else:
            # A v0/v1 record is its own batch in Kafka; an inner record of a compressed wrapper reports
            # the wrapper's validity here (the wrapper's CRC covers the inner records' bytes).
            fields += [Field("isValid", batch.is_valid()), Field("crc", LegacyCrc(record.crc or 0))]
        if batch.is_control:
            fields += _control_fields(record)
    if options.prints_data and not batch.is_control:
        key, payload = parse_record(options.decoder, record)
        if options.skip_record_metadata and key is None:
            prefix = " "  # Scala prints ` payload:` with a plain space whatever came before it
        fields += [Field("key", key), Field("payload", payload)]
    return DumpLine("record", tuple(fields), prefix=prefix)


def _piece_line(path: Path) -> DumpLine | None:
    """`Quarantined bytes [start, end) of <file>` for a quarantined piece, else None."""
    piece = parse_piece_name(path.name)
    if piece is None:
        return None
    file, start, end = piece
    return DumpLine(
        "quarantined_piece",
        (Field("file", file), Field("start", start), Field("end", end)),
        template="Quarantined bytes [{start}, {end}) of {file}",
    )


def _header_line(path: Path) -> DumpLine | None:
    """`Log starting offset: N`, `Snapshot end offset: O, epoch: E` or `KRaft bootstrap snapshot`."""
    name = path.name
    if name.endswith(names.LOG_SUFFIX):
        try:
            return DumpLine(
                "log_start_offset",
                (Field("startOffset", names.offset_from_file_name(name)),),
                template="Log starting offset: {startOffset}",
            )
        except InvalidNameError:
            return None  # Kafka fails on such a name; the batches are still worth printing
    if name == names.BOOTSTRAP_SNAPSHOT:
        return DumpLine("bootstrap_snapshot", template="KRaft bootstrap snapshot")
    snapshot_id = names.parse_kraft_snapshot_name(name)
    if snapshot_id is None:
        return None
    return DumpLine(
        "snapshot_id",
        (Field("endOffset", snapshot_id[0]), Field("epoch", snapshot_id[1])),
        template="Snapshot end offset: {endOffset}, epoch: {epoch}",
    )


def corrupt_line(file: str, *, position: int, error: Exception) -> DumpLine:
    """The stderr line for bytes that do not parse (where Kafka's tool throws)."""
    return DumpLine(
        "corrupt_data",
        (Field("file", file), Field("position", position), Field("error", str(error))),
        template="Found corrupt data at position {position} of {file}: {error}",
        stderr=True,
    )


def _record_lines(
    file: str, batch: Batch, *, last_offset: int | None, options: DumpOptions, diagnostics: Diagnostics
) -> Generator[DumpLine, None, int | None]:
    """The batch's record lines; returns the last record offset seen (for the next batch's gap check)."""
    try:
        records = batch.records()
        lines = [record_line(batch, record, options=options) for record in records]
    except (CorruptDataError, UnsupportedFormatError) as exc:
        yield corrupt_line(file, position=batch.position, error=exc)
        return last_offset
    for record, line in zip(records, lines, strict=True):
        if last_offset is not None and record.offset != last_offset + 1:
            diagnostics.non_consecutive(str(Path(file).absolute()), offset=last_offset, next_offset=record.offset)
        last_offset = record.offset
        yield line
    return last_offset


def dump_log(file: str, *, options: DumpOptions, diagnostics: Diagnostics, fs: FileSystem) -> Iterator[DumpLine]:
    """The lines of a `.log` or KRaft `.checkpoint` file after `Dumping <file>`.

    Args:
        file: the path as given (printed as is).
        options: the flags.
        diagnostics: collects non-consecutive offsets (deep iteration) for the end of the run.
        fs: the file system.
    """
    path = Path(file)
    for header in (_piece_line(path), _header_line(path)):
        if header is not None:
            yield header
    data = fs.mmap(path)
    end = min(len(data), options.max_bytes)
    valid_bytes = 0
    last_offset: int | None = None  # the previous record's offset, across batches
    try:
        for batch in iterate_batches(data, end=end):
            yield batch_line(batch, position=valid_bytes)
            if options.is_deep_iteration:
                last_offset = yield from _record_lines(
                    file, batch, last_offset=last_offset, options=options, diagnostics=diagnostics
                )
            valid_bytes += batch.size_in_bytes
    except (CorruptDataError, UnsupportedFormatError) as exc:
        yield corrupt_line(file, position=valid_bytes, error=exc)
    trailing_bytes = end - valid_bytes
    if trailing_bytes > 0 and options.max_bytes == MAX_BYTES_DEFAULT:
        yield DumpLine(
            "trailing_bytes",
            (Field("trailingBytes", trailing_bytes), Field("file", path.name)),
            template="Found {trailingBytes} invalid bytes at the end of {file}",
        )
