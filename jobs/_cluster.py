"""What a job run knows of the cluster: its KRaft metadata image, each log dir's node id, and the
topic configs layered from them (:mod:`storage_core.config_layers`), on the driver.

Every KRaft broker keeps the whole cluster metadata in `__cluster_metadata-0` in one of its log dirs
(or in `metadata.log.dir`). Unless `--no-metadata-log`, a job finds it (`--metadata-log-dir`, else
`metadata.log.dir` of `--server-properties`, else among `--log-dirs`) and reads it once, when its
arguments are validated, so a metadata log that cannot be read is a bad configuration (exit 2)
before anything is touched. A ZooKeeper-mode log dir (meta.properties version 0) has none: the
topics' own configs then come only from `--topic-config`.

:func:`refuse_unknown_configs` is the "never guess" rule of the destructive jobs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from jobs._errors import UsageError
from jobs._log_dirs import PartitionTask, discover_log_dirs
from jobs._results import PartitionRow, skipped_row
from storage_core import names
from storage_core.config import BrokerConfig, TopicOverrides
from storage_core.config_layers import LayeredConfigs, TopicLogConfig, layer_configs
from storage_core.errors import InvalidConfigError, StorageError
from storage_core.meta_properties import MetaPropertiesVersion, read_meta_properties
from storage_core.metadata import MetadataImage, find_metadata_log_dir, load_metadata_image
from storage_core.topology import ReplicaTopology, check_replica


@dataclass(frozen=True, slots=True)
class LogDirIdentity:
    """A log dir's `meta.properties`: the node id (KRaft `node.id`, ZooKeeper `broker.id`) and mode."""

    node_id: int | None
    zookeeper_mode: bool


@dataclass(frozen=True)
class ClusterView:
    """The cluster as one job run sees it.

    Attributes:
        image: the metadata image (None without a metadata log).
        no_metadata_reason: why there is no image ("" if there is one).
        identities: each log dir's node id and mode.
        configs: each log dir's layered configs (its node's dynamic broker config applies).
    """

    image: MetadataImage | None
    no_metadata_reason: str
    identities: Mapping[Path, LogDirIdentity]
    configs: Mapping[Path, LayeredConfigs]

    def layers(self, log_dir: str | Path) -> LayeredConfigs:
        return self.configs[Path(log_dir)]

    def topic_config(self, log_dir: str | Path, topic: str) -> TopicLogConfig:
        """A topic's effective config in a log dir.

        Raises:
            UsageError: the topic's config in the metadata log has a bad value.
        """
        try:
            return self.layers(log_dir).topic(topic)
        except InvalidConfigError as exc:
            raise UsageError(str(exc)) from None

    def topology(self, log_dir: str | Path, dir_name: str, tp: names.TopicPartition) -> ReplicaTopology:
        """The partition dir against the metadata image (:func:`storage_core.topology.check_replica`)."""
        node_id = self.identities[Path(log_dir)].node_id
        return check_replica(Path(log_dir) / dir_name, tp, image=self.image, node_id=node_id)

    def unknown_reason(self, log_dir: str | Path) -> str:
        """Why topics of `log_dir` missing from the topic-config file have no known configs."""
        if self.image is not None:
            return f"not in the cluster metadata ({self.image.source})"
        if self.identities[Path(log_dir)].zookeeper_mode:
            return (
                f"{log_dir} is a ZooKeeper-mode log dir (meta.properties version 0): its topic configs are in ZooKeeper"
            )
        return self.no_metadata_reason


def _identity(log_dir: Path, broker: BrokerConfig) -> LogDirIdentity:
    """The node id and mode of a log dir's meta.properties (a missing file: server.properties' id)."""
    path = log_dir / names.META_PROPERTIES
    fallback = broker.properties.get("node.id") or broker.properties.get("broker.id")
    node_id = int(fallback) if fallback is not None and fallback.strip().lstrip("-").isdigit() else None
    if not path.is_file():
        return LogDirIdentity(node_id, zookeeper_mode=False)
    try:
        meta = read_meta_properties(path)
    except (StorageError, OSError) as exc:
        raise UsageError(f"log dir {log_dir}: {exc}") from None
    zookeeper = meta.version == MetaPropertiesVersion.V0
    own = meta.broker_id if zookeeper else meta.node_id
    return LogDirIdentity(own if own is not None else node_id, zookeeper)


def _metadata_candidates(option: Path | None, broker: BrokerConfig, log_dirs: Sequence[Path]) -> list[Path]:
    if option is not None:
        # The log dir holding __cluster_metadata-0 (as metadata.log.dir), or that directory itself.
        return [option.parent if option.name == f"{names.METADATA_TOPIC}-0" else option]
    configured = broker.properties.get("metadata.log.dir")
    return [*([Path(configured)] if configured else []), *log_dirs]


@cache
def _load_image(metadata_log_dir: Path, fingerprint: tuple[tuple[str, int, int], ...]) -> MetadataImage:
    """Read a metadata log once per process and content (maintain validates four steps' arguments)."""
    return load_metadata_image(metadata_log_dir)


def read_metadata_image(metadata_log_dir: Path) -> MetadataImage:
    """The one place a job reads the cluster's metadata log (:func:`storage_core.metadata.load_metadata_image`).

    Raises:
        UsageError: the metadata log cannot be read or decoded (nothing has been touched).
    """
    try:
        files = sorted(metadata_log_dir.iterdir())
        fingerprint = tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files if f.is_file())
        return _load_image(metadata_log_dir, fingerprint)
    except (StorageError, OSError) as exc:
        raise UsageError(
            f"cannot read the KRaft metadata log {metadata_log_dir}: {exc} (give --no-metadata-log and the topics' "
            "configs in --topic-config to run without it)"
        ) from None


def load_cluster_view(
    log_dirs: Sequence[Path],
    broker: BrokerConfig,
    topic_file: TopicOverrides,
    *,
    metadata_log_dir: Path | None,
    use_metadata_log: bool,
) -> ClusterView:
    """Find and read the metadata log, each log dir's identity, and layer the configs per log dir.

    Args:
        log_dirs: the job's log dirs.
        broker: server.properties.
        topic_file: the operator's topic-config file.
        metadata_log_dir: `--metadata-log-dir` (None: look in metadata.log.dir and the log dirs).
        use_metadata_log: False with `--no-metadata-log`.

    Raises:
        UsageError: `--metadata-log-dir` holds no metadata log, the metadata log cannot be read, a
            meta.properties cannot be read, or the metadata holds an invalid dynamic broker config.
    """
    identities = {Path(d): _identity(Path(d), broker) for d in log_dirs}
    image: MetadataImage | None = None
    reason = "--no-metadata-log was given"
    if use_metadata_log:
        found = find_metadata_log_dir(_metadata_candidates(metadata_log_dir, broker, log_dirs))
        if found is None and metadata_log_dir is not None:
            raise UsageError(f"--metadata-log-dir {metadata_log_dir}: no {names.METADATA_TOPIC}-0 there")
        if found is None:
            reason = f"no KRaft metadata log ({names.METADATA_TOPIC}-0) in the log dirs or metadata.log.dir"
        else:
            image = read_metadata_image(found)
    configs = {}
    for log_dir, identity in identities.items():
        try:
            configs[log_dir] = layer_configs(broker, file=topic_file, image=image, node_id=identity.node_id)
        except InvalidConfigError as exc:
            raise UsageError(f"log dir {log_dir}: {exc}") from None
    return ClusterView(image, "" if image is not None else reason, identities, configs)


def refuse_unknown_configs(
    view: ClusterView, parts: Iterable[tuple[str, str]], *, assume_broker_defaults: bool, job: str
) -> None:
    """Never guess a topic's policy: refuse to apply broker defaults to topics whose configs are unknown.

    Args:
        view: the run's cluster view.
        parts: (log dir, topic) of every partition the job would change.
        assume_broker_defaults: `--assume-broker-defaults` (then nothing is refused).
        job: the job, for the message.

    Raises:
        UsageError: naming the topics and why their configs are unknown.
    """
    if assume_broker_defaults:
        return
    unknown: dict[str, set[str]] = {}
    for log_dir, topic in parts:
        if not view.layers(log_dir).knows(topic):
            unknown.setdefault(view.unknown_reason(log_dir), set()).add(topic)
    if not unknown:
        return
    count = sum(len(topics) for topics in unknown.values())
    listed = "; ".join(f"{', '.join(sorted(topics))} ({why})" for why, topics in sorted(unknown.items()))
    raise UsageError(
        f"refusing to {job} {count} topic(s) whose own configs are unknown, rather than guess their cleanup.policy "
        f"and retention from the broker's defaults: {listed}. Give their configs with --topic-config (TOML, or the "
        "output of kafka-configs.sh --describe --all --entity-type topics), or --assume-broker-defaults "
        "(dangerous: a compacted topic would be treated as cleanup.policy=delete and lose data)"
    )


@dataclass(frozen=True, slots=True)
class ConfiguredPartition:
    """A partition a destructive job may change, with its topic's effective config."""

    partition: PartitionTask
    config: TopicLogConfig


def select_configured(
    found: Sequence[PartitionTask], view: ClusterView, *, assume_broker_defaults: bool, job: str
) -> tuple[list[ConfiguredPartition], list[PartitionRow]]:
    """The partitions a destructive job (retention, compact) changes, each with its topic's config.

    Stray replicas are left alone, as Kafka never maintains them: `-stray` dirs, and dirs the
    metadata image shows to be stray (:mod:`storage_core.topology`). Then, before anything is
    touched, :func:`refuse_unknown_configs`.

    Returns:
        The partitions with their configs, and a skipped row per stray.

    Raises:
        UsageError: topics whose own configs are unknown (without `--assume-broker-defaults`), or
            an invalid topic config in the metadata log.
    """
    kept: list[PartitionTask] = []
    skipped: list[PartitionRow] = []
    for part in found:
        if part.kind == "stray":
            skipped.append(skipped_row(part, "stray replica (-stray dir): Kafka keeps it aside and never maintains it"))
            continue
        topology = view.topology(part.log_dir, part.dir_name, names.TopicPartition(part.topic, part.partition))
        if topology.is_stray:
            skipped.append(skipped_row(part, f"stray replica: {topology.stray_reason}; not maintained"))
        else:
            kept.append(part)
    refuse_unknown_configs(
        view, ((p.log_dir, p.topic) for p in kept), assume_broker_defaults=assume_broker_defaults, job=job
    )
    return [ConfiguredPartition(p, view.topic_config(p.log_dir, p.topic)) for p in kept], skipped


def refuse_before_changes(
    log_dirs: Sequence[Path], view: ClusterView, *, assume_broker_defaults: bool, job: str
) -> None:
    """The refusal of :func:`select_configured`, checked when the arguments are validated (read-only,
    before any lock is taken), so a refused job, or a `maintain` whose destructive steps would
    refuse, exits 2 with the log dirs exactly as they were.

    Raises:
        UsageError: see :func:`select_configured`.
    """
    found, _ = discover_log_dirs(log_dirs)
    select_configured(found, view, assume_broker_defaults=assume_broker_defaults, job=job)
