"""What the broker tests write into a real broker, and how they read it back (kafka-python).

Topics (segment.bytes 1 MiB, the least Kafka 4.4 allows, so every partition has several segments):

    events   delete,  2 partitions  one idempotent producer per codec (none, gzip, snappy, lz4, zstd)
    keyed    compact, 1 partition   the same producers, 150 keys, every 13th record a tombstone
    aged     delete,  1 partition   timestamps on hour marks 10, 8, 3 and 1 h old (time retention)
    sized    delete,  1 partition   3 segments (size retention)

Transactions, committed and aborted in turn, go to `events` and `keyed`; a consumer group commits
offsets (so `__consumer_offsets` and `__transaction_state` have records too). :func:`write_until_killed`
then keeps an idempotent producer writing and a transaction open while the broker is SIGKILLed.

Every record the broker acknowledged is an :class:`Acked` with its offset and the outcome a
read_committed consumer must see; records in flight at the kill may or may not be in the log.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata, TopicPartition

from tests.kafka import crash_writer

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
SEGMENT_BYTES = 1_048_576
HOUR_MS = 3_600_000
TOPICS: dict[str, tuple[int, dict[str, str]]] = {
    "events": (2, {"cleanup.policy": "delete", "segment.bytes": str(SEGMENT_BYTES)}),
    "keyed": (1, {"cleanup.policy": "compact", "segment.bytes": str(SEGMENT_BYTES)}),
    "aged": (1, {"cleanup.policy": "delete", "segment.bytes": str(SEGMENT_BYTES)}),
    "sized": (1, {"cleanup.policy": "delete", "segment.bytes": str(SEGMENT_BYTES)}),
}
GROUP = "logkeeper-audit"
# `aged`'s records sit on four hour marks, 1.3 MB each: a cut at 5.5 h keeps the segments that reach
# the 3 h mark and deletes those wholly before it, whatever the minute of the retention pass.
AGED_HOURS = (10, 8, 3, 1)
AGED_RECORDS = 2600
Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class Acked:
    """A record the broker acknowledged. `outcome`: `plain` (not transactional), `committed`,
    `aborted`, or `open` (its transaction was open at the kill: the coordinator aborts it later)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    outcome: str

    @property
    def visible_committed(self) -> bool:
        return self.outcome in ("plain", "committed")


def partition_of(topic: str, seq: int) -> int:
    """Where record `seq` of a transaction or of the crash writer goes: `events`' two partitions in
    turn, `keyed`'s one (one partition: the cleaner's clock, its delete horizon, is one per log)."""
    return seq % TOPICS[topic][0]


def value(n: int) -> bytes:
    """Record `n`'s 2 KiB: half pseudo-random (codecs cannot shrink it much), half text."""
    return random.Random(n).randbytes(1024) + (b"record %08d " % n) * 64


def create_topics(bootstrap: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, count, 1, topic_configs=cfg) for name, (count, cfg) in TOPICS.items()])
    finally:
        admin.close()


def alter_topic_configs(bootstrap: str, configs: dict[str, dict[str, str]]) -> None:
    """Set topic configs (incremental alter: other overrides stay)."""
    from kafka.admin import ConfigResource, ConfigResourceType

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        resources = [ConfigResource(ConfigResourceType.TOPIC, topic, configs=cfg) for topic, cfg in configs.items()]
        results = admin.alter_configs(resources)
        assert all(error == "OK" for error in results["topic"].values()), results
    finally:
        admin.close()


def _producer(bootstrap: str, codec: str, **config: object) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=True,
        compression_type=None if codec == "none" else codec,
        linger_ms=5,
        **config,
    )


class _Recorder:
    """Collects what the broker acknowledged, from the producer's I/O thread."""

    def __init__(self) -> None:
        self.acked: list[Acked] = []
        self._lock = threading.Lock()

    def send(
        self,
        producer: KafkaProducer,
        topic: str,
        partition: int,
        key: bytes | None,
        payload: bytes | None,
        headers: Headers,
        outcome: str,
        timestamp_ms: int | None = None,
    ) -> object:
        future = producer.send(
            topic, key=key, value=payload, headers=list(headers), partition=partition, timestamp_ms=timestamp_ms
        )

        def on_ack(metadata: object) -> None:
            record = Acked(topic, partition, metadata.offset, key, payload, headers, outcome)  # type: ignore[attr-defined]
            with self._lock:
                self.acked.append(record)

        return future.add_callback(on_ack)

    def mark(self, keep: Callable[[Acked], bool], outcome: str) -> None:
        """Set the outcome of the acknowledged records `keep` selects (a transaction's end)."""
        with self._lock:
            self.acked = [
                Acked(r.topic, r.partition, r.offset, r.key, r.value, r.headers, outcome) if keep(r) else r
                for r in self.acked
            ]


def write_workload(bootstrap: str, now_ms: int, *, records_per_codec: int = 240) -> list[Acked]:
    """Produce everything but the crash; every record acknowledged (the list returned)."""
    create_topics(bootstrap)
    recorder = _Recorder()
    n = itertools.count()
    for number, codec in enumerate(CODECS):
        if number == 2:  # early: in segments the cleaner cleans (not the active one)
            _write_transactions(bootstrap, recorder, n)
        producer = _producer(bootstrap, codec)
        for _ in range(records_per_codec):
            for partition in (0, 1):
                seq = next(n)
                headers = (("codec", codec.encode()), ("seq", b"%d" % seq))
                recorder.send(producer, "events", partition, b"e-%d" % seq, value(seq), headers, "plain")
                key = b"k-%03d" % (seq % 150)
                payload = None if seq % 13 == 0 else value(seq)
                recorder.send(producer, "keyed", 0, key, payload, headers, "plain")
        producer.flush()
        producer.close()
    aged = _producer(bootstrap, "lz4")
    for i in range(AGED_RECORDS):
        seq = next(n)
        mark = AGED_HOURS[i * len(AGED_HOURS) // AGED_RECORDS]
        headers = (("hours-old", b"%d" % mark),)
        stamp = now_ms - mark * HOUR_MS
        recorder.send(aged, "aged", 0, b"a-%d" % seq, value(seq), headers, "plain", timestamp_ms=stamp)
        recorder.send(aged, "sized", 0, b"s-%d" % seq, value(seq), headers, "plain")
    aged.flush()
    aged.close()
    _commit_group_offsets(bootstrap)
    return recorder.acked


def _write_transactions(bootstrap: str, recorder: _Recorder, n: Iterable[int]) -> None:
    producer = _producer(bootstrap, "gzip", transactional_id="logkeeper-tx")
    producer.init_transactions()
    counter = iter(n)
    for round_ in range(6):
        outcome = "committed" if round_ % 2 == 0 else "aborted"
        producer.begin_transaction()
        sent: set[int] = set()
        for _ in range(40):
            seq = next(counter)
            sent.add(seq)
            headers = (("txn", outcome.encode()), ("seq", b"%d" % seq))
            recorder.send(
                producer, "events", partition_of("events", seq), b"t-%d" % seq, value(seq), headers, "pending"
            )
            recorder.send(producer, "keyed", 0, b"k-%03d" % (seq % 150), value(seq), headers, "pending")
        producer.flush()
        if outcome == "committed":
            producer.commit_transaction()
        else:
            producer.abort_transaction()
        recorder.mark(lambda r: r.outcome == "pending", outcome)
    producer.close()


def _commit_group_offsets(bootstrap: str) -> None:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False)
    try:
        consumer.commit({TopicPartition("events", p): OffsetAndMetadata(100 + p, "audited", -1) for p in (0, 1)})
    finally:
        consumer.close()


def write_until_killed(bootstrap: str, kill: Callable[[], None], *, before_kill: int = 400) -> list[Acked]:
    """An idempotent producer writing to `events` and a transaction open on `keyed` and `events`
    (`python -m tests.kafka.crash_writer`, its own process), then `kill()` (the broker's SIGKILL)
    while the producer is still sending, then the writer's SIGKILL; what the broker acknowledged.

    The writer is a process of its own so that no producer outlives the broker it wrote to (a client
    left retrying could deliver its batches to the next broker given the same port)."""
    command = [sys.executable, "-m", "tests.kafka.crash_writer", bootstrap]
    writer = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
    assert writer.stdout is not None
    acked: list[Acked] = []
    try:
        for line in writer.stdout:
            acked.append(_parse_ack(line))
            if len(acked) == crash_writer.OPEN_RECORDS + before_kill:
                kill()
                time.sleep(0.5)  # acknowledgements already on their way
                break
        else:
            raise RuntimeError(f"crash writer ended after {len(acked)} acknowledgements ({writer.wait()})")
    finally:
        writer.kill()
        rest, _ = writer.communicate(timeout=30)
    acked.extend(_parse_ack(line) for line in rest.splitlines() if line.count(" ") == 4)
    return acked


def _parse_ack(line: str) -> Acked:
    outcome, topic, partition, offset, seq = line.split()
    key, headers = crash_writer.key_and_headers(topic, outcome, int(seq))
    return Acked(topic, int(partition), int(offset), key, value(int(seq)), headers, outcome)


Read = tuple[int, bytes | None, bytes | None, Headers]


def read_all(
    bootstrap: str, topics: Iterable[str], isolation: str, *, timeout: float = 60
) -> dict[tuple[str, int], list[Read]]:
    """Every record a consumer with `isolation` (read_committed / read_uncommitted) reads, per partition."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False, group_id=None
    )
    try:
        partitions = [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or ())]
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        end = consumer.end_offsets(partitions)
        read: dict[tuple[str, int], list[Read]] = {(tp.topic, tp.partition): [] for tp in partitions}
        deadline = time.monotonic() + timeout
        while any(consumer.position(tp) < end[tp] for tp in partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{isolation}: not at {end} after {timeout} s")
            for tp, records in consumer.poll(timeout_ms=500).items():
                read[(tp.topic, tp.partition)].extend((r.offset, r.key, r.value, tuple(r.headers)) for r in records)
        return read
    finally:
        consumer.close()


def fence_open_transaction(bootstrap: str) -> None:
    """The crashed application's restart: a producer with the open transaction's id initialises,
    so the coordinator fences the old one and aborts its transaction (markers in every partition)."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=crash_writer.OPEN_TRANSACTIONAL_ID)
    try:
        producer.init_transactions()
    finally:
        producer.close()


def last_stable_offsets_caught_up(bootstrap: str, topics: Iterable[str]) -> bool:
    """Whether no partition of `topics` has an open transaction (read_committed's end = the log's end)."""
    ends = {}
    for isolation in ("read_committed", "read_uncommitted"):
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, group_id=None)
        try:
            partitions = [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or ())]
            ends[isolation] = consumer.end_offsets(partitions)
        finally:
            consumer.close()
    return ends["read_committed"] == ends["read_uncommitted"]
