from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path

import pytest

from storage_core.config import (
    BROKER_KEYS,
    TOPIC_KEYS,
    BrokerConfig,
    LogConfig,
    TopicOverrides,
    load_broker_config,
    load_topic_overrides,
    parse_broker_config,
    parse_topic_overrides,
)
from storage_core.config_layers import layer_configs
from storage_core.errors import InvalidConfigError
from storage_core.java_properties import parse_java_properties

CONF = Path(__file__).resolve().parents[2] / "conf" / "defaults.properties"

# A KRaft combined node's server.properties as shipped with Kafka, plus the usual production extras.
KRAFT_SERVER_PROPERTIES = r"""
############################# Server Basics #############################
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
############################# Socket Server Settings #############################
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
############################# Log Basics #############################
log.dirs=/var/lib/kafka/data-1,/var/lib/kafka/data-2
num.partitions=1
num.recovery.threads.per.data.dir=1
############################# Internal Topic Settings  #############################
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
############################# Log Flush Policy #############################
#log.flush.interval.messages=10000
#log.flush.interval.ms=1000
############################# Log Retention Policy #############################
log.retention.hours=168
#log.retention.bytes=1073741824
log.segment.bytes=536870912
log.retention.check.interval.ms=300000
############################# Production extras #############################
default.replication.factor=3
min.insync.replicas=2
auto.create.topics.enable=false
unclean.leader.election.enable=false
group.initial.rebalance.delay.ms=3000
ssl.keystore.location=/etc/kafka/secrets/kafka.keystore.jks
ssl.keystore.password=changeit
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule \
    required;
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin
replica.lag.time.max.ms=30000
metric.reporters=
log.cleaner.threads=2
log.cleaner.dedupe.buffer.size=268435456
log.cleaner.min.cleanable.ratio=0.3
log.cleanup.policy=delete
compression.type=producer
message.max.bytes=2097152
"""

# A ZooKeeper-era broker's server.properties (Kafka 2.x sample).
ZK_SERVER_PROPERTIES = """
broker.id=0
listeners=PLAINTEXT://localhost:9092
num.network.threads=3
num.io.threads=8
log.dirs=/tmp/kafka-logs
log.retention.hours=72
log.retention.check.interval.ms=300000
zookeeper.connect=localhost:2181
zookeeper.connection.timeout.ms=18000
group.initial.rebalance.delay.ms=0
delete.topic.enable=true
"""


def _values(text: str) -> dict[str, str]:
    return parse_java_properties(text)


def test_conf_defaults_file_is_the_dataclass_defaults() -> None:
    """conf/defaults.properties and the dataclass defaults are the same data, key for key."""
    values = _values(CONF.read_text())
    topic_level = {k: v for k, v in values.items() if k in TOPIC_KEYS}
    broker_only = {k: v for k, v in values.items() if k in BROKER_KEYS}
    assert set(values) == set(topic_level) | set(broker_only)
    assert set(topic_level) == set(TOPIC_KEYS)
    assert set(broker_only) == set(BROKER_KEYS)
    parsed = parse_topic_overrides({"topics": {"t": topic_level}}).topics["t"]
    assert dict(parsed) == {f.name: getattr(LogConfig(), f.name) for f in fields(LogConfig)}
    assert parse_broker_config(broker_only) == BrokerConfig()


def test_kraft_server_properties_with_many_unused_broker_keys() -> None:
    broker = parse_broker_config(_values(KRAFT_SERVER_PROPERTIES))
    assert broker.log_dirs == ("/var/lib/kafka/data-1", "/var/lib/kafka/data-2")
    assert broker.log_defaults == replace(
        LogConfig(),
        retention_ms=168 * 3_600_000,
        segment_bytes=536_870_912,
        min_cleanable_dirty_ratio=0.3,
        max_message_bytes=2_097_152,
    )
    assert broker.dedupe_buffer_size == 268_435_456


def test_zookeeper_server_properties(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(ZK_SERVER_PROPERTIES)
    broker = load_broker_config(path)
    assert (broker.log_dirs, broker.log_defaults.retention_ms) == (("/tmp/kafka-logs",), 72 * 3_600_000)


def test_no_server_properties_is_kafka_defaults() -> None:
    assert load_broker_config(None) == BrokerConfig()
    assert parse_broker_config({"log.dir": "/data/k"}).log_dirs == ("/data/k",)
    assert parse_broker_config({"log.dir": "/a", "log.dirs": "/b, /c"}).log_dirs == ("/b", "/c")


@pytest.mark.parametrize(
    ("values", "retention_ms"),
    [
        ({"log.retention.hours": "1"}, 3_600_000),
        ({"log.retention.hours": "1", "log.retention.minutes": "2"}, 120_000),
        ({"log.retention.hours": "1", "log.retention.minutes": "2", "log.retention.ms": "5"}, 5),
        ({"log.retention.minutes": "2", "log.retention.ms": "5"}, 5),
        ({"log.retention.hours": "-1"}, -1),  # any negative broker retention is unlimited
        ({"log.retention.ms": "-5"}, -1),
    ],
)
def test_retention_precedence_ms_minutes_hours(values: dict[str, str], retention_ms: int) -> None:
    assert parse_broker_config(values).log_defaults.retention_ms == retention_ms


def test_roll_synonyms_convert_hours() -> None:
    config = parse_broker_config({"log.roll.hours": "2", "log.roll.jitter.hours": "1"}).log_defaults
    assert (config.segment_ms, config.segment_jitter_ms) == (7_200_000, 3_600_000)
    assert parse_broker_config({"log.roll.hours": "2", "log.roll.ms": "10"}).log_defaults.segment_ms == 10


def test_broker_synonyms_reach_their_topic_fields() -> None:
    values = {
        "log.index.size.max.bytes": "4096",
        "log.index.interval.bytes": "100",
        "log.retention.bytes": "1000",
        "log.cleanup.policy": "compact",
        "log.cleaner.delete.retention.ms": "1",
        "log.cleaner.min.compaction.lag.ms": "2",
        "log.cleaner.max.compaction.lag.ms": "3",
        "log.segment.delete.delay.ms": "0",
        "log.message.timestamp.type": "LogAppendTime",
        "log.preallocate": "TRUE",
        "compression.type": "zstd",
    }
    config = parse_broker_config(values).log_defaults
    assert config == replace(
        LogConfig(),
        segment_index_bytes=4096,
        index_interval_bytes=100,
        retention_bytes=1000,
        cleanup_policy=frozenset({"compact"}),
        delete_retention_ms=1,
        min_compaction_lag_ms=2,
        max_compaction_lag_ms=3,
        file_delete_delay_ms=0,
        message_timestamp_type="LogAppendTime",
        preallocate=True,
        compression_type="zstd",
    )
    assert (config.compact, config.delete) == (True, False)


@pytest.mark.parametrize(
    ("values", "key", "suggestion"),
    [
        ({"log.retention.hourz": "1"}, "log.retention.hourz", "log.retention.hours"),
        ({"log.segments.bytes": "1"}, "log.segments.bytes", "log.segment.bytes"),
        ({"log.cleaner.dedupe.bufer.size": "1"}, "log.cleaner.dedupe.bufer.size", "log.cleaner.dedupe.buffer.size"),
        ({"message.max.byte": "1"}, "message.max.byte", "message.max.bytes"),
        ({"retention.ms": "1"}, "retention.ms", "log.retention.ms"),  # a topic key in a broker file
    ],
)
def test_unknown_broker_key_names_it_and_the_closest_key(values: dict[str, str], key: str, suggestion: str) -> None:
    with pytest.raises(InvalidConfigError) as error:
        parse_broker_config(values)
    assert error.value.key == key
    assert f"did you mean {suggestion}?" in str(error.value)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("log.segment.bytes", "big"),
        ("log.segment.bytes", "13"),
        ("log.segment.bytes", "4294967296"),  # an INT
        ("log.retention.hours", "1.5"),
        ("log.retention.bytes", ""),
        ("log.cleanup.policy", "delete,archive"),
        ("log.cleanup.policy", ""),
        ("log.cleaner.min.cleanable.ratio", "1.5"),
        ("log.cleaner.min.cleanable.ratio", "half"),
        ("log.preallocate", "yes"),
        ("log.message.timestamp.type", "createtime"),
        ("log.roll.ms", "0"),
        ("log.cleaner.max.compaction.lag.ms", "0"),
        ("compression.type", "brotli"),
        ("log.cleaner.dedupe.buffer.size", "-1"),
        ("producer.id.expiration.ms", "1_000"),
    ],
)
def test_bad_broker_values(key: str, value: str) -> None:
    with pytest.raises(InvalidConfigError) as error:
        parse_broker_config({key: value})
    assert (error.value.key, error.value.value) == (key, value)


def test_unreadable_broker_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfigError) as error:
        load_broker_config(tmp_path / "missing.properties")
    assert error.value.key == str(tmp_path / "missing.properties")


TOPICS_TOML = """
[topics."orders"]
retention.ms = 1000
cleanup.policy = "compact,delete"
segment.bytes = 1048576

[topics."payments.v2"]
"retention.bytes" = 5000
cleanup.policy = ["compact"]
min.cleanable.dirty.ratio = 0.1
preallocate = true
min.insync.replicas = 2
"""


def test_topic_overrides_over_broker_defaults(tmp_path: Path) -> None:
    path = tmp_path / "topics.toml"
    path.write_text(TOPICS_TOML)
    overrides = load_topic_overrides(path)
    broker = parse_broker_config({"log.retention.hours": "1", "log.segment.bytes": "2000000"})
    layers = layer_configs(broker, file=overrides)
    orders = layers.topic("orders").config
    assert orders == replace(
        broker.log_defaults, retention_ms=1000, cleanup_policy=frozenset({"compact", "delete"}), segment_bytes=1_048_576
    )
    payments = layers.topic("payments.v2").config
    assert payments == replace(
        broker.log_defaults,
        retention_bytes=5000,
        cleanup_policy=frozenset({"compact"}),
        min_cleanable_dirty_ratio=0.1,
        preallocate=True,
    )
    assert layers.topic("other").config == broker.log_defaults
    assert load_topic_overrides(None) == TopicOverrides()


def test_internal_topics_are_compacted_as_the_broker_creates_them() -> None:
    broker = parse_broker_config({"log.cleanup.policy": "delete", "offsets.topic.segment.bytes": "1000000"})
    offsets = layer_configs(broker).topic("__consumer_offsets").config
    assert (offsets.cleanup_policy, offsets.segment_bytes) == (frozenset({"compact"}), 1_000_000)
    txn = layer_configs(broker).topic("__transaction_state").config
    assert (txn.cleanup_policy, txn.segment_bytes) == (frozenset({"compact"}), 104_857_600)
    overridden = parse_topic_overrides({"topics": {"__consumer_offsets": {"cleanup.policy": "compact,delete"}}})
    layered = layer_configs(broker, file=overridden).topic("__consumer_offsets").config
    assert layered.cleanup_policy == {"compact", "delete"}


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[topics."orders"]\nretention.msec = 1\n', "retention.msec"),
        ('[topics."orders"]\nretention.ms = "soon"\n', "retention.ms"),
        ('[topics."orders"]\nretention.ms = -2\n', "retention.ms"),
        ('[topics."orders"]\nretention.ms = true\n', "retention.ms"),
        ('[topics."orders"]\ncleanup.policy = ["compact", "archive"]\n', "cleanup.policy"),
        ('[topics."orders"]\nlog.retention.hours = 1\n', "log.retention.hours"),  # a broker key in a topic table
        ('[topic."orders"]\nretention.ms = 1\n', "topic"),
        ('[topics."bad name"]\nretention.ms = 1\n', "topics"),
        ("topics = 3\n", "topics"),
        ('[topics."orders"\nretention.ms = 1\n', "topics.toml"),  # not TOML
    ],
)
def test_bad_topic_config(tmp_path: Path, toml: str, key: str) -> None:
    path = tmp_path / "topics.toml"
    path.write_text(toml)
    with pytest.raises(InvalidConfigError) as error:
        load_topic_overrides(path)
    assert error.value.key.endswith(key)


def test_unknown_topic_key_suggests_the_closest() -> None:
    with pytest.raises(InvalidConfigError) as error:
        parse_topic_overrides({"topics": {"orders": {"retention.msec": 1}}})
    assert "did you mean retention.ms?" in str(error.value)
    assert '[topics."orders"]' in str(error.value)
