"""A topic's effective log config, layered exactly as a broker computes it, with the source of each value.

Layers, lowest first; a value comes from the highest layer that sets it:

| source                        | what                                                                   |
|-------------------------------|------------------------------------------------------------------------|
| `default`                     | Kafka's defaults (`LogConfig`, `ServerLogConfigs`)                      |
| `server.properties`           | the broker's static config (`--server-properties`)                      |
| `dynamic cluster default`     | the cluster-wide dynamic broker config (ConfigRecord BROKER `""`)        |
| `dynamic broker <id>`         | this broker's own dynamic config (ConfigRecord BROKER `"<id>"`; the node |
|                               | id is the log dir's, from meta.properties)                              |
| `internal topic`              | what Kafka sets when it creates `__consumer_offsets`/`__transaction_state`|
| `topic config (metadata log)` | the topic's own configs (ConfigRecord TOPIC `<name>`)                   |
| `topic-config file`           | the operator's `--topic-config` (TOML or `kafka-configs --describe` text)|

The broker layers merge as `DynamicBrokerConfig.updateCurrentConfig` does: the static properties,
then the cluster default, then the broker's own, each through `overrideProps`, which removes every
synonym of a key it sets (a dynamic `log.retention.ms` beats a static `log.retention.hours`); then
`KafkaConfig` takes the first synonym present (ServerTopicConfigSynonyms order) as the broker's
default for each topic key. Dynamic broker configs hold broker key names; as
`DynamicBrokerConfig.fromPersistentProps`, only the keys Kafka reconfigures dynamically are read
(:data:`DYNAMIC_BROKER_KEYS`: `DynamicLogConfig.ReconfigurableConfigs`, the primary synonym of each
topic key, and the cleaner's and producer-state's keys maintenance uses); the others (listeners,
ssl, quotas, non-dynamic keys) do not concern log files. The topic layers then apply on top
(`LogConfig.fromProps(defaults, overrides)`); a topic config in the metadata log is read as Kafka
validates it, ignoring keys maintenance does not use.

Kafka drops an invalid dynamic value with an error in its log; a maintenance tool must not guess
what the cluster meant, so an invalid value in the metadata log raises :class:`InvalidConfigError`
naming the layer it is in.

A topic's own configs are *known* when the metadata log has the topic, the topic-config file has an
entry for it, or it is an internal topic (Kafka's built-in settings). Otherwise (a ZooKeeper-mode
log dir, no metadata log, a topic deleted from the cluster) only the broker's defaults are known,
and destructive jobs refuse to apply them (:attr:`TopicLogConfig.known`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from storage_core.config import (
    TOPIC_KEYS,
    BrokerConfig,
    LogConfig,
    TopicOverrides,
    parse_broker_config,
    parse_topic_configs,
    winning_synonym,
)
from storage_core.errors import InvalidConfigError

if TYPE_CHECKING:
    from storage_core.metadata import MetadataImage

DEFAULT = "default"
SERVER_PROPERTIES = "server.properties"
DYNAMIC_CLUSTER_DEFAULT = "dynamic cluster default"
INTERNAL_TOPIC = "internal topic"
METADATA_TOPIC_CONFIG = "topic config (metadata log)"
TOPIC_CONFIG_FILE = "topic-config file"


def dynamic_broker_source(node_id: int) -> str:
    """The source name of broker `node_id`'s own dynamic config."""
    return f"dynamic broker {node_id}"


# Broker keys read from dynamic configs: DynamicLogConfig.ReconfigurableConfigs (the first synonym of
# every topic key, ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS), LogCleaner.ReconfigurableConfigs
# and DynamicProducerStateManagerConfig, as far as maintenance reads them.
DYNAMIC_BROKER_KEYS = frozenset(
    {spec.synonyms[0].key for spec in TOPIC_KEYS.values() if spec.synonyms}
    | {"log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor", "producer.id.expiration.ms"}
)
# broker key -> every synonym of it (itself included), for overrideProps.
_SYNONYM_GROUPS = {s.key: tuple(t.key for t in spec.synonyms) for spec in TOPIC_KEYS.values() for s in spec.synonyms}
_KEY_OF_FIELD = {spec.field: key for key, spec in TOPIC_KEYS.items()}
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")


def format_config_value(value: object) -> str:
    """A LogConfig value as Kafka prints it (`compact,delete`, `true`, `0.5`, `604800000`)."""
    if isinstance(value, frozenset):
        return ",".join(sorted(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True, slots=True)
class ConfigValue:
    """One effective setting: its Kafka name, its value as Kafka prints it, and the layer it came from."""

    name: str
    value: str
    source: str

    def __str__(self) -> str:
        return f"{self.name}={self.value} ({self.source})"


@dataclass(frozen=True, slots=True)
class TopicLogConfig:
    """A topic's effective log config on one broker.

    Attributes:
        topic: the topic name.
        config: the settings.
        sources: topic key -> the layer its value came from (every key of `TOPIC_KEYS`).
        known: the topic's own configs are known (metadata log, topic-config file or internal
            topic); if False, `config` holds only the broker's defaults.
    """

    topic: str
    config: LogConfig
    sources: Mapping[str, str]
    known: bool

    def value(self, name: str) -> ConfigValue:
        """The setting `name` (a topic key) with its source."""
        return ConfigValue(name, format_config_value(getattr(self.config, TOPIC_KEYS[name].field)), self.sources[name])

    def values(self, *names: str) -> tuple[ConfigValue, ...]:
        """The settings `names` (all topic keys if none), with their sources."""
        return tuple(self.value(name) for name in names or TOPIC_KEYS)

    def describe(self, *names: str) -> str:
        """`name=value (source), ...` for a decision row."""
        return ", ".join(map(str, self.values(*names)))


def internal_topic_settings(broker: BrokerConfig, topic: str) -> dict[str, object]:
    """What the broker sets when it creates an internal topic (GroupCoordinator, TransactionStateManager:
    `cleanup.policy=compact`, `segment.bytes` from `offsets.topic.segment.bytes` /
    `transaction.state.log.segment.bytes`), as LogConfig fields; empty for any other topic."""
    segment_bytes = {
        "__consumer_offsets": broker.offsets_topic_segment_bytes,
        "__transaction_state": broker.transaction_state_log_segment_bytes,
    }.get(topic)
    if segment_bytes is None:
        return {}
    return {"cleanup_policy": frozenset({"compact"}), "segment_bytes": segment_bytes}


@dataclass(frozen=True, slots=True)
class LayeredConfigs:
    """Everything that decides any topic's log config on one broker.

    Attributes:
        broker: the effective broker config (server.properties under the dynamic broker configs):
            the topic defaults, the cleaner's buffer, the producer id expiration.
        broker_sources: topic key -> the layer the broker's default for it came from.
        metadata_topics: topic name -> its configs (Kafka names, as stored) in the metadata log;
            None when there is no metadata log.
        file: the operator's topic-config file.
        metadata_source: where the metadata came from (for messages), "" without one.
    """

    broker: BrokerConfig
    broker_sources: Mapping[str, str]
    metadata_topics: Mapping[str, Mapping[str, str]] | None
    file: TopicOverrides = field(default_factory=TopicOverrides)
    metadata_source: str = ""

    def knows(self, topic: str) -> bool:
        """The topic's own configs are known (see the module docstring)."""
        in_metadata = self.metadata_topics is not None and topic in self.metadata_topics
        return in_metadata or topic in self.file.topics or topic in INTERNAL_TOPICS

    def topic(self, topic: str) -> TopicLogConfig:
        """The topic's effective log config with the source of each value.

        Raises:
            InvalidConfigError: the topic's config in the metadata log has a bad value.
        """
        sources = dict(self.broker_sources)
        changes: dict[str, object] = {}
        layers: list[tuple[str, Mapping[str, object]]] = [(INTERNAL_TOPIC, internal_topic_settings(self.broker, topic))]
        if self.metadata_topics is not None and topic in self.metadata_topics:
            try:
                layers.append((METADATA_TOPIC_CONFIG, parse_topic_configs(self.metadata_topics[topic])))
            except InvalidConfigError as exc:
                raise _naming(f"the {METADATA_TOPIC_CONFIG} of topic {topic!r} ({self.metadata_source})", exc) from None
        layers.append((TOPIC_CONFIG_FILE, self.file.topics.get(topic, {})))
        for source, values in layers:
            for name, value in values.items():
                changes[name] = value
                sources[_KEY_OF_FIELD[name]] = source
        return TopicLogConfig(topic, replace(self.broker.log_defaults, **changes), sources, self.knows(topic))


def _naming(where: str, exc: InvalidConfigError) -> InvalidConfigError:
    """`exc` with the layer it was found in."""
    return InvalidConfigError(f"invalid value in {where}: {exc}", key=exc.key)


def layer_configs(
    static: BrokerConfig,
    *,
    file: TopicOverrides | None = None,
    image: MetadataImage | None = None,
    node_id: int | None = None,
) -> LayeredConfigs:
    """Layer the broker's static config, the cluster's dynamic configs and the topic configs.

    Args:
        static: the broker's server.properties (:func:`storage_core.config.load_broker_config`).
        file: the operator's topic-config file.
        image: the cluster's metadata image (None: no metadata log, e.g. a ZooKeeper-mode cluster).
        node_id: this broker's node id (meta.properties), for its own dynamic config.

    Raises:
        InvalidConfigError: a bad value in a dynamic broker config (naming the layer), or per-broker
            dynamic configs in the metadata log while the node id is unknown.
    """
    dynamic: list[tuple[str, Mapping[str, str]]] = []
    if image is not None:
        dynamic.append((DYNAMIC_CLUSTER_DEFAULT, image.cluster_broker_config))
        if node_id is not None:
            dynamic.append((dynamic_broker_source(node_id), image.broker_configs.get(node_id, {})))
        elif any(_dynamic_keys(values) for values in image.broker_configs.values()):
            brokers = ", ".join(str(b) for b in sorted(image.broker_configs))
            raise InvalidConfigError(
                f"the metadata log holds per-broker dynamic configs (brokers {brokers}) but this broker's node "
                "id is unknown (no meta.properties in the log dir): cannot tell which apply",
                key="node.id",
            )
    merged = dict(static.properties)
    source_of = dict.fromkeys(merged, SERVER_PROPERTIES)
    for source, values in dynamic:
        read = _dynamic_keys(values)
        try:
            parse_broker_config(read)
        except InvalidConfigError as exc:
            raise _naming(f"the {source} config ({image.source if image else ''})", exc) from None
        for key, value in read.items():
            for synonym in _SYNONYM_GROUPS.get(key, (key,)):  # DynamicBrokerConfig.overrideProps
                merged.pop(synonym, None)
                source_of.pop(synonym, None)
            merged[key], source_of[key] = value, source
    broker = parse_broker_config(merged)
    broker_sources = {}
    for key, spec in TOPIC_KEYS.items():
        synonym = winning_synonym(spec, merged)
        broker_sources[key] = DEFAULT if synonym is None else source_of[synonym.key]
    return LayeredConfigs(
        broker=broker,
        broker_sources=broker_sources,
        metadata_topics=None if image is None else _topic_configs(image),
        file=file or TopicOverrides(),
        metadata_source="" if image is None else image.source,
    )


def _dynamic_keys(values: Mapping[str, str]) -> dict[str, str]:
    return {key: value for key, value in values.items() if key in DYNAMIC_BROKER_KEYS}


def _topic_configs(image: MetadataImage) -> dict[str, Mapping[str, str]]:
    """Every topic of the image with its configs ({} when it has none)."""
    return {name: image.topic_configs.get(name, {}) for name in image.topics}
