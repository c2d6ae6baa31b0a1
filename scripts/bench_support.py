"""Timing helpers shared by the benchmark scripts (imported as `from bench_support import ...`)."""

from __future__ import annotations

import time


def median(values: list[float]) -> float:
    """The median (the mean of the middle two for an even count)."""
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def median_time(f, repeats: int, warmup: int = 3) -> float:
    """Median seconds of `f()` over `repeats` calls after `warmup` calls."""
    for _ in range(warmup):
        f()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        runs.append(time.perf_counter() - start)
    return median(runs)
