"""Kafka's checkpoint text files (kafka-format.md §1.4, kafka-maintenance.md §1.2).

Mirrors `server-common/.../CheckpointFile.java` (the generic reader and writer) and
`storage/.../checkpoint/OffsetCheckpointFile.java` (the `topic partition offset` entries);
`storage_core.leader_epoch` holds the other kind, `LeaderEpochCheckpointFile.java`.

```
Checkpoint => Version => Int32 as decimal text, line 1     always 0
              Count => Int32 as decimal text, line 2       number of entry lines
              Entries => [Entry], one per line             `Count` lines
OffsetEntry => Topic Partition Offset                      String Int32 Int64, single spaces
```

UTF-8 text, every line terminated by `\\n` (a broker on Windows writes `\\r\\n`). Used by
recovery-point-offset-checkpoint, log-start-offset-checkpoint, replication-offset-checkpoint,
cleaner-offset-checkpoint and leader-epoch-checkpoint.

Reading follows `CheckpointReadBuffer` exactly:

* lines end at `\\n`, `\\r` or `\\r\\n` (`BufferedReader.readLine`); a missing final terminator is
  accepted;
* an empty file, or one that ends after the version line, has no entries;
* numbers are Java `Integer.parseInt` / `Long.parseLong`: an optional sign and ASCII digits, no
  surrounding blanks, within range (:func:`parse_java_int`);
* an entry line is split on runs of whitespace (Java's `\\s+`): a leading blank gives an empty first
  field, so the line is malformed; trailing blanks are ignored;
* every entry line must parse and their number must equal the count, so an extra blank line is
  corrupt.

Any violation raises :class:`CorruptCheckpointError` carrying the path and line number.

Invariants of the entries written here: topics are non-empty and contain no whitespace (Kafka's
topic names never do), entries are sorted by topic then partition so that equal content gives equal
bytes (Kafka writes hash-map order, which its reader does not care about).

Crash story: written atomically (`<name>.tmp`, fsync, rename over `<name>`, fsync the directory),
as `CheckpointFile.write` with `Utils.atomicMoveWithFallback`, so a reader sees the old or the new
content. A crash before the rename leaves `<name>.tmp` behind; the next write replaces it. Kafka's
constructor also creates a missing file empty; a reader here simply treats a missing file as empty
and nothing is created.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from storage_core.errors import CorruptCheckpointError
from storage_core.fs import FileSystem, default_fs
from storage_core.names import TopicPartition

CHECKPOINT_VERSION = 0
VERSION_LINE = 1
COUNT_LINE = 2
FIRST_ENTRY_LINE = 3
"""1-based line numbers: entry `i` (0-based) is on line `FIRST_ENTRY_LINE + i`."""

OFFSET_CHECKPOINT_FIELDS = 3

_LINE_END = re.compile(r"\r\n|\r|\n")
_JAVA_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]+")
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def parse_java_int(text: str, *, bits: int = 32) -> int:
    """Parse a decimal integer as Java's `Integer.parseInt` (bits=32) or `Long.parseLong` (bits=64).

    Raises:
        ValueError: not an optionally signed run of ASCII digits, or out of the signed range.
    """
    if _JAVA_INT.fullmatch(text) is None:
        raise ValueError(f"{text!r} is not a decimal integer")
    value = int(text)
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ValueError(f"{text} does not fit a signed {bits}-bit integer")
    return value


def split_java_lines(text: str) -> list[str]:
    """The lines Java's `BufferedReader.readLine` returns, in order (terminators `\\n`, `\\r`, `\\r\\n`)."""
    lines = _LINE_END.split(text)
    if lines[-1] == "":
        lines.pop()  # the text ended with a terminator (or was empty)
    return lines


def read_java_lines(data: bytes, *, what: str, path: Path | None) -> list[str]:
    """The lines of a UTF-8 text file as Java reads them (:func:`split_java_lines`).

    Raises:
        CorruptCheckpointError: `data` is not UTF-8 (`what` names the file kind).
    """
    try:
        return split_java_lines(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CorruptCheckpointError(f"{what} is not UTF-8 text", path=path, position=exc.start) from None


def _java_split(line: str) -> list[str]:
    """`line.split("\\\\s+")` in Java: a leading empty field is kept, trailing empty ones are dropped."""
    tokens = _JAVA_WHITESPACE.split(line)
    while tokens and tokens[-1] == "":
        tokens.pop()
    return tokens


def parse_checkpoint(
    data: bytes, *, fields: int, expected_version: int = CHECKPOINT_VERSION, path: Path | None = None
) -> list[list[str]]:
    """The entry lines of a checkpoint, each split into exactly `fields` tokens.

    Args:
        data: the file's bytes.
        fields: the number of whitespace-separated tokens every entry line must have.
        expected_version: the version line's required value.
        path: the file, for error messages.

    Returns:
        One token list per entry line, in file order.

    Raises:
        CorruptCheckpointError: not UTF-8, a version other than `expected_version`, a malformed
            version, count or entry line, or a count that disagrees with the entry lines.
    """
    lines = read_java_lines(data, what="checkpoint", path=path)
    if not lines:
        return []
    version = entry_int(lines[VERSION_LINE - 1], bits=32, line=VERSION_LINE, path=path)
    if version != expected_version:
        raise CorruptCheckpointError(
            f"unrecognised checkpoint version {version}, expected {expected_version}", path=path, line=VERSION_LINE
        )
    if len(lines) < COUNT_LINE:
        return []
    count = entry_int(lines[COUNT_LINE - 1], bits=32, line=COUNT_LINE, path=path)
    entries = []
    for number, line in enumerate(lines[FIRST_ENTRY_LINE - 1 :], start=FIRST_ENTRY_LINE):
        tokens = _java_split(line)
        if len(tokens) != fields:
            raise CorruptCheckpointError(
                f"malformed entry {line!r}: expected {fields} fields, found {len(tokens)}", path=path, line=number
            )
        entries.append(tokens)
    if len(entries) != count:
        raise CorruptCheckpointError(f"expected {count} entries but found {len(entries)}", path=path, line=COUNT_LINE)
    return entries


def read_checkpoint_lines(
    path: Path, *, fields: int, expected_version: int = CHECKPOINT_VERSION, fs: FileSystem | None = None
) -> list[list[str]]:
    """The entry lines of a checkpoint file (see :func:`parse_checkpoint`); none if the file is missing.

    Raises:
        CorruptCheckpointError: the file does not parse.
    """
    fs = fs or default_fs()
    if not fs.exists(path):
        return []
    return parse_checkpoint(fs.read_bytes(path), fields=fields, expected_version=expected_version, path=Path(path))


def entry_int(token: str, *, bits: int, line: int, path: Path | None) -> int:
    """One numeric field of a checkpoint: the version or count line, or a field of an entry line
    (:func:`parse_java_int`).

    Raises:
        CorruptCheckpointError: the token is not a `bits`-bit integer; carries `line`.
    """
    try:
        return parse_java_int(token, bits=bits)
    except ValueError as exc:
        raise CorruptCheckpointError(f"malformed field: {exc}", path=path, line=line) from None


def format_checkpoint(entries: Iterable[Sequence[object]], *, version: int = CHECKPOINT_VERSION) -> bytes:
    """The bytes of a checkpoint: version, count, then each entry's fields joined by single spaces."""
    lines = [" ".join(str(value) for value in entry) for entry in entries]
    return "".join(f"{line}\n" for line in [str(version), str(len(lines)), *lines]).encode()


def read_offset_checkpoint(path: Path, *, fs: FileSystem | None = None) -> dict[TopicPartition, int]:
    """The entries of an offset checkpoint file, in file order; a missing or empty file has none.

    A partition listed twice keeps its last offset, as Kafka's `HashMap` does.

    Raises:
        CorruptCheckpointError: the file does not parse (carries the path and, for a bad line, its number).
    """
    rows = read_checkpoint_lines(path, fields=OFFSET_CHECKPOINT_FIELDS, fs=fs)
    entries: dict[TopicPartition, int] = {}
    for number, (topic, partition, offset) in enumerate(rows, start=FIRST_ENTRY_LINE):
        tp = TopicPartition(topic, entry_int(partition, bits=32, line=number, path=path))
        entries[tp] = entry_int(offset, bits=64, line=number, path=path)
    return entries


def format_offset_checkpoint(entries: Mapping[TopicPartition, int]) -> bytes:
    """An offset checkpoint's bytes, entries sorted by topic and partition.

    Raises:
        ValueError: a topic is empty or contains whitespace (the file could not be read back).
    """
    for tp in entries:
        if not tp.topic or _JAVA_WHITESPACE.search(tp.topic):
            raise ValueError(f"topic {tp.topic!r} cannot be written to an offset checkpoint")
    ordered = sorted(entries.items(), key=lambda item: (item[0].topic, item[0].partition))
    return format_checkpoint((tp.topic, tp.partition, offset) for tp, offset in ordered)


def write_offset_checkpoint(path: Path, entries: Mapping[TopicPartition, int], *, fs: FileSystem | None = None) -> None:
    """Replace an offset checkpoint atomically (`.tmp`, fsync, rename, fsync the directory).

    Raises:
        ValueError: a topic cannot be written (see :func:`format_offset_checkpoint`).
    """
    (fs or default_fs()).write_atomic(Path(path), format_offset_checkpoint(entries))
