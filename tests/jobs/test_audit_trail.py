"""Every file a job creates, rewrites, truncates, deletes, renames or quarantines is an action row.

For every job and its dry run, on the interop corpus (kafka-python batches with every kind of damage
and leftover, tests/builders/interop_corpus.py) and on copies of every real broker's log dir of
`../shared/realdata`: the run's actions, replayed over a listing of the log dirs taken before it
(names, sizes, sha256), give the listing after a real run, file by file; a dry run changes nothing
and reports exactly the real run's changes; every quarantine row names a piece holding exactly its
bytes, and nothing else is in the quarantine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs import compact, maintain, rebuild_indexes, recover, retention, stats
from tests.builders.interop_corpus import NOW, build_corpus
from tests.jobs.audit_trail import actions_of, assert_quarantine_matches, assert_replay_matches, listing
from tests.jobs.conftest import MASTER
from tests.realdata.manifest import REALDATA, broker_log_dirs, writable_copy

pytestmark = [pytest.mark.spark, pytest.mark.slow]

JOBS = {
    "recover": recover.main,
    "rebuild-indexes": rebuild_indexes.main,
    "retention": retention.main,
    "compact": compact.main,
    "stats": stats.main,
    "maintain": maintain.main,
}
MAINTAIN_STEPS = ("recover", "retention", "compact", "stats")


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[str, tuple[Path, list[str], list[str]]]:
    """name -> (root holding the log dirs, log dirs relative to it, extra arguments)."""
    interop = tmp_path_factory.mktemp("interop") / "corpus"
    build_corpus(interop)
    real = tmp_path_factory.mktemp("realdata") / "corpus"
    relative = [str(d.relative_to(REALDATA)) for d in broker_log_dirs()]
    for name in relative:
        writable_copy(REALDATA / name, real / name)
    return {
        "interop": (
            interop,
            ["unclean", "clean"],
            ["--topic-config", str(interop / "topics.toml"), "--now-ms", str(NOW)],
        ),
        "realdata": (real, relative, ["--assume-broker-defaults"]),  # ZooKeeper-mode dirs have no metadata log
    }


def _run(job: str, root: Path, log_dirs: list[str], extra: list[str], work: Path, *, dry_run: bool) -> list[Path]:
    """Run `job` over a copy at `root`; returns its result JSON files (one per step for maintain)."""
    result = work / "result.json"
    argv = [
        "--log-dirs",
        ",".join(str(root / d) for d in log_dirs),
        "--master",
        MASTER,
        "--warehouse",
        str(work / "wh"),
        "--run-id",
        "audit-run",
        "--result-json",
        str(result),
        "--high-watermark-source" if job in ("retention", "compact", "maintain") else "",
        "log-end" if job in ("retention", "compact", "maintain") else "",
        *extra,
        *(["--dry-run"] if dry_run else []),
    ]
    assert JOBS[job]([a for a in argv if a]) in (0, 1)
    if job == "maintain":
        return [result.with_name(f"{step}-{result.name}") for step in MAINTAIN_STEPS]
    return [result]


@pytest.mark.parametrize("corpus", ["interop", "realdata"])
@pytest.mark.parametrize("job", list(JOBS))
def test_the_actions_of_a_run_and_of_its_dry_run_are_its_file_changes(
    spark, corpora, tmp_path: Path, corpus, job
) -> None:
    source, log_dirs, extra = corpora[corpus]
    dry, real = writable_copy(source, tmp_path / "dry"), writable_copy(source, tmp_path / "real")
    before = listing(real)
    assert listing(dry) == before
    planned = [
        a
        for result in _run(job, dry, log_dirs, extra, tmp_path / "dry-work", dry_run=True)
        for a in actions_of(result, dry)
    ]
    assert listing(dry) == before, f"the dry run of {job} changed files"
    assert not (tmp_path / "dry-work" / "wh" / "quarantine").exists(), "a dry run wrote to the quarantine"
    done = [
        a
        for result in _run(job, real, log_dirs, extra, tmp_path / "real-work", dry_run=False)
        for a in actions_of(result, real)
    ]
    after = listing(real)
    assert_replay_matches(before, done, after, what=f"{job} on {corpus}")
    assert_replay_matches(before, planned, after, what=f"{job} --dry-run on {corpus}")
    assert_quarantine_matches(done, tmp_path / "real-work" / "wh" / "quarantine", what=f"{job} on {corpus}")
