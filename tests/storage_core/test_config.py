from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from storage_core.config import (
    BrokerConfig,
    LogConfig,
    effective_log_config,
    load_topic_overrides,
    parse_broker_config,
    parse_topic_overrides,
)
from storage_core.errors import InvalidConfigError
from storage_core.java_properties import parse_java_properties

CONF = Path(__file__).resolve().parents[2] / "conf" / "defaults.properties"

REAL_SERVER_PROPERTIES = """
# A KRaft broker's server.properties (Kafka's sample, trimmed)
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
log.cleaner.min.cleanable.ratio=0.3
"""


def test_conf_defaults_file_matches_log_config() -> None:
    defaults = parse_java_properties(CONF.read_text())
    config = parse_topic_overrides({"topics": {"t": defaults}}).topics["t"]
    assert {f.name: getattr(LogConfig(), f.name) for f in fields(LogConfig)} == dict(config)


def test_real_server_properties() -> None:
    broker = parse_broker_config(parse_java_properties(REAL_SERVER_PROPERTIES))
    assert broker.log_dirs == ("/tmp/kraft-combined-logs",)
    assert broker.log_defaults.retention_ms == 168 * 3_600_000
    assert broker.log_defaults.min_cleanable_dirty_ratio == 0.3


def test_retention_precedence_ms_minutes_hours() -> None:
    values = {"log.retention.hours": "1", "log.retention.minutes": "2"}
    assert parse_broker_config(values).log_defaults.retention_ms == 120_000
    assert parse_broker_config({**values, "log.retention.ms": "5"}).log_defaults.retention_ms == 5


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({"log.retention.hourz": "1"}, "log.retention.hourz"),
        ({"log.segment.bytes": "big"}, "log.segment.bytes"),
        ({"log.cleanup.policy": "delete,archive"}, "log.cleanup.policy"),
    ],
)
def test_bad_broker_config(values: dict[str, str], key: str) -> None:
    with pytest.raises(InvalidConfigError) as error:
        parse_broker_config(values)
    assert error.value.key == key


def test_topic_overrides_and_internal_topics(tmp_path: Path) -> None:
    path = tmp_path / "topics.toml"
    path.write_text('[topics."orders"]\nretention.ms = 1000\ncleanup.policy = "compact,delete"\n')
    overrides = load_topic_overrides(path)
    orders = effective_log_config(BrokerConfig(), overrides, "orders")
    assert (orders.retention_ms, orders.compact, orders.delete) == (1000, True, True)
    assert effective_log_config(BrokerConfig(), overrides, "__consumer_offsets").cleanup_policy == {"compact"}
    path.write_text('[topics."orders"]\nretention.msec = 1\n')
    with pytest.raises(InvalidConfigError) as error:
        load_topic_overrides(path)
    assert error.value.key == "retention.msec"
