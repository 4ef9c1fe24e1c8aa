"""The text `kafka-configs.sh --describe --entity-type topics` prints, read back as per-topic configs.

Mirrors what `kafka.admin.ConfigCommand` prints (core/src/main/scala/kafka/admin/ConfigCommand.scala),
so that an operator of a ZooKeeper-mode cluster, whose topic configs no log dir holds, can export
them in one command and give the output as `--topic-config`. Three forms exist:

```
Configs for topic 'orders' are retention.ms=86400000,cleanup.policy=compact,delete
```
`describeConfigWithZk` (`--zookeeper`, Kafka 0.9-2.x): one line per topic, the topic's own overrides
joined with `,` (so a list value's commas are ambiguous: a piece without `=` continues the previous
value, as no topic key holds a `=`; an empty list after `are ` means no overrides).

```
All configs for topic orders are:
  cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact, ...}
  retention.ms=604800000 sensitive=false synonyms={STATIC_BROKER_CONFIG:log.retention.hours=168, ...}
```
`describeResourceConfig` (`--bootstrap-server`, Kafka 2.5+; KIP-543 and KAFKA-9040): a header per
topic, `All` with `--all` (every config with its effective value, whichever layer it came from) or
`Dynamic` without (the topic's own overrides only); then one indented `name=value sensitive=B
synonyms={...}` line per config. A sensitive value prints as `null` and is skipped. (The header
was `Configs for topic orders are:` in the unreleased window between the two changes; it is read too.)

Every value is taken as the cluster reported it: with `--all` that includes broker-level values,
which then override server.properties (they are what the cluster used). Validation of the values is
:func:`storage_core.config.parse_topic_configs`'s; this module only reads the text. Any other line
(a broker's or a client's section, stray text) is an error naming its line number: a file given as
a topic's policy must be read whole or not at all.
"""

from __future__ import annotations

import re

from storage_core.errors import InvalidConfigError

_ZK_HEADER = re.compile(r"Configs for topic '([^']*)' are ?(.*)")
_HEADER = re.compile(r"(?:All |Dynamic )?[Cc]onfigs for topic (\S+) are:")
_ENTRY = re.compile(r"\s+([^=\s]+)=(.*?) sensitive=(true|false) synonyms=\{(.*)\}")
_ANY_HEADER = re.compile(r"(?:(?:All|Dynamic|Default) )?[Cc]onfigs for ")


def is_describe_output(text: str) -> bool:
    """True if the first line that is not blank is one of ConfigCommand's describe headers."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return _ANY_HEADER.match(first) is not None


def _zk_pairs(listing: str, *, line: int) -> dict[str, str]:
    """`k=v,k=v` as ZooKeeper-mode ConfigCommand joins a topic's overrides."""
    pairs: dict[str, str] = {}
    last: str | None = None
    for piece in listing.split(",") if listing else []:
        name, sep, value = piece.partition("=")
        if sep and name:
            pairs[name] = value
            last = name
        elif last is not None:
            pairs[last] += "," + piece  # a list value's own comma (cleanup.policy=compact,delete)
        else:
            raise InvalidConfigError(f"expected name=value, got {piece!r}", key=f"line {line}")
    return pairs


def parse_describe_output(text: str) -> dict[str, dict[str, str]]:
    """The per-topic configs in the text of `kafka-configs.sh --describe --entity-type topics [--all]`.

    Args:
        text: the command's output (any of the three forms above; several topics).

    Returns:
        topic name -> {config name: value as printed}, in the order of the text.

    Raises:
        InvalidConfigError: a line that is neither a topic header nor a config line of one, a
            section of another entity type (brokers, clients, ...), or a topic described twice.
    """
    topics: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        zk = _ZK_HEADER.fullmatch(line)
        header = _HEADER.fullmatch(line)
        entry = _ENTRY.fullmatch(line)
        if zk is not None or header is not None:
            topic = (zk or header).group(1)  # type: ignore[union-attr]
            if topic in topics:
                raise InvalidConfigError(f"topic {topic!r} is described twice", key=f"line {number}")
            topics[topic] = _zk_pairs(zk.group(2), line=number) if zk is not None else {}
            current = None if zk is not None else topics[topic]
        elif entry is not None and current is not None:
            name, value, sensitive = entry.group(1), entry.group(2), entry.group(3)
            if not (sensitive == "true" and value == "null"):
                current[name] = value
        elif _ANY_HEADER.match(line):
            raise InvalidConfigError(
                f"only topic configs are read here (--entity-type topics), got {line.strip()!r}",
                key=f"line {number}",
            )
        else:
            raise InvalidConfigError(
                f"not a line of kafka-configs --describe output: {line.strip()[:80]!r}",
                key=f"line {number}",
            )
    return topics
