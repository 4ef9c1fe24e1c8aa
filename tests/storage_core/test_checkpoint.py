"""Offset checkpoints and the generic checkpoint core (storage_core/checkpoint.py, kafka-format.md §1.4)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_core import names
from storage_core.checkpoint import (
    format_checkpoint,
    format_offset_checkpoint,
    parse_checkpoint,
    parse_java_int,
    read_checkpoint_lines,
    read_offset_checkpoint,
    split_java_lines,
    write_offset_checkpoint,
)
from storage_core.errors import CorruptCheckpointError
from storage_core.fs import FaultInjectingFileSystem, LocalFileSystem, SimulatedCrash
from storage_core.names import TopicPartition
from tests.faults import PowerLossFileSystem
from tests.realdata.manifest import REALDATA

FS = LocalFileSystem()
OFFSET_CHECKPOINTS = (
    names.RECOVERY_POINT_CHECKPOINT,
    names.LOG_START_OFFSET_CHECKPOINT,
    names.REPLICATION_OFFSET_CHECKPOINT,
    names.CLEANER_OFFSET_CHECKPOINT,
)
REAL_OFFSET_CHECKPOINTS = sorted(p for p in REALDATA.rglob("*") if p.name in OFFSET_CHECKPOINTS)


def test_writes_the_spec_example_sorted_with_every_line_terminated(tmp_path: Path) -> None:
    path = tmp_path / names.RECOVERY_POINT_CHECKPOINT
    write_offset_checkpoint(path, {TopicPartition("orders", 0): 15234, TopicPartition("my-topic", 3): 0}, fs=FS)
    assert path.read_bytes() == b"0\n2\nmy-topic 3 0\norders 0 15234\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_order_is_by_topic_then_partition_number() -> None:
    entries = {TopicPartition("b", 10): 1, TopicPartition("b", 9): 2, TopicPartition("a", 1): 3}
    assert format_offset_checkpoint(entries) == b"0\n3\na 1 3\nb 9 2\nb 10 1\n"


def test_generic_format() -> None:
    assert format_checkpoint([]) == b"0\n0\n"
    assert format_checkpoint([(1, 2), (3, 4)], version=7) == b"7\n2\n1 2\n3 4\n"


@pytest.mark.parametrize("topic", ["", "a b", "a\tb"])
def test_a_topic_that_cannot_be_read_back_is_refused(topic: str) -> None:
    with pytest.raises(ValueError, match="cannot be written"):
        format_offset_checkpoint({TopicPartition(topic, 0): 1})


@pytest.mark.parametrize(
    "content",
    [b"", b"0", b"0\n", b"0\n0\n", b"0\r\n0\r\n", b"0\r0\r"],
    ids=["empty", "version unterminated", "version only", "zero", "crlf", "cr"],
)
def test_files_without_entries(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "cp"
    path.write_bytes(content)
    assert read_offset_checkpoint(path, fs=FS) == {}


def test_a_missing_file_has_no_entries_and_is_not_created(tmp_path: Path) -> None:
    assert read_offset_checkpoint(tmp_path / "absent", fs=FS) == {}
    assert read_checkpoint_lines(tmp_path / "absent", fields=2, fs=FS) == []
    assert not (tmp_path / "absent").exists()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"0\n1\na 0 5", {TopicPartition("a", 0): 5}),  # last line unterminated (BufferedReader accepts it)
        (b"0\n1\na \t0  5 \n", {TopicPartition("a", 0): 5}),  # any whitespace run separates; trailing ignored
        (b"0\r\n1\r\nt-x.y 2147483647 -1\r\n", {TopicPartition("t-x.y", 2**31 - 1): -1}),
        (b"+0\n+1\na -2 +9223372036854775807\n", {TopicPartition("a", -2): 2**63 - 1}),  # Java accepts signs
        (b"0\n2\na 0 1\na 0 2\n", {TopicPartition("a", 0): 2}),  # a repeated partition: the last one wins
    ],
    ids=["unterminated", "whitespace", "crlf-extremes", "signs", "repeated"],
)
def test_lenient_where_kafka_is(tmp_path: Path, content: bytes, expected: dict[TopicPartition, int]) -> None:
    path = tmp_path / "cp"
    path.write_bytes(content)
    assert read_offset_checkpoint(path, fs=FS) == expected


@pytest.mark.parametrize(
    ("content", "line"),
    [
        (b"1\n0\n", 1),
        (b"x\n", 1),
        (b" 0\n0\n", 1),
        (b"0 \n0\n", 1),
        (b"0\nz\n", 2),
        (b"0\n1_0\n", 2),
        (b"0\n2\na 0 1\n", 2),
        (b"0\n0\na 0 1\n", 2),
        (b"0\n-1\n", 2),
        (b"0\n1\na 0\n", 3),
        (b"0\n1\na 0 1 2\n", 3),
        (b"0\n1\n a 0 1\n", 3),
        (b"0\n1\na x 1\n", 3),
        (b"0\n1\na 2147483648 1\n", 3),
        (b"0\n1\na 0 9223372036854775808\n", 3),
        (b"0\n1\na 0 \xd9\xa3\n", 3),
        (b"0\n1\na 0 1\n\n", 4),
        (b"0\n2\na 0 1\n\nb 0 1\n", 4),
    ],
    ids=[
        "version",
        "version not a number",
        "version leading blank",
        "version trailing blank",
        "count",
        "count underscore",
        "count too high",
        "count too low",
        "count negative",
        "too few fields",
        "too many fields",
        "leading blank",
        "partition not a number",
        "partition over int32",
        "offset over int64",
        "arabic-indic digit",
        "extra blank line",
        "blank line inside",
    ],
)
def test_malformed_checkpoints_name_the_path_and_line(tmp_path: Path, content: bytes, line: int) -> None:
    path = tmp_path / names.RECOVERY_POINT_CHECKPOINT
    path.write_bytes(content)
    with pytest.raises(CorruptCheckpointError) as error:
        read_offset_checkpoint(path, fs=FS)
    assert error.value.path == path
    assert error.value.line == line


def test_text_that_is_not_utf8_is_corrupt_at_its_position(tmp_path: Path) -> None:
    path = tmp_path / "cp"
    path.write_bytes(b"0\n1\na\xff 0 1\n")
    with pytest.raises(CorruptCheckpointError) as error:
        read_offset_checkpoint(path, fs=FS)
    assert error.value.position == 5


def test_the_version_is_the_callers() -> None:
    assert parse_checkpoint(b"3\n1\nx y\n", fields=2, expected_version=3) == [["x", "y"]]
    with pytest.raises(CorruptCheckpointError):
        parse_checkpoint(b"0\n1\nx y\n", fields=2, expected_version=3)


@pytest.mark.parametrize(
    ("text", "bits", "value"),
    [
        ("0", 32, 0),
        ("-0", 32, 0),
        ("+17", 32, 17),
        ("-2147483648", 32, -(2**31)),
        ("9223372036854775807", 64, 2**63 - 1),
    ],
)
def test_java_ints(text: str, bits: int, value: int) -> None:
    assert parse_java_int(text, bits=bits) == value


@pytest.mark.parametrize("text", ["", " 1", "1 ", "1_000", "0x10", "+", "-", "2147483648", "１", "1.0"])
def test_not_java_ints(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the helper's only error
        parse_java_int(text)


def test_java_line_splitting() -> None:
    assert split_java_lines("") == []
    assert split_java_lines("a\r\nb\rc\nd") == ["a", "b", "c", "d"]
    assert split_java_lines("a\n\n") == ["a", ""]
    assert split_java_lines("a\x0bb\x0cc\x85d") == ["a\x0bb\x0cc\x85d"]  # not line ends for Java


def test_a_crash_at_any_step_of_a_write_leaves_the_old_or_the_new_content(tmp_path: Path) -> None:
    old, new = {TopicPartition("t", 0): 1}, {TopicPartition("t", 0): 2, TopicPartition("u", 1): 3}
    counting = FaultInjectingFileSystem()
    write_offset_checkpoint(tmp_path / "count", new, fs=counting)
    for n in range(1, len(counting.operations) + 1):
        path = tmp_path / f"crash-{n}" / names.RECOVERY_POINT_CHECKPOINT
        path.parent.mkdir()
        write_offset_checkpoint(path, old, fs=FS)
        fs = PowerLossFileSystem(fail_at=n)
        with pytest.raises(SimulatedCrash):
            write_offset_checkpoint(path, new, fs=fs)
        fs.power_loss()
        assert read_offset_checkpoint(path, fs=FS) in (old, new), counting.operations[n - 1]
    fs = PowerLossFileSystem()
    write_offset_checkpoint(path, new, fs=fs)
    fs.power_loss()
    assert read_offset_checkpoint(path, fs=FS) == new


def test_every_real_offset_checkpoint_parses_and_reformats_to_its_own_bytes() -> None:
    assert len(REAL_OFFSET_CHECKPOINTS) >= 100
    for path in REAL_OFFSET_CHECKPOINTS:
        data = path.read_bytes()
        entries = read_offset_checkpoint(path, fs=FS)
        if data and b"\r" not in data:  # Kafka's own bytes: version, count, entries in its hash-map order
            assert format_checkpoint((tp.topic, tp.partition, o) for tp, o in entries.items()) == data, path


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        (
            "DonaldY__kafka-2.7.1/kafka-logs/cleaner-offset-checkpoint",
            {("__consumer_offsets", 28): 2, ("__consumer_offsets", 17): 1, ("__consumer_offsets", 39): 18},
        ),
        ("ArthurArutunyan04__Backend_labs/kafka-data/cleaner-offset-checkpoint", {("__consumer_offsets", 19): 258527}),
        (
            "MashaKosher__Internship/kafka/data/cleaner-offset-checkpoint",
            {("__consumer_offsets", 15): 669, ("__consumer_offsets", 2): 174},
        ),
        ("ArthurArutunyan04__Backend_labs/kafka-data/log-start-offset-checkpoint", {}),
        ("xpxwo100__bullShit/tmp/kafka-logs/cleaner-offset-checkpoint", {}),  # an empty file
        ("JY-GIEGIEGIE__Stock-Sys-Integration/kafka-logs/log-start-offset-checkpoint", {}),  # \r\n
    ],
)
def test_manifest_facts(relative: str, expected: dict[tuple[str, int], int]) -> None:
    entries = read_offset_checkpoint(REALDATA / relative, fs=FS)
    assert entries == {TopicPartition(topic, partition): offset for (topic, partition), offset in expected.items()}


@pytest.mark.parametrize(
    ("relative", "count", "first"),
    [
        (
            "ArthurArutunyan04__Backend_labs/kafka-data/recovery-point-offset-checkpoint",
            60,
            ("__consumer_offsets", 13, 0),
        ),
        (
            "ArthurArutunyan04__Backend_labs/kafka-data/replication-offset-checkpoint",
            60,
            ("oms_order_created", 3, 95134),
        ),
        (
            "JY-GIEGIEGIE__Stock-Sys-Integration/kafka-logs/recovery-point-offset-checkpoint",
            57,
            ("__consumer_offsets", 13, 0),
        ),
    ],
)
def test_manifest_counts_and_first_entries(relative: str, count: int, first: tuple[str, int, int]) -> None:
    entries = read_offset_checkpoint(REALDATA / relative, fs=FS)
    assert len(entries) == count
    tp, offset = next(iter(entries.items()))
    assert (tp.topic, tp.partition, offset) == first


topics = st.text(alphabet="abcxyzABC019._-", min_size=1, max_size=20)
offset_entries = st.dictionaries(
    st.builds(TopicPartition, topics, st.integers(-(2**31), 2**31 - 1)), st.integers(-(2**63), 2**63 - 1), max_size=30
)


@settings(max_examples=100, deadline=None)
@given(entries=offset_entries)
def test_round_trip(tmp_path_factory: pytest.TempPathFactory, entries: dict[TopicPartition, int]) -> None:
    path = tmp_path_factory.mktemp("cp") / names.CLEANER_OFFSET_CHECKPOINT
    write_offset_checkpoint(path, entries, fs=FS)
    assert read_offset_checkpoint(path, fs=FS) == entries
    assert path.read_bytes() == format_offset_checkpoint(dict(reversed(list(entries.items()))))


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.lists(st.text(alphabet="ab09-+", min_size=1, max_size=6), min_size=2, max_size=2)))
def test_generic_core_round_trip(rows: list[list[str]]) -> None:
    assert parse_checkpoint(format_checkpoint(rows), fields=2) == rows
