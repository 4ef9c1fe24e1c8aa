"""Timing shared by the benchmarks: contenders measured in interleaved rounds.

On this project's virtual machine the same code runs up to 2x slower for a while; timing one
contender's repeats back to back lets such a spell fall on one contender only. Interleaved rounds
spread it over all of them, so the ratios of one run compare like with like, and the ratio of two
contenders within one round (:func:`round_ratios`) is the figure least touched by the other work on
the machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def timed(fn: Callable[[], object]) -> float:
    """Seconds `fn()` takes."""
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def interleaved(runs: dict[str, Callable[[int], float]], repeat: int) -> dict[str, list[float]]:
    """Each run's seconds in each of `repeat` rounds; every round calls each run once in turn with
    the round number. A run returns the seconds it timed (its own set-up left out)."""
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for round_ in range(repeat):
        for name, run in runs.items():
            seconds[name].append(run(round_))
    return seconds


def best_interleaved(runs: dict[str, Callable[[int], float]], repeat: int) -> dict[str, float]:
    """Each run's best over :func:`interleaved` rounds."""
    return {name: min(spent) for name, spent in interleaved(runs, repeat).items()}


def round_ratios(seconds: dict[str, list[float]], slow: str, fast: str) -> tuple[float, float]:
    """The lowest and highest speed of `fast` as a multiple of `slow`'s, round by round."""
    ratios = [s / f for s, f in zip(seconds[slow], seconds[fast], strict=True)]
    return min(ratios), max(ratios)
