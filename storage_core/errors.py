"""The exception tree of storage_core.

Every error a caller may branch on is a subclass of :class:`StorageError` and carries the fields
it needs (path, position, offset, key, ...). Messages say what went wrong and what to do.

```
StorageError
├── CorruptDataError (path, position)
│   ├── CorruptRecordError          a batch or record fails its size, magic or CRC check
│   ├── CorruptIndexError           an .index/.timeindex/.txnindex fails Kafka's sanity check
│   ├── CorruptCheckpointError (line)  a checkpoint, meta.properties or partition.metadata does not parse
│   └── CorruptSnapshotError        a producer-state .snapshot fails its version or CRC check
├── OffsetOverflowError (segment, offset)   an offset does not fit the segment's 4-byte relative offsets
├── InvalidOffsetError              an index append that is not strictly increasing
├── LogDirLockedError (path)        a live process (a broker) holds the log dir's .lock
├── UnsupportedFormatError          an unknown magic, codec, or file version
├── InvalidConfigError (key, value) a configuration key is unknown or its value is invalid
└── InvalidNameError (name)         a file or directory name Kafka would not accept
```
"""

from __future__ import annotations

from pathlib import Path


class StorageError(Exception):
    """Base class of every error raised by storage_core."""


class CorruptDataError(StorageError):
    """Bytes on disk that do not follow the format.

    Attributes:
        path: the file, when known.
        position: byte position in the file where the problem starts, when known.
    """

    def __init__(self, message: str, *, path: Path | str | None = None, position: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f" in {path}"
            if position is not None:
                where += f" at position {position}"
        super().__init__(message + where)
        self.path = Path(path) if path is not None else None
        self.position = position


class CorruptRecordError(CorruptDataError):
    """A record batch (or a record inside it) is invalid: bad size, magic, CRC or record framing."""


class CorruptIndexError(CorruptDataError):
    """An index file fails Kafka's sanity check; Kafka rebuilds such an index from the .log."""


class CorruptCheckpointError(CorruptDataError):
    """A checkpoint text file (version/count/entries) or another small text file of a log dir
    (`meta.properties`, `partition.metadata`) does not parse.

    Attributes:
        line: the 1-based number of the offending line, when the problem is on one line.
    """

    def __init__(
        self, message: str, *, path: Path | str | None = None, position: int | None = None, line: int | None = None
    ) -> None:
        super().__init__(message if line is None else f"line {line}: {message}", path=path, position=position)
        self.line = line


class CorruptSnapshotError(CorruptDataError):
    """A producer-state snapshot has an unknown version, a bad CRC or does not parse."""


class OffsetOverflowError(StorageError):
    """An offset cannot be stored relative to its segment's base offset (KAFKA-6264).

    Attributes:
        segment: the segment's .log path.
        offset: the offending absolute offset.
    """

    def __init__(self, message: str, *, segment: Path | str, offset: int) -> None:
        super().__init__(f"{message} (segment {segment}, offset {offset})")
        self.segment = Path(segment)
        self.offset = offset


class InvalidOffsetError(StorageError):
    """An index append whose offset is not greater than the last indexed offset."""


class LogDirLockedError(StorageError):
    """A live process holds the log dir's `.lock`; nothing in the dir may be touched.

    Attributes:
        path: the log dir.
    """

    def __init__(self, path: Path | str) -> None:
        super().__init__(
            f"log dir {path} is locked by a live process (a running Kafka broker?): "
            "stop the broker before maintaining this directory"
        )
        self.path = Path(path)


class UnsupportedFormatError(StorageError):
    """A magic value, compression codec or file version this implementation does not read."""


class InvalidConfigError(StorageError):
    """A configuration key is unknown or its value is out of range.

    Attributes:
        key: the Kafka config name.
        value: the rejected value as given.
    """

    def __init__(self, message: str, *, key: str, value: object = None) -> None:
        super().__init__(f"{key}: {message}" + ("" if value is None else f" (got {value!r})"))
        self.key = key
        self.value = value


class InvalidNameError(StorageError):
    """A file or directory name that does not follow Kafka's naming rules.

    Attributes:
        name: the rejected name.
    """

    def __init__(self, message: str, *, name: str) -> None:
        super().__init__(f"{message}: {name!r}")
        self.name = name
