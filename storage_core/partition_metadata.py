"""`partition.metadata`, a partition's topic id, and Kafka's Uuid text form (kafka-format.md §10.2).

Mirrors `storage/.../checkpoint/PartitionMetadataFile.java`, `PartitionMetadataReadBuffer.java`,
`PartitionMetadata.java` and `clients/.../common/Uuid.java`.

```
PartitionMetadata => "version: " Version "\\n"       Int32 as decimal text, 0 today
                     "topic_id: " TopicId           Kafka Uuid text, no trailing newline
```

A Kafka Uuid is 16 bytes (most then least significant long, big-endian) shown as URL-safe base64
without padding: 22 characters of `A-Z a-z 0-9 - _`, e.g. `4L6g3nShT-eMCtK--X86sw`. The zero Uuid
`AAAAAAAAAAAAAAAAAAAAAA` means "no id"; `AAAAAAAAAAAAAAAAAAAAAQ` (one) is the KRaft metadata topic's.

Reading follows `PartitionMetadataReadBuffer`: line 1 must split on the first `:\\s+` into
`version` and a Java int >= 0 (a higher version is accepted, for downgrades); line 2 into
`topic_id` and a Uuid (`Uuid.fromString`: at most 24 characters, base64url, 16 bytes), which must
not be the zero Uuid. Lines after the second are ignored. Anything else is a
:class:`CorruptCheckpointError` carrying the line number.

Crash story: written atomically (`<name>.tmp`, fsync, rename, fsync the directory), as Kafka's
`maybeFlush`, so a reader sees the old or the new content.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from pathlib import Path

from storage_core.checkpoint import parse_java_int, read_java_lines
from storage_core.errors import CorruptCheckpointError
from storage_core.fs import FileSystem, default_fs

PARTITION_METADATA_VERSION = 0
UUID_SIZE = 16
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"

# 16 bytes are 22 base64 characters (the last holds 2 bits); Java's decoder also takes the padded form.
_UUID_TEXT = re.compile(r"[A-Za-z0-9_-]{22}(?:==)?")
_SEPARATOR = re.compile(r":\s+")
_VERSION_KEY = "version"
_TOPIC_ID_KEY = "topic_id"


def decode_uuid(text: str) -> bytes:
    """The 16 bytes of a Kafka Uuid string (`Uuid.fromString`).

    Raises:
        ValueError: the text is not the base64url form of 16 bytes.
    """
    if _UUID_TEXT.fullmatch(text) is None:
        raise ValueError(f"{text!r} is not a base64url Kafka Uuid (22 characters of A-Z a-z 0-9 - _)")
    return base64.urlsafe_b64decode(text[:22] + "==")


def encode_uuid(raw: bytes) -> str:
    """The Kafka string form of 16 Uuid bytes (`Uuid.toString`).

    Raises:
        ValueError: `raw` is not 16 bytes long.
    """
    if len(raw) != UUID_SIZE:
        raise ValueError(f"a Kafka Uuid has {UUID_SIZE} bytes, not {len(raw)}")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def canonical_uuid(text: str) -> str:
    """`text` as Kafka writes it back (padding dropped).

    Raises:
        ValueError: the text is not a Kafka Uuid.
    """
    return encode_uuid(decode_uuid(text))


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """The content of `partition.metadata`.

    Attributes:
        version: the file version (0; readers accept any version >= 0).
        topic_id: the topic's Kafka Uuid string (canonical 22-character form when read).
    """

    version: int
    topic_id: str

    def encode(self) -> bytes:
        """The file's bytes (`PartitionMetadata.encode`): two lines, no trailing newline.

        Raises:
            ValueError: a negative version, or a topic id that is not a non-zero Kafka Uuid.
        """
        if self.version < 0:
            raise ValueError(f"partition.metadata version {self.version} is negative")
        topic_id = canonical_uuid(self.topic_id)
        if topic_id == ZERO_UUID:
            raise ValueError("the zero Uuid is not a topic id")
        return f"{_VERSION_KEY}: {self.version}\n{_TOPIC_ID_KEY}: {topic_id}".encode()


def parse_partition_metadata(data: bytes, *, path: Path | None = None) -> PartitionMetadata:
    """Parse the bytes of `partition.metadata`.

    Raises:
        CorruptCheckpointError: not UTF-8, a missing or malformed line, a negative version, an
            invalid topic id, or the zero topic id.
    """
    lines = read_java_lines(data, what="partition.metadata", path=path)
    version_text = _value(lines, 1, _VERSION_KEY, path)
    try:
        version = parse_java_int(version_text)
    except ValueError:
        raise CorruptCheckpointError(f"malformed version {version_text!r}", path=path, line=1) from None
    if version < PARTITION_METADATA_VERSION:
        raise CorruptCheckpointError(f"unrecognized partition.metadata version {version}", path=path, line=1)
    topic_id_text = _value(lines, 2, _TOPIC_ID_KEY, path)
    try:
        topic_id = canonical_uuid(topic_id_text)
    except ValueError as exc:
        raise CorruptCheckpointError(f"malformed topic id: {exc}", path=path, line=2) from None
    if topic_id == ZERO_UUID:
        raise CorruptCheckpointError("invalid topic id (the zero Uuid)", path=path, line=2)
    return PartitionMetadata(version, topic_id)


def _value(lines: list[str], number: int, key: str, path: Path | None) -> str:
    """The value of line `number` (1-based), which must read `<key>:<blanks><value>`."""
    if len(lines) < number:
        raise CorruptCheckpointError(f"missing the {key!r} line", path=path, line=number)
    line = lines[number - 1]
    parts = _SEPARATOR.split(line, maxsplit=1)
    if len(parts) != 2 or parts[0] != key:
        raise CorruptCheckpointError(f"malformed line {line!r}, expected '{key}: <value>'", path=path, line=number)
    return parts[1]


def read_partition_metadata(path: Path, *, fs: FileSystem | None = None) -> PartitionMetadata:
    """Parse a `partition.metadata` file.

    Raises:
        CorruptCheckpointError: the file does not parse (see :func:`parse_partition_metadata`).
        FileNotFoundError: there is no such file.
    """
    return parse_partition_metadata((fs or default_fs()).read_bytes(path), path=Path(path))


def write_partition_metadata(path: Path, metadata: PartitionMetadata, *, fs: FileSystem | None = None) -> None:
    """Write `partition.metadata` atomically (`.tmp`, fsync, rename, fsync the directory).

    Raises:
        ValueError: the metadata cannot be written (see :meth:`PartitionMetadata.encode`).
    """
    (fs or default_fs()).write_atomic(Path(path), metadata.encode())
