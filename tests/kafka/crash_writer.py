"""The writer a broker is SIGKILLed under: `python -m tests.kafka.crash_writer BOOTSTRAP`.

First a transaction on `keyed` and `events` that is never ended, its records flushed; then an
idempotent zstd producer writing to `events` without end. Each acknowledgement is one line on
stdout, `<outcome> <topic> <partition> <offset> <seq>` (outcome `open` or `plain`); the record's
key, value and headers follow from its topic, outcome and seq (:func:`key_and_headers`,
:func:`tests.kafka.workload.value`). The parent kills this process.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time

OPEN_RECORDS = 60
OPEN_TRANSACTIONAL_ID = "logkeeper-open"


def key_and_headers(topic: str, outcome: str, seq: int) -> tuple[bytes, tuple[tuple[str, bytes], ...]]:
    if outcome == "open":
        return (b"k-%03d" % (seq % 150) if topic == "keyed" else b"o-%d" % seq), (("txn", b"open"),)
    return b"w-%d" % seq, (("seq", b"%d" % seq),)


def main(bootstrap: str) -> None:
    from kafka import KafkaProducer

    from tests.kafka.workload import partition_of, value

    lock = threading.Lock()

    def send(producer: KafkaProducer, outcome: str, topic: str, seq: int) -> object:
        key, headers = key_and_headers(topic, outcome, seq)
        partition = partition_of(topic, seq)
        future = producer.send(topic, key=key, value=value(seq), headers=list(headers), partition=partition)

        def acked(metadata: object) -> None:
            with lock:
                print(outcome, topic, partition, metadata.offset, seq, flush=True)  # type: ignore[attr-defined]

        return future.add_callback(acked)

    common = {"bootstrap_servers": bootstrap, "acks": "all", "enable_idempotence": True, "linger_ms": 5}
    open_txn = KafkaProducer(transactional_id=OPEN_TRANSACTIONAL_ID, compression_type="snappy", **common)
    open_txn.init_transactions()
    open_txn.begin_transaction()
    for seq in range(OPEN_RECORDS // 2):
        send(open_txn, "open", "keyed", seq)
        send(open_txn, "open", "events", seq)
    open_txn.flush()
    writer = KafkaProducer(compression_type="zstd", **common)
    for seq in itertools.count():
        send(writer, "plain", "events", seq)
        time.sleep(0.0005)


if __name__ == "__main__":
    main(sys.argv[1])
