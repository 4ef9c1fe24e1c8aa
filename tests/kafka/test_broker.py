"""The broker fixture leaves no JVM behind: every stage's broker (cleanly stopped or SIGKILLed) is gone."""

from __future__ import annotations

from pathlib import Path

from tests.kafka import broker
from tests.kafka.conftest import Stage


def _processes_naming(text: str) -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:  # the process ended meanwhile
            continue
    return found


def test_no_broker_outlives_its_stage(
    crashed: Stage, broker_recovered: Stage, round_trip: Stage, broker_maintained: Stage, maintain_round_trip: Stage
) -> None:
    stages = (crashed, broker_recovered, round_trip, broker_maintained, maintain_round_trip)
    assert all(stage.broker is not None and stage.broker.process is None for stage in stages)
    assert not broker._RUNNING
    for stage in stages:
        assert stage.broker is not None
        assert _processes_naming(str(stage.broker.work_dir)) == [], stage.broker.work_dir
