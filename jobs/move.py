"""`logkeeper move`: move partitions between the log dirs of a stopped broker, through Kafka's `-future` protocol.

    logkeeper move --log-dirs D1,D2[,...] --partition T-P --to-log-dir D [--max-bytes-per-second N]
    logkeeper move --log-dirs D1,D2[,...] --evacuate D [--max-bytes-per-second N]   (+ the common options)

`--log-dirs` are the broker's log dirs (all of them: a partition is looked for in each). Each move is
:mod:`storage_core.move`'s: copy into `<tp>.<uuid>-future` in the destination, verify, switch, retire
the source as `-delete`, remove it; crash-safe at every step, and resumable: after a crash (or a
stop) the same command goes on from where the dirs are. `--evacuate D` moves every partition of D,
largest first, each to the other log dir with the most free space after the moves planned before it.
`--max-bytes-per-second` throttles the copies (a token bucket shared by every logkeeper copy of the
host). Progress: one line per file copied and per partition done, with bytes and rates.

Refused before anything changes (exit 2): dirs of different brokers (`meta.properties` node id or
cluster id), a destination outside `--log-dirs`, a partition live in no or several dirs, a stray
replica, the metadata log, a `-future` dir of the partition elsewhere (a move of Kafka's own), too
little free space in the destination; and, with KRaft JBOD (KIP-858), a destination whose
`directory.id` the cluster's metadata does not list among this broker's registered log dirs. A live
broker's `.lock` refuses the move (exit 3): it never runs beside a broker.

Directory assignment (KIP-858): the metadata log assigns each replica to a log dir
(`PartitionRecord.directories`). A broker that starts with a partition in another of its dirs than
the assigned one uses the log where it is (`LogManager.getOrCreateLog` takes an existing log) and,
when `metadata.version` supports directory assignment (3.7-IV2+), reports the dir to the controller
(`ReplicaManager.maybeUpdateTopicAssignment` -> `AssignmentsManager` -> AssignReplicasToDirs), which
updates the assignment. So nothing needs to be told to the controller offline, and nothing can be:
the metadata log is the controller's. Each moved partition's row says what the metadata assigns and
what the broker will report. A `-future` dir is never left for the broker to resolve: at startup a
broker promotes a future log whose dir the metadata assigns (`recoverAbandonedFutureLogs`), or
resumes copying into it; the move removes the ambiguity by finishing first.

The clean-shutdown markers: both dirs lose theirs before anything changes (as every job); a dir gets
its marker back at the end only if it had one, every move touching it finished, and (a destination)
every partition moved into it came from a dir that had one: a log copied from an unclean dir is
recovered at the broker's next start, as its source would have been. A dry run plans: it reports the
files it would copy and the steps, and changes nothing (copying a partition into memory would not be
a plan).
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from jobs import _log
from jobs._common import (
    ActionRow,
    JobArgs,
    JobSummary,
    PartitionRow,
    PartitionTask,
    UsageError,
    action_rows,
    common_args,
    discover_partitions,
    failed_row,
    job_parser,
    locked_log_dirs,
    log_dir_rows,
    partition_row,
    run_main,
)
from jobs._fleet import read_identity
from jobs._load import job_fs
from jobs._throttle import HostTokenBucket, default_throttle_dir
from storage_core import names
from storage_core.clean_shutdown import UNKNOWN_BROKER_EPOCH, write_clean_shutdown
from storage_core.errors import StorageError
from storage_core.load_actions import ActionKind, FileChange, LoadAction, written
from storage_core.log_dir import LogDirState, open_log_dir
from storage_core.meta_properties import read_meta_properties
from storage_core.move import MovePlan, MoveStep, apply_move, plan_move, same_files
from storage_core.names import DirKind, TopicPartition
from storage_core.partition_metadata import ZERO_UUID

log = _log.get("move")
DIRECTORY_ASSIGNMENT_LEVEL = 17  # metadata.version 3.7-IV2: MetadataVersion.isDirectoryAssignmentSupported


@dataclass(frozen=True, slots=True)
class MoveArgs:
    common: JobArgs
    moves: tuple[tuple[PartitionTask, Path], ...]  # (partition, destination log dir), in order
    max_bytes_per_second: int
    throttle_dir: Path


def parse_args(argv: list[str]) -> MoveArgs:
    parser = job_parser("move", "Move partitions between the log dirs of a stopped broker (Kafka's -future protocol).")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--partition", help="the partition to move, <topic>-<partition>")
    what.add_argument("--evacuate", type=Path, help="move every partition of this log dir to the broker's others")
    parser.add_argument("--to-log-dir", type=Path, help="with --partition: the destination log dir")
    parser.add_argument(
        "--max-bytes-per-second", type=int, default=0, help="copy rate of all moves of the host (0: unthrottled)"
    )
    parser.add_argument("--throttle-dir", type=Path, help="the host's shared token bucket (default: a tmp dir)")
    namespace = parser.parse_args(argv)
    if namespace.max_bytes_per_second < 0:
        raise UsageError("--max-bytes-per-second must be >= 0 (0: unthrottled)")
    if namespace.partition is not None and namespace.to_log_dir is None:
        raise UsageError("--partition needs --to-log-dir")
    if namespace.evacuate is not None and namespace.to_log_dir is not None:
        raise UsageError("--evacuate chooses the destinations itself: give no --to-log-dir")
    common = common_args(namespace)
    moves = _moves(common, namespace.partition, namespace.to_log_dir, namespace.evacuate)
    return MoveArgs(common, moves, namespace.max_bytes_per_second, namespace.throttle_dir or default_throttle_dir())


def _log_dir(common: JobArgs, path: Path, option: str) -> Path:
    for log_dir in common.log_dirs:
        if log_dir.resolve() == path.resolve():
            return log_dir
    raise UsageError(f"{option} {path} is not one of --log-dirs (the broker's log dirs)")


def _moves(
    common: JobArgs, partition: str | None, to_log_dir: Path | None, evacuate: Path | None
) -> tuple[tuple[PartitionTask, Path], ...]:
    """The moves asked for, checked (see the module docstring's refusals). A partition a crashed move
    left half-way (live in two dirs, a `-future` or a `-delete` dir) resumes where that move went."""
    _same_broker(common)
    found, problems = discover_partitions(common.log_dirs)
    if problems:
        raise UsageError(f"{problems[0].log_dir}/{problems[0].dir_name}: {problems[0].error_message}")
    moves = []
    if partition is not None and to_log_dir is not None:
        destination = _log_dir(common, to_log_dir, "--to-log-dir")
        tp = _topic_partition(partition)
        if tp.topic == names.METADATA_TOPIC:
            raise UsageError(f"{tp} is the KRaft metadata log: it lives in metadata.log.dir and is never moved")
        mine = [p for p in found if (p.topic, p.partition) == (tp.topic, tp.partition)]
        sources = [p for p in mine if Path(p.log_dir) != destination and p.kind in ("live", "delete")]
        live = [p for p in sources if p.kind == "live"]
        if len(live) > 1:
            raise UsageError(f"{tp} is live in {len(live)} log dirs: {', '.join(p.log_dir for p in live)}")
        if not live and not any(p.kind == "live" and Path(p.log_dir) == destination for p in mine):
            raise UsageError(f"{tp} is in none of the log dirs (no {tp} dir)")
        if not sources:
            raise UsageError(f"{tp} is already in {destination}")
        moves.append(((live or sources)[0], destination))
    elif evacuate is not None:
        source = _log_dir(common, evacuate, "--evacuate")
        others = [d for d in common.log_dirs if d != source]
        if not others:
            raise UsageError("--evacuate needs another log dir of the broker in --log-dirs")
        free = {d: _free_bytes(d) for d in others}
        here = sorted(
            (p for p in found if p.log_dir == str(source) and p.kind in ("live", "delete")), key=lambda p: -p.size_bytes
        )
        for part in here:
            resumed = _resumed_destination(found, part, source)
            if part.kind == "delete" and resumed is None:
                continue  # a replica Kafka deletes: not ours to move
            destination = resumed or max(others, key=lambda d: free[d])
            free[destination] -= part.size_bytes
            moves.append((part, destination))
    for part, destination in moves:
        if part.kind == "live":
            _check_move(common, found, part, destination)
    return tuple(moves)


def _resumed_destination(found: list[PartitionTask], part: PartitionTask, source: Path) -> Path | None:
    """The log dir a crashed move of `part` was going to: where it is live (or has a `-future` dir) too."""
    others = {
        Path(p.log_dir)
        for p in found
        if (p.topic, p.partition) == (part.topic, part.partition)
        and Path(p.log_dir) != source
        and p.kind in ("live", "future")
    }
    if len(others) > 1:
        raise UsageError(
            f"{part.topic}-{part.partition} is in {len(others)} other log dirs too: {sorted(map(str, others))}"
        )
    return next(iter(others), None)


def _topic_partition(text: str) -> TopicPartition:
    try:
        parsed = names.parse_partition_dir_name(text)
    except StorageError as exc:
        raise UsageError(f"--partition {text!r}: {exc}") from None
    if parsed.kind is not DirKind.LIVE:
        raise UsageError(f"--partition {text!r}: give <topic>-<partition>")
    return parsed.topic_partition


def _same_broker(common: JobArgs) -> None:
    identities = {d: read_identity(d) for d in common.log_dirs}
    brokers = {(i.cluster_id, i.node_id) for i in identities.values()}
    if len(brokers) > 1:
        listed = "; ".join(f"{d}: cluster {i.cluster_id} node {i.node_id}" for d, i in identities.items())
        raise UsageError(f"the log dirs are not one broker's (meta.properties): {listed}")


def _directory_id(log_dir: Path) -> str | None:
    path = log_dir / names.META_PROPERTIES
    return read_meta_properties(path).directory_id if path.is_file() else None


def _free_bytes(log_dir: Path) -> int:
    stats = os.statvfs(log_dir)
    return stats.f_bavail * stats.f_frsize


def _check_move(common: JobArgs, found: list[PartitionTask], part: PartitionTask, destination: Path) -> None:
    tp = TopicPartition(part.topic, part.partition)
    topology = common.cluster.topology(part.log_dir, part.dir_name, tp)
    if topology.is_stray:
        raise UsageError(f"{part.log_dir}/{part.dir_name} is a stray replica ({topology.stray_reason}): not moved")
    elsewhere = [
        p
        for p in found
        if p.kind == "future" and (p.topic, p.partition) == (tp.topic, tp.partition) and Path(p.log_dir) != destination
    ]
    if elsewhere:
        raise UsageError(
            f"{tp} has a -future dir in {elsewhere[0].log_dir} ({elsewhere[0].dir_name}): a move of Kafka's own is "
            "in progress; let the broker finish it, or remove that dir"
        )
    if (destination / part.dir_name).is_dir() and not same_files(
        Path(part.log_dir) / part.dir_name, destination / part.dir_name
    ):
        raise UsageError(
            f"{tp} is live in both {part.log_dir} and {destination} and they differ: this is not what a move "
            "leaves; look at both before anything deletes one"
        )
    copied = sum(
        p.size_bytes
        for p in found
        if (p.topic, p.partition) == (tp.topic, tp.partition) and Path(p.log_dir) == destination and p.kind != "delete"
    )  # a resumed move needs only what is not there yet
    needed = max(0, part.size_bytes - copied)
    if _free_bytes(destination) < needed:
        raise UsageError(f"{destination} has {_free_bytes(destination):,} B free, {tp} needs {needed:,} B")
    _check_directory(common, destination)


def _check_directory(common: JobArgs, destination: Path) -> None:
    """KRaft JBOD: the destination must be a log dir the controller knows as this broker's."""
    image = common.cluster.image
    directory_id = _directory_id(destination)
    node_id = common.cluster.identities[destination].node_id
    if image is None or node_id is None or image.features.get("metadata.version", 0) < DIRECTORY_ASSIGNMENT_LEVEL:
        return  # no directory assignment (ZooKeeper mode, or a metadata.version before 3.7-IV2)
    broker = image.brokers.get(node_id)
    if directory_id is None:
        raise UsageError(f"{destination} has no directory.id in meta.properties: the broker never used it")
    if broker is not None and broker.log_dirs and directory_id not in broker.log_dirs:
        raise UsageError(
            f"{destination} (directory.id {directory_id}) is not among the log dirs broker {node_id} registered "
            f"with the controller ({', '.join(broker.log_dirs)}): start the broker once with it in log.dirs, stop "
            "it, then move (the controller must know a directory before replicas are assigned to it)"
        )


def _assignment(common: JobArgs, plan: MovePlan) -> ActionRow:
    """What the metadata assigns the partition to, and what the broker reports at its next start."""
    tp = plan.topic_partition
    new_id = _directory_id(plan.destination) or ""
    image = common.cluster.image
    node_id = common.cluster.identities[plan.destination].node_id
    topic = None if image is None else image.topics.get(tp.topic)
    partition = None if topic is None else topic.partitions.get(tp.partition)
    if image is None or partition is None or node_id not in partition.replicas:
        reason = "no directory assignment in the metadata to update (no KRaft metadata for it)"
    else:
        assigned = partition.directories[partition.replicas.index(node_id)] if partition.directories else ZERO_UUID
        if assigned == new_id:
            reason = f"the metadata already assigns {tp} to {new_id}"
        elif image.features.get("metadata.version", 0) < DIRECTORY_ASSIGNMENT_LEVEL:
            reason = "metadata.version is before 3.7-IV2: replicas are not assigned to directories"
        else:
            reason = (
                f"the metadata assigns {tp} to directory {assigned}; at its next start broker {node_id} serves it from "
                f"{plan.destination} ({new_id}) and reports that to the controller (AssignReplicasToDirs, KIP-858)"
            )
    return ActionRow("directory_assignment", "", -1, 0, reason)


def _planned_actions(plan: MovePlan) -> tuple[LoadAction, ...]:
    """A dry run's actions: the files a copy would write and the steps after it."""
    live = str(plan.topic_partition)
    out: list[LoadAction] = []
    if plan.step <= MoveStep.COPY:
        source = plan.source / live
        for name in sorted(os.listdir(source)):
            size = (source / name).stat().st_size
            out.append(LoadAction(ActionKind.MOVE_COPY, name, -1, size, f"would copy from {source}", FileChange.CREATE))
        out.append(LoadAction(ActionKind.MOVE_SWITCH, plan.future_name, -1, 0, "would switch", FileChange.RENAME, live))
    if plan.step <= MoveStep.RETIRE_SOURCE:
        out.append(LoadAction(ActionKind.MOVE_RETIRE, live, -1, 0, "would retire", FileChange.RENAME, plan.delete_name))
    if plan.step <= MoveStep.CLEAN_SOURCE:
        out.append(
            LoadAction(ActionKind.MOVE_DELETE_SOURCE, plan.delete_name, -1, 0, "would delete", FileChange.DELETE)
        )
    return tuple(out)


class _Progress:
    """Bytes copied of a partition, logged every 5 % (and at the end) with the rate."""

    def __init__(self, what: str, total: int) -> None:
        self.what, self.total, self.done, self.started, self.next = what, max(total, 1), 0, time.monotonic(), 0.05

    def __call__(self, size: int) -> None:
        self.done += size
        if self.done / self.total >= self.next:
            rate = self.done / 1e6 / max(time.monotonic() - self.started, 1e-3)
            share = 100 * self.done / self.total
            log.info(f"  {self.what}: {self.done:,} of {self.total:,} B ({share:.0f} %) {rate:.1f} MB/s")
            self.next = min(1.0, self.done / self.total + 0.05)


def move_one(args: MoveArgs, part: PartitionTask, destination: Path, *, dry_run: bool) -> PartitionRow:
    """Plan and (unless a dry run) carry out one move; its row."""
    common = args.common
    tp = TopicPartition(part.topic, part.partition)
    started = time.monotonic()
    try:
        plan = plan_move(tp, Path(part.log_dir), destination, unique_id=uuid.uuid4().hex)
        if dry_run:
            actions = _planned_actions(plan)
        else:
            throttle = None
            if args.max_bytes_per_second:
                rate = args.max_bytes_per_second
                bucket = HostTokenBucket(
                    args.throttle_dir / "move.bucket", rate_bytes_per_s=rate, burst_bytes=max(64 * 1024, rate // 10)
                )
                throttle = bucket.acquire
            actions = apply_move(plan, throttle=throttle, progress=_Progress(f"{tp} -> {destination}", plan.size_bytes))
    except (StorageError, OSError) as exc:
        return failed_row(part, started, exc)
    copied = sum(a.bytes for a in actions if a.kind == ActionKind.MOVE_COPY and a.change != FileChange.DELETE)
    note = "already moved" if plan.step == MoveStep.DONE else f"from step {plan.step.value}"
    summary = ActionRow(
        "move", "", -1, copied, f"{tp}: {part.log_dir} -> {destination} ({note})", target=str(destination)
    )
    return partition_row(
        part, "ok", started=started, actions=(summary, _assignment(common, plan), *action_rows(actions))
    )


def _markers(
    states: dict[Path, LogDirState], moves: tuple[tuple[PartitionTask, Path], ...], rows: list[PartitionRow]
) -> dict[Path, list[LoadAction]]:
    """Re-create the clean-shutdown markers the module docstring allows; the actions per log dir."""
    failed = {Path(r.log_dir) for r in rows if r.status == "failed"}
    failed |= {Path(dest) for (part, dest), r in zip(moves, rows, strict=True) if r.status == "failed"}
    unclean_into: set[Path] = {dest for part, dest in moves if not states[Path(part.log_dir)].had_clean_shutdown}
    out: dict[Path, list[LoadAction]] = {}
    for log_dir, state in states.items():
        if not state.had_clean_shutdown or log_dir in failed or log_dir in unclean_into:
            continue
        epoch = UNKNOWN_BROKER_EPOCH if state.broker_epoch is None else state.broker_epoch
        write_clean_shutdown(log_dir, broker_epoch=epoch)
        content = (log_dir / names.CLEAN_SHUTDOWN_FILE).read_bytes()
        out[log_dir] = [
            written(
                ActionKind.WRITE_CLEAN_SHUTDOWN,
                names.CLEAN_SHUTDOWN_FILE,
                content,
                existed=False,
                reason="every move of the log dir is done",
            )
        ]
    return out


def run(args: MoveArgs) -> JobSummary:
    common = args.common
    involved = sorted({Path(p.log_dir) for p, _ in args.moves} | {d for _, d in args.moves})
    # A move that crashed after its switch left the partition live in both dirs: the move goes on
    # (plan_move checks the two are the same bytes); any other duplicate is refused.
    switched = {
        TopicPartition(p.topic, p.partition) for p, d in args.moves if p.kind == "live" and (d / p.dir_name).is_dir()
    }
    with (
        job_fs(common.dry_run) as fs,
        locked_log_dirs(
            common.log_dirs,
            allow_missing_meta_properties=common.allow_missing_meta_properties,
            dry_run=common.dry_run,
            allow_duplicates=switched,
        ) as locks,
    ):
        states = {log_dir: open_log_dir(log_dir, fs=fs) for log_dir in involved}
        rows = []
        for index, (part, destination) in enumerate(args.moves, start=1):
            row = move_one(args, part, destination, dry_run=common.dry_run)
            rows.append(row)
            log.info(f"[{index}/{len(args.moves)}] {part.dir_name} -> {destination} {row.status} {row.size_bytes} B")
        markers = {} if common.dry_run else _markers(states, args.moves, rows)
    log_dirs = log_dir_rows(common.log_dirs, locks, opened=states, more=markers)
    return JobSummary("move", common.run_id, common.dry_run, tuple(rows), log_dirs, common.run_ts)


def main(argv: list[str] | None = None) -> int:
    return run_main("move", parse_args, run, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    raise SystemExit(main())
