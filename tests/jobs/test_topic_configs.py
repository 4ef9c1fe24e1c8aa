"""Never guess a topic's policy: jobs on log dirs whose cluster keeps its configs elsewhere (ZooKeeper).

Real broker dirs of ../shared/realdata, copied to tmp: a ZooKeeper-mode log dir holds no topic
config, so destructive jobs refuse (exit 2, the dir byte for byte as it was) unless the operator gives
the configs (a TOML file or `kafka-configs.sh --describe` output) or `--assume-broker-defaults`.
"""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from jobs import compact, configs, maintain, retention
from storage_core.clean_shutdown import write_clean_shutdown
from tests.invariants import assert_latest_values_kept, latest_values
from tests.jobs.conftest import MASTER, REPO
from tests.realdata.manifest import REALDATA

ZK_CLEAN = REALDATA / "VolodymyrZee__kafka"  # ZooKeeper mode (meta.properties version 0), clean shutdown
ZK_CONFLUENT = REALDATA / "mscaldas2012__kafka-connect-spooldir" / "kafka-data"  # ZooKeeper-mode Confluent 5.1


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return target


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under `root` with its bytes (None for a directory)."""
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes() for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("job", [maintain, retention, compact])
def test_a_zookeeper_mode_dir_without_topic_configs_is_refused_and_left_as_it_was(
    job, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir = _copy(ZK_CLEAN, tmp_path / "kafka-logs")
    before = _tree(log_dir)
    code = job.main(["--log-dirs", str(log_dir), "--warehouse", str(tmp_path / "wh"), "--master", MASTER])
    assert code == 2
    message = capsys.readouterr().err
    assert "2 topic(s) whose own configs are unknown" in message
    assert "first_topic, new_topic (" in message  # named; __consumer_offsets is internal: Kafka's settings
    assert "ZooKeeper-mode log dir" in message
    assert "--assume-broker-defaults" in message
    assert _tree(log_dir) == before
    assert not (tmp_path / "wh").exists()


# `kafka-configs.sh --zookeeper ... --describe --entity-type topics` of that Confluent cluster.
CONFLUENT_CONFIGS = """\
Configs for topic '_schemas' are cleanup.policy=compact
Configs for topic 'docker-connect-configs' are cleanup.policy=compact
Configs for topic 'docker-connect-offsets' are cleanup.policy=compact
Configs for topic 'docker-connect-status' are cleanup.policy=compact
Configs for topic '_confluent-command' are cleanup.policy=compact,min.insync.replicas=1
Configs for topic '_confluent-controlcenter-5-1-2-1-KSTREAM-OUTEROTHER-0000000096-store-changelog' are \
cleanup.policy=compact,segment.bytes=134217728
Configs for topic '_confluent-controlcenter-5-1-2-1-KSTREAM-OUTERTHIS-0000000095-store-changelog' are \
cleanup.policy=compact,segment.bytes=134217728
Configs for topic '_confluent-controlcenter-5-1-2-1-actual-group-consumption-rekey' are retention.ms=604800000
Configs for topic '_confluent-controlcenter-5-1-2-1-expected-group-consumption-rekey' are retention.ms=604800000
Configs for topic '_confluent-controlcenter-5-1-2-1-monitoring-message-rekey' are retention.ms=604800000
Configs for topic '_confluent-controlcenter-5-1-2-1-monitoring-trigger-event-rekey' are retention.ms=604800000
Configs for topic 'teamMembers7' are \nConfigs for topic 'test10' are \n"""
COMPACTED = ("_schemas", "docker-connect-configs", "docker-connect-offsets", "docker-connect-status")


@pytest.mark.spark
def test_kafka_configs_output_lets_maintain_run_and_keeps_every_latest_value(spark, tmp_path: Path) -> None:
    log_dir = _copy(ZK_CONFLUENT, tmp_path / "kafka-data")
    topics = tmp_path / "topics.txt"
    topics.write_text(CONFLUENT_CONFIGS)
    before = {name: latest_values(log_dir / f"{name}-0") for name in COMPACTED}
    assert sum(map(len, before.values())) > 20
    result = tmp_path / "result.json"
    code = maintain.main(
        [
            "--log-dirs",
            str(log_dir),
            "--topic-config",
            str(topics),
            "--warehouse",
            str(tmp_path / "wh"),
            "--master",
            MASTER,
            "--high-watermark-source",
            "log-end",
            "--result-json",
            str(result),
        ]
    )
    assert code == 0
    for name in COMPACTED:
        assert_latest_values_kept(before[name], log_dir / f"{name}-0")
    cleaned = {p["topic"]: p for p in json.loads((tmp_path / "compact-result.json").read_text())["partitions"]}
    assert cleaned["_schemas"]["status"] == "ok"
    assert cleaned["_schemas"]["settings"][0] == {
        "name": "cleanup.policy",
        "value": "compact",
        "source": "topic-config file",
    }
    assert cleaned["test10"]["error_message"] == "cleanup.policy=delete (default) has no compact"
    # What the guard prevents: with the broker's defaults, retention deletes those topics whole.
    guessed = tmp_path / "guessed.json"
    common = ["--log-dirs", str(log_dir), "--master", MASTER, "--warehouse", str(tmp_path / "wh"), "--dry-run"]
    assert retention.main([*common, "--assume-broker-defaults", "--result-json", str(guessed)]) == 0
    planned = {p["topic"]: p for p in json.loads(guessed.read_text())["partitions"]}
    assert all(planned[name]["segments_deleted"] >= 1 for name in COMPACTED)


@pytest.mark.spark
def test_assume_broker_defaults_applies_them_and_a_dry_run_shows_them(
    spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir = _copy(ZK_CLEAN, tmp_path / "kafka-logs")
    write_clean_shutdown(log_dir)  # committed after a clean shutdown; the marker itself was not kept
    (tmp_path / "server.properties").write_text("log.retention.hours=1\nbroker.id=0\n")
    args = ["--log-dirs", str(log_dir), "--server-properties", str(tmp_path / "server.properties")]
    args += [
        "--master",
        MASTER,
        "--warehouse",
        str(tmp_path / "wh"),
        "--dry-run",
        "--result-json",
        str(tmp_path / "r.json"),
    ]
    assert retention.main([*args, "--assume-broker-defaults"]) == 0
    err = capsys.readouterr().err
    assert "settings used, per topic" in err
    assert (
        "kafka-logs/first_topic: cleanup.policy=delete (default), retention.ms=3600000 (server.properties), "
        "retention.bytes=-1 (default)"
    ) in err
    assert "kafka-logs/__consumer_offsets: cleanup.policy=compact (internal topic)" in err


def _configs(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = configs.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_configs_lists_each_topic_with_the_source_of_every_value(tmp_path: Path, capsys) -> None:
    code, out, _ = _configs(["--log-dirs", str(ZK_CLEAN)], capsys)
    assert code == 0
    assert f"log dir {ZK_CLEAN}: node 0, ZooKeeper mode" in out
    assert "All configs for topic first_topic on broker 0 (topic id -):" in out
    assert "own configs UNKNOWN (" in out
    assert "  cleanup.policy=delete " in out
    assert "known: internal topic" in out
    assert f"    {ZK_CLEAN}/first_topic-2: topic id -; replica: unknown" in out
    topics = tmp_path / "topics.txt"
    topics.write_text(
        "Dynamic configs for topic first_topic are:\n"
        "  cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact}\n"
    )
    code, out, _ = _configs(["--log-dirs", str(ZK_CLEAN), "--topic-config", str(topics), "--json"], capsys)
    assert code == 0
    body = json.loads(out)
    assert body["metadata_log"] is None
    assert body["log_dirs"] == [{"log_dir": str(ZK_CLEAN), "node_id": 0, "zookeeper_mode": True}]
    first = next(t for t in body["topics"] if t["topic"] == "first_topic")
    assert (first["known"], first["known_from"]) == (True, "known: topic-config file")
    assert first["configs"]["cleanup.policy"] == {"value": "compact", "source": "topic-config file"}
    assert first["configs"]["retention.ms"] == {"value": "604800000", "source": "default"}
    assert [p["dir_name"] for p in first["partitions"]] == ["first_topic-0", "first_topic-1", "first_topic-2"]
    assert [t["topic"] for t in body["topics"]] == ["__consumer_offsets", "first_topic", "new_topic"]


def test_configs_of_one_topic_and_of_no_such_topic(capsys) -> None:
    code, out, _ = _configs(["--log-dirs", str(ZK_CLEAN), "--topic", "new_topic", "--json"], capsys)
    assert code == 0
    assert [t["topic"] for t in json.loads(out)["topics"]] == ["new_topic"]
    code, _, err = _configs(["--log-dirs", str(ZK_CLEAN), "--topic", "nope"], capsys)
    assert code == 2
    assert "--topic nope" in err


def test_configs_needs_no_spark_and_takes_no_lock(tmp_path: Path) -> None:
    log_dir = _copy(ZK_CLEAN, tmp_path / "kafka-logs")
    probe = (
        "import sys; from jobs import cli; code = cli.main(['configs', '--log-dirs', sys.argv[1]]); "
        "print(code, 'pyspark' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(log_dir)], capture_output=True, text=True, cwd=REPO)
    assert done.stdout.strip().splitlines()[-1] == "0 False"
    assert not (log_dir / ".lock").exists()
