"""`partition.metadata`: the topic id of a partition (kafka-format.md §10.2; `PartitionMetadataFile.java`).

```
version: 0
topic_id: <22-char URL-safe base64 of the 16 UUID bytes, no padding>
```

No trailing newline. Lines split on `:\\s+`; the version must be >= 0 and the id must decode to 16
bytes and not be the zero id. Written atomically.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from pathlib import Path

from storage_core.errors import CorruptCheckpointError
from storage_core.fs import FileSystem, default_fs

_SPLIT = re.compile(r":\s+")
ZERO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"


def decode_uuid(text: str) -> bytes:
    """The 16 bytes of a Kafka Uuid string (raises ValueError if it is not one)."""
    raw = base64.urlsafe_b64decode(text + "==")
    if len(raw) != 16:
        raise ValueError(f"{text!r} is not a 16-byte Kafka Uuid")
    return raw


def encode_uuid(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """The content of `partition.metadata`."""

    version: int
    topic_id: str

    def encode(self) -> bytes:
        return f"version: {self.version}\ntopic_id: {self.topic_id}".encode()


def read_partition_metadata(path: Path, *, fs: FileSystem | None = None) -> PartitionMetadata:
    """Parse `partition.metadata`.

    Raises:
        CorruptCheckpointError: the file does not parse, or the topic id is invalid or zero.
    """
    fs = fs or default_fs()
    lines = fs.read_bytes(path).decode("utf-8", "replace").splitlines()
    fields = {}
    for line in lines:
        parts = _SPLIT.split(line.strip())
        if len(parts) != 2:
            raise CorruptCheckpointError(f"malformed line {line!r}", path=path)
        fields[parts[0]] = parts[1]
    try:
        version = int(fields["version"])
        topic_id = fields["topic_id"]
        decode_uuid(topic_id)
    except (KeyError, ValueError) as exc:
        raise CorruptCheckpointError(f"invalid partition metadata: {exc}", path=path) from None
    if version < 0 or topic_id == ZERO_TOPIC_ID:
        raise CorruptCheckpointError(f"invalid version {version} or zero topic id", path=path)
    return PartitionMetadata(version, topic_id)


def write_partition_metadata(path: Path, metadata: PartitionMetadata, *, fs: FileSystem | None = None) -> None:
    (fs or default_fs()).write_atomic(Path(path), metadata.encode())
