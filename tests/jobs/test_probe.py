"""The shared-storage probe's views and comparison, on real log dirs (the Spark stage itself runs
on a real standalone cluster in test_standalone_cluster.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from jobs._probe import ExecutorReport, differences, view_of
from jobs.demo import generate
from storage_core.meta_properties import MetaProperties, write_meta_properties
from storage_core.names import META_PROPERTIES

CLUSTER = "4L6g3nShT-eMCtK--X86sw"


def test_views_compare_identity_and_listing(tmp_path: Path) -> None:
    one, two = generate(tmp_path / "logs")
    write_meta_properties(one / META_PROPERTIES, MetaProperties(1, cluster_id=CLUSTER, node_id=1))
    write_meta_properties(two / META_PROPERTIES, MetaProperties(1, cluster_id=CLUSTER, node_id=2))
    driver = [view_of(str(one))]
    assert (driver[0].cluster_id, driver[0].node_id, driver[0].problem) == (CLUSTER, 1, "")
    same = ExecutorReport("h1", 10, (view_of(str(one)),))
    assert differences(driver, [same]) == []

    (one / ".lock").touch()  # the driver's own lock and marker are not part of the listing
    (one / ".kafka_cleanshutdown").touch()
    assert view_of(str(one)) == driver[0]

    other_broker = ExecutorReport("h2", 11, (replace(view_of(str(two)), log_dir=str(one)),))
    [problem] = differences(driver, [same, other_broker])
    assert "executor on h2" in problem
    assert "node.id=2" in problem
    assert "node.id=1" in problem

    missing = ExecutorReport("h3", 12, (replace(view_of(str(tmp_path / "nowhere")), log_dir=str(one)),))
    [problem] = differences(driver, [missing])
    assert "h3" in problem
    assert "cannot read it" in problem

    next(p for p in one.iterdir() if p.is_dir()).joinpath("00000000000000999999.log").touch()
    [problem] = differences(driver, [ExecutorReport("h4", 13, (view_of(str(one)),))])
    assert "lists different files" in problem
