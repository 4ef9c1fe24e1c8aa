"""The text of `kafka-configs.sh --describe --entity-type topics` read back as a topic-config file."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage_core.config import load_topic_overrides
from storage_core.config_describe import is_describe_output, parse_describe_output
from storage_core.errors import InvalidConfigError

# ConfigCommand.describeResourceConfig with --all (Kafka 2.5+): a header per topic, then every config
# with its effective value and synonyms (a Confluent broker adds its own keys).
ALL_FORM = """\
All configs for topic _schemas are:
  compression.type=producer sensitive=false synonyms={DEFAULT_CONFIG:compression.type=producer}
  leader.replication.throttled.replicas= sensitive=false synonyms={}
  confluent.placement.constraints= sensitive=false synonyms={}
  cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact, \
DEFAULT_CONFIG:log.cleanup.policy=delete}
  retention.ms=604800000 sensitive=false synonyms={STATIC_BROKER_CONFIG:log.retention.hours=168, \
DEFAULT_CONFIG:log.retention.hours=168}
  min.cleanable.dirty.ratio=0.5 sensitive=false synonyms={DEFAULT_CONFIG:log.cleaner.min.cleanable.ratio=0.5}
All configs for topic orders are:
  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, \
DEFAULT_CONFIG:log.cleanup.policy=delete}
  retention.bytes=1073741824 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes=1073741824}
  some.secret=null sensitive=true synonyms={}
"""

# Without --all: only the topics' own (dynamic) configs; a topic without any prints just its header.
DYNAMIC_FORM = """\
Dynamic configs for topic clicks are:
Dynamic configs for topic orders are:
  retention.ms=86400000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000}
"""

# ConfigCommand.describeConfigWithZk (--zookeeper, Kafka <= 2.x): one line per topic.
ZK_FORM = """\
Configs for topic '__consumer_offsets' are segment.bytes=104857600,cleanup.policy=compact,compression.type=producer
Configs for topic 'orders' are retention.ms=86400000,cleanup.policy=compact,delete,min.insync.replicas=2
Configs for topic 'clicks' are \n"""


def test_all_form_keeps_every_effective_value_except_sensitive_nulls() -> None:
    assert parse_describe_output(ALL_FORM) == {
        "_schemas": {
            "compression.type": "producer",
            "leader.replication.throttled.replicas": "",
            "confluent.placement.constraints": "",
            "cleanup.policy": "compact",
            "retention.ms": "604800000",
            "min.cleanable.dirty.ratio": "0.5",
        },
        "orders": {"cleanup.policy": "compact,delete", "retention.bytes": "1073741824"},
    }


def test_dynamic_form_and_a_topic_without_overrides() -> None:
    assert parse_describe_output(DYNAMIC_FORM) == {"clicks": {}, "orders": {"retention.ms": "86400000"}}


def test_zookeeper_form_rejoins_list_values_split_on_commas() -> None:
    assert parse_describe_output(ZK_FORM) == {
        "__consumer_offsets": {
            "segment.bytes": "104857600",
            "cleanup.policy": "compact",
            "compression.type": "producer",
        },
        "orders": {"retention.ms": "86400000", "cleanup.policy": "compact,delete", "min.insync.replicas": "2"},
        "clicks": {},
    }


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("All configs for broker 1 are:\n  log.retention.ms=1 sensitive=false synonyms={}\n", "line 1"),
        ("Default configs for brokers in the cluster are:\n", "line 1"),
        ("Dynamic configs for topic a are:\nsomething else\n", "line 2"),
        ("Dynamic configs for topic a are:\nDynamic configs for topic a are:\n", "line 2"),
        ("Configs for topic 'a' are =1\n", "line 1"),
    ],
)
def test_anything_else_is_an_error_naming_its_line(text: str, line: str) -> None:
    with pytest.raises(InvalidConfigError) as error:
        parse_describe_output(text)
    assert error.value.key == line


def test_detected_by_content() -> None:
    assert is_describe_output("\n" + ALL_FORM)
    assert is_describe_output(ZK_FORM)
    assert not is_describe_output('[topics."orders"]\n"retention.ms" = 1\n')
    assert not is_describe_output("")


def test_a_topic_config_file_may_be_describe_output(tmp_path: Path) -> None:
    path = tmp_path / "topics.txt"
    path.write_text(ALL_FORM)
    topics = load_topic_overrides(path).topics
    # Keys maintenance uses are validated and parsed; others (vendor keys, throttles) are Kafka's business.
    assert topics["_schemas"] == {
        "compression_type": "producer",
        "cleanup_policy": frozenset({"compact"}),
        "retention_ms": 604_800_000,
        "min_cleanable_dirty_ratio": 0.5,
    }
    assert topics["orders"] == {"cleanup_policy": frozenset({"compact", "delete"}), "retention_bytes": 1_073_741_824}
    path.write_text(ZK_FORM)
    assert load_topic_overrides(path).topics["orders"] == {
        "retention_ms": 86_400_000,
        "cleanup_policy": frozenset({"compact", "delete"}),
    }


def test_a_bad_value_in_describe_output_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "topics.txt"
    path.write_text("Configs for topic 'orders' are retention.ms=soon\n")
    with pytest.raises(InvalidConfigError) as error:
        load_topic_overrides(path)
    assert error.value.key == "retention.ms"
