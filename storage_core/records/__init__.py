"""Kafka's record formats: v2 record batches, legacy v0/v1 messages, codecs and `.log` file framing."""

from storage_core.records.batch import RecordBatch, build_batch, build_end_txn_marker
from storage_core.records.compression import CODECS, CompressionType
from storage_core.records.control import ControlRecordType, EndTxnMarker
from storage_core.records.file_records import FileRecords, ScanResult, iterate_batches, scan_valid_prefix
from storage_core.records.legacy import LegacyBatch, build_legacy_messages
from storage_core.records.record import Header, Record, TimestampType

__all__ = [
    "CODECS",
    "CompressionType",
    "ControlRecordType",
    "EndTxnMarker",
    "FileRecords",
    "Header",
    "LegacyBatch",
    "Record",
    "RecordBatch",
    "ScanResult",
    "TimestampType",
    "build_batch",
    "build_end_txn_marker",
    "build_legacy_messages",
    "iterate_batches",
    "scan_valid_prefix",
]
