"""Kafka's log configuration: topic-level keys, their broker synonyms and defaults (kafka-format.md §13).

`LogConfig` holds the topic-level settings maintenance uses, under Kafka's names mapped to
snake_case. Broker defaults come from a real `server.properties` (`log.retention.hours`, ...,
with Kafka's precedence ms > minutes > hours); per-topic overrides from a TOML file
(`[topics."name"]` tables with topic-level keys). Unknown keys in the namespaces we interpret
(`log.*` on the broker, every key of a topic table) and bad values are rejected with
:class:`InvalidConfigError`; other broker keys (listeners, node.id, ...) are a broker's business and
are ignored.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from storage_core.errors import InvalidConfigError
from storage_core.fs import FileSystem, default_fs
from storage_core.java_properties import parse_java_properties

_HOUR_MS = 3_600_000
_MINUTE_MS = 60_000


def _int(key: str, text: str, *, minimum: int | None = None) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise InvalidConfigError("not an integer", key=key, value=text) from None
    if minimum is not None and value < minimum:
        raise InvalidConfigError(f"must be at least {minimum}", key=key, value=text)
    return value


def _policy(key: str, text: object) -> frozenset[str]:
    items = text if isinstance(text, list) else str(text).split(",")
    policy = frozenset(str(item).strip() for item in items if str(item).strip())
    if not policy or not policy <= {"delete", "compact"}:
        raise InvalidConfigError("must be delete, compact or both", key=key, value=text)
    return policy


def _ratio(key: str, text: object) -> float:
    try:
        value = float(str(text))
    except ValueError:
        raise InvalidConfigError("not a number", key=key, value=text) from None
    if not 0 <= value <= 1:
        raise InvalidConfigError("must be between 0 and 1", key=key, value=text)
    return value


def _bool(key: str, text: object) -> bool:
    if str(text).strip().lower() not in ("true", "false"):
        raise InvalidConfigError("must be true or false", key=key, value=text)
    return str(text).strip().lower() == "true"


def _timestamp_type(key: str, text: object) -> str:
    if str(text) not in ("CreateTime", "LogAppendTime"):
        raise InvalidConfigError("must be CreateTime or LogAppendTime", key=key, value=text)
    return str(text)


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Topic-level log settings (Kafka defaults)."""

    segment_bytes: int = 1_073_741_824
    segment_ms: int = 604_800_000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10_485_760
    index_interval_bytes: int = 4096
    retention_ms: int = 604_800_000
    retention_bytes: int = -1
    cleanup_policy: frozenset[str] = field(default_factory=lambda: frozenset({"delete"}))
    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = 9_223_372_036_854_775_807
    min_cleanable_dirty_ratio: float = 0.5
    file_delete_delay_ms: int = 60_000
    preallocate: bool = False
    max_message_bytes: int = 1_048_588
    message_timestamp_type: str = "CreateTime"

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy


# topic-level key -> (LogConfig field, parser, broker synonym)
_TOPIC_KEYS: dict[str, tuple[str, Callable[[str, object], object], str]] = {
    "segment.bytes": ("segment_bytes", lambda k, v: _int(k, v, minimum=14), "log.segment.bytes"),
    "segment.ms": ("segment_ms", lambda k, v: _int(k, v, minimum=1), "log.roll.ms"),
    "segment.jitter.ms": ("segment_jitter_ms", lambda k, v: _int(k, v, minimum=0), "log.roll.jitter.ms"),
    "segment.index.bytes": ("segment_index_bytes", lambda k, v: _int(k, v, minimum=4), "log.index.size.max.bytes"),
    "index.interval.bytes": ("index_interval_bytes", lambda k, v: _int(k, v, minimum=0), "log.index.interval.bytes"),
    "retention.ms": ("retention_ms", lambda k, v: _int(k, v, minimum=-1), "log.retention.ms"),
    "retention.bytes": ("retention_bytes", lambda k, v: _int(k, v), "log.retention.bytes"),
    "cleanup.policy": ("cleanup_policy", _policy, "log.cleanup.policy"),
    "delete.retention.ms": (
        "delete_retention_ms",
        lambda k, v: _int(k, v, minimum=0),
        "log.cleaner.delete.retention.ms",
    ),
    "min.compaction.lag.ms": (
        "min_compaction_lag_ms",
        lambda k, v: _int(k, v, minimum=0),
        "log.cleaner.min.compaction.lag.ms",
    ),
    "max.compaction.lag.ms": (
        "max_compaction_lag_ms",
        lambda k, v: _int(k, v, minimum=1),
        "log.cleaner.max.compaction.lag.ms",
    ),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", _ratio, "log.cleaner.min.cleanable.ratio"),
    "file.delete.delay.ms": ("file_delete_delay_ms", lambda k, v: _int(k, v, minimum=0), "log.segment.delete.delay.ms"),
    "preallocate": ("preallocate", _bool, "log.preallocate"),
    "max.message.bytes": ("max_message_bytes", lambda k, v: _int(k, v, minimum=0), "message.max.bytes"),
    "message.timestamp.type": ("message_timestamp_type", _timestamp_type, "log.message.timestamp.type"),
}
# Broker keys with coarser units, in Kafka's precedence after the ms key: ms key -> ((key, factor), ...).
_COARSE = {
    "log.retention.ms": (("log.retention.minutes", _MINUTE_MS), ("log.retention.hours", _HOUR_MS)),
    "log.roll.ms": (("log.roll.hours", _HOUR_MS),),
    "log.roll.jitter.ms": (("log.roll.jitter.hours", _HOUR_MS),),
}
# Other `log.*` broker keys Kafka defines (accepted, not used by maintenance).
_OTHER_LOG_KEYS = frozenset(
    {
        "log.dir",
        "log.dirs",
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "log.flush.scheduler.interval.ms",
        "log.flush.offset.checkpoint.interval.ms",
        "log.flush.start.offset.checkpoint.interval.ms",
        "log.retention.check.interval.ms",
        "log.cleaner.enable",
        "log.cleaner.threads",
        "log.cleaner.io.max.bytes.per.second",
        "log.cleaner.dedupe.buffer.size",
        "log.cleaner.io.buffer.size",
        "log.cleaner.io.buffer.load.factor",
        "log.cleaner.backoff.ms",
        "log.initial.task.delay.ms",
        "log.message.format.version",
        "log.message.timestamp.difference.max.ms",
        "log.message.timestamp.before.max.ms",
        "log.message.timestamp.after.max.ms",
        "log.message.downconversion.enable",
        "log.local.retention.ms",
        "log.local.retention.bytes",
        "log.dir.failure.timeout.ms",
    }
)
_BROKER_LOG_KEYS = frozenset(
    {v[2] for v in _TOPIC_KEYS.values()} | {key for pairs in _COARSE.values() for key, _ in pairs} | _OTHER_LOG_KEYS
)


def _reject_unknown(key: str, known: frozenset[str] | set[str]) -> None:
    close = difflib.get_close_matches(key, sorted(known), n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    raise InvalidConfigError(f"unknown configuration key{hint}", key=key)


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """What maintenance reads from a broker's server.properties."""

    log_dirs: tuple[str, ...] = ()
    log_defaults: LogConfig = field(default_factory=LogConfig)
    producer_id_expiration_ms: int = 86_400_000
    dedupe_buffer_size: int = 134_217_728


def parse_broker_config(values: Mapping[str, str]) -> BrokerConfig:
    """Broker defaults from server.properties keys."""
    for key in values:
        if key.startswith("log.") and key not in _BROKER_LOG_KEYS:
            _reject_unknown(key, _BROKER_LOG_KEYS)
    effective = dict(values)
    for ms_key, coarse_keys in _COARSE.items():
        for coarse, factor in coarse_keys:
            if ms_key not in effective and coarse in values:
                effective[ms_key] = str(_int(coarse, values[coarse]) * factor)
    changes = {}
    for name, parse, broker_key in _TOPIC_KEYS.values():
        if broker_key in effective:
            changes[name] = parse(broker_key, effective[broker_key])
    dirs = effective.get("log.dirs") or effective.get("log.dir") or ""
    return BrokerConfig(
        log_dirs=tuple(d.strip() for d in dirs.split(",") if d.strip()),
        log_defaults=replace(LogConfig(), **changes),
        producer_id_expiration_ms=_int(
            "producer.id.expiration.ms", values.get("producer.id.expiration.ms", "86400000")
        ),
        dedupe_buffer_size=_int(
            "log.cleaner.dedupe.buffer.size", values.get("log.cleaner.dedupe.buffer.size", "134217728")
        ),
    )


def load_broker_config(path: Path | None, *, fs: FileSystem | None = None) -> BrokerConfig:
    """Read a server.properties file (None: Kafka's defaults)."""
    if path is None:
        return BrokerConfig()
    fs = fs or default_fs()
    return parse_broker_config(parse_java_properties(fs.read_bytes(Path(path)).decode("utf-8", "replace")))


# Topics the broker creates compacted.
_INTERNAL_COMPACTED = ("__consumer_offsets", "__transaction_state")


@dataclass(frozen=True, slots=True)
class TopicOverrides:
    """Per-topic overrides: topic name -> {LogConfig field: value}."""

    topics: Mapping[str, Mapping[str, object]] = field(default_factory=dict)


def parse_topic_overrides(document: Mapping[str, object]) -> TopicOverrides:
    """Overrides from a parsed TOML document with `[topics."name"]` tables."""
    unknown_top = set(document) - {"topics"}
    if unknown_top:
        _reject_unknown(sorted(unknown_top)[0], {"topics"})
    topics = document.get("topics", {})
    if not isinstance(topics, dict):
        raise InvalidConfigError("must be a table of topic tables", key="topics")
    parsed: dict[str, dict[str, object]] = {}
    for topic, table in topics.items():
        if not isinstance(table, dict):
            raise InvalidConfigError("must be a table", key=f"topics.{topic}")
        values = {}
        for key, value in _flatten(table).items():
            if key not in _TOPIC_KEYS:
                _reject_unknown(f"{key}", set(_TOPIC_KEYS))
            name, parse, _ = _TOPIC_KEYS[key]
            values[name] = parse(f"topics.{topic}.{key}", value)
        parsed[topic] = values
    return TopicOverrides(parsed)


def _flatten(table: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    """TOML dotted keys (`retention.ms = 1`) arrive as nested tables: join them back into Kafka names."""
    flat: dict[str, object] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def load_topic_overrides(path: Path | None) -> TopicOverrides:
    """Read a topic-config TOML file (None: no overrides).

    Raises:
        InvalidConfigError: the file is not TOML, or has an unknown key or a bad value.
    """
    if path is None:
        return TopicOverrides()
    try:
        document = tomllib.loads(Path(path).read_text())
    except tomllib.TOMLDecodeError as exc:
        raise InvalidConfigError(f"not valid TOML: {exc}", key=str(path)) from None
    return parse_topic_overrides(document)


def effective_log_config(broker: BrokerConfig, overrides: TopicOverrides, topic: str) -> LogConfig:
    """The settings for one topic: broker defaults, internal-topic policy, then the topic's overrides."""
    config = broker.log_defaults
    if topic in _INTERNAL_COMPACTED:
        config = replace(config, cleanup_policy=frozenset({"compact"}))
    return replace(config, **dict(overrides.topics.get(topic, {})))
