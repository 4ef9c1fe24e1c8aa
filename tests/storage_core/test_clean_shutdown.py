"""The clean-shutdown marker (storage_core/clean_shutdown.py, kafka-format.md §1.6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage_core import names
from storage_core.clean_shutdown import (
    CleanShutdownMarker,
    delete_clean_shutdown,
    format_clean_shutdown,
    parse_clean_shutdown,
    read_clean_shutdown,
    write_clean_shutdown,
)
from storage_core.fs import FaultInjectingFileSystem, LocalFileSystem, SimulatedCrash
from tests.faults import PowerLossFileSystem

FS = LocalFileSystem()


def test_kafka_bytes(tmp_path: Path) -> None:
    write_clean_shutdown(tmp_path, fs=FS)
    assert (tmp_path / names.CLEAN_SHUTDOWN_FILE).read_bytes() == b'{"version":0,"brokerEpoch":-1}'
    assert read_clean_shutdown(tmp_path, fs=FS) == CleanShutdownMarker(-1)
    write_clean_shutdown(tmp_path, broker_epoch=42, fs=FS)
    assert (tmp_path / names.CLEAN_SHUTDOWN_FILE).read_bytes() == b'{"version":0,"brokerEpoch":42}'
    assert read_clean_shutdown(tmp_path, fs=FS) == CleanShutdownMarker(42)
    assert [p.name for p in tmp_path.iterdir()] == [names.CLEAN_SHUTDOWN_FILE]
    assert format_clean_shutdown(2**63 - 1) == b'{"version":0,"brokerEpoch":9223372036854775807}'


def test_no_marker(tmp_path: Path) -> None:
    assert read_clean_shutdown(tmp_path, fs=FS) is None


@pytest.mark.parametrize(
    ("content", "epoch"),
    [
        (b"", None),  # brokers before Kafka 3.7 created an empty file
        (b'{"version":0,"brokerEpoch":7}', 7),
        (b' {"brokerEpoch": -3, "version": 0, "future": [1]}\n', -3),  # unknown fields are ignored
        (b'{"version":0}', None),
        (b'{"version":0,"brokerEpoch":null}', None),
        (b'{"version":0,"brokerEpoch":true}', None),
        (b'{"version":0,"brokerEpoch":1.5}', None),
        (b'{"version":0,"brokerEpoch":9223372036854775808}', None),
        (b"[1, 2]", None),
        (b"not json", None),
        (b"\xff\xfe\x00", None),
    ],
    ids=[
        "empty",
        "kafka",
        "extra fields",
        "no epoch",
        "null",
        "bool",
        "float",
        "over int64",
        "array",
        "text",
        "binary",
    ],
)
def test_any_content_is_a_marker_with_or_without_an_epoch(tmp_path: Path, content: bytes, epoch: int | None) -> None:
    (tmp_path / names.CLEAN_SHUTDOWN_FILE).write_bytes(content)
    assert read_clean_shutdown(tmp_path, fs=FS) == CleanShutdownMarker(epoch)
    assert parse_clean_shutdown(content) == CleanShutdownMarker(epoch)


def test_delete(tmp_path: Path) -> None:
    assert not delete_clean_shutdown(tmp_path, fs=FS)
    write_clean_shutdown(tmp_path, fs=FS)
    assert delete_clean_shutdown(tmp_path, fs=FS)
    assert read_clean_shutdown(tmp_path, fs=FS) is None
    assert list(tmp_path.iterdir()) == []


def test_a_deletion_survives_a_power_loss(tmp_path: Path) -> None:
    write_clean_shutdown(tmp_path, fs=FS)
    fs = PowerLossFileSystem()
    delete_clean_shutdown(tmp_path, fs=fs)
    fs.power_loss()
    assert read_clean_shutdown(tmp_path, fs=FS) is None


def test_a_crash_or_power_loss_while_writing_leaves_no_marker_or_a_complete_one(tmp_path: Path) -> None:
    counting = FaultInjectingFileSystem()
    write_clean_shutdown(tmp_path, broker_epoch=5, fs=counting)
    assert [op for op, _ in counting.operations][-2:] == ["rename", "fsync_dir"]
    for n in range(1, len(counting.operations) + 1):
        log_dir = tmp_path / f"crash-{n}"
        log_dir.mkdir()
        fs = PowerLossFileSystem(fail_at=n)
        with pytest.raises(SimulatedCrash):
            write_clean_shutdown(log_dir, broker_epoch=5, fs=fs)
        assert read_clean_shutdown(log_dir, fs=FS) in (None, CleanShutdownMarker(5)), counting.operations[n - 1]
        fs.power_loss()  # nothing was fsynced into the directory yet
        assert read_clean_shutdown(log_dir, fs=FS) is None, counting.operations[n - 1]
    done = tmp_path / "done"
    done.mkdir()
    fs = PowerLossFileSystem()
    write_clean_shutdown(done, broker_epoch=5, fs=fs)
    fs.power_loss()
    assert read_clean_shutdown(done, fs=FS) == CleanShutdownMarker(5)
