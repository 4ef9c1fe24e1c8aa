"""Broker-local disks: which host owns which log dir, from a broker inventory or `host:/path`.

A destructive job must lock, list and change a log dir on the host whose disk it is; a driver that
cannot see the disk must not pretend to. So a job runs on the broker's own host (one Spark
application per broker host, local master or that host's executors; Airflow routes each broker's
task to a queue of its host) and refuses, before anything is touched, a log dir another host owns.

The inventory (`--inventory F`, TOML), one table per broker::

    [[brokers]]
    id = 1                               # node.id (KRaft) or broker.id (ZooKeeper) of its log dirs
    host = "kafka-1.example.com"         # the host that owns the disks (its hostname)
    log_dirs = ["/data/k1", "/data/k2"]  # absolute paths on that host
    # queue = "logkeeper-kafka-1"        # the Airflow queue of its host (default: logkeeper-<host>)

`--inventory F --broker ID` maintains broker ID's log dirs (default: the broker on this host, if
exactly one); each dir's `meta.properties` must name the broker (else exit 2). In `--log-dirs`,
`host:/path` is a log dir of `host`; this host's are maintained, another host's are refused.
"""

from __future__ import annotations

import socket
import tomllib
from dataclasses import dataclass
from pathlib import Path

from jobs._errors import UsageError

_LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True, slots=True)
class Broker:
    """One broker of the inventory."""

    id: int
    host: str
    log_dirs: tuple[str, ...]
    queue: str


def default_queue(host: str) -> str:
    """The Airflow queue of a broker host's workers."""
    return f"logkeeper-{host}"


def load_inventory(path: Path) -> tuple[Broker, ...]:
    """Parse an inventory file.

    Raises:
        UsageError: no such file, not TOML, a broker without an integer id, a host or absolute log
            dirs, or two brokers with one id.
    """
    try:
        document = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"--inventory {path}: no such file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"--inventory {path}: not TOML: {exc}") from None
    brokers = []
    for i, entry in enumerate(document.get("brokers", [])):
        where = f"--inventory {path}: brokers[{i}]"
        broker_id, host, log_dirs = entry.get("id"), entry.get("host"), entry.get("log_dirs")
        if not isinstance(broker_id, int) or isinstance(broker_id, bool) or broker_id < 0:
            raise UsageError(f"{where}: id must be a broker id (a non-negative integer)")
        if not isinstance(host, str) or not host:
            raise UsageError(f"{where}: host must be a host name")
        if not isinstance(log_dirs, list) or not log_dirs or not all(isinstance(d, str) for d in log_dirs):
            raise UsageError(f"{where}: log_dirs must be a non-empty list of paths")
        if relative := [d for d in log_dirs if not d.startswith("/")]:
            raise UsageError(f"{where}: log dirs must be absolute paths on {host} (got {relative[0]!r})")
        queue = entry.get("queue", default_queue(host))
        brokers.append(Broker(broker_id, host, tuple(log_dirs), str(queue)))
    if not brokers:
        raise UsageError(f"--inventory {path}: no [[brokers]]")
    ids = [b.id for b in brokers]
    if len(set(ids)) != len(ids):
        raise UsageError(f"--inventory {path}: a broker id appears twice")
    return tuple(brokers)


def is_this_host(host: str) -> bool:
    """Whether `host` names the machine this runs on (its hostname, FQDN or a loopback name)."""
    name = socket.gethostname()
    return host in _LOCAL_NAMES or host in (name, name.split(".")[0], socket.getfqdn())


def refuse_other_host(host: str, path: str) -> UsageError:
    return UsageError(
        f"log dir {path} is on host {host}, not this one ({socket.gethostname()}): run the job there "
        f"(Airflow queue {default_queue(host)}); a driver must not maintain a disk it cannot see"
    )


def select_broker(brokers: tuple[Broker, ...], broker_id: int | None, *, path: Path) -> Broker:
    """The broker a job on this host maintains: `--broker`, else the one broker on this host.

    Raises:
        UsageError: no such broker, the broker is on another host, or not exactly one broker here.
    """
    if broker_id is not None:
        chosen = [b for b in brokers if b.id == broker_id]
        if not chosen:
            raise UsageError(f"--broker {broker_id}: not in --inventory {path}")
    else:
        chosen = [b for b in brokers if is_this_host(b.host)]
        if len(chosen) != 1:
            raise UsageError(
                f"--inventory {path}: {len(chosen)} brokers on this host ({socket.gethostname()}); give --broker"
            )
    broker = chosen[0]
    if not is_this_host(broker.host):
        raise refuse_other_host(broker.host, broker.log_dirs[0])
    return broker


def split_host(text: str) -> tuple[str | None, str]:
    """`host:/path` as (host, path); a plain path as (None, path)."""
    host, sep, rest = text.partition(":")
    if sep and host and rest.startswith("/") and "/" not in host:
        return host, rest
    return None, text
