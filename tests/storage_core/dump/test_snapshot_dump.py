"""Producer-state `.snapshot` dumps, Kafka's trailing space included (§12.1)."""

from __future__ import annotations

from pathlib import Path

from storage_core import names
from storage_core.producer_snapshot import ProducerSnapshotEntry, encode_snapshot
from tests.realdata.manifest import REALDATA
from tests.storage_core.dump.conftest import DumpRun


def test_real_snapshot_with_13_producers(dump: DumpRun) -> None:
    path = REALDATA / "LestFeeD__online-shop-user/kafka/data/cart-product-request-0/00000000000000000026.snapshot"
    out, err = dump(path)
    assert len(out) == 1 + 13
    assert out[1] == (
        "producerId: 8000 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 1754175656273 firstSequence: 1 lastSequence: 1 lastOffset: 13 offsetDelta: 0 "
        "timestamp: 1754175656273"
    )
    assert all(line.startswith("producerId: ") for line in out[1:])
    assert err == []


def test_open_transaction_and_missing_batch_metadata(tmp_path: Path, dump: DumpRun) -> None:
    path = names.snapshot_file(tmp_path, 50)
    path.write_bytes(
        encode_snapshot(
            [
                ProducerSnapshotEntry(7, 2, 9, 40, 4, 1000, 3, 36),
                ProducerSnapshotEntry(8, 0, -1, -1, 0, 2000, -1, -1),
                ProducerSnapshotEntry(9, 0, 1, 45, 3, 3000, -1, -1),
            ]
        )
    )
    out, _ = dump(path)
    assert out[1:] == [
        "producerId: 7 producerEpoch: 2 coordinatorEpoch: 3 currentTxnFirstOffset: OptionalLong[36] "
        "lastTimestamp: 1000 firstSequence: 5 lastSequence: 9 lastOffset: 40 offsetDelta: 4 timestamp: 1000",
        "producerId: 8 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 2000 ",
        "producerId: 9 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 3000 firstSequence: 2147483646 lastSequence: 1 lastOffset: 45 offsetDelta: 3 timestamp: 3000",
    ]


def test_corrupt_snapshot_prints_its_error_on_stderr(tmp_path: Path, dump: DumpRun) -> None:
    path = names.snapshot_file(tmp_path, 50)
    data = bytearray(encode_snapshot([ProducerSnapshotEntry(7, 2, 9, 40, 4, 1000, 3, 36)]))
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    out, err = dump(path)
    assert out == [f"Dumping {path}"]
    assert len(err) == 1
    assert "CRC" in err[0]
