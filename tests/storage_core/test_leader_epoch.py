from __future__ import annotations

from storage_core.leader_epoch import EpochEntry, LeaderEpochCache, format_leader_epoch_checkpoint


def test_assign_replaces_conflicting_tail() -> None:
    cache = LeaderEpochCache([EpochEntry(0, 0), EpochEntry(2, 1500), EpochEntry(5, 98000)])
    cache.assign(5, 99000)  # same epoch, later start: ignored
    cache.assign(4, 50000)  # removes epoch 5
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(2, 1500), EpochEntry(4, 50000)]
    assert cache.latest_epoch == 4


def test_truncations() -> None:
    cache = LeaderEpochCache([EpochEntry(1, 0), EpochEntry(2, 1), EpochEntry(3, 3)])
    cache.truncate_from_end(2)
    assert cache.entries == [EpochEntry(1, 0), EpochEntry(2, 1)]
    cache.truncate_from_start(1)
    assert cache.entries == [EpochEntry(2, 1)]
    cache = LeaderEpochCache([EpochEntry(1, 0), EpochEntry(2, 10)])
    cache.truncate_from_start(5)
    assert cache.entries == [EpochEntry(1, 5), EpochEntry(2, 10)]


def test_checkpoint_format() -> None:
    assert format_leader_epoch_checkpoint([EpochEntry(0, 0), EpochEntry(2, 1500)]) == b"0\n2\n0 0\n2 1500\n"
