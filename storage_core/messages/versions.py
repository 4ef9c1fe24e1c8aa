"""Version ranges of Kafka's message schemas (`generator/.../message/Versions.java`).

A range is written as Kafka's message JSONs write it: `"0+"` (0 and every later version), `"1-3"`,
`"2"` (exactly one version) or `"none"` (the empty range). Bounds are inclusive int16 versions.
"""

from __future__ import annotations

from typing import NamedTuple

_MAX_VERSION = 2**15 - 1


class Versions(NamedTuple):
    """An inclusive range of message versions; empty when `lowest > highest`."""

    lowest: int
    highest: int

    @classmethod
    def parse(cls, text: str) -> Versions:
        """The range of `"0+"`, `"1-3"`, `"2"` or `"none"`.

        Raises:
            ValueError: any other text.
        """
        text = text.strip()
        if text == "none":
            return NONE
        if text.endswith("+"):
            return cls(int(text[:-1]), _MAX_VERSION)
        low, dash, high = text.partition("-")
        return cls(int(low), int(high) if dash else int(low))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lowest <= version <= self.highest

    @property
    def empty(self) -> bool:
        return self.lowest > self.highest

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.highest == _MAX_VERSION:
            return f"{self.lowest}+"
        return str(self.lowest) if self.lowest == self.highest else f"{self.lowest}-{self.highest}"


NONE = Versions(0, -1)
ALL = Versions(0, _MAX_VERSION)
