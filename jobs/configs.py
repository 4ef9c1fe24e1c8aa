"""`logkeeper configs`: each topic's effective log config, with the source of every value.

    logkeeper configs --log-dirs D[,D] [--server-properties F] [--topic-config F]
                      [--metadata-log-dir D | --no-metadata-log] [--topic T] [--json]

What `kafka-configs.sh --describe --all --entity-type topics` shows a running cluster, computed
offline from the broker's own disk, exactly as the maintenance jobs compute it
(:mod:`storage_core.config_layers`): for every topic with a partition dir in the log dirs (or only
`--topic T`), each log setting, its value and the layer it came from (`default`,
`server.properties`, `dynamic cluster default`, `dynamic broker <id>`, `internal topic`,
`topic config (metadata log)`, `topic-config file`); whether the topic's own configs are known
(destructive jobs refuse a topic whose configs are not); and its partition dirs against the
metadata image (topic id, replica of this broker, stray replicas).

No Spark and no lock: it only reads, so it also runs beside a live broker. Exit 0, or 2 for bad
arguments (an unreadable metadata log, an invalid config in it, `--topic` naming no topic).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs import _log
from jobs._args import config_args, config_parser
from jobs._cluster import ClusterView
from jobs._errors import UsageError
from jobs._log_dirs import PartitionTask, discover_partitions
from jobs._results import EXIT_OK, EXIT_USAGE
from storage_core.config_layers import TopicLogConfig
from storage_core.names import TopicPartition
from storage_core.topology import ReplicaTopology, check_replica

log = _log.get("configs")


@dataclass(frozen=True, slots=True)
class PartitionReport:
    """One partition dir of a topic and what the metadata image says of it."""

    log_dir: str
    dir_name: str
    partition: int
    kind: str
    topic_id: str
    is_replica_of_this_broker: bool | None
    stray_reason: str
    problem: str


@dataclass(frozen=True, slots=True)
class TopicReport:
    """A topic's effective config on one broker (node), and its partition dirs there."""

    topic: str
    node_id: int | None
    topic_id: str
    config: TopicLogConfig
    known_from: str  # the layer its own configs come from, or why they are unknown
    partitions: tuple[PartitionReport, ...]


def _known_from(view: ClusterView, log_dir: str, topic: str) -> str:
    layers = view.layers(log_dir)
    if topic in layers.file.topics:
        return "known: topic-config file"
    if layers.metadata_topics is not None and topic in layers.metadata_topics:
        return "known: metadata log"
    if layers.knows(topic):
        return "known: internal topic (Kafka's built-in settings)"
    return f"UNKNOWN ({view.unknown_reason(log_dir)}): destructive jobs refuse this topic"


def _partition(view: ClusterView, part: PartitionTask) -> PartitionReport:
    tp = TopicPartition(part.topic, part.partition)
    topology: ReplicaTopology = (
        view.topology(part.log_dir, part.dir_name, tp)
        if part.kind in ("live", "future")
        else check_replica(Path(part.log_dir) / part.dir_name, tp, image=None, node_id=None)
    )
    return PartitionReport(
        part.log_dir,
        part.dir_name,
        part.partition,
        part.kind,
        topology.topic_id,
        topology.is_replica_of_this_broker,
        topology.stray_reason,
        topology.problem,
    )


def topic_reports(view: ClusterView, parts: list[PartitionTask], *, topic: str | None) -> list[TopicReport]:
    """One report per topic and node (log dirs of one broker share a config), topics sorted.

    Raises:
        UsageError: `topic` names a topic with no partition dir, not in the metadata log and not
            in the topic-config file; or a topic's config in the metadata log is invalid.
    """
    log_dirs = list(view.configs)
    by_topic: dict[str, list[PartitionTask]] = {}
    for part in parts:
        if topic is None or part.topic == topic:
            by_topic.setdefault(part.topic, []).append(part)
    if topic is not None and topic not in by_topic:
        if not any(view.layers(d).knows(topic) for d in log_dirs):
            raise UsageError(
                f"--topic {topic}: no partition dir of it in the log dirs, and the cluster has no such topic"
            )
        by_topic[topic] = []
    reports = []
    for name in sorted(by_topic):
        homes = sorted({p.log_dir for p in by_topic[name]}) or [str(log_dirs[0])]
        nodes: dict[int | None, str] = {}
        for log_dir in homes:
            nodes.setdefault(view.identities[Path(log_dir)].node_id, log_dir)
        for node_id, log_dir in nodes.items():
            mine = [p for p in by_topic[name] if view.identities[Path(p.log_dir)].node_id == node_id]
            partitions = tuple(_partition(view, p) for p in sorted(mine, key=lambda p: (p.partition, p.dir_name)))
            image_topic = view.image.topics.get(name) if view.image is not None else None
            topic_id = image_topic.topic_id if image_topic else next((p.topic_id for p in partitions if p.topic_id), "")
            config = view.topic_config(log_dir, name)
            reports.append(TopicReport(name, node_id, topic_id, config, _known_from(view, log_dir, name), partitions))
    return reports


def _header(view: ClusterView) -> list[str]:
    lines = []
    if view.image is not None:
        lines.append(f"cluster metadata: {view.image.source} (up to offset {view.image.last_offset})")
    else:
        lines.append(f"cluster metadata: none ({view.no_metadata_reason})")
    for log_dir, identity in view.identities.items():
        mode = "ZooKeeper mode" if identity.zookeeper_mode else "KRaft"
        node = "node id unknown" if identity.node_id is None else f"node {identity.node_id}"
        lines.append(f"log dir {log_dir}: {node}, {mode}")
    return lines


def _partition_line(p: PartitionReport) -> str:
    replica = {None: "replica: unknown", True: "replica of this broker", False: "NOT a replica of this broker"}
    state = f"STRAY: {p.stray_reason}" if p.stray_reason else (p.problem or replica[p.is_replica_of_this_broker])
    kind = "" if p.kind == "live" else f" ({p.kind})"
    return f"    {p.log_dir}/{p.dir_name}{kind}: topic id {p.topic_id or '-'}; {state}"


def render_text(view: ClusterView, reports: list[TopicReport]) -> str:
    """The text form: a header, then per topic its settings (name=value and source) and partition dirs."""
    lines = _header(view)
    for report in reports:
        node = "" if report.node_id is None else f" on broker {report.node_id}"
        lines += ["", f"All configs for topic {report.topic}{node} (topic id {report.topic_id or '-'}):"]
        lines.append(f"  own configs {report.known_from}")
        settings = [(f"{v.name}={v.value}", v.source) for v in report.config.values()]
        width = max(len(setting) for setting, _ in settings)
        lines += [f"  {setting.ljust(width)}  ({source})" for setting, source in settings]
        if report.partitions:
            lines.append("  partition dirs:")
            lines += [_partition_line(p) for p in report.partitions]
    return "\n".join(lines) + "\n"


def render_json(view: ClusterView, reports: list[TopicReport]) -> dict[str, Any]:
    """The `--json` form (every field of the text form)."""
    image = view.image
    return {
        "metadata_log": None if image is None else {"source": image.source, "last_offset": image.last_offset},
        "no_metadata_reason": view.no_metadata_reason,
        "log_dirs": [
            {"log_dir": str(d), "node_id": i.node_id, "zookeeper_mode": i.zookeeper_mode}
            for d, i in view.identities.items()
        ],
        "topics": [
            {
                "topic": r.topic,
                "node_id": r.node_id,
                "topic_id": r.topic_id,
                "known": r.config.known,
                "known_from": r.known_from,
                "configs": {v.name: {"value": v.value, "source": v.source} for v in r.config.values()},
                "partitions": [dataclasses.asdict(p) for p in r.partitions],
            }
            for r in reports
        ],
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = config_parser("configs", "Print each topic's effective log config with the source of every value.")
    parser.add_argument("--topic", help="only this topic")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    try:
        namespace = parser.parse_args(argv)
        args = config_args(namespace)
        parts, _ = discover_partitions(args.log_dirs)
        reports = topic_reports(args.cluster, parts, topic=namespace.topic)
    except UsageError as exc:
        log.error(f"logkeeper configs: {' '.join(str(exc).split())}")
        return EXIT_USAGE
    if namespace.json:
        print(json.dumps(render_json(args.cluster, reports), indent=2))
    else:
        sys.stdout.write(render_text(args.cluster, reports))
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
