"""Names of Kafka configuration keys that maintenance accepts but does not use.

A broker's server.properties holds many keys maintenance never reads (listeners, node.id, ssl.*,
...), and a topic's configuration some that do not concern its files (min.insync.replicas, ...).
:mod:`storage_core.config` accepts these and ignores them, and rejects any other key as a likely
typo. The lists come from Kafka's config definitions (`ServerConfigs`, `ServerLogConfigs`,
`CleanerConfig`, `ReplicationConfigs`, `KRaftConfigs`, `GroupCoordinatorConfig`,
`TransactionLogConfig`, `TopicConfig`); every `log.*` broker key Kafka defines is known (here or in
storage_core.config), so a typo in that namespace is always caught.
"""

from __future__ import annotations


def _key_set(text: str) -> frozenset[str]:
    """Key names written as whitespace-separated words."""
    return frozenset(text.split())


# Topic-level keys Kafka defines that maintenance does not use: accepted in a topic table, ignored.
OTHER_TOPIC_KEYS = _key_set(
    """
    flush.messages flush.ms min.insync.replicas unclean.leader.election.enable message.format.version
    message.downconversion.enable message.timestamp.difference.max.ms message.timestamp.before.max.ms
    message.timestamp.after.max.ms compression.gzip.level compression.lz4.level compression.zstd.level
    remote.log.delete.on.disable leader.replication.throttled.replicas follower.replication.throttled.replicas
    """
)
# Broker keys Kafka defines that maintenance ignores (Kafka's sample server.properties, KRaft and the
# common broker settings). Every `log.*` key Kafka has is here or in storage_core.config.
OTHER_BROKER_KEYS = _key_set(
    """
    log.flush.interval.messages log.flush.interval.ms log.flush.scheduler.interval.ms
    log.flush.offset.checkpoint.interval.ms log.flush.start.offset.checkpoint.interval.ms
    log.retention.check.interval.ms log.initial.task.delay.ms log.dir.failure.timeout.ms log.cleaner.enable
    log.cleaner.io.max.bytes.per.second log.cleaner.io.buffer.size log.cleaner.backoff.ms
    log.message.format.version log.message.timestamp.difference.max.ms log.message.timestamp.before.max.ms
    log.message.timestamp.after.max.ms log.message.downconversion.enable
    num.recovery.threads.per.data.dir num.partitions num.network.threads num.io.threads num.replica.fetchers
    num.replica.alter.log.dirs.threads background.threads
    broker.id node.id process.roles broker.rack broker.id.generation.enable reserved.broker.max.id
    listeners advertised.listeners inter.broker.listener.name listener.security.protocol.map
    early.start.listeners inter.broker.protocol.version
    compression.gzip.level compression.lz4.level compression.zstd.level
    default.replication.factor min.insync.replicas unclean.leader.election.enable auto.create.topics.enable
    auto.leader.rebalance.enable delete.topic.enable eligible.leader.replicas.enable
    leader.imbalance.check.interval.seconds leader.imbalance.per.broker.percentage
    controlled.shutdown.enable controlled.shutdown.max.retries controlled.shutdown.retry.backoff.ms
    queued.max.requests queued.max.request.bytes request.timeout.ms connections.max.idle.ms
    connections.max.reauth.ms max.connections max.connections.per.ip max.connections.per.ip.overrides
    max.connection.creation.rate max.incremental.fetch.session.cache.slots max.request.partition.size.limit
    fetch.max.bytes fetch.purgatory.purge.interval.requests producer.purgatory.purge.interval.requests
    delete.records.purgatory.purge.interval.requests producer.id.expiration.check.interval.ms
    transactional.id.expiration.ms transaction.max.timeout.ms transaction.state.log.replication.factor
    transaction.state.log.num.partitions transaction.state.log.min.isr transaction.state.log.load.buffer.size
    transaction.abort.timed.out.transaction.cleanup.interval.ms
    transaction.remove.expired.transaction.cleanup.interval.ms transaction.partition.verification.enable
    transaction.two.phase.commit.enable
    offsets.topic.replication.factor offsets.topic.num.partitions offsets.topic.compression.codec
    offsets.retention.minutes offsets.retention.check.interval.ms offsets.load.buffer.size
    offsets.commit.timeout.ms offsets.commit.required.acks
    initial.broker.registration.timeout.ms broker.heartbeat.interval.ms broker.session.timeout.ms
    create.topic.policy.class.name alter.config.policy.class.name alter.log.dirs.replication.quota.window.num
    alter.log.dirs.replication.quota.window.size.seconds unstable.api.versions.enable
    unstable.feature.versions.enable auto.include.jmx.reporter allow.everyone.if.no.acl.found super.users
    """
)
# Families of broker keys maintenance never reads, accepted whole (security, listeners, quotas, plugins, ...).
# None of them overlaps a namespace we interpret (log.*, message.*, compression.*, the BROKER_KEYS).
FREE_FORM_BROKER_PREFIXES = (
    "listener.name.",
    "ssl.",
    "sasl.",
    "security.",
    "principal.",
    "authorizer.",
    "remote.log.",
    "metrics.",
    "metric.",
    "kafka.metrics.",
    "config.providers",
    "zookeeper.",
    "delegation.token.",
    "password.encoder.",
    "controller.",
    "group.",
    "share.",
    "socket.",
    "replica.",
    "quota.",
    "replication.quota.",
    "client.quota.",
    "metadata.",
    "telemetry.",
    "confluent.",
)
