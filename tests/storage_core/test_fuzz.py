"""Fuzz campaign (hypothesis) over segment, index, snapshot and checkpoint bytes.

Invariants: every reader either succeeds or raises a typed StorageError (never struct.error,
IndexError, ...); the valid-prefix scan never raises and never loses a batch that ends before the
first damaged byte; loading a damaged partition keeps every batch before the damage, or refuses
with one of the errors its kind of damage may give and changes nothing. The number of cases run,
and of refused loads by damage and error, is reported at the end of the test session.
"""

from __future__ import annotations

import collections
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from storage_core import names
from storage_core.checkpoint import parse_checkpoint
from storage_core.errors import StorageError, UnsupportedFormatError
from storage_core.fs import LocalFileSystem
from storage_core.index.offset_index import OffsetIndex
from storage_core.index.time_index import TimeIndex
from storage_core.index.txn_index import decode_txn_index
from storage_core.producer_snapshot import ProducerSnapshotEntry, decode_snapshot, encode_snapshot
from storage_core.records.batch import Record, build_batch
from storage_core.records.compression import CompressionType
from storage_core.records.file_records import iterate_batches, scan_valid_prefix
from tests.builders.log_dir import recover_unclean

CASES = {"count": 0}
REFUSED: collections.Counter[str] = collections.Counter()  # loads refused, by damage and error
FS = LocalFileSystem()
BATCHES = [
    build_batch(
        [Record(o + i, 1_700_000_000_000 + i, b"k%d" % i, b"value %d" % o * 5) for i in range(4)],
        base_offset=o,
        compression=codec,
    )
    for o, codec in zip(range(0, 40, 4), list(CompressionType) * 2, strict=True)
]
LOG = b"".join(BATCHES)
ENDS = [sum(len(b) for b in BATCHES[: i + 1]) for i in range(len(BATCHES))]


def _count() -> None:
    CASES["count"] += 1


@pytest.fixture(autouse=True)
def _report_cases(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test's case count and refused loads, for the session summary (tests/conftest.py)."""
    cases, refused = CASES["count"], REFUSED.copy()
    yield
    request.node.user_properties.append(("fuzz cases", CASES["count"] - cases))
    request.node.user_properties.append(("fuzz refused loads", dict(REFUSED - refused)))


damage = st.one_of(
    st.tuples(st.just("overwrite"), st.integers(0, len(LOG) - 1), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("truncate"), st.integers(0, len(LOG) - 1), st.just(b"")),
    st.tuples(st.just("append"), st.just(len(LOG)), st.binary(min_size=1, max_size=200)),
    st.tuples(st.just("zeros"), st.integers(0, len(LOG) - 1), st.just(b"")),
)


def _apply(kind: str, position: int, data: bytes) -> bytes:
    if kind == "overwrite":
        return LOG[:position] + data + LOG[position + len(data) :]
    if kind == "truncate":
        return LOG[:position]
    if kind == "append":
        return LOG + data
    return LOG[:position] + bytes(len(LOG) - position)


@settings(max_examples=300, deadline=None)
@given(damage)
def test_damaged_segments(change) -> None:
    _count()
    kind, position, data = change
    damaged = _apply(kind, position, data)
    intact = max([end for end in ENDS if end <= position], default=0)
    scan = scan_valid_prefix(damaged)
    assert scan.valid_bytes >= intact or damaged[:intact] != LOG[:intact]
    try:
        for batch in iterate_batches(damaged):
            batch.is_valid()
            batch.records()
    except StorageError:
        pass


# The refusals a load may give, by kind of damage: only an overwrite can make a batch that frames
# and passes its CRC yet cannot be loaded (a base offset, outside the CRC, far below the segment's:
# the overflow split refuses it, F10; a codec id bit, inside the CRC only by chance, that no codec has).
# A truncation, zeros or an appended tail only ever shorten the valid prefix: never a refusal.
REFUSALS: dict[str, tuple[tuple[type[StorageError], str], ...]] = {
    "overwrite": (
        (StorageError, r"batch offset -?\d+ is below the segment's base offset; it cannot be split"),
        (UnsupportedFormatError, r"unknown compression type id \d+"),
    ),
    "truncate": (),
    "append": (),
    "zeros": (),
}


@settings(max_examples=60, deadline=None)
@given(damage)
@example(("overwrite", 0, (-(2**62)).to_bytes(8, "big", signed=True)))  # a refusal (F10) in every run
def test_loading_a_damaged_partition_keeps_everything_before_the_damage(change) -> None:
    _count()
    kind, position, data = change
    damaged = _apply(kind, position, data)
    with tempfile.TemporaryDirectory() as scratch:
        part = Path(scratch) / "t-0"
        part.mkdir()
        names.log_file(part, 0).write_bytes(damaged)
        intact = max([end for end in ENDS if end <= position], default=0)
        refusal: StorageError | None = None
        try:
            recover_unclean(part, now_ms=0)
        except StorageError as exc:
            refusal = exc
        if refusal is not None:
            what = f"{type(refusal).__name__}: {refusal}"
            assert any(type(refusal) is error and re.search(text, str(refusal)) for error, text in REFUSALS[kind]), (
                f"{kind} at {position}: a refusal this damage may not give: {what}"
            )
            REFUSED[f"{kind}: {type(refusal).__name__}"] += 1
            # A refused load changes nothing: the log is as it was, its valid prefix with it.
            assert names.log_file(part, 0).read_bytes() == damaged
            return
        assert names.log_file(part, 0).read_bytes()[:intact] == LOG[:intact]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 1000), st.integers(-5, 2000))
def test_random_index_bytes(data: bytes, base: int, target: int) -> None:
    _count()
    with tempfile.TemporaryDirectory() as scratch:
        for index_type in (OffsetIndex, TimeIndex):
            path = Path(scratch) / "x"
            path.write_bytes(data)
            index = index_type.open(path, base, fs=FS)
            index.entries()
            index.lookup(target)
            index.find_problem()
    try:
        decode_txn_index(data)
    except StorageError:
        pass


snapshot = encode_snapshot([ProducerSnapshotEntry(7, 1, 4, 14, 4, 1_700_000_000_000, -1, -1)] * 3)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(st.binary(max_size=200), st.tuples(st.integers(0, len(snapshot) - 1), st.binary(min_size=1, max_size=8)))
)
def test_random_and_damaged_snapshots(data) -> None:
    _count()
    if isinstance(data, tuple):
        position, patch = data
        data = snapshot[:position] + patch + snapshot[position + len(patch) :]
    try:
        decode_snapshot(data)
    except StorageError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(max_size=120), st.text(alphabet="0123456789 \n\r-abc", max_size=120).map(str.encode)))
def test_random_checkpoints(data: bytes) -> None:
    _count()
    for fields in (2, 3):
        try:
            parse_checkpoint(data, fields=fields)
        except StorageError:
            pass
