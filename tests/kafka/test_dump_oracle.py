"""Kafka as the oracle of `logkeeper dump`: Kafka's own DumpLogSegments (kafka-dump-log.sh, from the
release's jars) and `logkeeper dump` on the same files of the cleanly stopped broker (`due`), with
each option set; the same lines, but for the differences named (docs/kafka-differences.md).
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from jobs import dump
from tests.kafka.compare import METADATA_DIR
from tests.kafka.conftest import Stage
from tests.kafka.tools import dump_log


def _files(stage: Stage, partition: str, pattern: str) -> list[Path]:
    return sorted((stage.log_dir / partition).glob(pattern))


def _segment_files(stage: Stage) -> list[Path]:
    """Every kind DumpLogSegments reads: segments (codecs, transactions, control batches, tombstones),
    offset and time indexes, producer snapshots, transaction indexes."""
    files: list[Path] = []
    for partition in ("events-0", "keyed-0"):
        for pattern in ("*.log", "*.index", "*.timeindex", "*.snapshot", "*.txnindex"):
            files += _files(stage, partition, pattern)
    return files


def _ours(files: list[Path], *options: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert dump.main(["--files", ",".join(map(str, files)), *options]) == 0
    return out.getvalue()


# The known differences (docs/kafka-differences.md), each a rewrite applied to both outputs:
# 1. `--print-data-log` of a payload that is not UTF-8: Java's decoder writes one U+FFFD per malformed
#    byte where Python's writes one per maximal invalid subpart, so a run may differ in length.
_REPLACEMENT_RUN = re.compile("\ufffd+")
# 2. Kafka 4.4 ends a producer snapshot line without batch metadata after `lastTimestamp: T`; Kafka 4.0
#    (and logkeeper) with a space more.
# 3. Kafka 4.0's --transaction-log-decoder prints its pre-JSON text form of the key and payload;
#    logkeeper prints 4.4's JSON (the record lines up to ` key:` are compared).
# 4. Kafka 4.0's --cluster-metadata-decoder prints a KRaft control record as `controlType: NAME(id)`;
#    logkeeper, as 4.4, decodes it (`LeaderChange: {...}`).
_KRAFT_CONTROL = re.compile(r" (controlType: [A-Z_]+\(\d+\)|[A-Za-z]+: \{.*\})$")


def _normalized(lines: list[str], version: str, options: tuple[str, ...]) -> list[str]:
    out = [_REPLACEMENT_RUN.sub("\ufffd", line) for line in lines]
    if version.startswith("4.4."):
        out = [line.rstrip(" ") if line.startswith("producerId: ") else line for line in out]
    if version.startswith("4.0.") and "--transaction-log-decoder" in options:
        out = [line.split(" key: ", 1)[0] for line in out]
    if version.startswith("4.0.") and "--cluster-metadata-decoder" in options:
        out = [
            _KRAFT_CONTROL.sub(" <KRaft control record>", line) if " payload: " not in line else line for line in out
        ]
    return out


def _compare(stage: Stage, files: list[Path], *options: str) -> tuple[list[str], list[str]]:
    kafka = dump_log(stage.version, files, *options).splitlines()
    ours = _ours(files, *options).splitlines()
    return _normalized(kafka, stage.version, options), _normalized(ours, stage.version, options)


@pytest.mark.parametrize(
    "options", [(), ("--deep-iteration",), ("--print-data-log",), ("--verify-index-only",), ("--index-sanity-check",)]
)
def test_dump_prints_kafkas_lines(due: Stage, options: tuple[str, ...]) -> None:
    kafka, ours = _compare(due, _segment_files(due), *options)
    assert len(kafka) > 20
    assert ours == kafka


@pytest.mark.parametrize(
    ("partition", "decoder"),
    [
        ("__consumer_offsets-0", "--offsets-decoder"),
        ("__transaction_state-0", "--transaction-log-decoder"),
        (METADATA_DIR, "--cluster-metadata-decoder"),
    ],
)
def test_decoders_print_kafkas_lines(due: Stage, partition: str, decoder: str) -> None:
    files = _files(due, partition, "*.log")
    if partition == METADATA_DIR:
        files += _files(due, partition, "*.checkpoint")
    kafka, ours = _compare(due, files, decoder)
    assert len(kafka) > 3
    assert ours == kafka
