"""A record as readers return it and builders take it, for every message format."""

from __future__ import annotations

import enum
from dataclasses import dataclass

Header = tuple[str, bytes | None]


class TimestampType(enum.IntEnum):
    """How a batch's timestamps were assigned (attribute bit 3; v0 has none)."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def kafka_name(self) -> str:
        """The name Kafka prints: `NoTimestampType`, `CreateTime`, `LogAppendTime`."""
        return {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}[self.value]


@dataclass(frozen=True, slots=True)
class Record:
    """One record.

    Attributes:
        offset: its absolute offset.
        timestamp: its timestamp (ms), -1 when it has none.
        key: the key, None for a null key.
        value: the value, None for a null value (a tombstone when the key is set).
        headers: (key, value) pairs, magic 2 only.
        sequence: its producer sequence, -1 without an idempotent producer.
        crc: legacy (v0/v1) messages only: the message's stored CRC-32.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    sequence: int = -1
    crc: int | None = None
