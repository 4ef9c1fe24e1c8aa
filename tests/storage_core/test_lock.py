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
from storage_core.errors import InvalidLogDirError, LogDirLockedError
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


def test_other_processes_see_our_lock_until_release_which_keeps_the_file(tmp_path: Path) -> None:
    lock = acquire_log_dir_lock(tmp_path, fs=FS)
    inode = (tmp_path / names.LOCK_FILE).stat().st_ino
    assert probe(tmp_path) == "refused"
    lock.release()
    assert not lock.held
    # Never unlinked: a contender may have opened it (see storage_core.lock); a broker reuses it.
    assert (tmp_path / names.LOCK_FILE).stat().st_ino == inode
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


CONTENDER = """
import errno, os, sys
from pathlib import Path
from storage_core.errors import LogDirLockedError
from storage_core.lock import acquire_log_dir_lock

log_dir, inside, attempts = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
acquired = overlaps = 0
for _ in range(attempts):
    try:
        lock = acquire_log_dir_lock(log_dir)
    except LogDirLockedError:
        continue
    acquired += 1
    try:  # only one holder at a time may create this file
        os.close(os.open(inside, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        overlaps += 1
    else:
        os.unlink(inside)
    lock.release()
print(acquired, overlaps, flush=True)
"""


@pytest.mark.slow
def test_contending_processes_looping_on_acquire_and_release_never_overlap(tmp_path: Path) -> None:
    """Four of ours (main's protocol, which deleted `.lock` before unlocking, let three overlap in
    thousands of acquisitions): the critical section (an O_EXCL file) is never entered twice at once."""
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    inside = tmp_path / "inside"
    styles = ["ours"] * 4
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", CONTENDER, str(log_dir), str(inside), "4000"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
        )
        for _ in styles
    ]
    results = []
    for process in processes:
        out, _ = process.communicate(timeout=300)
        assert process.returncode == 0
        results.append(tuple(map(int, out.split())))
    assert sum(acquired for acquired, _ in results) > 100  # they really contended and took turns
    assert [overlaps for _, overlaps in results] == [0] * len(styles)


def test_a_lock_file_that_is_a_directory_or_a_dangling_symlink_is_refused_and_left_alone(tmp_path: Path) -> None:
    (tmp_path / names.LOCK_FILE).mkdir()
    with pytest.raises(InvalidLogDirError, match="is a directory"):
        acquire_log_dir_lock(tmp_path, fs=FS)
    assert not is_log_dir_locked(tmp_path, fs=FS)
    (tmp_path / names.LOCK_FILE).rmdir()
    outside = tmp_path.parent / f"{tmp_path.name}-outside.lock"
    (tmp_path / names.LOCK_FILE).symlink_to(outside)
    with pytest.raises(InvalidLogDirError, match="dangling symlink") as error:
        acquire_log_dir_lock(tmp_path, fs=FS)
    assert str(outside) in str(error.value)
    assert not outside.exists()  # nothing was created through the link
    assert not is_log_dir_locked(tmp_path, fs=FS)


def test_a_lock_file_symlinked_to_a_file_locks_that_file_as_a_broker_does(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.lock"
    target.write_bytes(b"")
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    (log_dir / names.LOCK_FILE).symlink_to(target)
    with acquire_log_dir_lock(log_dir, fs=FS), holder([sys.executable, "-c", PYTHON_HOLDER, str(target)]) as verdict:
        assert verdict == "refused"  # we locked `target` itself
