"""Clean-shutdown marker, meta.properties and partition.metadata round trips."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage_core.clean_shutdown import delete_clean_shutdown, read_clean_shutdown, write_clean_shutdown
from storage_core.errors import CorruptCheckpointError
from storage_core.fs import LocalFileSystem
from storage_core.meta_properties import MetaProperties, read_meta_properties, write_meta_properties
from storage_core.partition_metadata import PartitionMetadata, read_partition_metadata, write_partition_metadata

FS = LocalFileSystem()


def test_clean_shutdown_marker_forms(tmp_path: Path) -> None:
    assert read_clean_shutdown(tmp_path, fs=FS) is None
    write_clean_shutdown(tmp_path, broker_epoch=3, fs=FS)
    assert (tmp_path / ".kafka_cleanshutdown").read_bytes() == b'{"version":0,"brokerEpoch":3}'
    assert read_clean_shutdown(tmp_path, fs=FS).broker_epoch == 3
    (tmp_path / ".kafka_cleanshutdown").write_bytes(b"")  # brokers before 3.7
    assert read_clean_shutdown(tmp_path, fs=FS).broker_epoch is None
    delete_clean_shutdown(tmp_path, fs=FS)
    assert read_clean_shutdown(tmp_path, fs=FS) is None


def test_meta_properties_round_trip_and_validation(tmp_path: Path) -> None:
    path = tmp_path / "meta.properties"
    meta = MetaProperties(1, cluster_id="4L6g3nShT-eMCtK--X86sw", node_id=1, directory_id="J8aAPcfLQt2bqs1JT_rMgQ")
    write_meta_properties(path, meta, fs=FS)
    assert path.read_text().startswith("#\n#")
    assert read_meta_properties(path, fs=FS) == meta
    path.write_text("version=1\ncluster.id=x\n")
    with pytest.raises(CorruptCheckpointError):
        read_meta_properties(path, fs=FS)


def test_partition_metadata(tmp_path: Path) -> None:
    path = tmp_path / "partition.metadata"
    write_partition_metadata(path, PartitionMetadata(0, "4L6g3nShT-eMCtK--X86sw"), fs=FS)
    assert path.read_bytes() == b"version: 0\ntopic_id: 4L6g3nShT-eMCtK--X86sw"
    assert read_partition_metadata(path, fs=FS).topic_id == "4L6g3nShT-eMCtK--X86sw"
    path.write_bytes(b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")
    with pytest.raises(CorruptCheckpointError):
        read_partition_metadata(path, fs=FS)
