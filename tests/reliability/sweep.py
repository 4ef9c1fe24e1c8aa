"""The job-wide crash sweep: stop a whole Spark job at each of its file operations, then run it again.

    python -m tests.reliability.sweep --job recover|retention|compact|maintain|move
        --plan crash:16:drivers:commands --plan power-loss:32 [--shard I/N] --out report.json [--work DIR]

(`move` evacuates the corpus's clean log dir into the unclean one, a dir of the same broker, with no
Spark: all its operations are the driver's, and its command-line plan is its last operation.)

One process, one local Spark session with one task slot (`local[1]`: tasks run one at a time, in
partition order, so a run's operations come in the same order every time), started once before the
first run and used by every run of the sweep, and one job-wide fault control (`LOGKEEPER_FAULT_DIR`,
:mod:`storage_core.fault_control`) set before Spark starts, so that the driver and every Python
worker count the same operations. Each run is `jobs.cli.main(argv)` in this process: the job's own
argument parsing, driver and executor function on Spark's Python workers, as from the command line;
`cli.main` reuses the session its caller started and leaves it running, so a crash point costs the
job and its reruns (0.1-2 s each here), not a Spark start per run (5-10 s). For the job:

1. count: build the corpus (tests/builders/interop_corpus.py) once, as the template every run copies,
   run the job uninterrupted on a copy, record its
   operations (driver and executors, in order); then, after retention or compact, a `recover` (a
   load of the cleanly shut down dir, as a broker's start: it drops, say, the leader-epoch entry
   retention leaves at the log end when it deleted every segment, as Kafka's load does too) and
   record the end state (the log dirs and the quarantine);
2. for each `--plan MODE:K[:drivers][:commands]` (crash or power loss), for n in its points (n = 1,
   1 + K, 1 + 2K, ..., and the last operation, with `drivers` every driver operation too; K = 1 sweeps
   them all; with `--shard I/N` only every N-th of those points from the I-th on, so that N processes
   share a plan): copy the corpus again, run the job with a
   crash planned at operation n (in power-loss mode, then revert what was not durable), check that
   the crash happened at operation n and that it is the n-th operation of the counted run (same
   operation, same file), then do what an operator does after a crash, uninterrupted and with the
   same run id (recover, then the job again, then the same final load; `maintain` begins with
   recover and ends with the load of its stats step), and compare the end state with the counted
   run's;
3. with `commands` (crash mode), the command-line plan: at the first operation of a Spark task and at
   the last operation of the run, the crashed run is `python -m jobs.cli <job> ...` in a process of
   its own, as an operator starts it (its own Spark start and stop), killed at that operation
   (fault kind `exit`: status 137, no `finally` block runs, the kernel releases its locks, its
   Python worker dies under Spark); the same checks against the same counted run, so the command
   performs the in-process run's very operations in its order; the reruns are in-process.

The work directory (`--work`, default a new one under /dev/shm where there is one) holds every
point's copy until it compared equal; it lives in memory: the crashes and power losses are
simulated, so no disk is needed, and on one the fault control's per-operation writes and the jobs'
fsyncs cost milliseconds each.

A task that Spark had already started when the crash failed the job may still be running: the
sweep waits until no task runs before it reverts or reruns anything (such a task cannot change a
file meanwhile: after the crash every operation fails).

The report lists the operations counted, the ones the sweep reached (in-process and through the
command line), and every mismatch.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
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


def _run_command(job: str, root: Path, timeout_s: float = 600.0) -> None:
    """`python -m jobs.cli <job> ...` in a process (and process group) of its own; when it has ended,
    whatever it left (its JVM, Python workers) is killed with its group."""
    process = subprocess.Popen([sys.executable, "-m", "jobs.cli", *_argv(job, root)], start_new_session=True)
    try:
        process.wait(timeout=timeout_s)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _copy_corpus(template: Path, root: Path) -> None:
    """A fresh copy of the corpus built once (file contents and mtimes as built)."""
    shutil.copytree(template, root, copy_function=shutil.copy2)


def memory_dir() -> Path | None:
    """Where a sweep works best: /dev/shm, a file system in memory. The sweep's crashes and power
    losses are simulated (the fault control, the durability journal), so it needs no disk: on one,
    the fault control's own per-operation writes and the jobs' fsyncs cost milliseconds each."""
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else None


def _wait_for_idle_executors(timeout_s: float = 120.0) -> None:
    """Until no Spark task runs (a task started before a crash failed its job may still be going)."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None:
        return
    tracker = context._jsc.sc().statusTracker()  # type: ignore[union-attr]
    deadline = time.monotonic() + timeout_s
    while any(info.numRunningTasks() for info in tracker.getExecutorInfos()):
        if time.monotonic() > deadline:
            raise TimeoutError("Spark tasks still running after a simulated crash")
        time.sleep(0.1)


@dataclass(frozen=True)
class _Counted:
    """The uninterrupted run: its operations (normalised) and its end state."""

    job: str
    template: Path
    operations: list[tuple[str, str]]
    expected: dict[str, str]


@dataclass(frozen=True)
class Plan:
    """Where one mode of the sweep crashes the job: every `stride`-th operation from the first and the
    last one, with `drivers` every driver operation too, with `commands` the command-line plan."""

    mode: str
    stride: int
    drivers: bool = False
    commands: bool = False

    @classmethod
    def parse(cls, text: str) -> Plan:
        """`MODE:STRIDE[:drivers][:commands]`, e.g. `crash:16:drivers:commands`, `power-loss:32`."""
        mode, stride, *flags = text.split(":")
        if mode not in ("crash", "power-loss") or not stride.isdigit() or int(stride) < 1:
            raise argparse.ArgumentTypeError(f"expected MODE:STRIDE[:drivers][:commands], got {text!r}")
        if set(flags) - {"drivers", "commands"} or (mode == "power-loss" and "commands" in flags):
            raise argparse.ArgumentTypeError(f"{text!r}: the flags are drivers and commands (crash mode only)")
        return cls(mode, int(stride), "drivers" in flags, "commands" in flags)


def _crash_at(
    n: int, counted: _Counted, mode: str, control: SharedFaultControl, root: Path, *, command: bool
) -> tuple[bool, str]:
    """Crash the job at operation n (in-process, or as a command killed there), recover and rerun;
    (whether the crash came at the n-th operation of the counted run, and why the end state differs
    from the uninterrupted run's: "" if it does not)."""
    job, operations = counted.job, counted.operations
    _copy_corpus(counted.template, root)
    kind = "exit" if command else "crash"
    SharedFaultControl.start(control.directory, fail_at=n, kind=kind, power_loss=mode == "power-loss")
    if command:
        _run_command(job, root)
    else:
        with contextlib.suppress(BaseException):
            _run(job, root)
        _wait_for_idle_executors()
    fired = control.fired()
    seen = _normal(control.operations(), root)
    if fired is None or fired["number"] != n:
        return False, f"{n}: the fault did not fire there ({fired})"
    if seen != operations[: n - 1] or _normal([(str(fired["operation"]), str(fired["path"]))], root) != [
        operations[n - 1]
    ]:
        first = next((i for i, (a, b) in enumerate(zip(seen, operations, strict=False)) if a != b), len(seen))
        return False, (
            f"{n}: a different order of operations than the counted run's, from operation {first + 1}: "
            f"{seen[first : first + 1]} instead of {operations[first : first + 1]}"
        )
    if mode == "power-loss":
        revert_power_loss(control.journal())
    SharedFaultControl.start(control.directory)
    for then in AFTER_CRASH[job]:
        _run(then, root)
    problem = _compare(_state(root), counted.expected)
    return True, f"{n} {operations[n - 1]}: {problem}" if problem else ""


def command_points(operations: int, driver_points: list[int]) -> list[int]:
    """The command-line plan: the first operation of a Spark task (its Python worker is killed, then
    the driver at its next operation) and the last operation of the run (the driver is killed after
    its Spark work)."""
    drivers = set(driver_points)
    first_task = next((n for n in range(1, operations + 1) if n not in drivers), operations)
    return sorted({first_task, operations})


def sweep(
    job: str, plans: list[Plan], work: Path, log: Callable[[str], None], *, shard: tuple[int, int] = (1, 1)
) -> dict[str, object]:
    """Count the job's operations once, then sweep each plan; the report (see the module doc)."""
    from jobs._spark import get_spark, stop_spark

    control = SharedFaultControl(Path(os.environ[FAULT_DIR_ENV]))
    started = time.monotonic()
    session = get_spark(MASTER, f"logkeeper {job} sweep")  # every run of the sweep uses this one
    results = []
    try:
        template, reference = work / "template" / "corpus", work / "reference" / "corpus"
        SharedFaultControl.start(control.directory)
        build_corpus(template)
        _copy_corpus(template, reference)
        SharedFaultControl.start(control.directory)
        _run(job, reference)
        operations = _normal(control.operations(), reference)
        driver_points = [n for n, pid in enumerate(control.pids(), start=1) if pid == os.getpid()]
        for then in AFTER[job]:
            _run(then, reference)
        counted = _Counted(job, template, operations, _state(reference))
        log(f"{job}: {len(operations)} operations, counted in {time.monotonic() - started:.1f}s with the Spark start")
        for plan in plans:
            swept = time.monotonic()
            points = {*(driver_points if plan.drivers else []), *range(1, len(operations) + 1, plan.stride)}
            points = sorted({*points, len(operations)})[shard[0] - 1 :: shard[1]]
            commands = command_points(len(operations), driver_points)[shard[0] - 1 :: shard[1]] if plan.commands else []
            log(f"{job} {plan.mode}: sweeping {len(points)} in-process, {len(commands)} through the command line")
            reached: dict[bool, list[int]] = {False: [], True: []}
            mismatches: list[str] = []
            for by_command, planned in ((False, points), (True, commands)):
                for n in planned:
                    root = work / plan.mode / f"at-{n}{'-command' if by_command else ''}" / "corpus"
                    there, problem = _crash_at(n, counted, plan.mode, control, root, command=by_command)
                    if there:
                        reached[by_command].append(n)
                    if problem:
                        mismatches.append(("command " if by_command else "") + problem)
                    else:
                        shutil.rmtree(root.parent)  # the point's corpus and warehouse: kept only to look at
                    operation, path = operations[n - 1]
                    how = " (command)" if by_command else ""
                    log(f"  {plan.mode} {n}/{len(operations)}{how} {operation} {path.rsplit('/', 2)[-2:]}")
            results.append(
                {
                    "mode": plan.mode,
                    "stride": plan.stride,
                    "planned": points,
                    "reached": reached[False],
                    "planned_by_command": commands,
                    "reached_by_command": reached[True],
                    "mismatches": mismatches,
                    "seconds": round(time.monotonic() - swept, 1),
                }
            )
    finally:
        stop_spark(session)
    return {
        "job": job,
        "operations": len(operations),
        "driver_operations": len(driver_points),
        "executor_operations": len(operations) - len(driver_points),
        "driver_points": driver_points,
        "plans": results,
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
    parser.add_argument(
        "--plan",
        type=Plan.parse,
        action="append",
        required=True,
        help="MODE:STRIDE[:drivers][:commands] (repeatable): crash or power-loss, every STRIDE-th operation, "
        "with every driver operation, with the command-line plan",
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, help="scratch directory (default: a new temporary one)")
    parser.add_argument("--shard", type=_shard, default=(1, 1), help="I/N: the I-th of N processes sharing the plan")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix=f"sweep-{args.job}-", dir=memory_dir()))
    work.mkdir(parents=True, exist_ok=True)
    os.environ[FAULT_DIR_ENV] = str(work / "faults")  # before Spark starts: the workers inherit it
    SharedFaultControl.start(work / "faults")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path.cwd()), os.environ.get("PYTHONPATH")) if p)
    report = sweep(args.job, args.plan, work, lambda line: print(line, file=sys.stderr, flush=True), shard=args.shard)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
