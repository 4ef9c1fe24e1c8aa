"""One load path for every job: retention, compact and stats load a cleanly shut down dir as a broker
would first (a missing `.index` makes Kafka recover that segment, rebuilding its indexes), and report it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs import compact, retention, stats
from storage_core import names
from tests.builders.interop_corpus import NOW, T0, build_corpus
from tests.jobs.conftest import MASTER

pytestmark = pytest.mark.spark


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    build_corpus(root)
    return root


def _run(main, corpus: Path, result: Path, *extra: str) -> dict[str, dict]:
    argv = ["--log-dirs", str(corpus / "clean"), "--master", MASTER, "--warehouse", str(result.parent / "wh")]
    argv += ["--topic-config", str(corpus / "topics.toml"), "--now-ms", str(NOW), "--result-json", str(result)]
    assert main([*argv, *extra]) == 0
    return {row["dir_name"]: row for row in json.loads(result.read_text())["partitions"]}


def _rebuilt(row: dict) -> set[str]:
    return {a["file"] for a in row["actions"] if a["kind"] == "rebuild_index"}


def test_retention_rebuilds_a_missing_index_first_and_ages_the_segment_by_its_records(
    spark, corpus: Path, tmp_path: Path
) -> None:
    # logs-0's first segment lost its .index and .timeindex, and its .log was just touched: only the
    # records say it holds days 0-7, older than retention.ms (one day) at NOW (day 30).
    logs = corpus / "clean" / "logs-0"
    rows = _run(retention.main, corpus, tmp_path / "r.json", "--high-watermark-source", "log-end")
    row = rows["logs-0"]
    assert _rebuilt(row) >= {"00000000000000000000.index", "00000000000000000000.timeindex"}
    deleted = [a for a in row["actions"] if a["kind"] == "delete_segment" and a["file"].endswith(".log")]
    assert [a["file"] for a in deleted] == [names.log_file(logs, b).name for b in (0, 8, 16)]
    assert f"largest timestamp {T0 + 7 * 86_400_000 + 7} is" in deleted[0]["reason"]
    assert "file mtime" not in deleted[0]["reason"]
    assert row["indexes_rebuilt"] == 1


def test_compact_and_stats_rebuild_a_missing_index_first_and_report_it(spark, corpus: Path, tmp_path: Path) -> None:
    rows = _run(compact.main, corpus, tmp_path / "c.json", "--high-watermark-source", "log-end")
    assert "00000000000000000010.index" in _rebuilt(rows["accounts-0"])
    corpus_again = tmp_path / "again" / "corpus"
    build_corpus(corpus_again)
    rows = _run(stats.main, corpus_again, tmp_path / "s.json")
    assert "00000000000000000010.index" in _rebuilt(rows["accounts-0"])
    assert _rebuilt(rows["logs-0"]) >= {"00000000000000000000.index", "00000000000000000000.timeindex"}
    assert names.offset_index_file(corpus_again / "clean" / "accounts-0", 10).exists()
