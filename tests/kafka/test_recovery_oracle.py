"""Kafka as the oracle of recovery: the same SIGKILLed log dir recovered by the broker (copy A: start,
load, clean stop) and by `logkeeper recover` (copy B), compared file by file.

Every partition file is the broker's byte for byte: `.log` (lengths and bytes), `.index`,
`.timeindex`, `.txnindex`, `.snapshot`, `partition.metadata`. Each remaining difference is one test
here and one entry of docs/kafka-differences.md.
"""

from __future__ import annotations

from storage_core import names
from storage_core.checkpoint import read_offset_checkpoint
from storage_core.clean_shutdown import UNKNOWN_BROKER_EPOCH, read_clean_shutdown
from storage_core.leader_epoch import read_leader_epoch_checkpoint
from tests.kafka.compare import METADATA_DIR, differing, partition_dirs, tree
from tests.kafka.conftest import Stage

LEADER_EPOCHS = names.LEADER_EPOCH_CHECKPOINT
RECOVERY_POINTS = names.RECOVERY_POINT_CHECKPOINT
HIGH_WATERMARKS = names.REPLICATION_OFFSET_CHECKPOINT


def _log_end_offsets(stage: Stage) -> dict[str, int]:
    return {
        f"{tp.topic}-{tp.partition}": offset
        for tp, offset in read_offset_checkpoint(stage.log_dir / RECOVERY_POINTS).items()
    }


def test_every_partition_file_is_the_brokers_byte_for_byte(broker_recovered: Stage, logkeeper_recovered: Stage) -> None:
    kafka, ours = tree(broker_recovered.log_dir), tree(logkeeper_recovered.log_dir)
    partition_files = {p for p in kafka.keys() | ours.keys() if "/" in p and not p.startswith(METADATA_DIR + "/")}
    assert partition_dirs(broker_recovered.log_dir) == partition_dirs(logkeeper_recovered.log_dir)
    suffixes = {p.rsplit(".", 1)[-1] for p in partition_files}
    assert {"log", "index", "timeindex", "txnindex", "snapshot"} <= suffixes  # every kind is compared
    assert (
        differing(
            {p: kafka[p] for p in partition_files if p in kafka and not p.endswith(LEADER_EPOCHS)},
            {p: ours[p] for p in partition_files if p in ours and not p.endswith(LEADER_EPOCHS)},
        )
        == set()
    )


def test_recovery_points_are_the_brokers_written_in_partition_order(
    broker_recovered: Stage, logkeeper_recovered: Stage
) -> None:
    """Kafka writes a checkpoint in its map's order, logkeeper sorted: the same entries."""
    kafka = read_offset_checkpoint(broker_recovered.log_dir / RECOVERY_POINTS)
    ours = read_offset_checkpoint(logkeeper_recovered.log_dir / RECOVERY_POINTS)
    assert ours == kafka
    lines = (logkeeper_recovered.log_dir / RECOVERY_POINTS).read_text().splitlines()[2:]
    assert lines == sorted(lines, key=lambda line: (line.split()[0], int(line.split()[1])))
    assert (broker_recovered.log_dir / names.LOG_START_OFFSET_CHECKPOINT).read_bytes() == (
        logkeeper_recovered.log_dir / names.LOG_START_OFFSET_CHECKPOINT
    ).read_bytes()


def test_leader_epochs_differ_only_by_the_leadership_the_broker_took_at_its_start(
    broker_recovered: Stage, logkeeper_recovered: Stage
) -> None:
    """A starting broker becomes leader again with a new epoch from its log end on: one entry more."""
    ends = _log_end_offsets(logkeeper_recovered)
    for partition in partition_dirs(logkeeper_recovered.log_dir):
        kafka = read_leader_epoch_checkpoint(broker_recovered.log_dir / partition / LEADER_EPOCHS)
        ours = read_leader_epoch_checkpoint(logkeeper_recovered.log_dir / partition / LEADER_EPOCHS)
        assert kafka[:-1] == ours, partition
        assert kafka[-1].start_offset == ends[partition], partition
        assert kafka[-1].epoch > ours[-1].epoch, partition


def test_high_watermarks_are_left_as_the_crash_left_them(
    crashed: Stage, broker_recovered: Stage, logkeeper_recovered: Stage
) -> None:
    """The high watermark is replication state: a broker's leader sets it to its log end after its
    start (one replica); logkeeper recover leaves the last checkpointed value (retention never passes
    it, so what is deleted can only be less)."""
    assert (logkeeper_recovered.log_dir / HIGH_WATERMARKS).read_bytes() == (
        crashed.log_dir / HIGH_WATERMARKS
    ).read_bytes()
    kafka = read_offset_checkpoint(broker_recovered.log_dir / HIGH_WATERMARKS)
    assert kafka == read_offset_checkpoint(broker_recovered.log_dir / RECOVERY_POINTS)
    ours = read_offset_checkpoint(logkeeper_recovered.log_dir / HIGH_WATERMARKS)
    assert all(ours[tp] <= kafka[tp] for tp in ours)


def test_the_clean_shutdown_marker_claims_no_broker_epoch(broker_recovered: Stage, logkeeper_recovered: Stage) -> None:
    """KIP-966: the broker's marker holds its registration's epoch, which tells the controller that it
    stopped cleanly (its replicas stay eligible leaders); logkeeper cannot vouch for that after a
    crash, so it writes -1, as Kafka does when the epoch is unknown."""
    kafka = read_clean_shutdown(broker_recovered.log_dir)
    ours = read_clean_shutdown(logkeeper_recovered.log_dir)
    assert kafka is not None
    assert kafka.broker_epoch is not None
    assert kafka.broker_epoch > 0
    assert ours is not None
    assert ours.broker_epoch == UNKNOWN_BROKER_EPOCH


def test_the_metadata_log_is_left_to_the_brokers_raft_layer(
    crashed: Stage, broker_recovered: Stage, logkeeper_recovered: Stage
) -> None:
    """`__cluster_metadata-0` is recovered by the broker's KRaft client (not LogManager) at every
    start, which then appends its own records: logkeeper leaves it as it was, a prefix of the broker's."""
    before = {p: b for p, b in tree(crashed.log_dir).items() if p.startswith(METADATA_DIR + "/")}
    ours = {p: b for p, b in tree(logkeeper_recovered.log_dir).items() if p.startswith(METADATA_DIR + "/")}
    assert ours == before
    kafka = tree(broker_recovered.log_dir)
    for path, data in ours.items():
        if path.endswith(names.LOG_SUFFIX):
            assert kafka[path].startswith(data.rstrip(b"\0")), path


def test_the_lock_file_is_kept(broker_recovered: Stage, logkeeper_recovered: Stage) -> None:
    """Kafka deletes `.lock` when it stops; logkeeper never deletes it (a contender may hold it open)."""
    assert not (broker_recovered.log_dir / names.LOCK_FILE).exists()
    assert (logkeeper_recovered.log_dir / names.LOCK_FILE).exists()
