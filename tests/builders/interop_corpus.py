"""The interop corpus: two log dirs of batches built by kafka-python, with every kind of damage and
leftover the jobs handle, for the tests that check every job's file changes against its actions.

`build_corpus(root)` writes:

* `root/unclean` (no clean-shutdown marker, so recover recovers everything):
  `orders-0`, three segments with a torn batch at the end of the middle one (a truncation, then the
  later segment is deleted); `orders-1`, a bit flipped in a batch's base offset (offsets out of
  order: the segment is cut there); `payments-0`, transactional batches with a COMMIT and an ABORT
  (producer snapshots, a txn index), a leftover `.log.cleaned` and a `.swap` at its offset (an
  interrupted clean), and a stray snapshot; `events-0`, a zero-filled tail, an orphan `.index` and a
  zero-filled preallocated offset index.
* `root/clean` (cleanly shut down, indexes built once by a load, then damaged as a broker's files
  can be): `accounts-0`, a compacted topic (keys repeat) whose second segment lost its `.index`, and a
  leftover `.deleted` file; `logs-0`, records from long ago in three segments, the first of which lost
  both its `.index` and `.timeindex` and whose `.log` mtime is recent (retention must rebuild them to
  see its real timestamps); a replication-offset-checkpoint covering every partition.
* `root/topics.toml`: `accounts` compacted, `logs` with one day of `retention.ms`, the others `delete`
  (every topic has a config: the destructive jobs refuse to guess one).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from storage_core import names
from storage_core.checkpoint import write_offset_checkpoint
from storage_core.clean_shutdown import write_clean_shutdown
from storage_core.loader import LoadOptions, load_partition
from storage_core.names import TopicPartition
from tests.builders.log_dir import kafka_log_dir
from tests.storage_core.records.peer import peer_batch, peer_marker

T0 = 1_700_000_000_000
NOW = T0 + 30 * 86_400_000


def _batch(offset: int, *, key: bytes, value: bytes | None, codec: int = 0, ts: int = T0, **kw: object) -> bytes:
    return peer_batch([(0, ts + offset, key, value, [])], codec=codec, base_offset=offset, **kw)  # type: ignore[arg-type]


def _segments(part: Path, batches: list[tuple[int, bytes]], *, per_segment: int) -> None:
    """Write (offset, batch) pairs into segments of `per_segment` batches, named by their first offset."""
    part.mkdir(parents=True, exist_ok=True)
    for i in range(0, len(batches), per_segment):
        chunk = batches[i : i + per_segment]
        names.log_file(part, chunk[0][0]).write_bytes(b"".join(data for _, data in chunk))


def _flip_base_offset_bit(data: bytes, batch_position: int, bit: int) -> bytes:
    damaged = bytearray(data)
    (offset,) = struct.unpack_from(">q", damaged, batch_position)
    struct.pack_into(">q", damaged, batch_position, offset ^ (1 << bit))
    return bytes(damaged)


def _unclean(log_dir: Path) -> None:
    orders = log_dir / "orders-0"
    _segments(
        orders, [(o, _batch(o, key=b"o%d" % (o % 5), value=b"v" * 60, codec=2)) for o in range(30)], per_segment=10
    )
    with names.log_file(orders, 10).open("ab") as f:
        f.write(_batch(20, key=b"torn", value=b"t" * 200)[:-30])
    flipped = log_dir / "orders-1"
    batches = [_batch(o, key=b"k%d" % o, value=b"w" * 40) for o in range(15)]
    data = b"".join(batches)
    flipped.mkdir(parents=True)
    names.log_file(flipped, 0).write_bytes(_flip_base_offset_bit(data, sum(map(len, batches[:8])), 2))
    payments = log_dir / "payments-0"
    txn = [(o, _batch(o, key=b"p", value=b"x" * 30, producer=(7, 0, o), transactional=True)) for o in range(4)]
    txn.append((4, peer_marker(offset=4, producer_id=7, producer_epoch=0, commit=True, coordinator_epoch=1)))
    txn += [(o, _batch(o, key=b"q", value=b"y" * 30, producer=(8, 0, o - 5), transactional=True)) for o in range(5, 8)]
    txn.append((8, peer_marker(offset=8, producer_id=8, producer_epoch=0, commit=False, coordinator_epoch=1)))
    txn += [(o, _batch(o, key=b"r", value=b"z" * 30, producer=(9, 0, o - 9))) for o in range(9, 20)]
    _segments(payments, txn, per_segment=10)
    names.log_file(payments, 10, names.CLEANED_SUFFIX).write_bytes(names.log_file(payments, 10).read_bytes()[:250])
    names.log_file(payments, 15, names.SWAP_SUFFIX).write_bytes(names.log_file(payments, 10).read_bytes()[250:])
    names.snapshot_file(payments, 3).write_bytes(b"")  # a stray, unreadable snapshot
    events = log_dir / "events-0"
    _segments(events, [(o, _batch(o, key=None, value=b"e" * 80, codec=4)) for o in range(12)], per_segment=6)
    with names.log_file(events, 6).open("ab") as f:
        f.write(bytes(64))
    names.offset_index_file(events, 40).write_bytes(bytes(16))  # no .log 40
    names.offset_index_file(events, 0).write_bytes(bytes(1024))
    write_offset_checkpoint(log_dir / names.RECOVERY_POINT_CHECKPOINT, {TopicPartition("orders", 0): 5})


def _clean(log_dir: Path, quarantine: Path) -> None:
    accounts = log_dir / "accounts-0"
    _segments(
        accounts,
        [(o, _batch(o, key=b"a%d" % (o % 4), value=None if o % 9 == 8 else b"s" * 50)) for o in range(40)],
        per_segment=10,
    )
    logs = log_dir / "logs-0"
    _segments(
        logs, [(o, _batch(o, key=b"l", value=b"L" * 70, ts=T0 + o * 86_400_000)) for o in range(24)], per_segment=8
    )
    ends = {}
    for part in (accounts, logs):
        result = load_partition(
            part,
            LoadOptions(
                had_clean_shutdown=False, recovery_point=0, log_start_offset=0, now_ms=T0, quarantine_dir=quarantine
            ),
        )
        ends[names.parse_partition_dir_name(part.name).topic_partition] = result.log_end_offset
    names.offset_index_file(accounts, 10).unlink()
    (accounts.parent / "accounts-0" / (names.log_file(accounts, 0).name + names.DELETED_SUFFIX)).write_bytes(b"old")
    names.offset_index_file(logs, 0).unlink()
    names.time_index_file(logs, 0).unlink()
    os.utime(names.log_file(logs, 0))  # a recent mtime: only the rebuilt time index tells its age
    write_offset_checkpoint(log_dir / names.RECOVERY_POINT_CHECKPOINT, ends)
    write_offset_checkpoint(log_dir / names.REPLICATION_OFFSET_CHECKPOINT, ends)
    write_clean_shutdown(log_dir)


def build_corpus(root: Path) -> list[Path]:
    """Write the corpus under `root` (see the module doc); returns its two log dirs."""
    unclean, clean = root / "unclean", root / "clean"
    _unclean(unclean)
    _clean(clean, root.parent / f"{root.name}-setup-quarantine")
    for log_dir in (unclean, clean):
        kafka_log_dir(log_dir)  # jobs refuse a dir without meta.properties
    (root / "topics.toml").write_text(
        '[topics."accounts"]\n"cleanup.policy" = "compact"\n"min.cleanable.dirty.ratio" = 0.01\n'
        '[topics."logs"]\n"retention.ms" = 86400000\n'
        + "".join(f'[topics."{topic}"]\n"cleanup.policy" = "delete"\n' for topic in ("orders", "payments", "events"))
    )
    return [unclean, clean]
