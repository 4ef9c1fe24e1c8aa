"""`.log` and KRaft `.checkpoint` dumps (kafka-format.md §12.1) against the spec's worked examples and real
broker files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from storage_core.dump import DumpOptions, dump_files, render_json, render_text
from storage_core.records.batch import Record, build_batch
from storage_core.records.compression import CompressionType
from tests.realdata.manifest import REALDATA
from tests.storage_core.dump.conftest import DumpRun

pytestmark = pytest.mark.both_cores  # CI runs it again on the pure-Python core (./dev test)

T = 1_700_000_000_000
# kafka-format.md §4.9: one record key1/value1, CreateTime 1700000000000, partitionLeaderEpoch 0.
EXAMPLE_4_9 = bytes.fromhex(
    "00000000000000000000004200000000025f81e50e00000000000000000"
    "18bcfe568000000018bcfe56800ffffffffffffffffffffffffffff000000012000000008"
    "6b6579310c76616c75653100"
)
# §4.9 second example: offsets 100-101, leader epoch 3, a header h1 and a null value.
EXAMPLE_4_9_B = bytes.fromhex(
    "00000000000000640000005000000003024c38ff0e0000000000010000018bcfe568000000018bcfe56805ffffffffffffffffffff"
    "ffffffff0000000220000000086b6579310c76616c756531001a000a02046b3201020468310276"
)
# §4.10: COMMIT marker at offset 10, producer 1000, coordinator epoch 5.
COMMIT_MARKER = bytes.fromhex(
    "00 00 00 00 00 00 00 0a 00 00 00 42 00 00 00 00"
    "02 fc 84 b0 34 00 30 00 00 00 00 00 00 01 8b cf"
    "e5 68 00 00 00 01 8b cf e5 68 00 00 00 00 00 00"
    "00 03 e8 00 00 ff ff ff ff 00 00 00 01 20 00 00"
    "00 08 00 00 00 01 0c 00 00 00 00 00 05 00"
)
BATCH_4_9 = (
    "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
    "partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
    "position: 0 CreateTime: 1700000000000 size: 78 magic: 2 compresscodec: none crc: 1602348302 isvalid: true"
)


def _segment(tmp_path: Path, data: bytes, base_offset: int = 0) -> Path:
    path = tmp_path / f"{base_offset:020d}.log"
    path.write_bytes(data)
    return path


def test_example_4_9_prints_kafkas_batch_and_data_lines(tmp_path: Path, dump: DumpRun) -> None:
    path = _segment(tmp_path, EXAMPLE_4_9)
    out, err = dump(path, print_data_log=True)
    assert out == [
        f"Dumping {path}",
        "Log starting offset: 0",
        BATCH_4_9,
        "| offset: 0 CreateTime: 1700000000000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "key: key1 payload: value1",
    ]
    assert err == []


def test_without_deep_iteration_only_batches_print(tmp_path: Path, dump: DumpRun) -> None:
    out, _ = dump(_segment(tmp_path, EXAMPLE_4_9))
    assert out[2:] == [BATCH_4_9]


def test_header_keys_null_values_and_positions(tmp_path: Path, dump: DumpRun) -> None:
    path = _segment(tmp_path, EXAMPLE_4_9 + EXAMPLE_4_9_B)
    out, _ = dump(path, print_data_log=True)
    assert out[4] == (
        "baseOffset: 100 lastOffset: 101 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 3 isTransactional: false isControl: false "
        "deleteHorizonMs: OptionalLong.empty position: 78 CreateTime: 1700000000005 size: 92 magic: 2 "
        "compresscodec: none crc: 1278803726 isvalid: true"
    )
    assert out[6] == (
        "| offset: 101 CreateTime: 1700000000005 keySize: 2 valueSize: -1 sequence: -1 headerKeys: [h1] key: k2"
    )


def test_commit_marker_prints_its_control_fields_and_no_data(tmp_path: Path, dump: DumpRun) -> None:
    out, _ = dump(_segment(tmp_path, COMMIT_MARKER, base_offset=10), print_data_log=True)
    assert out[1:] == [
        "Log starting offset: 10",
        "baseOffset: 10 lastOffset: 10 count: 1 baseSequence: -1 lastSequence: -1 producerId: 1000 producerEpoch: 0 "
        "partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty "
        "position: 0 CreateTime: 1700000000000 size: 78 magic: 2 compresscodec: none crc: 4236554292 isvalid: true",
        "| offset: 10 CreateTime: 1700000000000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 5",
    ]


def test_legacy_v1_file_from_a_real_broker(dump: DumpRun) -> None:
    out, err = dump(REALDATA / "xpxwo100__bullShit/tmp/kafka-logs/foo-0/00000000000000000000.log", print_data_log=True)
    assert out[1:5] == [
        "Log starting offset: 0",
        "offset: 0 position: 0 CreateTime: 1479457300602 size: 36 magic: 1 compresscodec: none crc: 1581195197 "
        "isvalid: true",
        "| offset: 0 CreateTime: 1479457300602 keySize: 1 valueSize: 1 isValid: true crc: 1581195197} "
        "key: 0 payload: 0",
        "offset: 1 position: 36 CreateTime: 1479457349922 size: 36 magic: 1 compresscodec: none crc: 3927048646 "
        "isvalid: true",
    ]
    assert len([line for line in out if line.startswith("offset: ")]) == 204
    assert err == []


def test_torn_tail_is_reported_as_invalid_bytes_unless_max_bytes_is_given(tmp_path: Path, dump: DumpRun) -> None:
    path = _segment(tmp_path, EXAMPLE_4_9 + EXAMPLE_4_9_B[:40])
    out, err = dump(path)
    assert out[2:] == [BATCH_4_9, f"Found 40 invalid bytes at the end of {path.name}"]
    assert err == []
    out, _ = dump(path, max_bytes=100)
    assert out[2:] == [BATCH_4_9]
    out, _ = dump(path, max_bytes=77)
    assert out[2:] == []


def test_zero_filled_tail_is_corrupt_on_stderr_then_counted_as_invalid(tmp_path: Path, dump: DumpRun) -> None:
    path = _segment(tmp_path, EXAMPLE_4_9 + bytes(64))
    out, err = dump(path)
    assert out[2:] == [BATCH_4_9, f"Found 64 invalid bytes at the end of {path.name}"]
    assert len(err) == 1
    assert err[0].startswith(f"Found corrupt data at position 78 of {path}: record size 0")


def test_undecodable_batch_is_reported_and_the_dump_goes_on(tmp_path: Path, dump: DumpRun) -> None:
    broken = bytearray(build_batch([Record(0, T, b"k", b"v" * 50)], base_offset=0, compression=CompressionType.GZIP))
    broken[-10:] = bytes(10)  # inside the gzip stream
    path = _segment(tmp_path, bytes(broken) + build_batch([Record(1, T, b"k", b"v")], base_offset=1))
    out, err = dump(path, deep_iteration=True)
    assert "compresscodec: gzip" in out[2]
    assert "isvalid: false" in out[2]
    assert out[3].startswith("baseOffset: 1 ")
    assert out[4].startswith("| offset: 1 ")
    assert len(err) == 1
    assert err[0].startswith(f"Found corrupt data at position 0 of {path}: ")


def test_skip_record_metadata_keeps_scalas_prefixes(tmp_path: Path, dump: DumpRun) -> None:
    records = [Record(0, T, b"k", b"v"), Record(1, T, None, b"w"), Record(2, T, None, None)]
    path = _segment(tmp_path, build_batch(records, base_offset=0))
    out, _ = dump(path, print_data_log=True, skip_record_metadata=True)
    assert out[3:] == ["| key: k payload: v", " payload: w", ""]
    out, _ = dump(path, deep_iteration=True, skip_record_metadata=True)
    assert out[3:] == ["", "", ""]


def test_delete_horizon_log_append_time_and_non_consecutive_offsets(tmp_path: Path, dump: DumpRun) -> None:
    data = b"".join(
        [
            build_batch([Record(0, T, b"a", b"1"), Record(1, T, b"b", b"2")], base_offset=0, delete_horizon_ms=T + 9),
            build_batch([Record(5, T, b"c", b"3")], base_offset=5, log_append_time_ms=T + 1),
            build_batch([Record(9, T, b"d", b"4")], base_offset=9),
        ]
    )
    path = _segment(tmp_path, data)
    out, err = dump(path, deep_iteration=True)
    assert "deleteHorizonMs: OptionalLong[1700000000009]" in out[2]
    assert "LogAppendTime: 1700000000001 size:" in out[5]
    assert out[6].startswith("| offset: 5 LogAppendTime: 1700000000001 ")
    assert err == [f"Non-consecutive offsets in {path.absolute()}", "  5 is followed by 9", "  1 is followed by 5"]


def test_json_lines_carry_the_text_fields(tmp_path: Path) -> None:
    path = _segment(tmp_path, EXAMPLE_4_9 + EXAMPLE_4_9_B)
    lines = [line for line in dump_files([path], DumpOptions(print_data_log=True)) if not line.stderr]
    objects = [json.loads(render_json(line)) for line in lines]
    assert [o["type"] for o in objects] == ["file", "log_start_offset", "batch", "record", "batch", "record", "record"]
    for line, body in zip(lines, objects, strict=True):
        if line.kind in ("batch", "record"):
            text_names = re.findall(r"(?:^|\| | )(\w+): ", render_text(line))
            printed = [name for name, value in body.items() if value is not None or name not in ("key", "payload")]
            assert printed[1:] == text_names  # after "type"; Kafka prints no null key or payload
    assert objects[2]["CreateTime"] == T
    assert objects[2]["deleteHorizonMs"] is None
    assert objects[6] == {
        "type": "record",
        "offset": 101,
        "CreateTime": T + 5,
        "keySize": 2,
        "valueSize": -1,
        "sequence": -1,
        "headerKeys": ["h1"],
        "key": "azI=",
        "payload": None,
    }


def test_kraft_metadata_log_and_snapshot_from_real_brokers(dump: DumpRun) -> None:
    metadata = REALDATA / "ArthurArutunyan04__Backend_labs/kafka-data/__cluster_metadata-0"
    out, err = dump(metadata / "00000000000000000000.log", deep_iteration=True)
    assert out[1] == "Log starting offset: 0"
    assert out[3].endswith(
        'headerKeys: [] LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],'
        '"grantingVoters":[{"voterId":1}]}'
    )
    assert err == []
    snapshot = REALDATA / "ronem123__rupia-transaction-service/kafka-logs/__cluster_metadata-0"
    out, err = dump(snapshot / "00000000000000945423-0000000001.checkpoint", deep_iteration=True)
    assert out[1] == "Snapshot end offset: 945423, epoch: 1"
    assert out[3] == (
        "| offset: 0 CreateTime: 1766556254237 keySize: 4 valueSize: 11 sequence: -1 headerKeys: [] "
        'SnapshotHeader {"version":0,"lastContainedLogTimestamp":1766556254145}'
    )
    assert out[4].endswith('headerKeys: [] KRaftVersion {"version":0,"kRaftVersion":1}')
    assert out[5].endswith(
        'headerKeys: [] KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":"yYuMrFRVQVSX0VVQPcMSrA",'
        '"endpoints":[{"name":"CONTROLLER","host":"localhost","port":9093}],'
        '"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}'
    )
    assert out[-1].endswith('headerKeys: [] SnapshotFooter {"version":0}')
    assert err == []
    out, _ = dump(REALDATA / "ArthurArutunyan04__Backend_labs/kafka-data/bootstrap.checkpoint")
    assert out[1] == "KRaft bootstrap snapshot"
