"""Test-only builder of a KRaft `__cluster_metadata-0`: metadata records to log segments and
`.checkpoint` snapshots, written with storage_core's message writer and batch builder, laid out as
Kafka's controller and snapshot writer lay them out.

```python
meta = MetadataLogBuilder(tmp_path / "logs")
orders = meta.topic("orders", partitions=3, configs={"cleanup.policy": "compact"})
meta.broker(1)
meta.write_segment()                       # every record so far, from offset 0
meta.write_snapshot(end_offset=meta.next_offset, epoch=1)
```

Segments: a LeaderChange control batch, then data batches of `records_per_batch` records, stamped
with the leader epoch. Snapshots: a SnapshotHeader control batch at offset 0, the records, a
SnapshotFooter control batch (`RecordsSnapshotWriter`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from storage_core import names
from storage_core.messages import MessageSpec, StructValue, write_message, write_metadata_record
from storage_core.messages.schemas import metadata_cluster as cluster
from storage_core.messages.schemas import metadata_topics as topics
from storage_core.messages.schemas import raft_control
from storage_core.partition_metadata import encode_uuid
from storage_core.records.batch import Record, build_batch
from storage_core.records.control import ControlRecordType, encode_control_key

T0 = 1_700_000_000_000
TOPIC = 2  # ConfigRecord resource types
BROKER = 4


def random_uuid() -> str:
    """A random Kafka Uuid (never the zero one)."""
    return encode_uuid(secrets.token_bytes(15) + b"\x01")


@dataclass(frozen=True, slots=True)
class Entry:
    """One metadata record to write: declaration, version, value."""

    spec: MessageSpec
    version: int
    data: StructValue

    def encode(self) -> bytes:
        return write_metadata_record(self.spec, self.data, self.version)


class MetadataLogBuilder:
    """Collects metadata records and writes them as a metadata log and snapshots."""

    def __init__(self, log_dir: Path) -> None:
        self.dir = log_dir / f"{names.METADATA_TOPIC}-0"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.entries: list[Entry] = []
        self.written = 0  # entries already in a segment
        self.next_offset = 0  # the next offset a segment will use

    def add(self, spec: MessageSpec, version: int | None = None, **fields: object) -> MetadataLogBuilder:
        """One record of `spec` (its highest version by default)."""
        version = spec.valid_versions.highest if version is None else version
        self.entries.append(Entry(spec, version, spec.new(fields)))
        return self

    def topic(
        self,
        name: str,
        *,
        partitions: int = 1,
        replicas: tuple[int, ...] = (1,),
        configs: dict[str, str] | None = None,
        topic_id: str | None = None,
        directories: tuple[str, ...] | None = None,
    ) -> str:
        """A TopicRecord, its PartitionRecords and ConfigRecords, as CreateTopics writes them; the id."""
        topic_id = topic_id or random_uuid()
        self.add(topics.TOPIC_RECORD, Name=name, TopicId=topic_id)
        for key, value in (configs or {}).items():
            self.config(TOPIC, name, key, value)
        for partition in range(partitions):
            self.add(
                topics.PARTITION_RECORD,
                PartitionId=partition,
                TopicId=topic_id,
                Replicas=replicas,
                Isr=replicas,
                Leader=replicas[0],
                LeaderEpoch=0,
                PartitionEpoch=0,
                Directories=directories or (random_uuid(),) * len(replicas),
            )
        return topic_id

    def config(self, resource_type: int, resource_name: str, name: str, value: str | None) -> MetadataLogBuilder:
        """A ConfigRecord (value None deletes the key)."""
        return self.add(
            topics.CONFIG_RECORD, ResourceType=resource_type, ResourceName=resource_name, Name=name, Value=value
        )

    def broker(
        self,
        broker_id: int,
        *,
        epoch: int = 10,
        rack: str | None = None,
        fenced: bool = False,
        log_dirs: tuple[str, ...] | None = None,
    ) -> str:
        """A RegisterBrokerRecord (with `log_dirs`, else one new log dir id); the first log dir id."""
        log_dir_ids = log_dirs or (random_uuid(),)
        self.add(
            cluster.REGISTER_BROKER_RECORD,
            BrokerId=broker_id,
            IncarnationId=random_uuid(),
            BrokerEpoch=epoch,
            EndPoints=(cluster.BROKER_ENDPOINT.new(Name="PLAINTEXT", Host="localhost", Port=9092, SecurityProtocol=0),),
            Rack=rack,
            Fenced=fenced,
            LogDirs=log_dir_ids,
        )
        return log_dir_ids[0]

    def feature(self, name: str, level: int) -> MetadataLogBuilder:
        return self.add(cluster.FEATURE_LEVEL_RECORD, Name=name, FeatureLevel=level)

    # Files.

    def _control_batch(self, offset: int, control_type: ControlRecordType, value: bytes, *, epoch: int) -> bytes:
        return build_batch(
            [Record(offset, T0 + offset, encode_control_key(control_type), value)],
            base_offset=offset,
            is_control=True,
            partition_leader_epoch=epoch,
        )

    def _data_batches(self, entries: list[Entry], first_offset: int, *, per_batch: int, epoch: int) -> bytes:
        out = bytearray()
        for start in range(0, len(entries), per_batch):
            chunk = entries[start : start + per_batch]
            base = first_offset + start
            records = [Record(base + i, T0 + base + i, None, e.encode()) for i, e in enumerate(chunk)]
            out += build_batch(records, base_offset=base, partition_leader_epoch=epoch)
        return bytes(out)

    def write_segment(self, *, records_per_batch: int = 5, epoch: int = 1, leader_change: bool = True) -> Path:
        """A segment of every record added since the last segment, at `next_offset`."""
        base = self.next_offset
        offset = base
        data = bytearray()
        if leader_change:
            value = write_message(
                raft_control.LEADER_CHANGE_MESSAGE,
                raft_control.LEADER_CHANGE_MESSAGE.new(
                    LeaderId=1, Voters=(raft_control.LEADER_CHANGE_VOTER.new(VoterId=1),)
                ),
                0,
            )
            data += self._control_batch(offset, ControlRecordType.LEADER_CHANGE, value, epoch=epoch)
            offset += 1
        entries = self.entries[self.written :]
        data += self._data_batches(entries, offset, per_batch=records_per_batch, epoch=epoch)
        self.written = len(self.entries)
        self.next_offset = offset + len(entries)
        path = names.log_file(self.dir, base)
        path.write_bytes(bytes(data))
        return path

    def write_snapshot(
        self, *, end_offset: int, epoch: int, entries: list[Entry] | None = None, footer: bool = True
    ) -> Path:
        """A snapshot of `entries` (default: every record added), ending before `end_offset`."""
        entries = self.entries if entries is None else entries
        header = write_message(
            raft_control.SNAPSHOT_HEADER_RECORD,
            raft_control.SNAPSHOT_HEADER_RECORD.new(LastContainedLogTimestamp=T0),
            0,
        )
        data = bytearray(self._control_batch(0, ControlRecordType.SNAPSHOT_HEADER, header, epoch=epoch))
        data += self._data_batches(entries, 1, per_batch=100, epoch=epoch)
        if footer:
            value = write_message(raft_control.SNAPSHOT_FOOTER_RECORD, raft_control.SNAPSHOT_FOOTER_RECORD.new(), 0)
            data += self._control_batch(1 + len(entries), ControlRecordType.SNAPSHOT_FOOTER, value, epoch=epoch)
        path = names.kraft_snapshot_file(self.dir, end_offset, epoch)
        path.write_bytes(bytes(data))
        return path
