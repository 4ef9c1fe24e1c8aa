"""What a load (recovery) did or would do to a partition directory: one record per file action.

These records are the audit trail of recover and rebuild-indexes: every truncation, deletion,
rename and rebuild is one :class:`LoadAction`, in the order it happened (or, in a dry run, would).
Totals are derived from the actions, never stored beside them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ActionKind(enum.StrEnum):
    """The kinds of change recovery makes, named after Kafka's log messages."""

    DELETE_DELETED_FILE = "delete_deleted_file"  # leftover .deleted file (pass 1)
    DELETE_CLEANED_FILE = "delete_cleaned_file"  # unfinished clean/split output (pass 1)
    DELETE_INVALID_SWAP = "delete_invalid_swap"  # .swap at/above the smallest .cleaned offset (pass 1)
    DELETE_REPLACED_FILE = "delete_replaced_file"  # old file inside a completed swap's range (pass 3)
    COMPLETE_SWAP = "complete_swap"  # .swap renamed to its final name (pass 4)
    DELETE_ORPHAN_INDEX = "delete_orphan_index"  # index file without its .log
    CREATE_TIME_INDEX = "create_time_index"  # missing .timeindex replaced by an empty one
    RECOVER_SEGMENT = "recover_segment"  # batches validated, indexes and producer state rebuilt
    TRUNCATE_SEGMENT = "truncate_segment"  # invalid bytes cut from the end of a .log
    DELETE_SEGMENT = "delete_segment"  # a segment after a truncation, or below the log start
    CREATE_SEGMENT = "create_segment"  # empty segment for an empty log
    DELETE_SNAPSHOT = "delete_snapshot"  # producer snapshot out of range or stray
    WRITE_SNAPSHOT = "write_snapshot"  # producer snapshot taken
    UPDATE_LEADER_EPOCHS = "update_leader_epochs"  # leader-epoch-checkpoint rewritten
    CORRUPTION_DETECTED = "corruption_detected"  # deep verify: bad batch below the recovery point, kept
    INDEX_MISMATCH = "index_mismatch"  # verify-only: index differs from a rebuild
    REBUILD_INDEX = "rebuild_index"  # index rewritten from the .log
    SPLIT_SEGMENT = "split_segment"  # offsets overflowed the segment's relative range (KAFKA-6264)
    FUTURE_TIMESTAMP = "future_timestamp"  # retention: a segment's largest timestamp is after now (KIP-937)


@dataclass(frozen=True, slots=True)
class LoadAction:
    """One change to one file (or segment) of a partition directory.

    Attributes:
        kind: what was done.
        file: the file's name inside the partition directory ("" when not about one file).
        base_offset: the segment's base offset, or -1.
        bytes: bytes removed (truncated or deleted), 0 when nothing was removed.
        reason: why, in words an operator understands.
    """

    kind: ActionKind
    file: str = ""
    base_offset: int = -1
    bytes: int = 0
    reason: str = ""
