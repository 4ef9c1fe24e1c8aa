"""DumpLogSegments output shapes (kafka-format.md §12) and a dump of every real broker file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from storage_core.dump import DumpOptions, dump_file, render_json, render_text
from storage_core.index.offset_index import OffsetPosition, encode_offset_index
from storage_core.index.time_index import TimestampOffset, encode_time_index
from storage_core.records.batch import Record, build_batch, build_end_txn_marker
from tests.realdata.manifest import REALDATA, manifest_rows

T = 1_700_000_000_000
DEEP = DumpOptions(deep_iteration=True)
DATA = DumpOptions(print_data_log=True)
PLAIN = DumpOptions()


def _text(path: Path, options: DumpOptions = PLAIN) -> list[str]:
    return [render_text(line) for line in dump_file(path, options)]


def test_batch_and_record_lines_of_example_4_9(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_batch([Record(0, T, b"key1", b"value1")], base_offset=0, partition_leader_epoch=0))
    assert _text(path, DATA) == [
        f"Dumping {path}",
        "Log starting offset: 0",
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
        "position: 0 CreateTime: 1700000000000 size: 78 magic: 2 compresscodec: none crc: 1602348302 isvalid: true",
        "| offset: 0 CreateTime: 1700000000000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "key: key1 payload: value1",
    ]


def test_control_batch_and_invalid_tail(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000010.log"
    marker = build_end_txn_marker(
        offset=10, producer_id=1000, producer_epoch=0, commit=True, coordinator_epoch=5, timestamp=T
    )
    path.write_bytes(marker + b"\x00\x00\x00")
    lines = _text(path, DEEP)
    assert lines[1] == "Log starting offset: 10"
    assert "isTransactional: true isControl: true" in lines[2]
    assert lines[3] == (
        "| offset: 10 CreateTime: 1700000000000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 5"
    )
    assert lines[4] == "Found 3 invalid bytes at the end of 00000000000000000010.log"


def test_legacy_file_from_a_real_broker() -> None:
    path = REALDATA / "xpxwo100__bullShit/tmp/kafka-logs/foo-0/00000000000000000000.log"
    lines = _text(path, DEEP)
    assert lines[2].startswith("offset: 0 position: 0 CreateTime: ")
    assert lines[2].endswith("magic: 1 compresscodec: none crc: 1581195197 isvalid: true")
    assert lines[3].endswith("isValid: true crc: 1581195197}")


def test_index_dump_and_verification(tmp_path: Path) -> None:
    log = tmp_path / "00000000000000000000.log"
    batches = [build_batch([Record(i, T + i, b"k", b"v" * 100)], base_offset=i) for i in range(4)]
    log.write_bytes(b"".join(batches))
    size = len(batches[0])
    index = tmp_path / "00000000000000000000.index"
    index.write_bytes(encode_offset_index([OffsetPosition(1, size), OffsetPosition(3, size)], base_offset=0))
    out = list(dump_file(index, DumpOptions()))
    assert [render_text(line) for line in out if not line.stderr][1:] == [
        f"offset: 1 position: {size}",
        f"offset: 3 position: {size}",
    ]
    errors = [render_text(line) for line in dump_file(index, DumpOptions(verify_index_only=True)) if line.stderr]
    assert errors == [f"Mismatches in :{index.resolve()}", "  Index offset: 3, log offset: 1"]
    timeindex = tmp_path / "00000000000000000000.timeindex"
    timeindex.write_bytes(encode_time_index([TimestampOffset(T + 1, 1), TimestampOffset(T + 9, 3)], base_offset=0))
    text = [render_text(line) for line in dump_file(timeindex, DumpOptions())]
    assert f"timestamp: {T + 1} offset: 1" in text
    assert "  Index timestamp: 1700000000009, log timestamp: 1700000000003" in text
    sanity = [render_text(line) for line in dump_file(index, DumpOptions(index_sanity_check=True))]
    assert sanity[-1] == f"{index} passed sanity check."


def test_snapshot_dump_keeps_kafkas_trailing_space() -> None:
    path = REALDATA / "LestFeeD__online-shop-user/kafka/data/cart-product-request-0/00000000000000000026.snapshot"
    lines = _text(path)
    assert len(lines) == 1 + 13
    assert lines[1].startswith("producerId: ")
    assert " currentTxnFirstOffset: OptionalLong.empty " in lines[1]


def test_json_lines_have_the_same_fields(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_batch([Record(0, T, b"key1", None)], base_offset=0))
    objects = [json.loads(render_json(line)) for line in dump_file(path, DATA)]
    assert objects[2]["type"] == "batch"
    assert objects[2]["crc"] > 0
    assert objects[2]["deleteHorizonMs"] is None
    assert objects[3] == {
        "type": "record",
        "offset": 0,
        "CreateTime": T,
        "keySize": 4,
        "valueSize": -1,
        "sequence": -1,
        "headerKeys": [],
        "key": "a2V5MQ==",
    }


@pytest.mark.parametrize("options", [DEEP, DumpOptions(verify_index_only=True)], ids=["deep", "verify"])
def test_every_real_broker_file_dumps_without_error(options: DumpOptions) -> None:
    dumped = 0
    for row in manifest_rows():
        for line in dump_file(row.path, options):
            render_text(line)
            json.loads(render_json(line))
            assert line.kind != "error", (row.id, line)
        dumped += 1
    assert dumped == len(manifest_rows())
