"""Every declared message and version, for tests parametrized over all of them."""

from __future__ import annotations

from storage_core.messages import (
    GROUP_COORDINATOR,
    METADATA_RECORDS,
    REMOTE_LOG_METADATA,
    TRANSACTION_COORDINATOR,
    MessageSpec,
)
from storage_core.messages.schemas import group_classic, raft_control


def _unique(specs: list[MessageSpec]) -> list[MessageSpec]:
    seen: dict[int, MessageSpec] = {}
    for spec in specs:
        seen.setdefault(id(spec), spec)
    return list(seen.values())


ALL_MESSAGES = _unique(
    [
        *METADATA_RECORDS.values(),
        *REMOTE_LOG_METADATA.records.values(),
        *(
            spec
            for family in (GROUP_COORDINATOR, TRANSACTION_COORDINATOR)
            for pair in family.record_types.values()
            for spec in pair
        ),
        *(spec for spec in raft_control.BY_CONTROL_TYPE.values()),
        group_classic.CONSUMER_PROTOCOL_SUBSCRIPTION,
        group_classic.CONSUMER_PROTOCOL_ASSIGNMENT,
    ]
)
ALL_VERSIONS = [
    (spec, version)
    for spec in ALL_MESSAGES
    for version in range(spec.valid_versions.lowest, spec.valid_versions.highest + 1)
]
