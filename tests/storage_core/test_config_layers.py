"""A topic's log config layered as a broker computes it, with the source of every value."""

from __future__ import annotations

import pytest

from storage_core.config import TOPIC_KEYS, LogConfig, parse_broker_config, parse_topic_overrides
from storage_core.config_layers import ConfigValue, layer_configs
from storage_core.errors import InvalidConfigError
from storage_core.metadata import MetadataImage, PartitionImage, TopicImage

ORDERS_ID = "0CM0rYlfQiqSTCH-x54Zhw"


def _image(
    *,
    topic_configs: dict[str, dict[str, str]] | None = None,
    cluster: dict[str, str] | None = None,
    brokers: dict[int, dict[str, str]] | None = None,
    topics: tuple[str, ...] = ("orders", "clicks"),
) -> MetadataImage:
    """A metadata image as the replay of a metadata log gives it (hand-made here: the layering only reads it)."""
    made = {
        name: TopicImage(
            name,
            ORDERS_ID if name == "orders" else "LJ-0nObETNu9zQf653GiTA",
            {0: PartitionImage(0, (1,), (1,), 1, 0, 0)},
        )
        for name in topics
    }
    return MetadataImage(
        topics=made,
        brokers={},
        topic_configs=topic_configs or {},
        cluster_broker_config=cluster or {},
        broker_configs=brokers or {},
        features={},
        last_offset=99,
        source="/kafka/__cluster_metadata-0",
    )


def test_every_layer_in_order_with_its_source() -> None:
    static = parse_broker_config({"log.retention.hours": "100", "log.segment.bytes": "2000000", "node.id": "1"})
    image = _image(
        cluster={"log.retention.bytes": "5000", "log.segment.bytes": "3000000"},
        brokers={1: {"log.retention.bytes": "6000"}, 2: {"log.retention.bytes": "7000"}},
        topic_configs={"orders": {"cleanup.policy": "compact", "min.insync.replicas": "2", "confluent.x": "y"}},
    )
    file = parse_topic_overrides({"topics": {"orders": {"min.cleanable.dirty.ratio": 0.1}}})
    orders = layer_configs(static, file=file, image=image, node_id=1).topic("orders")
    assert orders.known
    assert orders.values("segment.bytes", "retention.ms", "retention.bytes", "cleanup.policy") == (
        ConfigValue("segment.bytes", "3000000", "dynamic cluster default"),
        ConfigValue("retention.ms", "360000000", "server.properties"),
        ConfigValue("retention.bytes", "6000", "dynamic broker 1"),
        ConfigValue("cleanup.policy", "compact", "topic config (metadata log)"),
    )
    assert orders.value("min.cleanable.dirty.ratio") == ConfigValue(
        "min.cleanable.dirty.ratio", "0.1", "topic-config file"
    )
    assert orders.value("delete.retention.ms") == ConfigValue("delete.retention.ms", "86400000", "default")
    assert set(orders.sources) == set(TOPIC_KEYS)
    # Another broker of the same cluster gets its own dynamic config.
    assert layer_configs(static, image=image, node_id=2).topic("orders").config.retention_bytes == 7000


def test_a_dynamic_key_removes_its_synonyms_below_it() -> None:
    """DynamicBrokerConfig.overrideProps: a dynamic log.retention.ms beats a static log.retention.hours,
    while in one layer log.retention.ms beats log.retention.hours (ServerTopicConfigSynonyms order)."""
    static = parse_broker_config({"log.retention.hours": "1", "log.retention.minutes": "5"})
    assert layer_configs(static).topic("t").value("retention.ms") == ConfigValue(
        "retention.ms", "300000", "server.properties"
    )
    image = _image(cluster={"log.retention.ms": "1000"})
    assert layer_configs(static, image=image, node_id=1).topic("t").value("retention.ms") == ConfigValue(
        "retention.ms", "1000", "dynamic cluster default"
    )
    static_ms = parse_broker_config({"log.retention.ms": "42"})
    image = _image(cluster={"log.retention.ms": "1000"}, brokers={1: {"log.retention.ms": "2000"}})
    assert layer_configs(static_ms, image=image, node_id=1).topic("t").config.retention_ms == 2000


def test_keys_kafka_does_not_reconfigure_dynamically_are_not_read() -> None:
    """fromPersistentProps drops non-dynamic keys (log.retention.hours is a synonym, not the dynamic
    key); keys that are not about logs (listeners, ssl) do not concern maintenance."""
    image = _image(cluster={"log.retention.hours": "1", "listeners": "PLAINTEXT://:9092", "log.dirs": "/x"})
    layers = layer_configs(parse_broker_config({}), image=image, node_id=1)
    assert layers.topic("t").value("retention.ms") == ConfigValue("retention.ms", "604800000", "default")
    assert layers.broker.log_dirs == ()


def test_dynamic_broker_keys_beyond_topic_defaults_reach_the_broker_config() -> None:
    image = _image(brokers={3: {"log.cleaner.dedupe.buffer.size": "2097152", "producer.id.expiration.ms": "1000"}})
    broker = layer_configs(parse_broker_config({}), image=image, node_id=3).broker
    assert (broker.dedupe_buffer_size, broker.producer_id_expiration_ms) == (2_097_152, 1000)


@pytest.mark.parametrize(
    ("image", "where"),
    [
        (_image(cluster={"log.retention.ms": "soon"}), "dynamic cluster default"),
        (_image(brokers={1: {"log.cleanup.policy": "archive"}}), "dynamic broker 1"),
    ],
)
def test_an_invalid_dynamic_broker_value_names_its_layer(image: MetadataImage, where: str) -> None:
    with pytest.raises(InvalidConfigError) as error:
        layer_configs(parse_broker_config({}), image=image, node_id=1)
    assert where in str(error.value)
    assert "/kafka/__cluster_metadata-0" in str(error.value)


def test_an_invalid_topic_config_in_the_metadata_names_the_topic() -> None:
    layers = layer_configs(parse_broker_config({}), image=_image(topic_configs={"orders": {"retention.ms": "-7"}}))
    assert layers.topic("clicks").config == LogConfig()  # the other topics are unaffected
    with pytest.raises(InvalidConfigError) as error:
        layers.topic("orders")
    assert error.value.key == "retention.ms"
    assert "topic config (metadata log) of topic 'orders'" in str(error.value)


def test_per_broker_configs_need_the_node_id() -> None:
    image = _image(brokers={1: {"log.retention.ms": "1"}})
    with pytest.raises(InvalidConfigError) as error:
        layer_configs(parse_broker_config({}), image=image, node_id=None)
    assert error.value.key == "node.id"
    # Per-broker configs that do not concern logs leave nothing to tell apart.
    image = _image(brokers={1: {"listeners": "PLAINTEXT://:9092"}})
    assert layer_configs(parse_broker_config({}), image=image, node_id=None).topic("t").known is False


def test_which_topics_own_configs_are_known() -> None:
    file = parse_topic_overrides({"topics": {"payments": {"cleanup.policy": "delete"}}})
    without = layer_configs(parse_broker_config({}), file=file)
    assert [without.knows(t) for t in ("orders", "payments", "__consumer_offsets", "__transaction_state")] == [
        False,
        True,
        True,
        True,
    ]
    with_image = layer_configs(parse_broker_config({}), file=file, image=_image())
    # A topic of the metadata log is known even without configs of its own (it has none: defaults apply).
    assert [with_image.knows(t) for t in ("orders", "clicks", "payments", "deleted")] == [True, True, True, False]
    assert with_image.topic("clicks").known
    assert not with_image.topic("deleted").known


def test_internal_topics_sit_under_the_metadata_log() -> None:
    static = parse_broker_config({"log.cleanup.policy": "delete"})
    plain = layer_configs(static).topic("__consumer_offsets")
    assert plain.value("cleanup.policy") == ConfigValue("cleanup.policy", "compact", "internal topic")
    image = _image(topics=("__consumer_offsets",), topic_configs={"__consumer_offsets": {"cleanup.policy": "compact"}})
    layered = layer_configs(static, image=image).topic("__consumer_offsets")
    assert layered.value("cleanup.policy").source == "topic config (metadata log)"
    assert layered.value("segment.bytes") == ConfigValue("segment.bytes", "104857600", "internal topic")
