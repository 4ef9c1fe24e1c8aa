"""Adversarial inputs against the jobs: what is not Kafka's, or is a live broker's, is never touched, and
everything is checked before anything changes (issue 14)."""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from jobs import compact, maintain, recover, retention
from storage_core import names
from storage_core.checkpoint import read_offset_checkpoint, write_offset_checkpoint
from storage_core.clean_shutdown import read_clean_shutdown
from storage_core.names import TopicPartition
from tests.builders.log_dir import LogDirBuilder
from tests.jobs.conftest import MASTER, locked_by_another_process

UUID = "0123456789abcdef0123456789abcdef"
T = TopicPartition("t", 0)


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under `root` (links as links, dirs as None) with each file's bytes."""
    return {
        str(p.relative_to(root)): (None if p.is_dir() or p.is_symlink() else p.read_bytes())
        for p in sorted(root.rglob("*"))
    }


TOPICS = '[topics."t"]\ncleanup.policy = "delete"\n[topics."u"]\ncleanup.policy = "delete"\n'


@pytest.fixture(scope="module", autouse=True)
def _topics_file(tmp_path_factory: pytest.TempPathFactory) -> None:
    global TOPICS_FILE
    TOPICS_FILE = tmp_path_factory.mktemp("topics") / "topics.toml"
    TOPICS_FILE.write_text(TOPICS)


TOPICS_FILE = Path()


def _logkeeper(*argv: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh process; destructive jobs get a topic-config naming t and u (they refuse
    topics whose configs are unknown)."""
    more = ["--topic-config", str(TOPICS_FILE)] if argv[0] in ("retention", "compact", "maintain") else []
    return subprocess.run(
        [sys.executable, "-m", "jobs", *argv, *more], capture_output=True, text=True, check=False, timeout=600
    )


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    """A log dir after an unclean shutdown: t-0 (offsets 0-29) and its checkpoints."""
    builder = LogDirBuilder(tmp_path / "logs")
    builder.partition("t", 0, segments=3)
    builder.checkpoints()
    return builder.path


# --- Strays and futures never overwrite the live partition's checkpoints -------------------------


@pytest.mark.spark
def test_a_stray_never_overwrites_the_live_partitions_checkpoints_nor_loses_its_records(
    spark, log_dir: Path, tmp_path: Path
) -> None:
    write_offset_checkpoint(log_dir / names.LOG_START_OFFSET_CHECKPOINT, {T: 15})
    stray_builder = LogDirBuilder(tmp_path / "elsewhere")
    stray = stray_builder.partition("t", 0, segments=1)  # offsets 0-9
    stray.rename(log_dir / f"t-0.{UUID}-stray")
    stray_files = _tree(log_dir / f"t-0.{UUID}-stray")
    result = tmp_path / "result.json"
    assert recover.main(["--log-dirs", str(log_dir), "--master", MASTER, "--result-json", str(result)]) == 0
    assert read_offset_checkpoint(log_dir / names.RECOVERY_POINT_CHECKPOINT) == {T: 30}
    assert read_offset_checkpoint(log_dir / names.LOG_START_OFFSET_CHECKPOINT) == {T: 15}
    # The stray was recovered from offset 0 with log start 0: none of its records were cut at the live log's 15.
    assert {k: v for k, v in _tree(log_dir / f"t-0.{UUID}-stray").items() if k.endswith(".log")} == {
        k: v for k, v in stray_files.items() if k.endswith(".log")
    }
    rows = {p["dir_name"]: p for p in json.loads(result.read_text())["partitions"]}
    assert (rows[f"t-0.{UUID}-stray"]["log_start_offset"], rows[f"t-0.{UUID}-stray"]["log_end_offset"]) == (0, 10)


@pytest.mark.parametrize("twin", ["t-\u0660", "t-+0", "t-\u0966"])  # ARABIC-INDIC and DEVANAGARI zero
def test_two_dirs_of_one_partition_are_refused_before_any_change(log_dir: Path, twin: str) -> None:
    (log_dir / twin).mkdir()
    before = _tree(log_dir)
    result = _logkeeper("recover", "--log-dirs", str(log_dir), "--master", MASTER)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "duplicate log directories for t-0" in result.stderr
    assert _tree(log_dir) == before


# --- The clean-shutdown marker keeps its broker epoch ---------------------------------------------


@pytest.mark.spark
def test_the_clean_shutdown_marker_keeps_its_broker_epoch(spark, log_dir: Path) -> None:
    (log_dir / names.CLEAN_SHUTDOWN_FILE).write_bytes(b'{"version":0,"brokerEpoch":79484}')
    assert recover.main(["--log-dirs", str(log_dir), "--master", MASTER]) == 0
    assert (log_dir / names.CLEAN_SHUTDOWN_FILE).read_bytes() == b'{"version":0,"brokerEpoch":79484}'
    (log_dir / names.CLEAN_SHUTDOWN_FILE).unlink()
    assert recover.main(["--log-dirs", str(log_dir), "--master", MASTER]) == 0
    marker = read_clean_shutdown(log_dir)
    assert marker is not None
    assert marker.broker_epoch == -1  # none existed: -1, as Kafka writes an unknown epoch


# --- Symlinks, non-Kafka directories: refused, exit 2, nothing changed -----------------------------


def _refused(log_dir: Path, root: Path, *names_in_message: str, job: str = "recover", extra: tuple = ()) -> None:
    before = _tree(root)
    result = _logkeeper(job, "--log-dirs", str(log_dir), "--master", MASTER, *extra)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr
    for text in names_in_message:
        assert text in result.stderr
    assert _tree(root) == before


def test_a_partition_dir_symlinked_into_another_brokers_dir_is_refused(log_dir: Path, tmp_path: Path) -> None:
    other = LogDirBuilder(tmp_path / "other-broker")
    other.partition("u", 0, segments=1)
    with names.log_file(other.path / "u-0", 0).open("ab") as f:
        f.write(b"\x00" * 100)  # a tail recovery would truncate
    (log_dir / "u-0").symlink_to(other.path / "u-0", target_is_directory=True)
    _refused(log_dir, tmp_path, str(log_dir / "u-0"), "symlink")


def test_a_segment_symlinked_to_an_outside_file_is_refused_and_the_file_kept(log_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "precious.bin"
    outside.write_bytes(b"not a segment" * 100)
    (log_dir / "t-0" / "00000000000000000030.log").symlink_to(outside)
    _refused(log_dir, tmp_path, str(log_dir / "t-0" / "00000000000000000030.log"), "symlink")
    _refused(log_dir, tmp_path, "symlink", job="retention")


def test_a_non_kafka_subdirectory_is_refused(log_dir: Path, tmp_path: Path) -> None:
    backup = log_dir / "backup-2024-old"
    backup.mkdir()
    (backup / "00000000000000000000.log").write_bytes(b"somebody's backup")
    _refused(log_dir, tmp_path, "backup-2024-old", "not a Kafka partition dir")


def test_a_dir_without_meta_properties_is_refused_unless_allowed(spark, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    _refused(empty, tmp_path, "no meta.properties", "--allow-missing-meta-properties")
    assert recover.main(["--log-dirs", str(empty), "--master", MASTER, "--allow-missing-meta-properties"]) == 0


def test_a_topic_with_whitespace_is_refused(log_dir: Path, tmp_path: Path) -> None:
    (log_dir / "my topic-0").mkdir()
    _refused(log_dir, tmp_path, "contains whitespace")


@pytest.mark.parametrize("kind", ["directory", "dangling symlink"])
def test_a_lock_file_that_cannot_be_locked_is_a_clear_refusal(log_dir: Path, tmp_path: Path, kind: str) -> None:
    if kind == "directory":
        (log_dir / names.LOCK_FILE).mkdir()
    else:
        (log_dir / names.LOCK_FILE).symlink_to(tmp_path / "gone.lock")
    _refused(log_dir, tmp_path, f".lock is a {kind}")


# --- The lock is held for the whole of maintain ---------------------------------------------------


@pytest.mark.spark
def test_maintain_holds_every_lock_between_its_steps(
    spark, log_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    run_retention = retention.run

    def probing(args):  # the moment between recover and retention
        seen.append(locked_by_another_process(log_dir))
        return run_retention(args)

    monkeypatch.setattr(retention, "run", probing)
    topics = tmp_path / "topics.toml"
    topics.write_text('[topics."t"]\ncleanup.policy = "delete"\n')
    argv = ["--log-dirs", str(log_dir), "--master", MASTER, "--warehouse", str(tmp_path / "wh")]
    assert maintain.main([*argv, "--topic-config", str(topics)]) == 0
    assert seen == [True]
    assert not locked_by_another_process(log_dir)


# --- Check everything before changing anything ----------------------------------------------------


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--dedupe-buffer-bytes", "10"], "offset map is too small"),
        (["--dedupe-buffer-bytes", "24"], "offset map is too small"),  # 1 slot x 0.9: Kafka's require fails
        (["--file-delete-delay-ms", "-5"], "--file-delete-delay-ms"),
        (["--high-watermark-source", "bogus"], "--high-watermark-source"),
    ],
)
def test_maintain_validates_every_steps_options_before_its_first_change(
    log_dir: Path, tmp_path: Path, option: list[str], message: str
) -> None:
    before = _tree(log_dir)
    result = _logkeeper("maintain", "--log-dirs", str(log_dir), "--warehouse", str(tmp_path / "wh"), *option)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert _tree(log_dir) == before
    assert not (tmp_path / "wh").exists()


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("log.cleaner.dedupe.buffer.size=0", "at least 1MB per cleaner thread"),
        ("log.cleaner.dedupe.buffer.size=10", "at least 1MB per cleaner thread"),
        ("log.cleaner.dedupe.buffer.size=24", "at least 1MB per cleaner thread"),
        ("log.cleaner.threads=0", "log.cleaner.threads"),
        ("log.cleaner.io.buffer.load.factor=0", "offset map is too small"),
        ("log.cleaner.io.buffer.load.factor=1.5", "above 1"),
        ("log.index.size.max.bytes=4", "log.index.size.max.bytes"),
        ("log.index.size.max.bytes=8", "log.index.size.max.bytes"),
    ],
)
def test_kafka_settings_are_validated_before_any_change(
    log_dir: Path, tmp_path: Path, setting: str, message: str
) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text(f"log.dirs={log_dir}\n{setting}\n")
    before = _tree(log_dir)
    result = _logkeeper("maintain", "--server-properties", str(properties), "--warehouse", str(tmp_path / "wh"))
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert _tree(log_dir) == before


def test_a_topic_index_size_below_one_time_index_entry_is_refused(log_dir: Path, tmp_path: Path) -> None:
    topics = tmp_path / "topics.toml"
    topics.write_text('[topics."t"]\nsegment.index.bytes = 8\n')
    before = _tree(log_dir)
    result = _logkeeper("recover", "--log-dirs", str(log_dir), "--topic-config", str(topics))
    assert result.returncode == 2
    assert "segment.index.bytes" in result.stderr
    assert _tree(log_dir) == before


@pytest.mark.spark
def test_an_index_too_small_for_its_segment_fails_the_partition_not_the_job(spark, tmp_path: Path) -> None:
    """segment.index.bytes 24 (valid) on a segment written with a larger one: Kafka's recovery fails
    ("Attempt to append to a full index"); here the partition fails with one line, the job goes on."""
    builder = LogDirBuilder(tmp_path / "logs")
    builder.partition("t", 0, segments=2, batches_per_segment=50, value_size=200)
    builder.partition("u", 0, segments=1)
    builder.checkpoints()
    topics = tmp_path / "topics.toml"
    topics.write_text('[topics."t"]\nsegment.index.bytes = 24\n')
    result = tmp_path / "result.json"
    argv = ["--log-dirs", str(builder.path), "--master", MASTER, "--topic-config", str(topics)]
    assert recover.main([*argv, "--deep-verify", "--result-json", str(result)]) == 1
    rows = {p["dir_name"]: p for p in json.loads(result.read_text())["partitions"]}
    assert (rows["t-0"]["status"], rows["t-0"]["error_type"]) == ("failed", "IndexFullError")
    assert "segment.index.bytes 24" in rows["t-0"]["error_message"]
    assert rows["u-0"]["status"] == "ok"
    assert read_clean_shutdown(builder.path) is None


@pytest.mark.spark
def test_the_load_factor_bounds_each_pass_as_in_kafka(spark, tmp_path: Path) -> None:
    """A 240-byte map (10 slots): at load factor 0.9 a pass maps 9 keys, at 0.3 only 3, so more passes."""
    passes = {}
    for factor in ("0.9", "0.3"):
        builder = LogDirBuilder(tmp_path / factor / "logs")
        builder.partition("k", 0, segments=4, batches_per_segment=10)  # 7 distinct keys (key-0..key-6)
        builder.checkpoints()
        (builder.path / names.CLEAN_SHUTDOWN_FILE).write_bytes(b'{"version":0,"brokerEpoch":1}')
        properties = tmp_path / factor / "server.properties"
        properties.write_text(f"log.cleaner.io.buffer.load.factor={factor}\n")
        topics = tmp_path / factor / "topics.toml"
        topics.write_text('[topics."k"]\ncleanup.policy = "compact"\n')
        result = tmp_path / factor / "result.json"
        argv = ["--log-dirs", str(builder.path), "--server-properties", str(properties), "--master", MASTER]
        argv += ["--topic-config", str(topics)]
        argv += ["--dedupe-buffer-bytes", "240", "--result-json", str(result), "--high-watermark-source", "log-end"]
        assert compact.main(argv) == 0
        (row,) = json.loads(result.read_text())["partitions"]
        passes[factor] = sum(1 for a in row["actions"] if a["kind"] == "clean_pass")
    assert passes["0.9"] == 1
    assert passes["0.3"] > 1


def test_an_unwritable_result_json_is_refused_before_the_run(log_dir: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for target in (blocker / "result.json", tmp_path):
        before = _tree(log_dir)
        result = _logkeeper("recover", "--log-dirs", str(log_dir), "--result-json", str(target))
        assert result.returncode == 2, result.stderr
        assert "--result-json" in result.stderr
        assert _tree(log_dir) == before


@pytest.mark.spark
def test_the_maintenance_log_is_written_even_if_the_result_json_is_not(
    spark, log_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result_dir = tmp_path / "results"
    result_dir.mkdir()
    (result_dir / "result.json.tmp").mkdir()  # the JSON's own temp path is taken: writing it fails
    wh = tmp_path / "wh"
    argv = ["--log-dirs", str(log_dir), "--master", MASTER, "--warehouse", str(wh)]
    assert recover.main([*argv, "--result-json", str(result_dir / "result.json")]) == 1
    assert "could not write --result-json" in capsys.readouterr().err
    assert (wh / "maintenance_log" / "_delta_log").is_dir()
    assert read_clean_shutdown(log_dir) is not None  # the run itself completed


# --- A full disk or a bare OSError: one line naming dir and file, exit 1, nothing half-written -----


@contextmanager
def _tiny_disk(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `path` (a real full disk: ENOSPC from the kernel)."""
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=False)
    if mounted.returncode != 0:
        pytest.skip("mounting a tmpfs needs root (the CI and developer machines run tests as root)")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _fill(path: Path) -> None:
    """Write zeros to `path` until the file system is full."""
    with (
        path.open("wb") as f,
        Path("/dev/zero").open("rb") as zeros,
        pytest.raises(OSError, match="No space left") as full,
    ):
        shutil.copyfileobj(zeros, f)  # endless: stops at ENOSPC
    assert full.value.errno == errno.ENOSPC


@pytest.mark.slow
def test_a_full_disk_fails_the_partition_with_one_line_and_nothing_half_written(tmp_path: Path) -> None:
    with _tiny_disk(tmp_path / "disk", "256k") as disk:
        builder = LogDirBuilder(disk / "logs")
        builder.partition("t", 0, segments=2, batches_per_segment=40, value_size=1000)  # ~80 KiB of segments
        builder.checkpoints()
        for index in (disk / "logs" / "t-0").glob("*.index"):
            index.unlink()  # recovery must rebuild them: 10 MiB preallocated each, more than the disk has
        _fill(disk / "filler")
        logs_before = {k: v for k, v in _tree(disk / "logs").items() if k.endswith(".log")}
        result = _logkeeper(
            "recover", "--log-dirs", str(disk / "logs"), "--master", MASTER, "--warehouse", str(tmp_path / "wh")
        )
        assert result.returncode == 1, result.stderr
        lines = [line for line in result.stderr.splitlines() if ": failed:" in line]
        assert len(lines) == 1
        assert str(disk / "logs" / "t-0") in lines[0]
        assert "No space left on device" in lines[0]
        assert "Traceback" not in result.stderr
        # Nothing half-written: every record is still there, and the dir is not marked clean.
        assert {k: v for k, v in _tree(disk / "logs").items() if k.endswith(".log")} == logs_before
        assert read_clean_shutdown(disk / "logs") is None


@pytest.mark.slow
def test_a_full_disk_when_closing_the_log_dir_is_a_failed_row_not_a_traceback(tmp_path: Path) -> None:
    with _tiny_disk(tmp_path / "disk", "256k") as disk:
        builder = LogDirBuilder(disk / "logs")
        builder.partition("t", 0, segments=3)
        builder.checkpoints()  # recovery point = log end: recovery writes nothing, only the marker is new
        _fill(disk / "filler")
        before = _tree(disk / "logs")
        argv = ["--log-dirs", str(disk / "logs"), "--master", MASTER, "--warehouse", str(tmp_path / "wh")]
        result = _logkeeper("recover", *argv)
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert f"{disk / 'logs' / '.kafka_cleanshutdown.tmp'}: No space left on device" in result.stderr
        after = _tree(disk / "logs")
        assert read_clean_shutdown(disk / "logs") is None  # not marked clean, and no temp file left
        assert {k: v for k, v in after.items() if k != ".lock"} == before


@pytest.mark.spark
def test_recover_removes_and_reports_stale_temp_files(spark, log_dir: Path, tmp_path: Path) -> None:
    (log_dir / "recovery-point-offset-checkpoint.tmp").write_bytes(b"0\n1\nt 0 5")  # torn by a crash
    (log_dir / ".kafka_cleanshutdown.tmp").write_bytes(b"")
    (log_dir / "t-0" / "leader-epoch-checkpoint.tmp").write_bytes(b"0\n1\n")
    segment_temps = ["00000000000000000000.index.tmp", "00000000000000000003.snapshot.tmp"]
    for name in segment_temps:  # an index rebuild and a snapshot write interrupted before their renames
        (log_dir / "t-0" / name).write_bytes(b"\0" * 12)
    result = tmp_path / "result.json"
    dry = tmp_path / "dry.json"
    argv = ["--log-dirs", str(log_dir), "--master", MASTER]
    assert recover.main([*argv, "--dry-run", "--result-json", str(dry)]) == 0
    assert (log_dir / ".kafka_cleanshutdown.tmp").exists()
    assert recover.main([*argv, "--result-json", str(result)]) == 0
    for report in (dry, result):
        (row,) = json.loads(report.read_text())["log_dirs"]
        assert row["log_dir"] == str(log_dir)
        assert {(a["kind"], a["file"], a["change"]) for a in row["actions"] if a["kind"] == "delete_stale_temp"} == {
            ("delete_stale_temp", "recovery-point-offset-checkpoint.tmp", "delete"),
            ("delete_stale_temp", ".kafka_cleanshutdown.tmp", "delete"),
        }
        (partition,) = [p for p in json.loads(report.read_text())["partitions"] if p["dir_name"] == "t-0"]
        assert {("delete_stale_temp", name) for name in ["leader-epoch-checkpoint.tmp", *segment_temps]} <= {
            (a["kind"], a["file"]) for a in partition["actions"]
        }
    assert not (log_dir / "t-0" / "leader-epoch-checkpoint.tmp").exists()
    assert not any((log_dir / "t-0" / name).exists() for name in segment_temps)
    assert not (log_dir / "recovery-point-offset-checkpoint.tmp").exists()
    assert not (log_dir / ".kafka_cleanshutdown.tmp").exists()
    assert read_clean_shutdown(log_dir) is not None
