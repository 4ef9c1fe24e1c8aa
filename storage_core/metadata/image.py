"""The cluster metadata image: what a KRaft broker knows after replaying its metadata log
(Kafka's `org.apache.kafka.image.MetadataImage`, reduced to what offline maintenance needs).

Built by :func:`storage_core.metadata.load_metadata_image`; every mapping is read-only. Topic ids
and log dir ids are Kafka Uuid text (`4L6g3nShT-eMCtK--X86sw`), as `partition.metadata` and
`meta.properties` store them.

Configs are the dynamic ones only (ConfigRecord), keyed by Kafka's config names: a topic's
(`resourceType` 2, by topic name), the cluster-wide broker default (`resourceType` 4, name ""),
and per broker (`resourceType` 4, name "<node id>"). Static `server.properties` and Kafka's
defaults are not in the metadata log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class PartitionImage:
    """One partition's registration (`PartitionRegistration`).

    Attributes:
        partition: the partition number.
        replicas: the replica broker ids, preferred leader first.
        isr: the in-sync replicas.
        leader: the leader's broker id, -1 when there is none.
        leader_epoch: the leader epoch (bumped at every leader change).
        partition_epoch: bumped at every change of the partition.
        directories: the log dir id hosting each replica, in `replicas` order (the zero Uuid:
            unknown, as before Kafka 3.7's JBOD support).
        removing_replicas: replicas being removed by a reassignment.
        adding_replicas: replicas being added by a reassignment.
    """

    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    directories: tuple[str, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicImage:
    """A topic: its name, id and partitions by number."""

    name: str
    topic_id: str
    partitions: Mapping[int, PartitionImage]


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    """A listener of a broker (`RegisterBrokerRecord.EndPoints`)."""

    name: str
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True, slots=True)
class BrokerImage:
    """A registered broker (`BrokerRegistration`).

    Attributes:
        broker_id: the node id.
        fenced: fenced brokers lead no partition and are in no ISR.
        rack: the broker's rack, None when unset.
        log_dirs: the ids of its online log dirs (metadata version 3.7+, else empty).
        incarnation_id: the id of the broker process that registered.
        broker_epoch: the epoch the controller gave that registration.
        endpoints: the broker's listeners.
        in_controlled_shutdown: the broker is shutting down.
    """

    broker_id: int
    fenced: bool
    rack: str | None
    log_dirs: tuple[str, ...]
    incarnation_id: str = ""
    broker_epoch: int = -1
    endpoints: tuple[BrokerEndpoint, ...] = ()
    in_controlled_shutdown: bool = False


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """The replayed cluster metadata.

    Attributes:
        topics: topics by name.
        brokers: registered brokers by id.
        topic_configs: dynamic topic configs by topic name.
        cluster_broker_config: the dynamic cluster-wide broker default configs.
        broker_configs: dynamic per-broker configs by node id.
        features: finalized feature levels by name (`metadata.version`, `kraft.version`, ...).
        last_offset: the offset of the last record applied (-1: none).
        source: what was replayed, for people: the dir, the snapshot and the log range.
    """

    topics: Mapping[str, TopicImage]
    brokers: Mapping[int, BrokerImage]
    topic_configs: Mapping[str, Mapping[str, str]]
    cluster_broker_config: Mapping[str, str]
    broker_configs: Mapping[int, Mapping[str, str]]
    features: Mapping[str, int]
    last_offset: int
    source: str
    _by_id: Mapping[str, TopicImage] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", MappingProxyType({t.topic_id: t for t in self.topics.values()}))

    def topic_by_id(self, topic_id: str) -> TopicImage | None:
        """The topic whose id is `topic_id` (Kafka Uuid text), or None."""
        return self._by_id.get(topic_id)
