"""storage_core: Kafka's partition-log on-disk format, owned in one pure-Python library.

No Spark, Airflow or Delta import is allowed anywhere below this package. The entry points the
jobs call are re-exported here; the modules hold the formats and algorithms, one concept each.
"""

from storage_core.cleaner.compact import CompactResult, compact_partition, plan_cleaning
from storage_core.errors import (
    CorruptCheckpointError,
    CorruptDataError,
    CorruptIndexError,
    CorruptRecordError,
    CorruptSnapshotError,
    InvalidConfigError,
    InvalidLogDirError,
    LogDirLockedError,
    OffsetOverflowError,
    StorageError,
    UnsupportedFormatError,
)
from storage_core.index_rebuild import IndexCheckResult, rebuild_indexes
from storage_core.loader import LoadOptions, LoadResult, load_partition
from storage_core.retention import RetentionPlan, apply_retention, plan_retention
from storage_core.segment_stats import SegmentStats, segment_stats

__all__ = [
    "CompactResult",
    "CorruptCheckpointError",
    "CorruptDataError",
    "CorruptIndexError",
    "CorruptRecordError",
    "CorruptSnapshotError",
    "IndexCheckResult",
    "InvalidConfigError",
    "InvalidLogDirError",
    "LoadOptions",
    "LoadResult",
    "LogDirLockedError",
    "OffsetOverflowError",
    "RetentionPlan",
    "SegmentStats",
    "StorageError",
    "UnsupportedFormatError",
    "apply_retention",
    "compact_partition",
    "load_partition",
    "plan_cleaning",
    "plan_retention",
    "rebuild_indexes",
    "segment_stats",
]
