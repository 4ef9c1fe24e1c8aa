"""The broker accepts what logkeeper recover wrote: SIGKILL mid-write, `logkeeper recover`, restart.

The broker loads the log dir as a cleanly shut down one (it says so, and recovers no segment), and
consumers read every record the broker acknowledged before the kill, at its offset, in order, with
its transaction's outcome: read_uncommitted sees committed, aborted and the open transaction's
records; read_committed only the committed and non-transactional ones, once the transaction the
crash left open is aborted (its application's restart fences it: workload.fence_open_transaction).
"""

from __future__ import annotations

import pytest

from tests.kafka.compare import partition_dirs
from tests.kafka.conftest import Stage

pytestmark = pytest.mark.kafka

# LogManager.loadLogs and LogLoader (kafka.log.LogManager in 4.0, Java's in storage later).
SKIPPED = "Skipping recovery of {n} logs from {dir} since clean shutdown file was found"
BROKER_RECOVERY = ("Recovering unflushed segment", "since no clean shutdown file was found", "Found a corrupted index")


def _partition_lines(stage: Stage, marker: str) -> list[str]:
    assert stage.log is not None
    return [line for line in stage.log if marker in line and "__cluster_metadata" not in line]


def test_the_broker_starts_without_recovering_what_logkeeper_recovered(round_trip: Stage) -> None:
    partitions = partition_dirs(round_trip.log_dir)
    assert _partition_lines(round_trip, SKIPPED.format(n=len(partitions), dir=round_trip.log_dir))
    for marker in BROKER_RECOVERY:
        assert _partition_lines(round_trip, marker) == [], marker
    loaded = _partition_lines(round_trip, "Completed load of")
    assert len(loaded) == len(partitions)


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_consumers_read_every_acknowledged_record_in_order(round_trip: Stage, isolation: str) -> None:
    assert round_trip.read is not None
    assert round_trip.acked is not None
    read = round_trip.read[isolation]
    visible = {"read_committed": {"plain", "committed"}, "read_uncommitted": {"plain", "committed", "aborted", "open"}}
    outcomes = {(a.topic, a.partition, a.offset): a.outcome for a in round_trip.acked}
    checked = 0
    for (topic, partition), records in read.items():
        offsets = [offset for offset, *_ in records]
        assert offsets == sorted(set(offsets)), f"{topic}-{partition}: out of order or repeated"
        by_offset = {offset: rest for offset, *rest in records}
        for acked in (a for a in round_trip.acked if (a.topic, a.partition) == (topic, partition)):
            if acked.outcome in visible[isolation]:
                assert by_offset.get(acked.offset) == [acked.key, acked.value, acked.headers], acked
                checked += 1
            else:
                assert acked.offset not in by_offset, f"{isolation} read a record of an {acked.outcome} transaction"
        for offset, key, *_ in records:  # the rest were in flight at the kill: written, not acknowledged
            assert (topic, partition, offset) in outcomes or (topic == "events" and key.startswith(b"w-")), offset
    assert checked == sum(1 for a in round_trip.acked if a.outcome in visible[isolation])
