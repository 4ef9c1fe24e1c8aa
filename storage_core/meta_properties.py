"""`meta.properties`: the identity of a log dir (kafka-format.md §1.5; `MetaProperties.java`).

Java properties written by `Properties.store` (a `#` line and a date line, then keys):
`version` (0 if absent), v0 ZooKeeper mode `broker.id`, v1 KRaft `node.id` (required) and
`cluster.id` (required in v1), optional `directory.id` (a Kafka Uuid). Written atomically.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from storage_core.errors import CorruptCheckpointError
from storage_core.fs import FileSystem, default_fs
from storage_core.java_properties import format_java_properties, parse_java_properties


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """The identity of a log dir."""

    version: int
    cluster_id: str | None = None
    node_id: int | None = None
    broker_id: int | None = None
    directory_id: str | None = None

    def to_properties(self) -> dict[str, str]:
        values = {"version": str(self.version)}
        for key, value in (
            ("cluster.id", self.cluster_id),
            ("node.id", self.node_id),
            ("broker.id", self.broker_id),
            ("directory.id", self.directory_id),
        ):
            if value is not None:
                values[key] = str(value)
        return values


def read_meta_properties(path: Path, *, fs: FileSystem | None = None) -> MetaProperties:
    """Parse `meta.properties`.

    Raises:
        CorruptCheckpointError: an unknown version, a non-integer id, or v1 without node.id/cluster.id.
    """
    fs = fs or default_fs()
    values = parse_java_properties(fs.read_bytes(path).decode("utf-8", "replace"))
    try:
        version = int(values.get("version", "0"))
        node_id = int(values["node.id"]) if "node.id" in values else None
        broker_id = int(values["broker.id"]) if "broker.id" in values else None
    except ValueError as exc:
        raise CorruptCheckpointError(f"invalid meta.properties: {exc}", path=path) from None
    if version not in (0, 1):
        raise CorruptCheckpointError(f"unknown meta.properties version {version}", path=path)
    if version == 1 and (node_id is None or "cluster.id" not in values):
        raise CorruptCheckpointError("meta.properties version 1 needs node.id and cluster.id", path=path)
    return MetaProperties(version, values.get("cluster.id"), node_id, broker_id, values.get("directory.id"))


def write_meta_properties(path: Path, meta: MetaProperties, *, fs: FileSystem | None = None) -> None:
    stamp = datetime.now(UTC).strftime("%a %b %d %H:%M:%S UTC %Y")
    text = format_java_properties(meta.to_properties(), comment_lines=("", stamp))
    (fs or default_fs()).write_atomic(Path(path), text.encode())
