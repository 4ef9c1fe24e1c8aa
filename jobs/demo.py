"""`./dev demo`: build realistic Kafka log dirs that crashed, recover them with Spark, and report.

The generated log dirs (under `demo-output/`, recreated on each run) hold several topics: a plain
topic over several segments, a keyed compacted topic with tombstones and a committed and an aborted
transaction, and zstd/lz4/gzip/snappy batches. Then an unclean shutdown is simulated: a torn batch
at the end of an active segment, a preallocated zero-filled index, a leftover `.cleaned` file, and
an interrupted compaction swap (`.swap` files of a cleaned segment next to the old segment).
`logkeeper maintain` (recover, retention, compact, stats) runs on local Spark with a local Delta
warehouse, and the demo prints what it did (byte counts by kind of file, and per step), a few audit
queries, and writes the warehouse's HTML report (`demo-output/report.html`).
"""

from __future__ import annotations

import json
import random
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

from jobs import audit, maintain, report
from jobs._spark import stop_spark
from storage_core import names
from storage_core.checkpoint import write_offset_checkpoint
from storage_core.meta_properties import MetaProperties, write_meta_properties
from storage_core.names import TopicPartition
from storage_core.records.batch import Record, build_batch, build_end_txn_marker
from storage_core.records.compression import CompressionType
from storage_core.segment import LogSegment

OUT = Path("demo-output")
# The demo's log dirs have no KRaft metadata log, so their topics' configs come from a topic-config
# file (without one, maintain refuses to guess them): accounts is compacted, the others deleted by time.
TOPIC_CONFIG = (
    '[topics."accounts"]\n"cleanup.policy" = "compact"\n"min.cleanable.dirty.ratio" = 0.01\n\n'
    '[topics."clicks"]\n"cleanup.policy" = "delete"\n\n'
    '[topics."orders"]\n"cleanup.policy" = "delete"\n"retention.ms" = 604800000\n'
)
T0 = 1_763_000_000_000
DEMO_CLUSTER_ID = "lkDemoClusterId000000w"
CODECS = list(CompressionType)


def _append_segment(dir_path: Path, base_offset: int, batches: list[tuple[bytes, int]]) -> None:
    """Append (batch bytes, last offset) through the segment append path, then roll."""
    segment = LogSegment.open(dir_path, base_offset, index_interval_bytes=4096, create=True)
    for data, last_offset in batches:
        segment.append(largest_offset=last_offset, records=data)
    segment.on_become_inactive()
    segment.flush()
    segment.close()


def _plain_topic(dir_path: Path, rng: random.Random, *, segments: int, per_segment: int) -> int:
    """Segment i holds records of day i, so time retention deletes the oldest days only."""
    offset = 0
    for day in range(segments):
        base = offset
        batches = []
        for _ in range(per_segment):
            records = [
                Record(
                    offset + i,
                    T0 + day * 86_400_000 + offset + i,
                    b"user-%d" % rng.randrange(500),
                    b"event %d " % rng.randrange(10**6) * 8,
                )
                for i in range(20)
            ]
            codec = CODECS[(offset // 20) % len(CODECS)]
            batches.append(
                (build_batch(records, base_offset=offset, compression=codec, partition_leader_epoch=1), offset + 19)
            )
            offset += 20
        _append_segment(dir_path, base, batches)
    return offset


def _compacted_topic(dir_path: Path) -> int:
    batches = []
    offset = 0
    for round_ in range(30):
        records = [
            Record(offset + i, T0 + offset + i, b"account-%d" % i, b"balance %d" % (round_ * 10 + i)) for i in range(5)
        ]
        batches.append((build_batch(records, base_offset=offset), offset + 4))
        offset += 5
    tombstone = [Record(offset, T0 + offset, b"account-3", None)]
    batches.append((build_batch(tombstone, base_offset=offset), offset))
    offset += 1
    for producer_id, commit in ((4000, True), (4001, False)):
        data = [Record(offset + i, T0 + offset, b"txn-%d" % i, b"pending") for i in range(3)]
        batch = build_batch(
            data, base_offset=offset, producer_id=producer_id, producer_epoch=0, base_sequence=0, is_transactional=True
        )
        batches.append((batch, offset + 2))
        offset += 3
        marker = build_end_txn_marker(
            offset=offset,
            producer_id=producer_id,
            producer_epoch=0,
            commit=commit,
            coordinator_epoch=1,
            timestamp=T0 + offset,
        )
        batches.append((marker, offset))
        offset += 1
    _append_segment(dir_path, 0, batches[:20])
    _append_segment(dir_path, batches[20][1] - 4, batches[20:])
    return offset


def generate(out: Path) -> list[Path]:
    """Two crashed log dirs; returns their paths."""
    if out.exists():
        shutil.rmtree(out)
    rng = random.Random(7)
    dirs = [out / "kafka-logs-1", out / "kafka-logs-2"]
    recovery_points: dict[Path, dict[TopicPartition, int]] = {d: {} for d in dirs}
    for i, (topic, partition) in enumerate([("clicks", 0), ("clicks", 1), ("orders", 0), ("accounts", 0)]):
        log_dir = dirs[i % 2]
        dir_path = log_dir / f"{topic}-{partition}"
        dir_path.mkdir(parents=True)
        end = (
            _compacted_topic(dir_path)
            if topic == "accounts"
            else _plain_topic(dir_path, rng, segments=3 + i, per_segment=40)
        )
        recovery_points[log_dir][TopicPartition(topic, partition)] = end // 2
    for log_dir, points in recovery_points.items():
        write_offset_checkpoint(log_dir / names.RECOVERY_POINT_CHECKPOINT, points)
        # A broker's log dir has its identity file (jobs refuse a dir without one).
        write_meta_properties(
            log_dir / names.META_PROPERTIES, MetaProperties(0, DEMO_CLUSTER_ID, broker_id=1), now_ms=T0
        )
    clicks = dirs[0] / "clicks-0"
    active = max(clicks.glob("*.log"))
    with active.open("ab") as f:  # a torn last batch
        f.write(build_batch([Record(99_999, T0, b"k", b"torn" * 300)], base_offset=99_999)[:-250])
    names.offset_index_file(clicks, names.offset_from_file_name(active.name)).write_bytes(bytes(10 * 1024 * 1024))
    Path(str(names.log_file(dirs[1] / "clicks-1", 0)) + ".cleaned").write_bytes(b"unfinished clean output")
    accounts = dirs[1] / "accounts-0"
    for suffix in (names.LOG_SUFFIX, names.INDEX_SUFFIX, names.TIME_INDEX_SUFFIX):
        source = names.log_file(accounts, 0).with_suffix(suffix)
        shutil.copyfile(source, str(source) + names.SWAP_SUFFIX)  # an interrupted swap of segment 0
    return dirs


def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    dirs = generate(OUT)
    log_dirs = ",".join(str(d) for d in dirs)
    warehouse = OUT / "warehouse"
    topics = OUT / "topics.toml"
    topics.write_text(TOPIC_CONFIG)
    before = {d.name: _sizes(d) for d in dirs}
    total = sum(sum(b.values()) for b in before.values())
    print(f"generated crashed Kafka log dirs: {log_dirs} ({total:,} bytes)", flush=True)
    result = OUT / "result.json"
    code = maintain.main(
        [
            "--log-dirs",
            log_dirs,
            "--master",
            "local[2]",
            "--warehouse",
            str(warehouse),
            "--topic-config",
            str(topics),
            "--high-watermark-source",
            "log-end",
            "--now-ms",
            str(T0 + 8 * 86_400_000),
            "--result-json",
            str(result),
        ]
    )
    print("\nwhat maintenance did:")
    for step in ("recover", "retention", "compact"):
        result_rows = json.loads((OUT / f"{step}-result.json").read_text())["partitions"]
        for row in sorted(result_rows, key=lambda r: (r["dir_name"], r["log_dir"])):
            kinds = Counter(a["kind"] for a in row["actions"])
            if kinds:
                what = ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items()))
                print(f"  {step:<9} {Path(row['log_dir']).name}/{row['dir_name']:<11} {row['status']:<7} {what}")
    after = {d.name: _sizes(d) for d in dirs}
    print("\nwhat it changed, on disk:")
    for kind, note in (
        ("log", "record bytes (.log)"),
        ("index", "index bytes (.index, .timeindex, .txnindex)"),
        ("other", "other files (snapshots, checkpoints, leftovers)"),
    ):
        was, now = sum(b[kind] for b in before.values()), sum(a[kind] for a in after.values())
        print(f"  {note:<47} {was:>12,} -> {now:>10,}")
    print(
        "  (the crashed broker left its active segment's .index preallocated to segment.index.bytes,\n"
        "   10 MiB, as Kafka does; recovery trims it to its entries, as Kafka's does)"
    )
    for step, field, what in (
        ("recover", "truncated_bytes", "recovery truncated (copied to the quarantine first)"),
        ("retention", "bytes_deleted", "retention deleted"),
        ("compact", "bytes_deleted", "compaction removed"),
    ):
        rows = json.loads((OUT / f"{step}-result.json").read_text())["partitions"]
        print(f"  {what:<52} {sum(r[field] for r in rows):>10,} B")
    for query in ("bytes_per_topic", "corruption_found", "compaction_savings"):
        print(f"\naudit query {query} (logkeeper audit --warehouse {warehouse} --query {query}):")
        audit.write_rows(audit.run_query(warehouse, query), "table", sys.stdout, limit=10)
    page = OUT / "report.html"
    report.write_report(warehouse, page)
    print(f"\nHTML report of the warehouse: {page.resolve()} (logkeeper report --warehouse {warehouse} --out FILE)")
    print(f"demo finished in {time.monotonic() - started:.0f} s; log dirs and Delta tables under {OUT}/")
    from pyspark.sql import SparkSession

    if (session := SparkSession.getActiveSession()) is not None:
        stop_spark(session)  # quietly: no worker's traceback after a successful demo
    return code


def _sizes(log_dir: Path) -> Counter[str]:
    """Bytes of the log dir's files by kind: `log` (segments), `index` (the three indexes), `other`."""
    sizes: Counter[str] = Counter(log=0, index=0, other=0)
    for path in log_dir.rglob("*"):
        if path.is_file():
            kind = (
                "log"
                if path.suffix == names.LOG_SUFFIX
                else "index"
                if path.suffix in names.INDEX_SUFFIXES
                else "other"
            )
            sizes[kind] += path.stat().st_size
    return sizes


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
