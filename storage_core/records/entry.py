"""What every framed entry of a `.log` offers, whatever its magic: a zero-copy view into a buffer.

A `.log` is a sequence of entries, each starting with `BaseOffset => Int64  Length => Int32`
(kafka-format.md §3): magic-2 record batches (batch.py) and legacy v0/v1 messages (legacy.py).
Both keep their parsed fixed header in `header` (a NamedTuple with at least `magic`, `crc` and
`attributes`), the buffer and the entry's position in it, and know their own size and how their
CRC is computed (CRC-32C from the attributes for magic 2, CRC-32 from the magic byte for v0/v1).
What follows from that is here, once: the raw bytes, the codec, and Kafka's `isValid` and
`ensureValid`. Invariant: `position + size_in_bytes <= len(buffer)` (checked by the subclasses'
constructors).
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from storage_core.errors import CorruptRecordError
from storage_core.records.compression import CompressionType


class EntryHeader(Protocol):
    """The header fields every magic has."""

    @property
    def magic(self) -> int: ...
    @property
    def crc(self) -> int: ...
    @property
    def attributes(self) -> int: ...


class LogEntry:
    """Base of `RecordBatch` and `LegacyBatch`: a view of one entry at `position` of `_buffer`.

    Subclasses set `header`, `_buffer` and `position` in their constructor and define
    `size_in_bytes`, `compute_crc` and `KIND` (the noun of the corruption message).
    """

    __slots__ = ("_buffer", "header", "position")

    KIND: ClassVar[str]
    header: EntryHeader
    _buffer: bytes | bytearray | memoryview
    position: int

    @property
    def size_in_bytes(self) -> int:
        """The entry's length in the `.log`, framing included."""
        raise NotImplementedError

    def compute_crc(self) -> int:
        """The checksum of the bytes the stored CRC covers."""
        raise NotImplementedError

    @property
    def raw(self) -> memoryview:
        """The whole entry's bytes."""
        return memoryview(self._buffer)[self.position : self.position + self.size_in_bytes]

    @property
    def magic(self) -> int:
        return self.header.magic

    @property
    def crc(self) -> int:
        return self.header.crc

    @property
    def attributes(self) -> int:
        return self.header.attributes

    @property
    def compression(self) -> CompressionType:
        """The codec; raises UnsupportedFormatError for ids 5-7."""
        return CompressionType.of(self.header.attributes)

    def is_valid(self) -> bool:
        """Kafka's `isValid`: the minimum size (guaranteed by construction) and a matching CRC."""
        return self.compute_crc() == self.header.crc

    def ensure_valid(self) -> None:
        """Raises CorruptRecordError (at the entry's position) unless :meth:`is_valid`."""
        computed = self.compute_crc()
        if computed != self.header.crc:
            raise CorruptRecordError(
                f"{self.KIND} is corrupt (stored crc = {self.header.crc}, computed crc = {computed})",
                position=self.position,
            )
