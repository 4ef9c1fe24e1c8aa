"""Kafka as the oracle of `logkeeper configs`: `kafka-configs --describe --all --entity-type topics`
against the running broker (after the topic overrides of DUE_CONFIGS), and `logkeeper configs` on
its stopped log dir with the same server.properties: every value logkeeper shows is Kafka's, with
the same source, for topics with overrides (keyed, aged, sized), with only the creation's (events)
and Kafka's internal topics.
"""

from __future__ import annotations

import contextlib
import io
import json
import re

from jobs import configs
from tests.kafka.conftest import Stage, server_properties

# Kafka's first synonym (the value's source) -> logkeeper's source; no synonym: the topic default.
SOURCES = {
    "": "default",
    "DEFAULT_CONFIG": "default",
    "STATIC_BROKER_CONFIG": "server.properties",
    "DYNAMIC_DEFAULT_BROKER_CONFIG": "dynamic cluster default",
    "DYNAMIC_BROKER_CONFIG": "dynamic broker 1",
    "DYNAMIC_TOPIC_CONFIG": "topic config (metadata log)",
}
_TOPIC = re.compile(r"^All configs for topic (\S+) are:$")
_ENTRY = re.compile(r"^\s+([\w.]+)=(.*?) sensitive=(?:true|false) synonyms=\{(\w+)?:?")


def kafka_configs(text: str) -> dict[str, dict[str, tuple[str, str]]]:
    """`kafka-configs --describe --all` output: topic -> name -> (value, source)."""
    out: dict[str, dict[str, tuple[str, str]]] = {}
    topic = ""
    for line in text.splitlines():
        if match := _TOPIC.match(line):
            topic = match.group(1)
            out[topic] = {}
        elif (match := _ENTRY.match(line)) and topic:
            out[topic][match.group(1)] = (match.group(2), SOURCES.get(match.group(3) or "", match.group(3)))
    return out


def logkeeper_configs(stage: Stage) -> dict[str, dict[str, tuple[str, str]]]:
    assert stage.broker is not None
    out = io.StringIO()
    argv = ["--log-dirs", str(stage.log_dir), "--server-properties", str(server_properties(stage.broker)), "--json"]
    with contextlib.redirect_stdout(out):
        assert configs.main(argv) == 0
    return {
        t["topic"]: {name: (v["value"], v["source"]) for name, v in t["configs"].items()}
        for t in json.loads(out.getvalue())["topics"]
    }


def test_every_value_and_source_is_kafkas(due: Stage) -> None:
    kafka = kafka_configs(due.configs)
    assert kafka, due.configs[:2000]
    ours = logkeeper_configs(due)
    assert {"keyed", "aged", "sized", "events", "__consumer_offsets", "__transaction_state"} <= ours.keys()
    assert ours.keys() <= kafka.keys()
    for topic, settings in ours.items():
        assert settings.keys() <= kafka[topic].keys(), topic  # logkeeper shows the log configs
        assert {name: kafka[topic][name] for name in settings} == settings, topic
    assert ours["aged"]["retention.ms"] == ("19800000", "topic config (metadata log)")
    assert ours["keyed"]["file.delete.delay.ms"] == ("0", "server.properties")
