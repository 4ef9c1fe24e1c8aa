"""partition.metadata and Kafka Uuids (storage_core/partition_metadata.py, kafka-format.md §10.2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_core import names
from storage_core.errors import CorruptCheckpointError
from storage_core.fs import LocalFileSystem
from storage_core.partition_metadata import (
    METADATA_TOPIC_ID,
    ZERO_UUID,
    PartitionMetadata,
    canonical_uuid,
    decode_uuid,
    encode_uuid,
    parse_partition_metadata,
    read_partition_metadata,
    write_partition_metadata,
)
from tests.realdata.manifest import REALDATA, ManifestRow, rows_of_kind

FS = LocalFileSystem()
TOPIC_ID = "4L6g3nShT-eMCtK--X86sw"
METADATA_ROWS = rows_of_kind("partition.metadata")


def test_write_exact_bytes_without_trailing_newline(tmp_path: Path) -> None:
    path = tmp_path / names.PARTITION_METADATA
    write_partition_metadata(path, PartitionMetadata(0, TOPIC_ID), fs=FS)
    assert path.read_bytes() == b"version: 0\ntopic_id: 4L6g3nShT-eMCtK--X86sw"
    assert read_partition_metadata(path, fs=FS) == PartitionMetadata(0, TOPIC_ID)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_uuid_text_form() -> None:
    assert decode_uuid(ZERO_UUID) == bytes(16)
    assert decode_uuid(METADATA_TOPIC_ID) == bytes(15) + b"\x01"
    assert encode_uuid(bytes(range(16))) == "AAECAwQFBgcICQoLDA0ODw"
    assert decode_uuid("_____________________w") == b"\xff" * 16
    assert canonical_uuid(TOPIC_ID + "==") == TOPIC_ID  # Java's decoder takes the padded form too


@pytest.mark.parametrize(
    "text",
    [
        "",
        "AAAAAAAAAAAAAAAAAAAAA",
        "AAAAAAAAAAAAAAAAAAAAAAA",
        "4L6g3nShT+eMCtK--X86sw",
        "4L6g3nShT/eMCtK--X86sw",
        "4L6g3nShT-eMCtK--X86s=",
        "AAAAAAAAAAAAAAAAAAAAAA=",
        " 4L6g3nShT-eMCtK--X86sw",
    ],
    ids=["empty", "21 chars", "23 chars", "plus", "slash", "inner padding", "one pad", "leading blank"],
)
def test_not_uuids(text: str) -> None:
    with pytest.raises(ValueError, match="not a base64url Kafka Uuid"):
        decode_uuid(text)


def test_encode_needs_16_bytes() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        encode_uuid(bytes(15))


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=16, max_size=16))
def test_uuid_round_trip(raw: bytes) -> None:
    text = encode_uuid(raw)
    assert len(text) == 22
    assert decode_uuid(text) == raw


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"version: 0\ntopic_id: " + TOPIC_ID.encode(), PartitionMetadata(0, TOPIC_ID)),
        (b"version: 0\r\ntopic_id: " + TOPIC_ID.encode() + b"\r\n", PartitionMetadata(0, TOPIC_ID)),
        (b"version: 3\ntopic_id: " + TOPIC_ID.encode(), PartitionMetadata(3, TOPIC_ID)),  # downgrade compatibility
        (b"version:\t 0\ntopic_id:  " + TOPIC_ID.encode() + b"==\nanything: else\n", PartitionMetadata(0, TOPIC_ID)),
    ],
    ids=["kafka", "crlf", "higher version", "blanks, padding and extra lines"],
)
def test_accepted(content: bytes, expected: PartitionMetadata) -> None:
    assert parse_partition_metadata(content) == expected


@pytest.mark.parametrize(
    ("content", "line"),
    [
        (b"", 1),
        (b"version: -1\ntopic_id: " + TOPIC_ID.encode(), 1),
        (b"version:0\ntopic_id: " + TOPIC_ID.encode(), 1),
        (b" version: 0\ntopic_id: " + TOPIC_ID.encode(), 1),
        (b"version: 0 \ntopic_id: " + TOPIC_ID.encode(), 1),
        (b"version: x\ntopic_id: " + TOPIC_ID.encode(), 1),
        (b"topic_id: " + TOPIC_ID.encode() + b"\nversion: 0", 1),
        (b"version: 0", 2),
        (b"version: 0\n", 2),
        (b"version: 0\ntopic_id: " + ZERO_UUID.encode(), 2),
        (b"version: 0\ntopic_id: 4L6g3nShT", 2),
        (b"version: 0\ntopic_id: " + TOPIC_ID.encode() + b" ", 2),
        (b"version: 0\ntopic: " + TOPIC_ID.encode(), 2),
    ],
    ids=[
        "empty",
        "negative version",
        "no blank after colon",
        "leading blank",
        "trailing blank",
        "version not a number",
        "lines swapped",
        "no second line",
        "empty second line",
        "zero topic id",
        "short topic id",
        "topic id trailing blank",
        "wrong key",
    ],
)
def test_malformed(tmp_path: Path, content: bytes, line: int) -> None:
    path = tmp_path / names.PARTITION_METADATA
    path.write_bytes(content)
    with pytest.raises(CorruptCheckpointError) as error:
        read_partition_metadata(path, fs=FS)
    assert (error.value.path, error.value.line) == (path, line)


def test_not_utf8() -> None:
    with pytest.raises(CorruptCheckpointError) as error:
        parse_partition_metadata(b"version: 0\ntopic_id: \xff")
    assert error.value.position == 21


def test_writing_canonicalises_the_id_and_refuses_what_kafka_would_not_read(tmp_path: Path) -> None:
    assert PartitionMetadata(0, TOPIC_ID + "==").encode() == b"version: 0\ntopic_id: " + TOPIC_ID.encode()
    for bad in (PartitionMetadata(0, ZERO_UUID), PartitionMetadata(-1, TOPIC_ID), PartitionMetadata(0, "x")):
        with pytest.raises(ValueError):  # noqa: PT011 - three different reasons
            write_partition_metadata(tmp_path / names.PARTITION_METADATA, bad, fs=FS)
    assert not (tmp_path / names.PARTITION_METADATA).exists()


@pytest.mark.parametrize("row", METADATA_ROWS, ids=[row.id for row in METADATA_ROWS])
def test_every_real_file_matches_the_manifest_and_reencodes_to_its_bytes(row: ManifestRow) -> None:
    metadata = read_partition_metadata(row.path, fs=FS)
    assert metadata.topic_id == row.contents.split("topic_id:", 1)[1].strip()
    assert metadata.encode() == row.path.read_bytes()


def test_every_partition_metadata_under_realdata_parses() -> None:
    paths = sorted(REALDATA.rglob(names.PARTITION_METADATA))
    assert len(paths) == len(METADATA_ROWS) >= 50
    assert {read_partition_metadata(path, fs=FS).version for path in paths} == {0}


def test_manifest_facts() -> None:
    arthur = REALDATA / "ArthurArutunyan04__Backend_labs/kafka-data"
    assert read_partition_metadata(arthur / "__cluster_metadata-0/partition.metadata", fs=FS).topic_id == (
        METADATA_TOPIC_ID
    )
    assert read_partition_metadata(arthur / "__consumer_offsets-19/partition.metadata", fs=FS).topic_id == (
        "LJ-0nObETNu9zQf653GiTA"
    )
