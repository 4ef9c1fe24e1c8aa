"""Verification findings that `DumpLogSegments` collects while dumping and prints at the very end.

Kafka keeps them in maps keyed by the file's absolute path and prints them on stderr after the last
file, in this order (`DumpLogSegments.main`, `TimeIndexDumpErrors.printErrors`):

1. `.index` entries whose batch has another last offset: `Mismatches in :<abs>`, then
   `  Index offset: O, log offset: L`, newest first (Scala prepends to a list);
2. `.timeindex` timestamps that differ from the batch's: `Found timestamp mismatch in :<abs>`, then
   `  Index timestamp: T, log timestamp: L`;
3. `.timeindex` timestamps that do not increase: `Found out of order timestamp in :<abs>`, then
   `  Index timestamp: T, Previously indexed timestamp: P`;
4. `.timeindex` offsets that end no batch: `The following indexed offsets are not found in the log.`,
   then `Indexed offset: O, found log offset: L`;
5. deep iteration's offset gaps: `Non-consecutive offsets in <abs>`, then `  A is followed by B`,
   newest first.

Files appear in the order they were dumped (Kafka's hash maps have no defined order).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from storage_core.dump.render import DumpLine, Field

_Pairs = dict[str, list[tuple[int, int]]]


@dataclass(frozen=True, slots=True)
class _Section:
    """One kind of finding: its heading line, its entry line, and whether Kafka prints newest first."""

    kind: str
    heading: str
    entry: str
    names: tuple[str, str]
    newest_first: bool


_SECTIONS = (
    _Section(
        "index_mismatch",
        "Mismatches in :{file}",
        "  Index offset: {indexOffset}, log offset: {logOffset}",
        ("indexOffset", "logOffset"),
        newest_first=True,
    ),
    _Section(
        "timeindex_mismatch",
        "Found timestamp mismatch in :{file}",
        "  Index timestamp: {indexTimestamp}, log timestamp: {logTimestamp}",
        ("indexTimestamp", "logTimestamp"),
        newest_first=False,
    ),
    _Section(
        "timeindex_out_of_order",
        "Found out of order timestamp in :{file}",
        "  Index timestamp: {indexTimestamp}, Previously indexed timestamp: {prevIndexTimestamp}",
        ("indexTimestamp", "prevIndexTimestamp"),
        newest_first=False,
    ),
    _Section(
        "timeindex_offset_not_found",
        "The following indexed offsets are not found in the log.",
        "Indexed offset: {indexOffset}, found log offset: {logOffset}",
        ("indexOffset", "logOffset"),
        newest_first=False,
    ),
    _Section(
        "non_consecutive_offsets",
        "Non-consecutive offsets in {file}",
        "  {offset} is followed by {nextOffset}",
        ("offset", "nextOffset"),
        newest_first=True,
    ),
)


@dataclass(slots=True)
class Diagnostics:
    """Findings of one dump run, per kind and file; :meth:`lines` prints them Kafka's way."""

    _found: dict[str, _Pairs] = field(default_factory=lambda: {section.kind: {} for section in _SECTIONS})

    def _add(self, kind: str, file: str, pair: tuple[int, int]) -> None:
        self._found[kind].setdefault(file, []).append(pair)

    def index_mismatch(self, file: str, *, index_offset: int, log_offset: int) -> None:
        """An `.index` entry whose batch at its position has another last offset (-1: no batch there)."""
        self._add("index_mismatch", file, (index_offset, log_offset))

    def timeindex_mismatch(self, file: str, *, index_timestamp: int, log_timestamp: int) -> None:
        """A `.timeindex` entry whose timestamp is not its batch's largest record timestamp."""
        self._add("timeindex_mismatch", file, (index_timestamp, log_timestamp))

    def timeindex_out_of_order(self, file: str, *, index_timestamp: int, prev_index_timestamp: int) -> None:
        """A `.timeindex` timestamp not above the previous entry's."""
        self._add("timeindex_out_of_order", file, (index_timestamp, prev_index_timestamp))

    def timeindex_offset_not_found(self, file: str, *, index_offset: int, log_offset: int) -> None:
        """A `.timeindex` offset that is no batch's last offset (`log_offset`: the next batch's, or -1)."""
        self._add("timeindex_offset_not_found", file, (index_offset, log_offset))

    def non_consecutive(self, file: str, *, offset: int, next_offset: int) -> None:
        """A record offset followed by one that is not the next."""
        self._add("non_consecutive_offsets", file, (offset, next_offset))

    def lines(self) -> Iterator[DumpLine]:
        """Every finding as stderr lines, in Kafka's order."""
        for section in _SECTIONS:
            for file, pairs in self._found[section.kind].items():
                yield DumpLine(f"{section.kind}_heading", (Field("file", file),), template=section.heading, stderr=True)
                for first, second in reversed(pairs) if section.newest_first else pairs:
                    yield DumpLine(
                        section.kind,
                        (Field("file", file), Field(section.names[0], first), Field(section.names[1], second)),
                        template=section.entry,
                        stderr=True,
                    )
