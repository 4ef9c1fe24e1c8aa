"""Apply metadata records to a metadata image, as Kafka's `MetadataDelta` and
`MetadataBatchLoader` do.

What each record does to the image (`TopicsDelta`, `ClusterDelta`, `ConfigurationsDelta`,
`FeaturesDelta`, `PartitionRegistration.merge`):

| record                        | effect                                                                  |
|-------------------------------|-------------------------------------------------------------------------|
| TopicRecord                   | a topic with no partitions yet                                          |
| PartitionRecord               | the partition's whole registration (the topic must exist)               |
| PartitionChangeRecord         | changed fields only; a leader change bumps the leader epoch; every     |
|                               | change bumps the partition epoch                                        |
| RemoveTopicRecord             | the topic and its topic configs are gone (the topic must exist)        |
| ConfigRecord                  | sets a key, or deletes it when the value is null                        |
| RegisterBrokerRecord          | the broker's whole registration                                         |
| UnregisterBrokerRecord        | the broker is gone                                                      |
| Fence/UnfenceBrokerRecord     | fenced flag (the broker must be registered with that epoch)            |
| BrokerRegistrationChangeRecord| fenced (-1 unfence, 1 fence, 0 unchanged), controlled shutdown, log dirs|
| FeatureLevelRecord            | the feature's level; level 0 removes a feature (not metadata.version)  |
| Begin/End/AbortTransactionRecord | KIP-868: records between Begin and End apply together at End; those |
|                               | between Begin and Abort are dropped; an open transaction at the end of  |
|                               | the log is not applied (Kafka publishes nothing until it ends)          |
| every other declared record   | nothing this image tracks (ACLs, quotas, SCRAM, tokens, producer ids,  |
|                               | controllers, ELR, ZK migration state, no-ops)                           |

A record that contradicts the image (a partition of an unknown topic, removing a topic that does
not exist, fencing an unknown broker, a transaction record out of order) raises
:class:`ReplayError`; Kafka's loader reports such a record as a fault.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from types import MappingProxyType

from storage_core.messages import MessageSpec, MetadataRecord, StructValue
from storage_core.messages.schemas import metadata_cluster as cluster
from storage_core.messages.schemas import metadata_topics as topics
from storage_core.metadata.image import BrokerEndpoint, BrokerImage, MetadataImage, PartitionImage, TopicImage
from storage_core.partition_metadata import ZERO_UUID

TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC
BROKER_RESOURCE = 4  # ConfigResource.Type.BROKER
METADATA_VERSION_FEATURE = "metadata.version"
MIGRATING_DIRECTORY = ZERO_UUID  # DirectoryId.MIGRATING: the log dir of a replica is not known


class ReplayError(Exception):
    """A record that contradicts the image it is applied to."""


def _directories(directories: tuple[str, ...] | None, replicas: int) -> tuple[str, ...]:
    """`PartitionRegistration.defaultToMigrating`: no directory known -> MIGRATING for every replica."""
    if not directories or all(d == MIGRATING_DIRECTORY for d in directories):
        return (MIGRATING_DIRECTORY,) * replicas
    return directories


@dataclass(slots=True)
class _Topic:
    name: str
    topic_id: str
    partitions: dict[int, PartitionImage]


class MetadataReplayer:
    """Applies records in offset order and hands out the resulting :class:`MetadataImage`."""

    def __init__(self) -> None:
        self._topics: dict[str, _Topic] = {}  # by id
        self._brokers: dict[int, BrokerImage] = {}
        self._configs: dict[tuple[int, str], dict[str, str]] = {}
        self._features: dict[str, int] = {}
        self._transaction: list[MetadataRecord] | None = None
        self._handlers: dict[MessageSpec, Callable[[StructValue], None]] = {
            topics.TOPIC_RECORD: self._topic,
            topics.PARTITION_RECORD: self._partition,
            topics.PARTITION_CHANGE_RECORD: self._partition_change,
            topics.REMOVE_TOPIC_RECORD: self._remove_topic,
            topics.CONFIG_RECORD: self._config,
            cluster.REGISTER_BROKER_RECORD: self._register_broker,
            cluster.UNREGISTER_BROKER_RECORD: self._unregister_broker,
            cluster.FENCE_BROKER_RECORD: lambda r: self._fence(r, fenced=True),
            cluster.UNFENCE_BROKER_RECORD: lambda r: self._fence(r, fenced=False),
            cluster.BROKER_REGISTRATION_CHANGE_RECORD: self._broker_change,
            cluster.FEATURE_LEVEL_RECORD: self._feature,
        }

    @property
    def in_transaction(self) -> bool:
        """A BeginTransactionRecord has been replayed and its End or Abort not yet."""
        return self._transaction is not None

    def replay(self, record: MetadataRecord) -> None:
        """Apply one record (or hold it, inside a metadata transaction).

        Raises:
            ReplayError: the record contradicts the image, or a transaction record is out of order.
        """
        spec = record.spec
        if spec is cluster.BEGIN_TRANSACTION_RECORD:
            if self._transaction is not None:
                raise ReplayError("BeginTransactionRecord while already in a transaction")
            self._transaction = []
        elif spec is cluster.END_TRANSACTION_RECORD:
            if self._transaction is None:
                raise ReplayError("EndTransactionRecord without a BeginTransactionRecord")
            held, self._transaction = self._transaction, None
            for each in held:
                self._apply(each)
        elif spec is cluster.ABORT_TRANSACTION_RECORD:
            if self._transaction is None:
                raise ReplayError("AbortTransactionRecord without a BeginTransactionRecord")
            self._transaction = None
        elif self._transaction is not None:
            self._transaction.append(record)
        else:
            self._apply(record)

    def _apply(self, record: MetadataRecord) -> None:
        handler = self._handlers.get(record.spec)
        if handler is not None:
            handler(record.data)

    # Topics and partitions.

    def _topic(self, r: StructValue) -> None:
        topic_id = r.text("TopicId")
        self._topics[topic_id] = _Topic(r.text("Name"), topic_id, {})

    def _topic_of(self, r: StructValue, what: str) -> _Topic:
        topic = self._topics.get(r.text("TopicId"))
        if topic is None:
            raise ReplayError(f"{what} of unknown topic id {r.text('TopicId')}")
        return topic

    def _partition(self, r: StructValue) -> None:
        topic = self._topic_of(r, "PartitionRecord")
        replicas = r.integers("Replicas") or ()
        partition = r.integer("PartitionId")
        topic.partitions[partition] = PartitionImage(
            partition=partition,
            replicas=replicas,
            isr=r.integers("Isr") or (),
            leader=r.integer("Leader"),
            leader_epoch=r.integer("LeaderEpoch"),
            partition_epoch=r.integer("PartitionEpoch"),
            directories=_directories(r.texts("Directories"), len(replicas)),
            removing_replicas=r.integers("RemovingReplicas") or (),
            adding_replicas=r.integers("AddingReplicas") or (),
        )

    def _partition_change(self, r: StructValue) -> None:
        topic = self._topic_of(r, "PartitionChangeRecord")
        number = r.integer("PartitionId")
        old = topic.partitions.get(number)
        if old is None:
            raise ReplayError(f"PartitionChangeRecord of unknown partition {topic.name}-{number}")
        replicas = r.integers("Replicas")
        isr = r.integers("Isr")
        directories = r.texts("Directories")
        removing = r.integers("RemovingReplicas")
        adding = r.integers("AddingReplicas")
        leader = r.integer("Leader")
        new_replicas = old.replicas if replicas is None else replicas
        leader_changed = leader != topics.NO_LEADER_CHANGE
        topic.partitions[number] = replace(
            old,
            replicas=new_replicas,
            isr=old.isr if isr is None else isr,
            leader=leader if leader_changed else old.leader,
            leader_epoch=old.leader_epoch + 1 if leader_changed else old.leader_epoch,
            partition_epoch=old.partition_epoch + 1,
            directories=_directories(old.directories if directories is None else directories, len(new_replicas)),
            removing_replicas=old.removing_replicas if removing is None else removing,
            adding_replicas=old.adding_replicas if adding is None else adding,
        )

    def _remove_topic(self, r: StructValue) -> None:
        topic = self._topic_of(r, "RemoveTopicRecord")
        del self._topics[topic.topic_id]
        self._configs.pop((TOPIC_RESOURCE, topic.name), None)

    def _config(self, r: StructValue) -> None:
        resource = (r.integer("ResourceType"), r.text("ResourceName"))
        values = self._configs.setdefault(resource, {})
        name, value = r.text("Name"), r.optional_text("Value")
        if value is None:
            values.pop(name, None)
            if not values:
                del self._configs[resource]
        else:
            values[name] = value

    # Brokers.

    def _register_broker(self, r: StructValue) -> None:
        broker_id = r.integer("BrokerId")
        self._brokers[broker_id] = BrokerImage(
            broker_id=broker_id,
            fenced=bool(r["Fenced"]),
            rack=r.optional_text("Rack"),
            log_dirs=r.texts("LogDirs") or (),
            incarnation_id=r.text("IncarnationId"),
            broker_epoch=r.integer("BrokerEpoch"),
            endpoints=tuple(
                BrokerEndpoint(e.text("Name"), e.text("Host"), e.integer("Port"), e.integer("SecurityProtocol"))
                for e in r.structs("EndPoints")
            ),
            in_controlled_shutdown=bool(r["InControlledShutdown"]),
        )

    def _unregister_broker(self, r: StructValue) -> None:
        self._brokers.pop(r.integer("BrokerId"), None)

    def _broker(self, broker_id: int, epoch: int, what: str) -> BrokerImage:
        """`ClusterDelta.getBrokerOrThrow`."""
        broker = self._brokers.get(broker_id)
        if broker is None:
            raise ReplayError(f"{what} of unknown broker {broker_id}")
        if broker.broker_epoch != epoch:
            raise ReplayError(f"{what} of broker {broker_id} with epoch {epoch}, registered with {broker.broker_epoch}")
        return broker

    def _fence(self, r: StructValue, *, fenced: bool) -> None:
        broker = self._broker(r.integer("Id"), r.integer("Epoch"), "fencing change")
        self._brokers[broker.broker_id] = replace(broker, fenced=fenced)

    def _broker_change(self, r: StructValue) -> None:
        broker = self._broker(r.integer("BrokerId"), r.integer("BrokerEpoch"), "registration change")
        fenced_change, shutdown_change = r.integer("Fenced"), r.integer("InControlledShutdown")
        if fenced_change not in (-1, 0, 1) or shutdown_change not in (0, 1):
            raise ReplayError(
                f"registration change of broker {broker.broker_id}: unknown Fenced {fenced_change} "
                f"or InControlledShutdown {shutdown_change}"
            )
        self._brokers[broker.broker_id] = replace(
            broker,
            fenced=broker.fenced if fenced_change == 0 else fenced_change == 1,
            in_controlled_shutdown=broker.in_controlled_shutdown or shutdown_change == 1,
            log_dirs=r.texts("LogDirs") or broker.log_dirs,
        )

    def _feature(self, r: StructValue) -> None:
        name, level = r.text("Name"), r.integer("FeatureLevel")
        if level == 0 and name != METADATA_VERSION_FEATURE:
            self._features.pop(name, None)
        else:
            self._features[name] = level

    # The image.

    def image(self, *, last_offset: int, source: str) -> MetadataImage:
        """The image of every record applied so far (a transaction still open is left out)."""
        configs = self._configs
        return MetadataImage(
            topics=MappingProxyType(
                {
                    t.name: TopicImage(t.name, t.topic_id, MappingProxyType(dict(sorted(t.partitions.items()))))
                    for t in self._topics.values()
                }
            ),
            brokers=MappingProxyType(dict(sorted(self._brokers.items()))),
            topic_configs=MappingProxyType(
                {name: MappingProxyType(dict(v)) for (kind, name), v in configs.items() if kind == TOPIC_RESOURCE}
            ),
            cluster_broker_config=MappingProxyType(dict(configs.get((BROKER_RESOURCE, ""), {}))),
            broker_configs=MappingProxyType(
                {
                    int(name): MappingProxyType(dict(v))
                    for (kind, name), v in configs.items()
                    if kind == BROKER_RESOURCE and name.isdigit()
                }
            ),
            features=MappingProxyType(dict(self._features)),
            last_offset=last_offset,
            source=source,
        )
