"""The job-wide crash sweep: stop a whole Spark job at each of its file operations, then run it again.

    python -m tests.reliability.sweep --job recover|retention|compact|maintain|move --mode crash|power-loss
        [--stride K] [--shard I/N]
        --out report.json [--work DIR]

(`move` evacuates the corpus's clean log dir into the unclean one, a dir of the same broker, with no
Spark: all its operations are the driver's.)

One process, one local Spark session with one task slot (`local[1]`: tasks run one at a time, in
partition order, so a run's operations come in the same order every time), and one job-wide fault
control (`LOGKEEPER_FAULT_DIR`, :mod:`storage_core.fault_control`) set before Spark starts, so that
the driver and every Python worker count the same operations. For the job:

1. count: build the corpus (tests/builders/interop_corpus.py), run the job uninterrupted, record its
   operations (driver and executors, in order); then, after retention or compact, a `recover` (a
   load of the cleanly shut down dir, as a broker's start: it drops, say, the leader-epoch entry
   retention leaves at the log end when it deleted every segment, as Kafka's load does too) and
   record the end state (the log dirs and the quarantine);
2. for n in the plan (every driver operation unless `--stride-only`, n = 1, 1 + K, 1 + 2K, ..., and
   the last operation; K = 1 sweeps them all; with `--shard I/N` only every N-th of those points from
   the I-th on, so that N processes share a plan): build the corpus again, run the job with a
   crash planned at operation n (in power-loss mode, then revert what was not durable), check that
   the crash happened at operation n and that it is the n-th operation of the counted run (same
   operation, same file), then do what an operator does after a crash, uninterrupted and with the
   same run id (recover, then the job again, then the same final load; `maintain` begins with
   recover and ends with the load of its stats step), and compare the end state with the counted
   run's.

A task that Spark had already started when the crash failed the job may still be running: the
sweep waits until no task runs before it reverts or reruns anything (such a task cannot change a
file meanwhile: after the crash every operation fails).

The report lists the operations counted, the ones the sweep reached, and every mismatch.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from storage_core.fault_control import FAULT_DIR_ENV, SharedFaultControl
from tests.builders.interop_corpus import NOW, build_corpus
from tests.faults import revert_power_loss

MASTER = "local[1]"
RUN_ID = "sweep"


def _argv(job: str, root: Path) -> list[str]:
    log_dirs = [root / "unclean", root / "clean"] if job in ("recover", "maintain", "move") else [root / "clean"]
    argv = [
        job,
        "--log-dirs",
        ",".join(map(str, log_dirs)),
        "--master",
        MASTER,
        "--warehouse",
        str(root.parent / "warehouse"),
        "--run-id",
        RUN_ID,
        "--now-ms",
        str(NOW),
        "--topic-config",
        str(root / "topics.toml"),
    ]
    if job in ("retention", "compact", "maintain"):
        argv += ["--high-watermark-source", "log-end"]
    if job == "move":
        argv += ["--evacuate", str(root / "clean")]
    return argv


_LOG_DIR_ID = re.compile(r"/(unclean|clean)-[0-9a-f]{12}(?=/|$)")
_RENAMED_REPLICA = re.compile(r"\.[0-9a-f]{32}-(future|delete|stray)(?=/|$)")


def _normal_path(path: str, root: Path) -> str:
    """`path` with the corpus copy's directory as `<root>`, the log dir ids the quarantine derives from
    a log dir's absolute path (quarantine.log_dir_id) as `<name>-<id>`, and the random unique id of a
    renamed replica (`<tp>.<uuid>-future`, as Kafka names them) as `<uuid>`: copies differ only there."""
    path = _LOG_DIR_ID.sub(r"/\1-<id>", path.replace(str(root.parent), "<root>"))
    return _RENAMED_REPLICA.sub(r".<uuid>-\1", path)


def _state(root: Path) -> dict[str, str]:
    """Every file of the corpus's log dirs and of the quarantine: relative path -> sha256 (a `<name>.tmp`
    that a crash inside an atomic write left counts too: recover removes it, so none may remain)."""
    quarantine = root.parent / "warehouse" / "quarantine"
    out = {}
    for base, prefix in ((root, "logs"), (quarantine, "quarantine")):
        for path in sorted(base.rglob("*")) if base.exists() else []:
            if path.is_file() and path.name != "topics.toml":
                name = _normal_path(f"{prefix}/{path.relative_to(base)}", root)
                out[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


_LEFTOVER_PIECE = re.compile(r"\.log\.(cleaned|swap)\.\d+-\d+\.log$")


def _compare(state: dict[str, str], expected: dict[str, str]) -> str:
    """Why `state` is not the uninterrupted run's end state, "" if it is.

    The log dirs must be equal, file for file. The quarantine must hold every piece of the
    uninterrupted run, and may hold more only of what the crash itself left: the `.log.cleaned` and
    `.log.swap` files of an interrupted clean or split, which the next load quarantines.
    """
    differing = sorted(k for k in expected if state.get(k) != expected[k])
    differing += sorted(k for k in state if k not in expected and not _LEFTOVER_PIECE.search(k))
    return f"end state differs in {differing[:5]}" if differing else ""


def _normal(operations: list[tuple[str, str]], root: Path) -> list[tuple[str, str]]:
    return [(op, _normal_path(path, root)) for op, path in operations]


# What an operator runs after the job (to compare ends), and after a crash of it (to finish the work).
# A move needs no recovery before it resumes (it copies the log as it is); the recover after it is the
# broker's next start, which recovers what came from an unclean dir (or was in one when it crashed).
AFTER = {"recover": [], "retention": ["recover"], "compact": ["recover"], "maintain": [], "move": ["recover"]}
AFTER_CRASH = {
    "recover": ["recover"],
    "retention": ["recover", "retention", "recover"],
    "compact": ["recover", "compact", "recover"],
    "maintain": ["maintain"],
    "move": ["move", "recover"],
}


def _run(job: str, root: Path) -> None:
    from jobs import cli

    cli.main(_argv(job, root))


def _wait_for_idle_executors(timeout_s: float = 120.0) -> None:
    """Until no Spark task runs (a task started before a crash failed its job may still be going)."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None:
        return  # the crash came before the job started Spark
    tracker = context._jsc.sc().statusTracker()  # type: ignore[union-attr]
    deadline = time.monotonic() + timeout_s
    while any(info.numRunningTasks() for info in tracker.getExecutorInfos()):
        if time.monotonic() > deadline:
            raise TimeoutError("Spark tasks still running after a simulated crash")
        time.sleep(0.1)


def sweep(
    job: str,
    mode: str,
    stride: int,
    work: Path,
    log: Callable[[str], None],
    *,
    every_driver_operation: bool = True,
    shard: tuple[int, int] = (1, 1),
) -> dict[str, object]:
    control = SharedFaultControl(Path(os.environ[FAULT_DIR_ENV]))
    reference = work / "reference" / "corpus"
    SharedFaultControl.start(control.directory)
    build_corpus(reference)
    SharedFaultControl.start(control.directory)
    started = time.monotonic()
    _run(job, reference)
    operations = _normal(control.operations(), reference)
    driver_points = [n for n, pid in enumerate(control.pids(), start=1) if pid == os.getpid()]
    for then in AFTER[job]:
        _run(then, reference)
    expected = _state(reference)
    points = sorted({*(driver_points if every_driver_operation else []), *range(1, len(operations) + 1, stride)})
    points = sorted({*points, len(operations)})[shard[0] - 1 :: shard[1]]
    log(f"{job} {mode}: {len(operations)} operations in {time.monotonic() - started:.1f}s; sweeping {len(points)}")
    reached: list[int] = []
    mismatches: list[str] = []
    for n in points:
        root = work / f"at-{n}" / "corpus"
        SharedFaultControl.start(control.directory)
        build_corpus(root)
        SharedFaultControl.start(control.directory, fail_at=n, kind="crash", power_loss=mode == "power-loss")
        with contextlib.suppress(BaseException):
            _run(job, root)
        _wait_for_idle_executors()
        fired = control.fired()
        seen = _normal(control.operations(), root)
        if fired is None or fired["number"] != n:
            mismatches.append(f"{n}: the fault did not fire there ({fired})")
            continue
        if seen != operations[: n - 1] or _normal([(str(fired["operation"]), str(fired["path"]))], root) != [
            operations[n - 1]
        ]:
            first = next((i for i, (a, b) in enumerate(zip(seen, operations, strict=False)) if a != b), len(seen))
            mismatches.append(
                f"{n}: a different order of operations than the counted run's, from operation {first + 1}: "
                f"{seen[first : first + 1]} instead of {operations[first : first + 1]}"
            )
            continue
        if mode == "power-loss":
            revert_power_loss(control.journal())
        SharedFaultControl.start(control.directory)
        for then in AFTER_CRASH[job]:
            _run(then, root)
        reached.append(n)
        problem = _compare(_state(root), expected)
        if problem:
            mismatches.append(f"{n} {operations[n - 1]}: {problem}")
        log(f"  {n}/{len(operations)} {operations[n - 1][0]} {operations[n - 1][1].rsplit('/', 2)[-2:]}")
    return {
        "job": job,
        "mode": mode,
        "stride": stride,
        "operations": len(operations),
        "driver_operations": len(driver_points),
        "executor_operations": len(operations) - len(driver_points),
        "driver_points": driver_points,
        "planned": points,
        "reached": reached,
        "mismatches": mismatches,
        "seconds": round(time.monotonic() - started, 1),
    }


def _shard(text: str) -> tuple[int, int]:
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise argparse.ArgumentTypeError(f"expected I/N with 1 <= I <= N, got {text!r}")
    return int(index), int(count)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sweep")
    parser.add_argument("--job", required=True, choices=list(AFTER))
    parser.add_argument("--mode", default="crash", choices=["crash", "power-loss"])
    parser.add_argument("--stride", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, help="scratch directory (default: a new temporary one)")
    parser.add_argument("--stride-only", action="store_true", help="not every driver operation, only the stride")
    parser.add_argument("--shard", type=_shard, default=(1, 1), help="I/N: the I-th of N processes sharing the plan")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix=f"sweep-{args.job}-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ[FAULT_DIR_ENV] = str(work / "faults")  # before Spark starts: the workers inherit it
    SharedFaultControl.start(work / "faults")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path.cwd()), os.environ.get("PYTHONPATH")) if p)
    report = sweep(
        args.job,
        args.mode,
        args.stride,
        work,
        lambda line: print(line, file=sys.stderr, flush=True),
        every_driver_operation=not args.stride_only,
        shard=args.shard,
    )
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
