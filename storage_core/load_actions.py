"""What a job did or would do to a log dir: one record per file changed, plus findings.

These records are the audit trail of every job: each file created, rewritten, truncated, deleted,
renamed or quarantined is one :class:`LoadAction` whose `change` says how, in the order it happened
(or, in a dry run, would); a finding that changes no file (a recovered segment, corruption kept,
a future timestamp) is an action with `change` none. Replaying the changes of a run over a listing
of the dir taken before it gives the listing after it (the jobs' tests check exactly that).
Totals are derived from the actions, never stored beside them.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


class FileChange(enum.StrEnum):
    """How an action changed its file."""

    NONE = "none"  # a finding: no file changed
    CREATE = "create"  # the file did not exist and now does (`sha256`: of the content written, if known)
    REWRITE = "rewrite"  # the file's content was replaced (`sha256` likewise)
    TRUNCATE = "truncate"  # `bytes` cut from the end of the file
    DELETE = "delete"  # the file (of `bytes` bytes) is gone
    RENAME = "rename"  # the file is now called `target`
    QUARANTINE = "quarantine"  # `bytes` of it copied to `target`, outside every log dir, before removal


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
    TIERED_KEEP = "tiered_keep"  # retention of a tiered topic: why a local segment stays (a finding)
    MOVE_COPY = "move_copy"  # a move between log dirs: a file (or the -future dir) written in the destination
    MOVE_SWITCH = "move_switch"  # a move: the destination's -future dir renamed to the partition's name
    MOVE_RETIRE = "move_retire"  # a move: the source renamed to `<tp>.<uuid>-delete`
    MOVE_DELETE_SOURCE = "move_delete_source"  # a move: the retired source's files and dir deleted
    QUARANTINE = "quarantine"  # bytes about to be removed, copied out of the log dir first
    CLEAN_SEGMENT = "clean_segment"  # a segment file rewritten by the cleaner (the group's output)
    WRITE_CHECKPOINT = "write_checkpoint"  # a log dir's recovery-point, log-start or cleaner checkpoint
    DELETE_CLEAN_SHUTDOWN = "delete_clean_shutdown"  # the marker, removed before anything else (KAFKA-10471)
    WRITE_CLEAN_SHUTDOWN = "write_clean_shutdown"  # the marker, written when every partition of the dir is done
    CREATE_LOCK_FILE = "create_lock_file"  # the log dir's `.lock`, created to take the lock (as a broker does)
    STRAY_REPLICA = "stray_replica"  # the metadata image makes the dir a stray replica (a finding)
    RENAME_STRAY = "rename_stray"  # a stray replica's dir renamed aside to `<tp>.<uuid>-stray` (--handle-strays)
    DELETE_STALE_TEMP = "delete_stale_temp"  # `<checkpoint or marker>.tmp` left by an interrupted write
    IN_FLIGHT = "in_flight"  # live read: the active segment is being written, its tail is not checked
    CHANGED_DURING_READ = "changed_during_read"  # live read: a segment went or was replaced while read


@dataclass(frozen=True, slots=True)
class LoadAction:
    """One change to one file of a partition directory (or a log dir), or one finding.

    Attributes:
        kind: what was done, and why in Kafka's terms.
        file: the file's name inside its directory ("" when not about one file).
        base_offset: the segment's base offset, or -1.
        bytes: bytes removed (truncated or deleted) or, for a quarantine, copied; 0 otherwise.
        reason: why, in words an operator understands.
        change: how the file changed (none for a finding).
        target: a rename's new name, or a quarantined piece's path.
        sha256: hex digest of the content written by a create or rewrite from memory (indexes,
            snapshots, checkpoints), or of a quarantined piece; "" for changes made in place.
        first_offset: a quarantined piece's first offset (its first whole batch's base offset, as
            its header says), -1 if it holds no whole batch with a valid CRC.
        last_offset: a quarantined piece's last offset, -1 likewise.
        code: why, as a stable code for machines (retention: the `RetentionReason` whose rule
            fired), "" when `reason` says it all.
    """

    kind: ActionKind
    file: str = ""
    base_offset: int = -1
    bytes: int = 0
    reason: str = ""
    change: FileChange = FileChange.NONE
    target: str = ""
    sha256: str = ""
    first_offset: int = -1
    last_offset: int = -1
    code: str = ""


def written(
    kind: ActionKind, name: str, content: bytes, *, existed: bool, base_offset: int = -1, reason: str = ""
) -> LoadAction:
    """The action of writing `content` as the whole of file `name` (a create, or a rewrite if it existed)."""
    return LoadAction(
        kind,
        name,
        base_offset,
        0,
        reason,
        FileChange.REWRITE if existed else FileChange.CREATE,
        sha256=hashlib.sha256(content).hexdigest(),
    )


@contextmanager
def actions_on_failure(actions: list[LoadAction]) -> Iterator[None]:
    """If the block raises, the exception carries the actions done so far, for the audit trail.

    A failed partition's files are as a crash would leave them, but what was changed before the
    failure was changed: the exception's `partial_actions` lists it (this list's actions, then
    those of an inner block that raised), and the job's failed row reports them.
    """
    try:
        yield
    except Exception as exc:
        exc.partial_actions = (*actions, *getattr(exc, "partial_actions", ()))  # type: ignore[attr-defined]
        raise


def partial_actions(exc: BaseException) -> tuple[LoadAction, ...]:
    """The actions done before `exc` was raised (see :func:`actions_on_failure`)."""
    return tuple(getattr(exc, "partial_actions", ()))
