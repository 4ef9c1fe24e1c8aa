"""Kafka's own recovery as the anchor: a real broker recovering unclean log dirs against
`logkeeper recover` (Spark local[2]) followed by the broker's clean start, on the same inputs.

    .venv/bin/python -m bench.kafka_recovery [--version 4.4.0] [--partitions 8] [--segments 4]
        [--segment-mib 32] [--rounds 3] [--threads 1,2]

Inputs: a KRaft log dir made by the broker itself (format, one topic of N partitions, clean stop),
then every round a fresh copy whose partitions get M segments of `--segment-mib` MiB each, written
as a crashed broker leaves them (no indexes, no snapshots, no clean-shutdown marker, recovery points
0), in two shapes: small batches (one 1 KiB record each) and large ones (64 records of 4 KiB). A
partition dir is never reused across rounds or contenders (each gets its own copy: an index left
by round 1 would hide round 2's work).

Contenders, interleaved round by round (bench/timing.py):
- `broker T`: the broker's start to "Kafka Server started" with num.recovery.threads.per.data.dir T
  (its own recovery), and the share of that in LogManager's log loading ("Loaded N logs in X ms");
- `logkeeper`: `python -m jobs recover --master local[2]` (process start to exit, Spark's start
  included: the job's own path), then the broker's clean start on the result (its log loading
  share too).
The broker runs with Kafka's own JVM options (kafka-run-class.sh: -Xmx1G, G1). Prints one table per
shape: each contender's range over the rounds and the ratio, round by round, of the broker's
recovery to logkeeper + the broker's clean start.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.timing import interleaved
from storage_core import names
from storage_core.records.batch import Record, build_batch
from tests.kafka.broker import KAFKA_JVM_OPTIONS, KafkaBroker
from tests.kafka.install import is_installed

REPO = Path(__file__).resolve().parents[1]
TOPIC = "bench"
SHAPES = {"small batches (1 x 1 KiB)": (1, 1024), "large batches (64 x 4 KiB)": (64, 4096)}
LOADED = re.compile(r"Loaded (\d+) logs in (\d+)ms")
QUIET = {"log.cleaner.enable": "false", "log.retention.check.interval.ms": "3600000"}


def template(version: str, root: Path, partitions: int) -> KafkaBroker:
    """A cleanly stopped broker's log dir with one empty topic of `partitions` partitions."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    broker = KafkaBroker(version, root / "template", root / "template-work", QUIET)
    broker.format()
    with broker.running():
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic(TOPIC, partitions, 1)])
        admin.close()
        broker.wait_for_log(rf"Created log for partition {TOPIC}-{partitions - 1} ", timeout=60)
    return broker


def segments(records_per_batch: int, record_bytes: int, segment_bytes: int, count: int) -> list[tuple[int, bytes]]:
    """`count` segments of about `segment_bytes` each: (base offset, bytes)."""
    payload = bytes(range(256)) * (record_bytes // 256)
    out, offset = [], 0
    for _ in range(count):
        base, parts, size = offset, [], 0
        while size < segment_bytes:
            batch = build_batch(
                [Record(offset + i, 1_700_000_000_000 + offset + i, None, payload) for i in range(records_per_batch)],
                base_offset=offset,
            )
            parts.append(batch)
            size += len(batch)
            offset += records_per_batch
        out.append((base, b"".join(parts)))
    return out


def unclean_copy(source: Path, target: Path, data: list[tuple[int, bytes]]) -> Path:
    """A fresh copy of the template, each partition holding `data` as a crash leaves it."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(names.LOCK_FILE))
    (target / names.CLEAN_SHUTDOWN_FILE).unlink()
    (target / names.RECOVERY_POINT_CHECKPOINT).write_text("0\n0\n")
    for part in target.glob(f"{TOPIC}-*"):
        for leftover in part.glob("0000*"):
            leftover.unlink()
        for base, raw in data:
            names.log_file(part, base).write_bytes(raw)
    return target


def loaded_ms(broker: KafkaBroker) -> int:
    """LogManager's log loading time of the broker's last start."""
    lines = broker.log_lines(LOADED.pattern)
    match = LOADED.search(lines[-1])
    assert match is not None
    return int(match.group(2))


class Shape:
    """One input shape's contenders; each run gets a fresh unclean copy of the template."""

    def __init__(self, version: str, base: KafkaBroker, root: Path, data: list[tuple[int, bytes]]) -> None:
        """`root`: this shape's own scratch dir (its copies and the brokers' work dirs)."""
        root.mkdir()
        self.version, self.base, self.root, self.data = version, base, root, data
        self.loads: dict[str, list[str]] = {}
        self.copies = 0

    def _fresh(self) -> Path:
        self.copies += 1
        return unclean_copy(self.base.log_dir, self.root / f"run-{self.copies}", self.data)

    def _broker(self, log_dir: Path) -> KafkaBroker:
        return KafkaBroker(self.version, log_dir, self.root / f"{log_dir.name}-work", QUIET, self.base.ports)

    def broker(self, threads: int) -> float:
        """The broker's start with its own recovery; seconds."""
        target = self._fresh()
        broker = self._broker(target)
        seconds = broker.start({"num.recovery.threads.per.data.dir": str(threads)}, jvm_options=KAFKA_JVM_OPTIONS)
        self.loads.setdefault(f"broker {threads}", []).append(f"load {loaded_ms(broker)}")
        broker.stop()
        shutil.rmtree(target)
        shutil.rmtree(broker.work_dir)
        return seconds

    def logkeeper(self) -> float:
        """`logkeeper recover` (its process) and the broker's clean start after it; seconds."""
        target = self._fresh()
        command = [sys.executable, "-m", "jobs", "recover", "--log-dirs", str(target), "--master", "local[2]", "-q"]
        command += ["--warehouse", str(self.root / "warehouse"), "--quarantine-dir", str(self.root / "quarantine")]
        began = time.perf_counter()
        subprocess.run(command, check=True, cwd=REPO, stdout=subprocess.DEVNULL, timeout=3600)
        recovered = time.perf_counter() - began
        broker = self._broker(target)
        started = broker.start(jvm_options=KAFKA_JVM_OPTIONS)
        self.loads.setdefault("logkeeper", []).append(f"recover {recovered * 1000:.0f} + load {loaded_ms(broker)}")
        broker.stop()
        shutil.rmtree(target)
        shutil.rmtree(broker.work_dir)
        return recovered + started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.kafka_recovery", description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="4.4.0")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--segments", type=int, default=4)
    parser.add_argument("--segment-mib", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", default="1,2", help="num.recovery.threads.per.data.dir values")
    args = parser.parse_args(argv)
    if not is_installed(args.version):
        print(f"Kafka {args.version} is not installed: python -m tests.kafka.install {args.version}", file=sys.stderr)
        return 2
    threads = [int(t) for t in args.threads.split(",")]
    with tempfile.TemporaryDirectory(prefix="kafka-recovery-bench-") as scratch:
        root = Path(scratch)
        base = template(args.version, root, args.partitions)
        gib = args.partitions * args.segments * args.segment_mib / 1024
        load = Path("/proc/loadavg").read_text().split()[0]
        print(f"Kafka {args.version}: {args.partitions} partitions x {args.segments} segments x {args.segment_mib} MiB")
        print(f"({gib:.2f} GiB per round), {args.rounds} rounds, load average {load} at the start")
        for number, (name, (per_batch, record_bytes)) in enumerate(SHAPES.items()):
            data = segments(per_batch, record_bytes, args.segment_mib << 20, args.segments)
            shape = Shape(args.version, base, root / f"shape-{number}", data)
            runs = {f"broker {t}": (lambda _, t=t, shape=shape: shape.broker(t)) for t in threads}
            runs["logkeeper"] = lambda _, shape=shape: shape.logkeeper()
            seconds = interleaved(runs, args.rounds)
            print(f"\n{name}\n")
            print("| contender | seconds (range over rounds) | where the time went (ms, each round) |")
            print("|---|---|---|")
            for contender, spent in seconds.items():
                what = (
                    "recover, then broker clean start"
                    if contender == "logkeeper"
                    else "thread(s): broker start, own recovery"
                )
                print(
                    f"| {contender} {what} | {min(spent):.1f}-{max(spent):.1f} | {'; '.join(shape.loads[contender])} |"
                )
            for t in threads:
                ratios = [b / lk for b, lk in zip(seconds[f"broker {t}"], seconds["logkeeper"], strict=True)]
                print(f"\nbroker ({t} recovery thread(s)) / logkeeper: {min(ratios):.2f}-{max(ratios):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
