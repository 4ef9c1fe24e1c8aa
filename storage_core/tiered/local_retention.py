"""Local retention of a tiered topic: what may leave the local disk, and why each segment stays.

Kafka's rule (`UnifiedLog.deletableSegments`, `deleteRetentionMsBreachedSegments`,
`deleteRetentionSizeBreachedSegments`, with `remoteLogEnabledAndRemoteCopyEnabled`), for a topic with
`remote.storage.enable=true`:

1. copies on (`remote.log.copy.disable=false`): the time and size passes use `local.retention.ms`
   and `local.retention.bytes` (-2: `retention.ms` / `retention.bytes`), and a segment they pick may
   go only if its upload is confirmed: here, if every offset of it is in a COPY_SEGMENT_FINISHED
   remote segment (:meth:`storage_core.tiered.uploads.RemotePartition.covers`; the broker trusts
   its highest uploaded offset, which is weaker). The active segment is never uploaded (the broker
   rolls it first and uploads it later; offline nothing is rolled for that);
2. copies off (`remote.log.copy.disable=true`): local retention does not apply; the passes use
   `retention.ms` / `retention.bytes` over the local segments, as for a topic without tiering;
3. the log-start-offset pass deletes what lies below the log start offset either way (the remote
   tier's retention moved it, or DeleteRecords did).

Whatever the passes pick, deletion is a prefix and stops at the first segment that must stay.
Offline, a partition's uploads are known only when its `__remote_log_metadata` partition was read
(:class:`RemoteCopies`); otherwise no segment counts as uploaded. :func:`kept_reasons` says of every
segment that stays why (:class:`KeepReason`).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from storage_core.config import LogConfig


class KeepReason(enum.StrEnum):
    """Why a local segment of a tiered topic stays."""

    ACTIVE_SEGMENT = "active_segment"  # the last segment: not uploaded before it is rolled
    ABOVE_HIGH_WATERMARK = "above_high_watermark"  # not all of it is committed
    BELOW_LOCAL_RETENTION = "below_local_retention"  # not past local.retention.ms / .bytes
    COPY_DISABLED = "copy_disabled"  # remote.log.copy.disable: only retention.* applies, and it does not yet
    NOT_UPLOADED = "not_uploaded"  # past local retention, upload not confirmed
    UPLOAD_STATE_UNKNOWN = "upload_state_unknown"  # its __remote_log_metadata partition was not read
    OLDER_SEGMENT_KEPT = "older_segment_kept"  # could go, but an older segment stays (deletion is a prefix)


@dataclass(frozen=True, slots=True)
class RemoteCopies:
    """What is known of one partition's uploads.

    Attributes:
        known: its `__remote_log_metadata` partition was read (the rest means nothing otherwise).
        uploaded: offset ranges [first, last] of finished copies, merged, ascending.
        started: offset ranges of copies started and not finished (half-uploaded segments).
        why_unknown: why the uploads are not known ("" if they are).
    """

    known: bool
    uploaded: tuple[tuple[int, int], ...] = ()
    started: tuple[tuple[int, int], ...] = ()
    why_unknown: str = ""

    def covers(self, first: int, last: int) -> bool:
        """Every offset of [first, last] is in a finished copy."""
        return self.known and any(lo <= first and last <= hi for lo, hi in self.uploaded)

    def copy_started(self, first: int, last: int) -> bool:
        return any(lo <= last and first <= hi for lo, hi in self.started)


UNKNOWN = RemoteCopies(False, why_unknown="no __remote_log_metadata was read")


def retention_limits(config: LogConfig) -> tuple[int, int]:
    """(ms, bytes) the time and size passes use: local ones for a tiered topic whose copies are on."""
    if config.tiered and not config.remote_log_copy_disable:
        return config.effective_local_retention_ms, config.effective_local_retention_bytes
    return config.retention_ms, config.retention_bytes


def retention_keys(config: LogConfig) -> tuple[str, str]:
    """The names of the settings :func:`retention_limits` returns."""
    if upload_required(config):
        return "local.retention.ms", "local.retention.bytes"
    return "retention.ms", "retention.bytes"


def upload_required(config: LogConfig) -> bool:
    """A segment picked by the time or size pass may go only once uploaded (rule 1)."""
    return config.tiered and not config.remote_log_copy_disable


@dataclass(frozen=True, slots=True)
class LocalSegment:
    """What the reasons need of a segment that stays: its offsets, size and largest timestamp."""

    base_offset: int
    last_offset: int
    size_bytes: int
    largest_timestamp: int


@dataclass(frozen=True, slots=True)
class KeptSegment:
    """A segment of a tiered topic that stays, and why."""

    base_offset: int
    reason: KeepReason
    detail: str


def kept_reasons(
    kept: Sequence[LocalSegment],
    *,
    config: LogConfig,
    remote: RemoteCopies,
    high_watermark: int,
    now_ms: int,
) -> tuple[KeptSegment, ...]:
    """Why each segment that retention keeps stays (the last of `kept` is the active one).

    Args:
        kept: the segments left after the plan, oldest first.
        config: the topic's config (a tiered topic).
        remote: the partition's uploads.
        high_watermark: the clamped high watermark.
        now_ms: the clock.
    """
    ms, size = retention_limits(config)
    local = upload_required(config)
    names = retention_keys(config)
    excess = sum(s.size_bytes for s in kept) - size if size >= 0 else -1
    out: list[KeptSegment] = []
    for index, segment in enumerate(kept):
        size_breach = size >= 0 and excess - segment.size_bytes >= 0
        if size_breach:
            excess -= segment.size_bytes
        time_breach = ms >= 0 and now_ms - segment.largest_timestamp > ms
        past = size_breach or time_breach
        if index == len(kept) - 1:
            reason, detail = KeepReason.ACTIVE_SEGMENT, "the active segment: uploaded only after it is rolled"
        elif high_watermark <= segment.last_offset:
            reason = KeepReason.ABOVE_HIGH_WATERMARK
            detail = f"offsets up to {segment.last_offset} >= high watermark {high_watermark}"
        elif not past and not local:
            reason = KeepReason.COPY_DISABLED
            detail = (
                "remote.log.copy.disable=true: local.retention.* does not apply, and "
                f"{names[0]}={ms} / {names[1]}={size} does not yet"
            )
        elif not past:
            reason, detail = KeepReason.BELOW_LOCAL_RETENTION, f"within {names[0]}={ms} and {names[1]}={size}"
        elif local and not remote.known:
            reason, detail = KeepReason.UPLOAD_STATE_UNKNOWN, remote.why_unknown
        elif local and not remote.covers(segment.base_offset, segment.last_offset):
            started = remote.copy_started(segment.base_offset, segment.last_offset)
            reason = KeepReason.NOT_UPLOADED
            what = "are being copied (COPY_SEGMENT_STARTED, not finished)" if started else "have no finished copy"
            rule = names[0] if time_breach else names[1]
            detail = f"past {rule}, but offsets [{segment.base_offset}, {segment.last_offset}] {what}"
        else:
            reason, detail = KeepReason.OLDER_SEGMENT_KEPT, "could go, but an older one stays (deletion is a prefix)"
        out.append(KeptSegment(segment.base_offset, reason, detail))
    return tuple(out)
