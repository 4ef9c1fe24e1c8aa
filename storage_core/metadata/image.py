"""PLACEHOLDER until branch i15-metadata lands: the KRaft metadata image's typed interface only.

The real module (decoders, snapshot + log replay) is written on i15-metadata; this file exists so
that the jobs' config layering and topology checks can be built and tested against hand-made
:class:`MetadataImage` values meanwhile. It is replaced wholesale by the real one on rebase.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.errors import UnsupportedFormatError
from storage_core.fs import FileSystem, default_fs


@dataclass(frozen=True, slots=True)
class PartitionImage:
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: str
    partitions: Mapping[int, PartitionImage]


@dataclass(frozen=True, slots=True)
class BrokerImage:
    broker_id: int
    fenced: bool
    rack: str | None
    log_dirs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MetadataImage:
    topics: Mapping[str, TopicImage]
    brokers: Mapping[int, BrokerImage]
    topic_configs: Mapping[str, Mapping[str, str]]
    cluster_broker_config: Mapping[str, str]
    broker_configs: Mapping[int, Mapping[str, str]]
    features: Mapping[str, int]
    last_offset: int
    source: str

    def topic_by_id(self, topic_id: str) -> TopicImage | None:
        return next((t for t in self.topics.values() if t.topic_id == topic_id), None)


def find_metadata_log_dir(log_dirs: Iterable[Path], *, fs: FileSystem | None = None) -> Path | None:
    fs = fs or default_fs()
    for log_dir in map(Path, log_dirs):
        candidate = log_dir / f"{names.METADATA_TOPIC}-0"
        if fs.is_dir(candidate):
            return candidate
    return None


def load_metadata_image(metadata_log_dir: Path, *, fs: FileSystem | None = None) -> MetadataImage:
    raise UnsupportedFormatError(
        f"{metadata_log_dir}: this build cannot read KRaft metadata logs yet (placeholder until i15-metadata lands)"
    )
