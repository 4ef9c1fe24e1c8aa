"""The broker accepts what `logkeeper maintain` wrote: a cleanly stopped broker with compaction and
retention due (tests/kafka/conftest.py, DUE_CONFIGS), `logkeeper maintain` with the broker's configs,
then the broker on the result with its own cleaner and retention running: it serves the maintained
records, finds nothing left to clean or delete, and Kafka's own index checks
(`kafka-dump-log --verify-index-only`, `--index-sanity-check`) accept every index logkeeper left.
"""

from __future__ import annotations

import re

from tests.kafka.compare import partition_dirs, stored_records
from tests.kafka.conftest import DELETED_BY_RETENTION, Stage


def test_the_broker_serves_the_maintained_records(crashed: Stage, maintain_round_trip: Stage) -> None:
    assert maintain_round_trip.read is not None
    assert crashed.acked is not None
    hidden = {(a.topic, a.partition, a.offset) for a in crashed.acked if a.outcome in ("aborted", "open")}
    read = maintain_round_trip.read["read_committed"]
    for partition in partition_dirs(maintain_round_trip.log_dir):
        topic, number = partition.rsplit("-", 1)
        if topic.startswith("__"):
            continue
        on_disk = [
            (r.offset, r.key, r.value, r.headers)
            for r in stored_records(maintain_round_trip.log_dir / partition)
            if (topic, int(number), r.offset) not in hidden
        ]
        assert read[(topic, int(number))] == on_disk, partition


def test_the_brokers_cleaner_and_retention_find_nothing_left(maintain_round_trip: Stage) -> None:
    assert maintain_round_trip.log is not None
    log = "\n".join(maintain_round_trip.log)
    assert "Starting the log cleaner" in log
    assert "Starting log cleanup with a period of 500 ms" in log
    assert "Beginning cleaning of log" not in log
    assert not [line for line in maintain_round_trip.log if re.search(DELETED_BY_RETENTION, line)]
    assert "since clean shutdown file was found" in log


def test_kafka_dump_log_accepts_every_index(maintain_round_trip: Stage) -> None:
    verify = maintain_round_trip.dumps["--verify-index-only"].splitlines()
    sanity = maintain_round_trip.dumps["--index-sanity-check"].splitlines()
    dumped = [line for line in verify if line.startswith("Dumping ")]
    assert len(dumped) > 10
    assert [line for line in verify if not line.startswith("Dumping ") and not line.endswith(" is empty.")] == []
    checked = [line for line in sanity if not line.startswith("Dumping ")]
    assert len(checked) == len(dumped)
    assert all(line.endswith((" passed sanity check.", " is empty.")) for line in checked), checked
