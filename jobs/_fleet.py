"""Which broker a log dir belongs to, for the fleet-wide audit: cluster id, node id and host.

Every row of `segment_stats` and `maintenance_log` carries the log dir's identity beside its
absolute normalised path and the run id, so that one Delta table holds the rows of a whole fleet and
two brokers whose log dirs share a path stay apart:

| column       | from                                                                            |
|--------------|---------------------------------------------------------------------------------|
| `cluster_id` | `cluster.id` of the log dir's `meta.properties` (NULL without one)              |
| `node_id`    | `node.id` (KRaft, version 1) or `broker.id` (ZooKeeper, version 0); NULL unknown|
| `host`       | the host whose driver locked and maintained the log dir (`socket.gethostname`)  |

A log dir without a readable `meta.properties` (a new disk, or one a broker never formatted) gets
the unknown values; the shared-storage probe (:mod:`jobs._probe`) compares the same identity as seen
from every executor.
"""

from __future__ import annotations

import functools
import socket
from dataclasses import dataclass
from pathlib import Path

from storage_core.errors import StorageError
from storage_core.meta_properties import read_meta_properties
from storage_core.names import META_PROPERTIES


@dataclass(frozen=True, slots=True)
class LogDirIdentity:
    """The fleet columns of a log dir's rows (field names are the table columns)."""

    cluster_id: str | None
    node_id: int | None
    host: str


def read_identity(log_dir: Path | str, *, host: str | None = None) -> LogDirIdentity:
    """The identity of `log_dir` read now from its `meta.properties` (unknown values if it has none).

    Args:
        log_dir: the log dir.
        host: the host name to record (default: this host's).
    """
    try:
        meta = read_meta_properties(Path(log_dir) / META_PROPERTIES)
    except (OSError, StorageError):
        cluster_id, node_id = None, None
    else:
        cluster_id = meta.cluster_id or None
        node_id = meta.node_id if meta.node_id is not None else meta.broker_id
    return LogDirIdentity(cluster_id, node_id, socket.gethostname() if host is None else host)


@functools.lru_cache(maxsize=1024)
def log_dir_identity(log_dir: str) -> LogDirIdentity:
    """:func:`read_identity` of a log dir, read once per process (rows of one run share it)."""
    return read_identity(log_dir)
