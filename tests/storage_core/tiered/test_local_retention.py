"""Local retention of tiered topics: uploaded, half-uploaded and not-uploaded segments, an outage, copies
disabled, compacted topics, unknown uploads; nothing un-uploaded is ever deleted.

Each partition has four segments of ten one-record batches (offsets 0-9, 10-19, 20-29, 30-39, record
i at T0 + i ms); the clock is ten days later, so every segment is past a one-day local retention.
Uploads are events in a real `__remote_log_metadata-0` dir (tests/builders/remote_log_metadata.py),
replayed by :func:`storage_core.tiered.uploads.read_remote_log_metadata`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from storage_core.config import LogConfig
from storage_core.messages.schemas.remote_log_metadata import RemoteLogSegmentState
from storage_core.retention import RetentionPlan, apply_retention, plan_retention
from storage_core.tiered.events import TopicIdPartition
from storage_core.tiered.local_retention import UNKNOWN, KeepReason, RemoteCopies
from storage_core.tiered.uploads import read_remote_log_metadata
from tests.builders.log_dir import T0, LogDirBuilder
from tests.builders.remote_log_metadata import RemoteLogMetadataWriter

NOW = T0 + 10 * 86_400_000
DAY = 86_400_000
TP = TopicIdPartition("4L6g3nShT-eMCtK--X86sw", "orders", 0)
TIERED = LogConfig(remote_storage_enable=True, local_retention_ms=DAY, retention_ms=30 * DAY)


@pytest.fixture
def partition(tmp_path: Path) -> Path:
    return LogDirBuilder(tmp_path / "logs").partition("orders", 0, segments=4)


def _copies(tmp_path: Path, events: Callable[[RemoteLogMetadataWriter], object]) -> RemoteCopies:
    writer = RemoteLogMetadataWriter(tmp_path / "logs", partitions=1)
    events(writer)
    (dir_path,) = writer.write()
    remote = read_remote_log_metadata([(dir_path, len(writer.events[0]))]).of(TP.topic_id, TP.partition)
    if remote is None:
        return RemoteCopies(True)
    started = tuple(
        (s.start_offset, s.end_offset) for s in remote.segments if s.state == RemoteLogSegmentState.COPY_SEGMENT_STARTED
    )
    return RemoteCopies(True, remote.uploaded_ranges(), started)


def _plan(partition: Path, config: LogConfig, remote: RemoteCopies | None) -> RetentionPlan:
    return plan_retention(partition, config=config, log_start_offset=0, high_watermark=40, now_ms=NOW, remote=remote)


def _deleted(plan: RetentionPlan) -> list[int]:
    return [d.segment.base_offset for d in plan.deletions]


def _reasons(plan: RetentionPlan) -> dict[int, KeepReason]:
    return {k.base_offset: k.reason for k in plan.kept}


def test_only_uploaded_segments_go_and_each_kept_one_says_why(partition: Path, tmp_path: Path) -> None:
    def events(w: RemoteLogMetadataWriter) -> None:
        w.copy(TP, 0, 9)
        w.copy(TP, 10, 19)
        w.copy(TP, 20, 29, finish=False)  # half-uploaded: the copy started, never finished

    plan = _plan(partition, TIERED, _copies(tmp_path, events))
    assert _deleted(plan) == [0, 10]
    assert _reasons(plan) == {20: KeepReason.NOT_UPLOADED, 30: KeepReason.ACTIVE_SEGMENT}
    assert "COPY_SEGMENT_STARTED, not finished" in plan.kept[0].detail
    assert all("local.retention.ms" in d.detail and "uploaded" in d.detail for d in plan.deletions)
    actions = apply_retention(plan)
    assert sorted(p.name for p in partition.glob("*.log")) == ["00000000000000000020.log", "00000000000000000030.log"]
    assert [a.code for a in actions if a.kind == "tiered_keep"] == ["not_uploaded", "active_segment"]


def test_an_outage_keeps_every_segment_whatever_local_retention_says(partition: Path, tmp_path: Path) -> None:
    config = replace(TIERED, local_retention_bytes=1)  # both local rules breached
    plan = _plan(partition, config, _copies(tmp_path, lambda w: None))  # no upload event at all
    assert _deleted(plan) == []
    assert list(_reasons(plan).values()) == [KeepReason.NOT_UPLOADED] * 3 + [KeepReason.ACTIVE_SEGMENT]


def test_a_gap_in_remote_storage_stops_deletion_there(partition: Path, tmp_path: Path) -> None:
    """The broker trusts its highest uploaded offset (29 here) and would delete 10-19 too."""

    def events(w: RemoteLogMetadataWriter) -> None:
        w.copy(TP, 0, 9)
        lost = w.copy(TP, 10, 19)
        w.update(TP, lost, RemoteLogSegmentState.DELETE_SEGMENT_STARTED)
        w.copy(TP, 20, 29)

    plan = _plan(partition, TIERED, _copies(tmp_path, events))
    assert _deleted(plan) == [0]
    assert _reasons(plan)[10] == KeepReason.NOT_UPLOADED
    assert _reasons(plan)[20] == KeepReason.OLDER_SEGMENT_KEPT


def test_uploads_whose_partition_is_being_deleted_count_for_nothing(partition: Path, tmp_path: Path) -> None:
    def events(w: RemoteLogMetadataWriter) -> None:
        w.copy(TP, 0, 9)
        w.partition_deleted(TP)

    assert _deleted(_plan(partition, TIERED, _copies(tmp_path, events))) == []


def test_unknown_uploads_keep_everything(partition: Path) -> None:
    plan = _plan(partition, TIERED, None)
    assert _deleted(plan) == []
    assert _reasons(plan)[0] == KeepReason.UPLOAD_STATE_UNKNOWN
    assert plan.kept[0].detail == UNKNOWN.why_unknown


def test_below_local_retention_stays_even_when_uploaded(partition: Path, tmp_path: Path) -> None:
    config = replace(TIERED, local_retention_ms=20 * DAY)
    plan = _plan(partition, config, _copies(tmp_path, lambda w: w.copy(TP, 0, 29)))
    assert _deleted(plan) == []
    assert _reasons(plan)[0] == KeepReason.BELOW_LOCAL_RETENTION


def test_local_retention_minus_two_means_retention_ms(partition: Path, tmp_path: Path) -> None:
    config = replace(TIERED, local_retention_ms=-2, retention_ms=DAY)
    assert _deleted(_plan(partition, config, _copies(tmp_path, lambda w: w.copy(TP, 0, 19)))) == [0, 10]


def test_local_retention_bytes_deletes_uploaded_segments_oldest_first(partition: Path, tmp_path: Path) -> None:
    size = (partition / "00000000000000000000.log").stat().st_size
    config = replace(TIERED, local_retention_ms=-1, local_retention_bytes=2 * size)
    plan = _plan(partition, config, _copies(tmp_path, lambda w: w.copy(TP, 0, 29)))
    assert _deleted(plan) == [0, 10]
    assert "local.retention.bytes" in plan.deletions[0].detail


def test_copies_disabled_fall_back_to_retention_ms_uploaded_or_not(partition: Path, tmp_path: Path) -> None:
    """remote.log.copy.disable: Kafka applies retention.* to the local segments, as without tiering."""
    disabled = replace(TIERED, remote_log_copy_disable=True)
    plan = _plan(partition, disabled, _copies(tmp_path, lambda w: None))
    assert _deleted(plan) == []  # 10 days old, retention.ms 30 days: local.retention.ms (1 day) is not used
    assert list(_reasons(plan).values())[:3] == [KeepReason.COPY_DISABLED] * 3
    expired = replace(disabled, retention_ms=DAY)
    assert _deleted(_plan(partition, expired, _copies(tmp_path, lambda w: None))) == [0, 10, 20, 30]  # and a roll


def test_a_compacted_tiered_topic_is_only_trimmed_below_its_log_start(partition: Path, tmp_path: Path) -> None:
    compacted = replace(TIERED, cleanup_policy=frozenset({"compact"}))
    plan = plan_retention(partition, config=compacted, log_start_offset=15, high_watermark=40, now_ms=NOW, remote=None)
    assert _deleted(plan) == [0]  # below the log start offset: gone by the cluster's own decision
    assert plan.kept == ()


def test_an_untiered_topic_is_unchanged(partition: Path) -> None:
    plan = _plan(partition, LogConfig(retention_ms=DAY), None)
    assert _deleted(plan) == [0, 10, 20, 30]
    assert plan.kept == ()
