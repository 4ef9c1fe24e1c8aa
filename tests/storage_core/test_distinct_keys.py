"""DistinctKeys: exact up to the limit, a HyperLogLog estimate within a few standard errors beyond."""

from __future__ import annotations

import hashlib

import pytest

from storage_core.distinct_keys import EXACT_LIMIT, DistinctKeys, key_hash


def count(keys) -> int:
    counter = DistinctKeys()
    for key in keys:
        counter.add(key)
    return counter.estimate()


def test_exact_up_to_the_limit_with_repeats() -> None:
    keys = [b"key-%d" % (i % 1000) for i in range(5000)]
    assert count(keys) == 1000
    assert count(b"k%d" % i for i in range(EXACT_LIMIT)) == EXACT_LIMIT
    assert count([]) == 0


@pytest.mark.parametrize("distinct", [EXACT_LIMIT + 1, 30_000, 200_000])
def test_sketch_within_four_standard_errors(distinct: int) -> None:
    keys = (b"customer-%d" % (i % distinct) for i in range(distinct + distinct // 4))
    estimate = count(keys)
    assert abs(estimate - distinct) <= 4 * 0.0081 * distinct


def test_the_hash_is_the_first_eight_bytes_of_md5() -> None:
    assert key_hash(b"k") == int.from_bytes(hashlib.md5(b"k").digest()[:8], "big")
