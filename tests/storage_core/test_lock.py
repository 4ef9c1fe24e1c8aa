"""The log dir lock against real second processes: Python's fcntl.lockf and the JDK's FileChannel.tryLock.

The JDK holder does exactly what Kafka's `FileLock` does (open CREATE+READ+WRITE, `tryLock()`), so
these tests check the claim of kafka-format.md §1.7 that the two share one lock namespace on Linux.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from storage_core import names
from storage_core.errors import LogDirLockedError
from storage_core.fs import LocalFileSystem
from storage_core.lock import LogDirLock, acquire_log_dir_lock, is_log_dir_locked

FS = LocalFileSystem()
HolderCommand = Callable[[Path], list[str]]

PYTHON_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
except OSError:
    print("refused", flush=True)
    sys.exit(0)
print("locked", flush=True)
sys.stdin.read()  # hold until the test closes our stdin
"""

JAVA_HOLDER = """
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;

public class KafkaFileLock {
    public static void main(String[] args) throws Exception {
        FileChannel channel = FileChannel.open(Paths.get(args[0]),
            StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
        FileLock lock = channel.tryLock();
        System.out.println(lock == null ? "refused" : "locked");
        System.out.flush();
        if (lock != null) {
            System.in.read();  // hold until the test closes our stdin
        }
    }
}
"""


@contextmanager
def holder(command: list[str]) -> Iterator[str]:
    """Run a lock holder; yields its verdict ("locked" or "refused") and ends it on exit."""
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=60)


def python_holder(log_dir: Path) -> list[str]:
    return [sys.executable, "-c", PYTHON_HOLDER, str(log_dir / names.LOCK_FILE)]


@pytest.fixture(scope="module")
def java_holder(tmp_path_factory: pytest.TempPathFactory) -> HolderCommand:
    """The command running Kafka's locking code with the JDK on the PATH (the one Spark uses)."""
    source = tmp_path_factory.mktemp("java") / "KafkaFileLock.java"
    source.write_text(JAVA_HOLDER)
    return lambda log_dir: ["java", str(source), str(log_dir / names.LOCK_FILE)]


def probe(log_dir: Path) -> str:
    """What another process gets when it tries the lock right now."""
    with holder(python_holder(log_dir)) as verdict:
        return verdict


def test_a_lock_held_by_another_process_refuses_and_is_free_once_it_exits(tmp_path: Path) -> None:
    with holder(python_holder(tmp_path)) as verdict:
        assert verdict == "locked"
        assert is_log_dir_locked(tmp_path, fs=FS)
        with pytest.raises(LogDirLockedError) as error:
            acquire_log_dir_lock(tmp_path, fs=FS)
        assert error.value.path == tmp_path
    assert not is_log_dir_locked(tmp_path, fs=FS)
    with acquire_log_dir_lock(tmp_path, fs=FS) as lock:
        assert lock.held
        assert lock.path == tmp_path.resolve() / names.LOCK_FILE


def test_other_processes_see_our_lock_until_release_which_deletes_the_file(tmp_path: Path) -> None:
    lock = acquire_log_dir_lock(tmp_path, fs=FS)
    assert (tmp_path / names.LOCK_FILE).exists()
    assert probe(tmp_path) == "refused"
    lock.release()
    assert not lock.held
    assert not (tmp_path / names.LOCK_FILE).exists()  # as Kafka's FileLock.destroy
    lock.release()  # a second release does nothing
    assert probe(tmp_path) == "locked"


def test_a_second_acquisition_in_this_process_is_refused_and_keeps_the_first(tmp_path: Path) -> None:
    (tmp_path / "alias").symlink_to(tmp_path, target_is_directory=True)
    with acquire_log_dir_lock(tmp_path, fs=FS):
        for spelling in (tmp_path, tmp_path / "alias", tmp_path / "alias" / ".." / tmp_path.name):
            with pytest.raises(LogDirLockedError):
                acquire_log_dir_lock(spelling, fs=FS)
            assert is_log_dir_locked(spelling, fs=FS)
        # Neither the refusal nor the probe closed a descriptor of the file (which would unlock it).
        assert probe(tmp_path) == "refused"
    assert probe(tmp_path) == "locked"


def test_the_lock_is_released_when_the_block_fails(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), acquire_log_dir_lock(tmp_path, fs=FS):
        raise RuntimeError("boom")
    assert not is_log_dir_locked(tmp_path, fs=FS)
    lock = acquire_log_dir_lock(tmp_path, fs=FS)
    assert isinstance(lock, LogDirLock)
    lock.release()


def test_probing_an_unlocked_dir_creates_nothing(tmp_path: Path) -> None:
    assert not is_log_dir_locked(tmp_path, fs=FS)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / names.LOCK_FILE).write_bytes(b"")  # left by a broker that died
    assert not is_log_dir_locked(tmp_path, fs=FS)
    assert not is_log_dir_locked(Path("/nonexistent-logkeeper-dir"), fs=FS)


def test_kafkas_java_lock_and_ours_exclude_each_other(tmp_path: Path, java_holder: HolderCommand) -> None:
    with holder(java_holder(tmp_path)) as verdict:
        assert verdict == "locked"
        assert is_log_dir_locked(tmp_path, fs=FS)
        with pytest.raises(LogDirLockedError):
            acquire_log_dir_lock(tmp_path, fs=FS)
    with acquire_log_dir_lock(tmp_path, fs=FS), holder(java_holder(tmp_path)) as verdict:
        assert verdict == "refused"
