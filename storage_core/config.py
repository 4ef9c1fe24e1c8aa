"""Kafka's log configuration: topic-level keys, their broker synonyms and defaults (kafka-format.md §13,
kafka-maintenance.md §1.7).

Mirrors `LogConfig.java` (topic keys, defaults, validators), `ServerTopicConfigSynonyms.java`
(which broker key stands for which topic key, in precedence order, with unit conversions) and
`ServerLogConfigs.java`/`CleanerConfig.java` (broker-only settings).

This module parses and validates each source of settings: a broker's server.properties
(:func:`load_broker_config`) and the operator's topic-config file (:func:`load_topic_overrides`: a
TOML file of `[topics."name"]` tables, or the text `kafka-configs.sh --describe` prints, see
:mod:`storage_core.config_describe`). How they are layered with the cluster's dynamic configs from
the KRaft metadata log, and where each effective value came from, is :mod:`storage_core.config_layers`.

Broker synonyms, highest precedence first (`ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS`):
`log.retention.ms` > `log.retention.minutes` > `log.retention.hours`; `log.roll.ms` > `log.roll.hours`;
`log.roll.jitter.ms` > `log.roll.jitter.hours`. A negative broker retention means unlimited (-1), as
`KafkaConfig.logRetentionTimeMillis`.

Validation follows Kafka's `ConfigDef`: an unknown key (likely a typo) or a bad value raises
:class:`InvalidConfigError` naming the key (and the closest known key). A server.properties holds
many broker keys maintenance never reads (listeners, node.id, ssl.*, ...): real Kafka broker keys
are accepted and ignored; unknown keys are rejected.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from storage_core.cleaner.offset_map import ENTRY_SIZE
from storage_core.config_describe import is_describe_output, parse_describe_output
from storage_core.config_names import FREE_FORM_BROKER_PREFIXES, OTHER_BROKER_KEYS, OTHER_TOPIC_KEYS
from storage_core.errors import InvalidConfigError
from storage_core.fs import FileSystem, default_fs
from storage_core.java_properties import parse_java_properties

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_HOUR_MS = 3_600_000
_MINUTE_MS = 60_000

Parser = Callable[[str, object], object]
_INTEGER = re.compile(r"[+-]?\d+")


def _integer(minimum: int, maximum: int = _INT64_MAX) -> Parser:
    """A ConfigDef INT (maximum 2**31-1) or LONG with `Range.atLeast(minimum)`."""

    def parse(key: str, raw: object) -> int:
        text = str(raw).strip()
        if isinstance(raw, bool) or not _INTEGER.fullmatch(text):
            raise InvalidConfigError("not an integer", key=key, value=raw)
        value = int(text)
        if not minimum <= value <= maximum:
            raise InvalidConfigError(f"must be between {minimum} and {maximum}", key=key, value=raw)
        return value

    return parse


def _number(raw: object) -> float | None:
    """`raw` as a float, None if it is not a number (a bool is not one)."""
    try:
        return float(str(raw).strip()) if not isinstance(raw, bool) else None
    except ValueError:
        return None


def _ratio(key: str, raw: object) -> float:
    value = _number(raw)
    if value is None or not 0.0 <= value <= 1.0:
        raise InvalidConfigError("must be a number between 0 and 1", key=key, value=raw)
    return value


MIN_INDEX_BYTES = 24
"""The smallest `segment.index.bytes` maintenance accepts: a time index keeps its last slot for the
entry a segment gets when it is rolled (`TimeIndex.isFull`: entries >= maxEntries - 1), so below two
12-byte entries it holds none and any segment with more than one index interval of data fails to
recover or clean. Kafka's validator accepts 4 (a broker with it rolls a segment per batch)."""


def _index_bytes(key: str, raw: object) -> int:
    """Kafka's `atLeast(4)` INT, then at least :data:`MIN_INDEX_BYTES` (refused before any change)."""
    value = _integer(4, _INT32_MAX)(key, raw)
    if value < MIN_INDEX_BYTES:
        raise InvalidConfigError(
            f"below {MIN_INDEX_BYTES} bytes, an index holds no time-index entry (Kafka keeps the last 12-byte slot "
            "for a rolled segment's final entry): recovering or cleaning a segment with more than one index "
            f"interval of data would fail half way; use at least {MIN_INDEX_BYTES}",
            key=key,
            value=raw,
        )
    return value


def _double(key: str, raw: object) -> float:
    """A ConfigDef DOUBLE without a validator: any finite number."""
    value = _number(raw)
    if value is None or value != value or value in (float("inf"), float("-inf")):
        raise InvalidConfigError("not a number", key=key, value=raw)
    return value


def _boolean(key: str, raw: object) -> bool:
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise InvalidConfigError("must be true or false", key=key, value=raw)
    return text == "true"


def _choice(*allowed: str) -> Parser:
    def parse(key: str, raw: object) -> str:
        text = str(raw).strip()
        if text not in allowed:
            raise InvalidConfigError(f"must be one of {', '.join(allowed)}", key=key, value=raw)
        return text

    return parse


def _cleanup_policy(key: str, raw: object) -> frozenset[str]:
    """A comma-separated string (Kafka's LIST type) or a TOML list of `delete` and `compact`."""
    items = raw if isinstance(raw, list) else str(raw).split(",")
    policy = frozenset(str(item).strip() for item in items if str(item).strip())
    if not policy or not policy <= {"delete", "compact"}:
        raise InvalidConfigError("must be delete, compact or both (compact,delete)", key=key, value=raw)
    return policy


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Topic-level log settings, Kafka's defaults (`LogConfig.java`); one field per Kafka key.

    Attributes mirror `segment.bytes`, `segment.ms`, ... (dots become underscores);
    `cleanup_policy` is the set of `delete`/`compact`.
    """

    segment_bytes: int = 1_073_741_824
    segment_ms: int = 604_800_000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10_485_760
    index_interval_bytes: int = 4096
    retention_ms: int = 604_800_000
    retention_bytes: int = -1
    cleanup_policy: frozenset[str] = frozenset({"delete"})
    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = _INT64_MAX
    min_cleanable_dirty_ratio: float = 0.5
    file_delete_delay_ms: int = 60_000
    preallocate: bool = False
    max_message_bytes: int = 1_048_588
    message_timestamp_type: str = "CreateTime"
    compression_type: str = "producer"
    local_retention_ms: int = -2
    local_retention_bytes: int = -2
    remote_storage_enable: bool = False
    remote_log_copy_disable: bool = False

    @property
    def compact(self) -> bool:
        """`cleanup.policy` contains `compact` (the log cleaner works on this topic)."""
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        """`cleanup.policy` contains `delete` (time and size retention apply)."""
        return "delete" in self.cleanup_policy

    @property
    def effective_local_retention_ms(self) -> int:
        """`local.retention.ms`, where -2 (its default) means `retention.ms` (`LogConfig.localRetentionMs`)."""
        return self.retention_ms if self.local_retention_ms == -2 else self.local_retention_ms

    @property
    def effective_local_retention_bytes(self) -> int:
        """`local.retention.bytes`, where -2 (its default) means `retention.bytes` (`LogConfig.localRetentionBytes`)."""
        return self.retention_bytes if self.local_retention_bytes == -2 else self.local_retention_bytes

    @property
    def tiered(self) -> bool:
        """`remote.storage.enable`: the topic's closed segments are copied to remote storage (KIP-405)."""
        return self.remote_storage_enable


@dataclass(frozen=True, slots=True)
class _Synonym:
    """A broker key standing for a topic key; its value times `factor` is the topic value."""

    key: str
    factor: int = 1


@dataclass(frozen=True, slots=True)
class TopicKey:
    """How one topic-level Kafka key maps to a :class:`LogConfig` field."""

    field: str
    parse: Parser
    synonyms: tuple[_Synonym, ...]


def _key(name: str, parse: Parser, *synonyms: str | _Synonym) -> TopicKey:
    return TopicKey(name, parse, tuple(s if isinstance(s, _Synonym) else _Synonym(s) for s in synonyms))


# Topic-level key -> LogConfig field, validator (LogConfig.java CONFIG), broker synonyms in precedence order.
TOPIC_KEYS: dict[str, TopicKey] = {
    "segment.bytes": _key("segment_bytes", _integer(14, _INT32_MAX), "log.segment.bytes"),
    "segment.ms": _key("segment_ms", _integer(1), "log.roll.ms", _Synonym("log.roll.hours", _HOUR_MS)),
    "segment.jitter.ms": _key(
        "segment_jitter_ms", _integer(0), "log.roll.jitter.ms", _Synonym("log.roll.jitter.hours", _HOUR_MS)
    ),
    "segment.index.bytes": _key("segment_index_bytes", _index_bytes, "log.index.size.max.bytes"),
    "index.interval.bytes": _key("index_interval_bytes", _integer(0, _INT32_MAX), "log.index.interval.bytes"),
    "retention.ms": _key(
        "retention_ms",
        _integer(-1),
        "log.retention.ms",
        _Synonym("log.retention.minutes", _MINUTE_MS),
        _Synonym("log.retention.hours", _HOUR_MS),
    ),
    "retention.bytes": _key("retention_bytes", _integer(-(2**63)), "log.retention.bytes"),
    "cleanup.policy": _key("cleanup_policy", _cleanup_policy, "log.cleanup.policy"),
    "delete.retention.ms": _key("delete_retention_ms", _integer(0), "log.cleaner.delete.retention.ms"),
    "min.compaction.lag.ms": _key("min_compaction_lag_ms", _integer(0), "log.cleaner.min.compaction.lag.ms"),
    "max.compaction.lag.ms": _key("max_compaction_lag_ms", _integer(1), "log.cleaner.max.compaction.lag.ms"),
    "min.cleanable.dirty.ratio": _key("min_cleanable_dirty_ratio", _ratio, "log.cleaner.min.cleanable.ratio"),
    "file.delete.delay.ms": _key("file_delete_delay_ms", _integer(0), "log.segment.delete.delay.ms"),
    "preallocate": _key("preallocate", _boolean, "log.preallocate"),
    "max.message.bytes": _key("max_message_bytes", _integer(0, _INT32_MAX), "message.max.bytes"),
    "message.timestamp.type": _key(
        "message_timestamp_type", _choice("CreateTime", "LogAppendTime"), "log.message.timestamp.type"
    ),
    "compression.type": _key(
        "compression_type", _choice("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), "compression.type"
    ),
    "local.retention.ms": _key("local_retention_ms", _integer(-2), "log.local.retention.ms"),
    "local.retention.bytes": _key("local_retention_bytes", _integer(-2), "log.local.retention.bytes"),
    "remote.storage.enable": _key("remote_storage_enable", _boolean),
    "remote.log.copy.disable": _key("remote_log_copy_disable", _boolean),
}


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """What maintenance reads from a broker's server.properties.

    Attributes:
        log_dirs: `log.dirs` (else `log.dir`), as written.
        log_defaults: the broker's topic defaults (topic keys through their broker synonyms).
        dedupe_buffer_size: `log.cleaner.dedupe.buffer.size`, the memory of all cleaner threads' offset maps.
        dedupe_buffer_load_factor: `log.cleaner.io.buffer.load.factor`: the cleaner stops filling an
            offset map at this share of its slots (`Cleaner.buildOffsetMap`'s `maxDesiredMapSize`).
        cleaner_threads: `log.cleaner.threads`; each thread's map gets an equal share of the memory.
        producer_id_expiration_ms: `producer.id.expiration.ms`.
        offsets_topic_segment_bytes: `offsets.topic.segment.bytes` (segment.bytes of `__consumer_offsets`).
        transaction_state_log_segment_bytes: `transaction.state.log.segment.bytes` (of `__transaction_state`).
        properties: every key of the file as written (the static layer under the dynamic broker
            configs, :mod:`storage_core.config_layers`).
    """

    log_dirs: tuple[str, ...] = ()
    log_defaults: LogConfig = field(default_factory=LogConfig)
    dedupe_buffer_size: int = 134_217_728
    dedupe_buffer_load_factor: float = 0.9
    cleaner_threads: int = 1
    producer_id_expiration_ms: int = 86_400_000
    offsets_topic_segment_bytes: int = 104_857_600
    transaction_state_log_segment_bytes: int = 104_857_600
    properties: Mapping[str, str] = field(default_factory=dict, compare=False)  # what, not where from

    @property
    def offset_map_bytes(self) -> int:
        """One cleaner's offset map memory, as `LogCleaner` sizes each thread's `SkimpyOffsetMap`:
        `min(dedupe.buffer.size / threads, Int.MaxValue)`; one partition task is one cleaner."""
        return min(self.dedupe_buffer_size // self.cleaner_threads, _INT32_MAX)


def check_offset_map(memory_bytes: int, load_factor: float, *, key: str) -> None:
    """Kafka's `Cleaner` requirement, before any change: `slots * load factor > 1` ("offset map is too
    small to fit in even a single message, so log cleaning will never make progress"), slots being
    24-byte entries; and a load factor of at most 1 (above it the cleaner would put into a full map
    and fail half way, as Kafka's `require(entries < slots)` does).

    Raises:
        InvalidConfigError: naming `key`.
    """
    slots = min(memory_bytes, _INT32_MAX) // ENTRY_SIZE
    if load_factor > 1:
        raise InvalidConfigError(
            f"load factor {load_factor} above 1 asks the offset map for more entries than it has slots",
            key="log.cleaner.io.buffer.load.factor",
            value=load_factor,
        )
    if not slots * load_factor > 1:
        raise InvalidConfigError(
            f"offset map is too small to fit in even a single message, so log cleaning will never make progress "
            f"({slots} slots of {ENTRY_SIZE} bytes x load factor {load_factor} <= 1)",
            key=key,
            value=memory_bytes,
        )


# Broker-only keys maintenance uses -> BrokerConfig field, validator (CleanerConfig, ServerLogConfigs, ...).
BROKER_KEYS: dict[str, tuple[str, Parser]] = {
    "log.cleaner.dedupe.buffer.size": ("dedupe_buffer_size", _integer(-(2**63))),  # LONG, checked with threads
    "log.cleaner.io.buffer.load.factor": ("dedupe_buffer_load_factor", _double),  # DOUBLE, checked with the map
    "log.cleaner.threads": ("cleaner_threads", _integer(0, _INT32_MAX)),
    "producer.id.expiration.ms": ("producer_id_expiration_ms", _integer(1, _INT32_MAX)),
    "offsets.topic.segment.bytes": ("offsets_topic_segment_bytes", _integer(1, _INT32_MAX)),
    "transaction.state.log.segment.bytes": ("transaction_state_log_segment_bytes", _integer(1, _INT32_MAX)),
}
_LOG_DIRS_KEYS = ("log.dirs", "log.dir")
_KNOWN_BROKER_KEYS = frozenset(
    {s.key for spec in TOPIC_KEYS.values() for s in spec.synonyms}
    | set(BROKER_KEYS)
    | set(_LOG_DIRS_KEYS)
    | OTHER_BROKER_KEYS
)


def _reject_unknown(key: str, known: frozenset[str], *, where: str) -> None:
    close = difflib.get_close_matches(key, sorted(known), n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    raise InvalidConfigError(f"unknown {where} configuration key{hint}", key=key)


def winning_synonym(spec: TopicKey, values: Mapping[str, str]) -> _Synonym | None:
    """The broker key (`.key`) that sets `spec`'s topic key among `values`: the first synonym
    present (ServerTopicConfigSynonyms order), or None."""
    return next((s for s in spec.synonyms if s.key in values), None)


def parse_broker_config(values: Mapping[str, str]) -> BrokerConfig:
    """The broker settings of server.properties keys and values.

    Args:
        values: the keys of a server.properties file (see :func:`load_broker_config`).

    Returns:
        The broker's topic defaults, log dirs and cleaner settings (Kafka's defaults where unset).

    Raises:
        InvalidConfigError: an unknown key (likely a typo) or a bad value.
    """
    for key in values:
        if key not in _KNOWN_BROKER_KEYS and not key.startswith(FREE_FORM_BROKER_PREFIXES):
            _reject_unknown(key, _KNOWN_BROKER_KEYS, where="broker")
    defaults: dict[str, object] = {}
    for topic_key, spec in TOPIC_KEYS.items():
        # The first synonym present wins (ServerTopicConfigSynonyms order); coarser units convert to ms.
        synonym = winning_synonym(spec, values)
        if synonym is None:
            continue
        raw: object = values[synonym.key]
        if synonym.factor != 1:
            raw = _integer(-(2**31), _INT32_MAX)(synonym.key, raw) * synonym.factor  # Kafka: an INT key
        if topic_key == "retention.ms" and int(_integer(-(2**63))(synonym.key, raw)) < 0:
            raw = -1  # KafkaConfig.logRetentionTimeMillis: any negative broker retention is unlimited
        defaults[spec.field] = spec.parse(synonym.key, raw)
    broker = {name: parse(key, values[key]) for key, (name, parse) in BROKER_KEYS.items() if key in values}
    dirs = values.get("log.dirs") or values.get("log.dir") or ""
    config = BrokerConfig(
        log_dirs=tuple(d.strip() for d in dirs.split(",") if d.strip()),
        log_defaults=replace(LogConfig(), **defaults),
        properties=dict(values),
        **broker,  # type: ignore[arg-type]
    )
    _check_cleaner(config, values)
    return config


def _check_cleaner(config: BrokerConfig, values: Mapping[str, str]) -> None:
    """KafkaConfig's `require(logCleanerDedupeBufferSize / logCleanerThreads > 1024 * 1024)` (a broker does not
    start otherwise), then the Cleaner's own requirement on each thread's map (:func:`check_offset_map`)."""
    if config.cleaner_threads == 0:
        raise InvalidConfigError(
            "0 cleaner threads: a broker fails to start (it divides log.cleaner.dedupe.buffer.size by it)",
            key="log.cleaner.threads",
            value=values.get("log.cleaner.threads"),
        )
    if not config.dedupe_buffer_size // config.cleaner_threads > 1024 * 1024:
        raise InvalidConfigError(
            "must be at least 1MB per cleaner thread (Kafka refuses to start below it)",
            key="log.cleaner.dedupe.buffer.size",
            value=values.get("log.cleaner.dedupe.buffer.size", config.dedupe_buffer_size),
        )
    check_offset_map(config.offset_map_bytes, config.dedupe_buffer_load_factor, key="log.cleaner.dedupe.buffer.size")


def _read_text(path: Path, fs: FileSystem | None, *, encoding: str) -> str:
    fs = fs or default_fs()
    try:
        return fs.read_bytes(Path(path)).decode(encoding)
    except OSError as exc:
        raise InvalidConfigError(f"cannot read the file: {exc.strerror or exc}", key=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InvalidConfigError(f"not {encoding} text: {exc.reason}", key=str(path)) from None


def load_broker_config(path: Path | None, *, fs: FileSystem | None = None) -> BrokerConfig:
    """Read a broker's server.properties (Java properties, ISO-8859-1 as `Properties.load`).

    Args:
        path: the file; None gives Kafka's defaults.
        fs: the file system.

    Raises:
        InvalidConfigError: the file cannot be read, or has an unknown key or a bad value.
    """
    if path is None:
        return BrokerConfig()
    return parse_broker_config(parse_java_properties(_read_text(path, fs, encoding="latin-1")))


@dataclass(frozen=True, slots=True)
class TopicOverrides:
    """Per-topic overrides: topic name -> {LogConfig field: parsed value} (treat as read-only)."""

    topics: Mapping[str, Mapping[str, object]] = field(default_factory=dict)


_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_KNOWN_TOPIC_KEYS = frozenset(TOPIC_KEYS) | OTHER_TOPIC_KEYS


def _flatten(table: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    """TOML dotted keys (`retention.ms = 1`) arrive as nested tables: join them back into Kafka names."""
    flat: dict[str, object] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def parse_topic_configs(values: Mapping[str, object]) -> dict[str, object]:
    """The LogConfig fields of one topic's configs as the cluster stores them (Kafka's names).

    Used for configs Kafka itself wrote (the metadata log's topic ConfigRecords, the text of
    `kafka-configs --describe`): every key maintenance uses is validated with Kafka's validator;
    other keys (`min.insync.replicas`, vendor keys such as `confluent.*`) are Kafka's business and
    are ignored, never rejected.

    Raises:
        InvalidConfigError: a bad value of a key maintenance uses.
    """
    return {TOPIC_KEYS[key].field: TOPIC_KEYS[key].parse(key, raw) for key, raw in values.items() if key in TOPIC_KEYS}


def parse_topic_overrides(document: Mapping[str, object]) -> TopicOverrides:
    """Overrides from a parsed TOML document of `[topics."name"]` tables with topic-level Kafka keys.

    `cleanup.policy` may be a string (`"compact,delete"`) or a list. Kafka topic keys that
    maintenance does not use (`min.insync.replicas`, ...) are accepted and ignored.

    Raises:
        InvalidConfigError: an unknown table or key, an invalid topic name, or a bad value.
    """
    for key in document:
        if key != "topics":
            _reject_unknown(key, frozenset({"topics"}), where="top-level topic-config")
    topics = document.get("topics", {})
    if not isinstance(topics, dict):
        raise InvalidConfigError('must be a table of [topics."name"] tables', key="topics")
    parsed: dict[str, dict[str, object]] = {}
    for topic, table in topics.items():
        _check_topic_name(topic)
        if not isinstance(table, dict):
            raise InvalidConfigError(f'[topics."{topic}"] must be a table', key="topics", value=table)
        values = _flatten(table)
        for key in values:
            if key not in _KNOWN_TOPIC_KEYS:
                _reject_unknown(key, _KNOWN_TOPIC_KEYS, where=f'topic (in [topics."{topic}"])')
        parsed[topic] = parse_topic_configs(values)
    return TopicOverrides(parsed)


def _check_topic_name(topic: str) -> None:
    if not _TOPIC_NAME.fullmatch(topic) or topic in (".", ".."):
        raise InvalidConfigError("not a valid Kafka topic name", key="topics", value=topic)


def load_topic_overrides(path: Path | None, *, fs: FileSystem | None = None) -> TopicOverrides:
    """Read a topic-config file: TOML, or the text of `kafka-configs.sh --describe --entity-type
    topics [--all]` (told apart by content, :func:`storage_core.config_describe.is_describe_output`).

    Args:
        path: the file; None gives no overrides.
        fs: the file system.

    Raises:
        InvalidConfigError: the file cannot be read, is neither TOML nor describe output, or has an
            unknown key (TOML) or a bad value.
    """
    if path is None:
        return TopicOverrides()
    text = _read_text(path, fs, encoding="utf-8")
    if is_describe_output(text):
        described = parse_describe_output(text)
        for topic in described:
            _check_topic_name(topic)
        return TopicOverrides({topic: parse_topic_configs(values) for topic, values in described.items()})
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidConfigError(
            f"neither TOML nor kafka-configs --describe output: not valid TOML: {exc}", key=str(path)
        ) from None
    return parse_topic_overrides(document)
