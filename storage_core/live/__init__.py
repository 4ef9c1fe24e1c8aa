"""Reading beside a live broker: consumer-style segment reads and the throttled scrub (re-exports only)."""

from storage_core.live.reader import (
    Chunk,
    PartitionSnapshot,
    ReadStatus,
    SegmentRead,
    SegmentScan,
    Throttle,
    is_live,
    list_segments,
    read_partition,
    read_segment,
)

__all__ = [
    "Chunk",
    "PartitionSnapshot",
    "ReadStatus",
    "SegmentRead",
    "SegmentScan",
    "Throttle",
    "is_live",
    "list_segments",
    "read_partition",
    "read_segment",
]
