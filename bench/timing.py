"""Timing shared by the benchmarks: contenders measured in interleaved rounds.

On this project's virtual machine the same code runs up to 2x slower for a while; timing one
contender's repeats back to back lets such a spell fall on one contender only. Interleaved rounds
spread it over all of them, so the ratios of one run compare like with like.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def timed(fn: Callable[[], object]) -> float:
    """Seconds `fn()` takes."""
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def best_interleaved(runs: dict[str, Callable[[int], float]], repeat: int) -> dict[str, float]:
    """Each run's best over `repeat` rounds; every round calls each run once in turn with the round
    number. A run returns the seconds it timed (its own set-up left out)."""
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for round_ in range(repeat):
        for name, run in runs.items():
            seconds[name].append(run(round_))
    return {name: min(spent) for name, spent in seconds.items()}
