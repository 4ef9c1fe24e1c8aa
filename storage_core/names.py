"""File and directory names of a Kafka log dir: the only place that builds or parses them.

Mirrors `LogFileUtils.java` and `LocalLog.scala` (`parseTopicPartitionName`, `logDirName*`).

Segment files share one base name, the segment's base offset as 20 zero-padded decimal digits
(`00000000000000001234`). A file's offset is the decimal number before the **first** `.` of its
name. Lifecycle suffixes are appended after the normal suffix (`00000000000000000000.log.cleaned`).

Partition directories are `<topic>-<partition>`; renamed replicas are
`<topic>-<partition>.<32 hex uuid><suffix>` with suffix `-delete`, `-future` or `-stray`.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from storage_core.errors import InvalidNameError

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
TMP_SUFFIX = ".tmp"

INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
SEGMENT_SUFFIXES = (LOG_SUFFIX, *INDEX_SUFFIXES)

# Per-log-dir files.
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
# Per-partition files.
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"

# KRaft metadata snapshots (`org.apache.kafka.snapshot.Snapshots`, `BootstrapDirectory`):
# `<20-digit end offset>-<10-digit epoch>.checkpoint`, and `bootstrap.checkpoint` in a metadata dir.
KRAFT_SNAPSHOT_SUFFIX = ".checkpoint"
BOOTSTRAP_SNAPSHOT = "bootstrap.checkpoint"

# Directories inside a log dir that are not partition dirs (LogManager skips them).
METADATA_TOPIC = "__cluster_metadata"
REMOTE_INDEX_CACHE_DIR = "remote-log-index-cache"

OFFSET_DIGITS = 20
_MAX_OFFSET = 10**OFFSET_DIGITS - 1


def filename_prefix(offset: int) -> str:
    """The 20-digit base name of a segment or snapshot at `offset` (`LogFileUtils.filenamePrefixFromOffset`)."""
    if not 0 <= offset <= _MAX_OFFSET:
        raise ValueError(f"offset {offset} cannot be a file name")
    return f"{offset:0{OFFSET_DIGITS}d}"


def log_file(dir_path: Path, base_offset: int, suffix: str = "") -> Path:
    """`<dir>/<20 digits>.log[suffix]`; `suffix` is a lifecycle suffix such as `.cleaned`."""
    return dir_path / (filename_prefix(base_offset) + LOG_SUFFIX + suffix)


def offset_index_file(dir_path: Path, base_offset: int, suffix: str = "") -> Path:
    """`<dir>/<20 digits>.index[suffix]`."""
    return dir_path / (filename_prefix(base_offset) + INDEX_SUFFIX + suffix)


def time_index_file(dir_path: Path, base_offset: int, suffix: str = "") -> Path:
    """`<dir>/<20 digits>.timeindex[suffix]`."""
    return dir_path / (filename_prefix(base_offset) + TIME_INDEX_SUFFIX + suffix)


def txn_index_file(dir_path: Path, base_offset: int, suffix: str = "") -> Path:
    """`<dir>/<20 digits>.txnindex[suffix]`."""
    return dir_path / (filename_prefix(base_offset) + TXN_INDEX_SUFFIX + suffix)


def snapshot_file(dir_path: Path, offset: int, suffix: str = "") -> Path:
    """`<dir>/<20 digits>.snapshot[suffix]`: producer state as of `offset` (exclusive)."""
    return dir_path / (filename_prefix(offset) + SNAPSHOT_SUFFIX + suffix)


def offset_from_file_name(name: str) -> int:
    """The offset a file name starts with: the decimal number before the first `.`.

    Raises:
        InvalidNameError: the prefix is not a decimal number.
    """
    prefix = name.split(".", 1)[0]
    if not prefix.isdigit():
        raise InvalidNameError("file name does not start with an offset", name=name)
    return int(prefix)


def is_segment_file_name(name: str) -> bool:
    """True for `<20 digits>.<suffix>[.<lifecycle>]` names of segment, index and snapshot files."""
    return _SEGMENT_NAME.fullmatch(name) is not None


_SEGMENT_NAME = re.compile(
    rf"\d{{{OFFSET_DIGITS}}}(\.log|\.index|\.timeindex|\.txnindex|\.snapshot)(\.cleaned|\.swap|\.deleted)?"
)


def is_segment_temp_file_name(name: str) -> bool:
    """True for `<20 digits>.<index or snapshot suffix>.tmp`: an atomic write of an index or a producer
    snapshot that was interrupted before its rename (segments themselves are never written that way)."""
    return _SEGMENT_TEMP_NAME.fullmatch(name) is not None


_SEGMENT_TEMP_NAME = re.compile(rf"\d{{{OFFSET_DIGITS}}}(\.index|\.timeindex|\.txnindex|\.snapshot)\{TMP_SUFFIX}")


_KRAFT_SNAPSHOT_NAME = re.compile(rf"(\d{{{OFFSET_DIGITS}}})-(\d{{10}})\{KRAFT_SNAPSHOT_SUFFIX}")


def kraft_snapshot_file(dir_path: Path, end_offset: int, epoch: int) -> Path:
    """`<dir>/<20-digit end offset>-<10-digit epoch>.checkpoint` (`Snapshots.filenameFromSnapshotId`)."""
    return dir_path / f"{filename_prefix(end_offset)}-{epoch:010d}{KRAFT_SNAPSHOT_SUFFIX}"


def parse_kraft_snapshot_name(name: str) -> tuple[int, int] | None:
    """(end offset, epoch) of a `<end offset>-<epoch>.checkpoint` name, or None for another name."""
    match = _KRAFT_SNAPSHOT_NAME.fullmatch(name)
    return None if match is None else (int(match.group(1)), int(match.group(2)))


def log_base_offsets(file_names: Iterable[str]) -> list[int]:
    """Base offsets of the `<20 digits>.log` files among `file_names`, ascending."""
    return sorted(offset_from_file_name(n) for n in file_names if n.endswith(LOG_SUFFIX) and is_segment_file_name(n))


class DirKind(enum.Enum):
    """What a partition directory's name says about the replica."""

    LIVE = ""
    DELETE = "-delete"
    FUTURE = "-future"
    STRAY = "-stray"


@dataclass(frozen=True, slots=True)
class TopicPartition:
    """A topic name and partition number, as in a partition dir's name."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class PartitionDirName:
    """A parsed partition directory name."""

    topic_partition: TopicPartition
    kind: DirKind


# Java's `\S` (regex without UNICODE_CHARACTER_CLASS): anything but the six ASCII whitespace characters.
_JAVA_NON_SPACE = r"[^ \t\n\x0b\f\r]+"
_SUFFIXED = {
    kind: re.compile(rf"^({_JAVA_NON_SPACE})-({_JAVA_NON_SPACE})\.({_JAVA_NON_SPACE})" + re.escape(kind.value) + "$")
    for kind in (DirKind.DELETE, DirKind.FUTURE, DirKind.STRAY)
}
_INT32_MAX = 2**31 - 1


def parse_java_decimal_int(text: str) -> int | None:
    """`Integer.parseInt(text)` (radix 10), or None where Java throws `NumberFormatException`.

    Java accepts an optional `+` or `-`, then one or more characters for which `Character.digit(c, 10)`
    is defined: any Unicode decimal digit (category Nd) of the Basic Multilingual Plane (`parseInt`
    reads UTF-16 units, so a digit outside it is two units and neither is a digit), e.g. `١` (Arabic-Indic
    one) is 1. The value must fit an int32.
    """
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not all(c.isdecimal() and ord(c) <= 0xFFFF for c in digits):
        return None
    value = int(text)  # Python's int() reads every Nd digit as Java's Character.digit does
    return value if -(2**31) <= value <= _INT32_MAX else None


def parse_partition_dir_name(name: str) -> PartitionDirName:
    """Parse a partition directory name exactly as `LocalLog.parseTopicPartitionName` does.

    The partition number is Java's `Integer.parseInt` (:func:`parse_java_decimal_int`), so
    `orders-١` and `orders-+1` are both partition 1 of `orders`, as a broker reads them.

    Raises:
        InvalidNameError: the name is not a partition directory name.
    """
    if not name or "-" not in name:
        raise InvalidNameError("not a partition directory name (expected <topic>-<partition>)", name=name)
    kind = DirKind.LIVE
    base = name
    for candidate, pattern in _SUFFIXED.items():
        if name.endswith(candidate.value):
            if pattern.match(name) is None:
                raise InvalidNameError(f"malformed {candidate.value} directory name", name=name)
            kind = candidate
            base = name[: name.rindex(".")]
            break
    topic, _, partition_text = base.rpartition("-")
    if not topic or not partition_text:
        raise InvalidNameError("not a partition directory name (expected <topic>-<partition>)", name=name)
    partition = parse_java_decimal_int(partition_text)
    if partition is None:
        raise InvalidNameError("partition number is not an int32 (Java's Integer.parseInt)", name=name)
    return PartitionDirName(TopicPartition(topic, partition), kind)


_MAX_DIR_NAME = 255


def stray_dir_name(tp: TopicPartition, unique_id: str) -> str:
    """`<topic>-<partition>.<unique id>-stray`, the topic cut short so the name fits 255 characters
    (`LocalLog.logStrayDirName` / `logDirNameWithSuffixCappedLength`; Kafka's unique id is a random
    UUID's 32 hex digits)."""
    suffix = f"-{tp.partition}.{unique_id}{DirKind.STRAY.value}"
    return tp.topic[: max(0, _MAX_DIR_NAME - len(suffix))] + suffix


def is_partition_dir_candidate(name: str) -> bool:
    """False for the directories LogManager skips: the KRaft metadata log and the remote index cache."""
    return name not in (REMOTE_INDEX_CACHE_DIR, f"{METADATA_TOPIC}-0") and not name.startswith(".")
