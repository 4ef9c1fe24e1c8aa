"""Kafka's checkpoint text files (kafka-format.md §1.4; `CheckpointFile.java`, `OffsetCheckpointFile.java`).

```
<version>\n        always 0
<count>\n          number of entry lines
<entry>\n ...      offset checkpoints: "<topic> <partition> <offset>"; leader epochs: "<epoch> <start offset>"
```

Used by recovery-point-offset-checkpoint, log-start-offset-checkpoint, replication-offset-checkpoint,
cleaner-offset-checkpoint and leader-epoch-checkpoint. Fields are split on any whitespace when read
(brokers on Windows write `\r\n`). An empty file, or one holding only the version line, has no
entries. A wrong version, a malformed line or a count that disagrees with the lines is corrupt.
Written atomically: `<name>.tmp`, fsync, rename over `<name>`, fsync the directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from storage_core.errors import CorruptCheckpointError
from storage_core.fs import FileSystem, default_fs
from storage_core.names import TopicPartition

CHECKPOINT_VERSION = 0


def parse_checkpoint(data: bytes, *, fields: int, path: Path | None = None) -> list[list[str]]:
    """The entry lines of a checkpoint, each split into `fields` tokens.

    Raises:
        CorruptCheckpointError: wrong version, malformed line, or a count mismatch.
    """
    try:
        lines = [line.strip() for line in data.decode("utf-8").splitlines()]
    except UnicodeDecodeError:
        raise CorruptCheckpointError("checkpoint is not UTF-8 text", path=path) from None
    if not lines:
        return []
    if lines[0] != str(CHECKPOINT_VERSION):
        raise CorruptCheckpointError(f"unrecognised checkpoint version {lines[0]!r}", path=path)
    if len(lines) == 1:
        return []
    try:
        count = int(lines[1])
    except ValueError:
        raise CorruptCheckpointError(f"malformed entry count {lines[1]!r}", path=path) from None
    entries = []
    for number, line in enumerate(lines[2:], start=3):
        tokens = line.split()
        if len(tokens) != fields:
            raise CorruptCheckpointError(f"malformed line {number}: {line!r}", path=path)
        entries.append(tokens)
    if len(entries) != count:
        raise CorruptCheckpointError(f"expected {count} entries but found {len(entries)}", path=path)
    return entries


def format_checkpoint(entries: list[str]) -> bytes:
    """The bytes of a checkpoint holding these (already formatted) entry lines."""
    return "".join(f"{line}\n" for line in [str(CHECKPOINT_VERSION), str(len(entries)), *entries]).encode()


def read_offset_checkpoint(path: Path, *, fs: FileSystem | None = None) -> dict[TopicPartition, int]:
    """Entries of an offset checkpoint file; a missing file has none.

    Raises:
        CorruptCheckpointError: the file does not parse.
    """
    fs = fs or default_fs()
    if not fs.exists(path):
        return {}
    entries = {}
    for number, (topic, partition, offset) in enumerate(parse_checkpoint(fs.read_bytes(path), fields=3, path=path)):
        try:
            entries[TopicPartition(topic, int(partition))] = int(offset)
        except ValueError:
            raise CorruptCheckpointError(
                f"malformed entry {number + 1}: {topic} {partition} {offset}", path=path
            ) from None
    return entries


def format_offset_checkpoint(entries: Mapping[TopicPartition, int]) -> bytes:
    """An offset checkpoint's bytes, entries sorted by topic and partition."""
    ordered = sorted(entries.items(), key=lambda item: (item[0].topic, item[0].partition))
    return format_checkpoint([f"{tp.topic} {tp.partition} {offset}" for tp, offset in ordered])


def write_offset_checkpoint(path: Path, entries: Mapping[TopicPartition, int], *, fs: FileSystem | None = None) -> None:
    """Replace an offset checkpoint atomically."""
    (fs or default_fs()).write_atomic(Path(path), format_offset_checkpoint(entries))
