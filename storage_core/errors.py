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
├── SegmentTooLargeError (size, path)       a `.log` over 2 GiB: its positions do not fit Kafka's ints
├── InvalidOffsetError              an index append that is not strictly increasing
├── IndexFullError                  an index append beyond segment.index.bytes (also a ValueError)
├── LogDirLockedError (path)        a live process (a broker) holds the log dir's .lock
├── InvalidLogDirError (path)       a log dir a broker would refuse, or that would lead us out of it
├── UnsupportedFormatError          an unknown magic, codec, or file version
│   ├── UnknownMessageTypeError (family, type_id)        a record type no declaration covers
│   └── UnsupportedMessageVersionError (message, version) a version a declaration does not cover
├── MetadataLogError (path)         a KRaft metadata log that cannot be replayed into an image
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


class SegmentTooLargeError(StorageError):
    """A segment's `.log` is larger than Kafka's maximum segment size, `Integer.MAX_VALUE` bytes:
    positions in a segment are Java ints (the offset index stores them in 4 bytes), and a broker
    refuses to open such a file (`FileRecords`: "The size of segment ... is larger than the maximum
    allowed segment size of 2147483647"). Both implementations of the batch walk raise it before
    they read anything, so nothing is truncated, indexed or quarantined.

    Attributes:
        size: the file's (or buffer's) size in bytes.
        path: the `.log`, when known.
    """

    MAX_SIZE = 2**31 - 1

    def __init__(self, size: int, *, path: Path | str | None = None) -> None:
        what = "a segment" if path is None else f"segment {path}"
        super().__init__(
            f"The size of {what} ({size}) is larger than the maximum allowed segment size of {self.MAX_SIZE} "
            "(Kafka's positions in a segment are 4-byte ints): a broker cannot open it either"
        )
        self.size = size
        self.path = Path(path) if path is not None else None


class InvalidOffsetError(StorageError):
    """An index append whose offset is not greater than the last indexed offset."""


class IndexFullError(StorageError, ValueError):
    """An index append beyond the index's size (`segment.index.bytes`): a broker rolls its segment
    before that, so the segment was written under a larger setting (Kafka's recovery fails the same
    way, "Attempt to append to a full index"). A StorageError, so the partition fails with one line
    instead of the job; a ValueError, as it always was."""


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


class InvalidLogDirError(StorageError):
    """A log dir that must not be maintained as it is: a broker would refuse to start on it (a
    subdirectory that is not a partition dir, no `meta.properties`, two dirs of one partition), or
    maintaining it would reach outside it (a symlink) or write what Kafka cannot read back (a topic
    name with whitespace in a checkpoint). Raised before anything is changed.

    Attributes:
        path: the offending file or directory.
    """

    def __init__(self, message: str, *, path: Path | str) -> None:
        super().__init__(f"{path}: {message}")
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


class UnknownMessageTypeError(UnsupportedFormatError):
    """A versioned message whose record type (a metadata record's api key, a coordinator record's
    key version) has no declaration here.

    Attributes:
        family: what kind of record (`metadata record`, `group coordinator record`, ...).
        type_id: the unknown type.
        version: the record's version, when the frame carries one.
    """

    def __init__(self, *, family: str, type_id: int, version: int | None = None) -> None:
        at = "" if version is None else f" (version {version})"
        super().__init__(
            f"unknown {family} type {type_id}{at}: written by a newer Kafka than this logkeeper knows; "
            "upgrade logkeeper to read it"
        )
        self.family = family
        self.type_id = type_id
        self.version = version


class UnsupportedMessageVersionError(UnsupportedFormatError):
    """A known message in a version its declaration does not cover.

    Attributes:
        message: the message name (`PartitionRecord`, `OffsetCommitValue`, ...).
        version: the version read.
        type_id: the record type (api key), when it has one.
    """

    def __init__(self, *, message: str, version: int, type_id: int | None = None) -> None:
        key = "" if type_id is None else f" (type {type_id})"
        super().__init__(
            f"{message}{key} version {version} is not supported: written by a newer Kafka than this "
            "logkeeper knows; upgrade logkeeper to read it"
        )
        self.message = message
        self.version = version
        self.type_id = type_id


class MetadataLogError(StorageError):
    """A KRaft metadata log (`__cluster_metadata-0`) that cannot be replayed into a metadata image:
    no usable snapshot and no log from offset 0, a gap between the snapshot and the log, or a
    record that contradicts the image (a partition of an unknown topic, ...).

    Attributes:
        path: the metadata log dir or the file at fault.
    """

    def __init__(self, message: str, *, path: Path | str) -> None:
        super().__init__(f"{message} ({path})")
        self.path = Path(path)
