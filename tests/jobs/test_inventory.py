"""Broker-local log dirs: the inventory, `host:/path`, and refusing another host's disk (exit 2)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from jobs import recover
from jobs._errors import UsageError
from jobs._inventory import Broker, load_inventory, split_host
from storage_core.meta_properties import MetaProperties, write_meta_properties
from storage_core.names import META_PROPERTIES

CLUSTER = "4L6g3nShT-eMCtK--X86sw"


def _log_dir(path: Path, node_id: int) -> Path:
    path.mkdir(parents=True)
    write_meta_properties(path / META_PROPERTIES, MetaProperties(1, cluster_id=CLUSTER, node_id=node_id))
    return path


def _inventory(tmp_path: Path, *brokers: tuple[int, str, list[Path]]) -> Path:
    text = "".join(
        f'[[brokers]]\nid = {i}\nhost = "{host}"\nlog_dirs = [{", ".join(repr(str(d)) for d in dirs)}]\n\n'
        for i, host, dirs in brokers
    )
    path = tmp_path / "inventory.toml"
    path.write_text(text.replace("'", '"'))
    return path


def test_inventory_format(tmp_path: Path) -> None:
    path = _inventory(tmp_path, (1, "kafka-1", [Path("/data/a"), Path("/data/b")]), (2, "kafka-2", [Path("/data/a")]))
    assert load_inventory(path) == (
        Broker(1, "kafka-1", ("/data/a", "/data/b"), "logkeeper-kafka-1"),
        Broker(2, "kafka-2", ("/data/a",), "logkeeper-kafka-2"),
    )
    for bad, message in [
        ('[[brokers]]\nid = "x"\nhost = "h"\nlog_dirs = ["/d"]\n', "id must be"),
        ('[[brokers]]\nid = 1\nlog_dirs = ["/d"]\n', "host must be"),
        ('[[brokers]]\nid = 1\nhost = "h"\nlog_dirs = ["rel/d"]\n', "absolute"),
        (
            '[[brokers]]\nid = 1\nhost = "h"\nlog_dirs = ["/d"]\n[[brokers]]\nid = 1\nhost = "g"\nlog_dirs = ["/e"]\n',
            "twice",
        ),
        ("brokers = [", "not TOML"),
        ("", r"no \[\[brokers"),
    ]:
        path.write_text(bad)
        with pytest.raises(UsageError, match=message):
            load_inventory(path)


def test_host_prefix() -> None:
    assert split_host("kafka-1:/data/k1") == ("kafka-1", "/data/k1")
    assert split_host("/data/k1") == (None, "/data/k1")
    assert split_host("data/k:1") == (None, "data/k:1")


def test_this_hosts_broker_is_maintained_and_another_hosts_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    here, there = socket.gethostname(), "kafka-elsewhere.example.com"
    mine = _log_dir(tmp_path / "k1", 1)
    other = _log_dir(tmp_path / "k2", 2)
    path = _inventory(tmp_path, (1, here, [mine]), (2, there, [other]))

    assert recover.parse_args(["--inventory", str(path)]).common.log_dirs == (mine,)
    assert recover.parse_args(["--inventory", str(path), "--broker", "1"]).common.log_dirs == (mine,)
    assert recover.parse_args(["--log-dirs", f"{here}:{mine}"]).common.log_dirs == (mine,)

    before = sorted(p.name for p in other.iterdir())
    assert recover.main(["--inventory", str(path), "--broker", "2"]) == 2
    assert f"log dir {other} is on host {there}" in capsys.readouterr().err
    assert recover.main(["--log-dirs", f"{there}:{other}"]) == 2
    assert "Airflow queue logkeeper-kafka-elsewhere.example.com" in capsys.readouterr().err
    assert sorted(p.name for p in other.iterdir()) == before

    # A log dir whose meta.properties names another broker than the inventory says.
    wrong = _inventory(tmp_path, (1, here, [other]))
    assert recover.main(["--inventory", str(wrong)]) == 2
    assert "belongs to broker 2" in capsys.readouterr().err
    assert recover.main(["--inventory", str(path), "--log-dirs", str(mine)]) == 2
    assert recover.main(["--broker", "1", "--log-dirs", str(mine)]) == 2
