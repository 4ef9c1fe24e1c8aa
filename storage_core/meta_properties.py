"""`meta.properties`: the identity of a log dir (kafka-format.md §1.5).

Mirrors `metadata/.../properties/MetaProperties.java` (keys and validation), `MetaPropertiesVersion`
and `PropertiesUtils.java` (reading and writing); the Java properties text itself is
:mod:`storage_core.java_properties`.

```
#                                   Properties.store(writer, ""): an empty comment line,
#Fri Oct 25 03:33:01 UTC 2024       then java.util.Date.toString() of the write time
cluster.id=4L6g3nShT-eMCtK--X86sw   then key=value lines, Java-escaped
directory.id=J8aAPcfLQt2bqs1JT_rMgQ
node.id=1
version=1
```

| key            | v0 (ZooKeeper)        | v1 (KRaft)            |
|----------------|-----------------------|-----------------------|
| `version`      | `0`, the default      | `1`                   |
| `broker.id`    | optional Java int     | ignored               |
| `node.id`      | ignored               | required Java int     |
| `cluster.id`   | optional              | required              |
| `directory.id` | optional Kafka Uuid   | optional Kafka Uuid   |

Kafka reads the file with `Properties.load(InputStream)`, i.e. as ISO-8859-1, and writes it as UTF-8;
the values it writes are ASCII, so both agree. Any other version, a non-integer id, an invalid
directory id, or a v1 file without `node.id` or `cluster.id` is a :class:`CorruptCheckpointError`.
Keys are written sorted, as `Properties.store` does since JDK 18 (older JDKs wrote hash order, which
readers do not depend on); the date line is written in UTC.

Crash story: written atomically (`meta.properties.tmp`, fsync, rename, fsync the directory), as
`PropertiesUtils.writePropertiesFile`.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from storage_core.checkpoint import parse_java_int
from storage_core.errors import CorruptCheckpointError
from storage_core.fs import FileSystem, default_fs
from storage_core.java_properties import format_java_properties, parse_java_properties
from storage_core.partition_metadata import canonical_uuid

VERSION_KEY = "version"
CLUSTER_ID_KEY = "cluster.id"
BROKER_ID_KEY = "broker.id"
NODE_ID_KEY = "node.id"
DIRECTORY_ID_KEY = "directory.id"

_JAVA_TRIMMED = "".join(map(chr, range(0x21)))
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


class MetaPropertiesVersion(enum.IntEnum):
    """The `version` key's values."""

    V0 = 0  # ZooKeeper mode: broker.id
    V1 = 1  # KRaft: node.id and cluster.id


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """The identity of a log dir.

    Attributes:
        version: 0 (ZooKeeper) or 1 (KRaft).
        cluster_id: the cluster id (required in v1).
        node_id: the KRaft node id (v1 only, required there).
        broker_id: the ZooKeeper broker id (v0 only, optional).
        directory_id: the log dir's Kafka Uuid (canonical form when read).
    """

    version: int
    cluster_id: str | None = None
    node_id: int | None = None
    broker_id: int | None = None
    directory_id: str | None = None

    def to_properties(self) -> dict[str, str]:
        """The keys Kafka writes for these values (`MetaProperties.toProperties`), sorted.

        Raises:
            ValueError: values Kafka could not have written: an unknown version, v1 without a
                node id or cluster id, a node id in v0 or a broker id in v1, or an invalid
                directory id.
        """
        if self.version not in MetaPropertiesVersion._value2member_map_:
            raise ValueError(f"unknown meta.properties version {self.version}")
        if self.version == MetaPropertiesVersion.V1:
            if self.node_id is None or self.cluster_id is None:
                raise ValueError("meta.properties version 1 needs a node id and a cluster id")
            if self.broker_id is not None:
                raise ValueError("meta.properties version 1 has node.id, not broker.id")
        elif self.node_id is not None:
            raise ValueError("meta.properties version 0 has broker.id, not node.id")
        values = {
            VERSION_KEY: str(self.version),
            CLUSTER_ID_KEY: self.cluster_id,
            NODE_ID_KEY: None if self.node_id is None else str(self.node_id),
            BROKER_ID_KEY: None if self.broker_id is None else str(self.broker_id),
            DIRECTORY_ID_KEY: None if self.directory_id is None else canonical_uuid(self.directory_id),
        }
        return {key: value for key, value in sorted(values.items()) if value is not None}


def parse_meta_properties(data: bytes, *, path: Path | None = None) -> MetaProperties:
    """Parse the bytes of `meta.properties` (`new MetaProperties.Builder(props).build()`).

    Raises:
        CorruptCheckpointError: an unknown version, a non-integer id, an invalid directory id, a
            v1 file without node.id or cluster.id, or a malformed `\\uXXXX` escape.
    """
    try:
        values = parse_java_properties(data.decode("latin-1"))
    except ValueError as exc:
        raise CorruptCheckpointError(f"malformed properties text: {exc}", path=path) from None
    version_text = values.get(VERSION_KEY, str(MetaPropertiesVersion.V0.value))
    try:
        # MetaPropertiesVersion.fromNumberString trims (String.trim: every char <= U+0020).
        version = MetaPropertiesVersion(parse_java_int(version_text.strip(_JAVA_TRIMMED)))
    except ValueError:
        raise CorruptCheckpointError(f"unknown meta.properties version {version_text!r}", path=path) from None
    cluster_id = values.get(CLUSTER_ID_KEY)
    node_id = broker_id = None
    if version == MetaPropertiesVersion.V0:
        broker_id = _optional_int(values, BROKER_ID_KEY, path)
    else:
        node_id = _optional_int(values, NODE_ID_KEY, path)
        if node_id is None or cluster_id is None:
            raise CorruptCheckpointError("meta.properties version 1 needs node.id and cluster.id", path=path)
    directory_id = values.get(DIRECTORY_ID_KEY)
    if directory_id is not None:
        try:
            directory_id = canonical_uuid(directory_id)
        except ValueError as exc:
            raise CorruptCheckpointError(f"unable to read directory.id as a Uuid: {exc}", path=path) from None
    return MetaProperties(int(version), cluster_id, node_id, broker_id, directory_id)


def _optional_int(values: dict[str, str], key: str, path: Path | None) -> int | None:
    if key not in values:
        return None
    try:
        return parse_java_int(values[key])
    except ValueError:
        raise CorruptCheckpointError(f"unable to read {key} as a base-10 number: {values[key]!r}", path=path) from None


def java_date(now_ms: int) -> str:
    """`java.util.Date.toString()` in UTC: `Fri Oct 25 03:33:01 UTC 2024`."""
    moment = datetime.fromtimestamp(now_ms // 1000, tz=UTC)
    return (
        f"{_DAYS[moment.weekday()]} {_MONTHS[moment.month - 1]} {moment.day:02d} "
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d} UTC {moment.year}"
    )


def format_meta_properties(meta: MetaProperties, *, now_ms: int) -> bytes:
    """The bytes `Properties.store(writer, "")` writes for `meta` at time `now_ms`.

    Raises:
        ValueError: `meta` is not valid (see :meth:`MetaProperties.to_properties`).
    """
    return format_java_properties(meta.to_properties(), comment_lines=("", java_date(now_ms))).encode("utf-8")


def read_meta_properties(path: Path, *, fs: FileSystem | None = None) -> MetaProperties:
    """Parse a `meta.properties` file.

    Raises:
        CorruptCheckpointError: the file does not parse (see :func:`parse_meta_properties`).
        FileNotFoundError: there is no such file.
    """
    return parse_meta_properties((fs or default_fs()).read_bytes(path), path=Path(path))


def write_meta_properties(
    path: Path, meta: MetaProperties, *, now_ms: int | None = None, fs: FileSystem | None = None
) -> None:
    """Write `meta.properties` atomically (`.tmp`, fsync, rename, fsync the directory).

    Args:
        path: the file.
        meta: the values.
        now_ms: the time for the date comment line; the current time if None.
        fs: the file system.

    Raises:
        ValueError: `meta` is not valid (see :meth:`MetaProperties.to_properties`).
    """
    stamp_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    (fs or default_fs()).write_atomic(Path(path), format_meta_properties(meta, now_ms=stamp_ms))
