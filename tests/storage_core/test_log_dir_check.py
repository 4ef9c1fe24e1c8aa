"""What a broker would refuse, and what would lead maintenance out of the log dir, refused before any change."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from storage_core import names
from storage_core.errors import InvalidLogDirError, InvalidNameError
from storage_core.fs import LocalFileSystem
from storage_core.log_dir import checkpoint_owners
from storage_core.log_dir_check import check_log_dirs
from storage_core.meta_properties import MetaProperties, write_meta_properties
from storage_core.names import DirKind, TopicPartition
from tests.builders.log_dir import CLUSTER_ID, LogDirBuilder, kafka_log_dir

FS = LocalFileSystem()
UUID = "0123456789abcdef0123456789abcdef"


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under `root` (links as links) and each file's bytes: "nothing changed" is equality."""
    return {
        str(p.relative_to(root)): (None if p.is_dir() or p.is_symlink() else p.read_bytes())
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize(
    ("name", "topic", "partition"),
    [
        ("orders-1", "orders", 1),
        ("orders-١", "orders", 1),  # ARABIC-INDIC DIGIT ONE: Character.digit is 1
        ("orders-१२", "orders", 12),  # DEVANAGARI
        ("orders-+7", "orders", 7),  # Integer.parseInt takes a leading +
        ("my-topic--3", "my-topic-", 3),
        ("orders-2147483647", "orders", 2**31 - 1),
    ],
)
def test_partition_numbers_parse_as_javas_integer_parse_int(name: str, topic: str, partition: int) -> None:
    assert names.parse_partition_dir_name(name).topic_partition == TopicPartition(topic, partition)


@pytest.mark.parametrize(
    "name",
    [
        "orders-²",  # a superscript is a digit to str.isdigit, not to Character.digit
        "orders-\U0001d7cf",  # MATHEMATICAL BOLD DIGIT ONE: outside the BMP, two UTF-16 units
        "orders-2147483648",
        "orders-",
        "orders-+",
        "orders-1 ",
        "lost+found",
        "backup-2024x",
        f"orders-0.{UUID}-strays",
    ],
)
def test_names_java_refuses_are_refused(name: str) -> None:
    with pytest.raises(InvalidNameError):
        names.parse_partition_dir_name(name)


def test_suffixed_names_use_javas_ascii_whitespace() -> None:
    # U+00A0 is not whitespace to Java's \\S, so this is a valid -delete name for Kafka.
    parsed = names.parse_partition_dir_name(f"t\u00a0x-0.{UUID}-delete")
    assert (parsed.topic_partition, parsed.kind) == (TopicPartition("t\u00a0x", 0), DirKind.DELETE)


def _log_dir(tmp_path: Path) -> Path:
    builder = LogDirBuilder(tmp_path / "logs")
    builder.partition("orders", 0, segments=1)
    return builder.path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: (d / "backup-2024-old").mkdir(), "backup-2024-old"),
        (lambda d: (d / "lost+found").mkdir(), "lost+found"),
        (lambda d: (d / ".snapshot").mkdir(), ".snapshot"),
        (lambda d: (d / "données-0").mkdir(), "not a name Kafka can create"),
        (lambda d: (d / "orders-٠").mkdir(), "duplicate log directories for orders-0"),  # ARABIC-INDIC ZERO
        (lambda d: (d / "my topic-0").mkdir(), "contains whitespace"),
        (lambda d: (d / "new\nline-0").mkdir(), "contains whitespace"),
        (lambda d: (d / names.META_PROPERTIES).unlink(), "--allow-missing-meta-properties"),
        (lambda d: (d / names.META_PROPERTIES).write_text("version=7\n"), "unknown meta.properties version"),
        (lambda d: (d / names.LOCK_FILE).mkdir(), ".lock is a directory"),
        (lambda d: (d / names.LOCK_FILE).symlink_to(d.parent / "nowhere"), "dangling symlink"),
    ],
)
def test_a_log_dir_a_broker_would_refuse_is_refused_unchanged(tmp_path: Path, make, message: str) -> None:
    log_dir = _log_dir(tmp_path)
    make(log_dir)
    before = _tree(tmp_path)
    with pytest.raises(InvalidLogDirError, match=re.escape(message)):
        check_log_dirs([log_dir], fs=FS)
    assert _tree(tmp_path) == before


def test_duplicates_across_log_dirs_and_futures_are_refused(tmp_path: Path) -> None:
    first, second = kafka_log_dir(tmp_path / "d1"), kafka_log_dir(tmp_path / "d2")
    (first / "orders-0").mkdir()
    (second / f"orders-0.{UUID}-future").mkdir()  # a replica being moved: allowed
    (second / f"orders-0.{UUID}-stray").mkdir()
    (second / "orders-0.fedcba9876543210fedcba9876543210-stray").mkdir()  # any number of strays
    assert len(check_log_dirs([first, second], fs=FS)) == 4
    (second / "orders-0").mkdir()
    with pytest.raises(InvalidLogDirError, match=f"{first / 'orders-0'} and {second / 'orders-0'}"):
        check_log_dirs([first, second], fs=FS)
    (second / "orders-0").rmdir()
    (first / "orders-0.00000000000000000000000000000001-future").mkdir()
    with pytest.raises(InvalidLogDirError, match="future replica"):
        check_log_dirs([first, second], fs=FS)


def test_two_brokers_may_each_hold_a_replica_of_one_partition(tmp_path: Path) -> None:
    """A fleet run holds several brokers' log dirs; duplicates are a broker's, told by meta.properties."""
    first, second = kafka_log_dir(tmp_path / "b0"), tmp_path / "b1"
    second.mkdir()
    write_meta_properties(second / names.META_PROPERTIES, MetaProperties(0, CLUSTER_ID, broker_id=1), now_ms=0)
    (first / "orders-0").mkdir()
    (second / "orders-0").mkdir()
    assert len(check_log_dirs([first, second], fs=FS)) == 2
    third = kafka_log_dir(tmp_path / "b0-second-disk")  # broker 0 again
    (third / "orders-٠").mkdir()
    with pytest.raises(InvalidLogDirError, match="duplicate log directories for orders-0"):
        check_log_dirs([first, second, third], fs=FS)


def test_skipped_names_are_the_ones_log_manager_skips(tmp_path: Path) -> None:
    log_dir = _log_dir(tmp_path)
    (log_dir / "remote-log-index-cache").mkdir()
    (log_dir / "__cluster_metadata-0").mkdir()
    (log_dir / "some-file.txt").write_text("files are not loaded")
    assert [e.name for e in check_log_dirs([log_dir], fs=FS)] == ["orders-0"]


def test_missing_meta_properties_is_allowed_when_asked(tmp_path: Path) -> None:
    log_dir = _log_dir(tmp_path)
    (log_dir / names.META_PROPERTIES).unlink()
    assert [e.name for e in check_log_dirs([log_dir], allow_missing_meta_properties=True, fs=FS)] == ["orders-0"]


def test_symlinks_out_of_the_log_dir_are_refused_naming_the_link(tmp_path: Path) -> None:
    log_dir = _log_dir(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "00000000000000000000.log").write_bytes(b"not kafka's")
    (log_dir / "other-0").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InvalidLogDirError, match="partition dir is a symlink") as error:
        check_log_dirs([log_dir], fs=FS)
    assert str(log_dir / "other-0") in str(error.value)
    (log_dir / "other-0").unlink()

    segment = log_dir / "orders-0" / "00000000000000000010.log"
    segment.symlink_to(outside / "00000000000000000000.log")
    with pytest.raises(InvalidLogDirError, match=r"symlink .* inside a partition dir") as error:
        check_log_dirs([log_dir], fs=FS)
    assert str(segment) in str(error.value)
    segment.unlink()

    (log_dir / names.RECOVERY_POINT_CHECKPOINT).symlink_to(outside / "checkpoint")
    with pytest.raises(InvalidLogDirError, match="outside the log dir"):
        check_log_dirs([log_dir], fs=FS)


def test_a_log_dir_reached_through_a_symlink_is_fine(tmp_path: Path) -> None:
    log_dir = _log_dir(tmp_path)
    (tmp_path / "mount").symlink_to(log_dir, target_is_directory=True)
    assert [e.name for e in check_log_dirs([tmp_path / "mount"], fs=FS)] == ["orders-0"]


def test_checkpoint_entries_belong_to_the_live_dir_else_the_future_one() -> None:
    owners = checkpoint_owners(
        [
            "a-0",
            f"a-0.{UUID}-stray",
            f"a-0.{UUID}-future",
            f"b-0.{UUID}-future",
            f"c-1.{UUID}-delete",
            f"c-1.{UUID}-stray",
            "lost+found",
        ]
    )
    assert owners == {"a-0": TopicPartition("a", 0), f"b-0.{UUID}-future": TopicPartition("b", 0)}
