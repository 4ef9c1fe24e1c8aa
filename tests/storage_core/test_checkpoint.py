from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_core.checkpoint import format_offset_checkpoint, read_offset_checkpoint, write_offset_checkpoint
from storage_core.errors import CorruptCheckpointError
from storage_core.fs import LocalFileSystem
from storage_core.names import TopicPartition

FS = LocalFileSystem()


def test_format_matches_kafka(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    write_offset_checkpoint(path, {TopicPartition("orders", 0): 15234, TopicPartition("my-topic", 3): 0}, fs=FS)
    assert path.read_bytes() == b"0\n2\nmy-topic 3 0\norders 0 15234\n"
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()


@pytest.mark.parametrize("content", [b"", b"0\n", b"0\r\n0\r\n"], ids=["empty", "version only", "crlf"])
def test_no_entries(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "cp"
    path.write_bytes(content)
    assert read_offset_checkpoint(path, fs=FS) == {}


def test_missing_file_has_no_entries(tmp_path: Path) -> None:
    assert read_offset_checkpoint(tmp_path / "absent", fs=FS) == {}


@pytest.mark.parametrize(
    "content",
    [b"1\n0\n", b"0\n2\na 0 1\n", b"0\n1\na 0\n", b"0\n1\na x 1\n", b"0\n1\na 0 1\n\n", b"0\nz\n"],
    ids=["version", "count", "fields", "int", "blank line", "bad count"],
)
def test_malformed_checkpoints_are_corrupt(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "cp"
    path.write_bytes(content)
    with pytest.raises(CorruptCheckpointError) as error:
        read_offset_checkpoint(path, fs=FS)
    assert error.value.path == path


topics = st.text(alphabet="abcxyz._-", min_size=1, max_size=12)


@settings(max_examples=100, deadline=None)
@given(entries=st.dictionaries(st.builds(TopicPartition, topics, st.integers(0, 2**31 - 1)), st.integers(0, 2**63 - 1)))
def test_round_trip(tmp_path_factory, entries) -> None:
    data = format_offset_checkpoint(entries)
    path = tmp_path_factory.mktemp("cp") / "checkpoint"
    path.write_bytes(data)
    assert read_offset_checkpoint(path, fs=FS) == entries
