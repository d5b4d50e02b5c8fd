"""What `difill bench` measures per shape group, shared by its in-process and server paths
(lab/bench.py, lab/bench_server.py)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

SHAPE_GROUPS = {"single_line": ("rest_of_line", "whole_line"), "multi_line": ("multi_line_2_5",)}


@dataclass
class Timing:
    ms: list[float] = field(default_factory=list)
    forwards: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    exact: list[bool] = field(default_factory=list)
    hole_chars: list[int] = field(default_factory=list)  # target length, for the plot

    def summary(self) -> dict:
        total_s = sum(self.ms) / 1000
        return {
            "cases": len(self.ms),
            "p50_ms": round(percentile(self.ms, 50), 1),
            "p95_ms": round(percentile(self.ms, 95), 1),
            "exact_match": round(sum(self.exact) / max(1, len(self.exact)), 4),
            "forwards": round(statistics.fmean(self.forwards or [0]), 2),
            "tokens_per_forward": round(sum(self.tokens) / max(1, sum(self.forwards)), 3),
            "tokens_per_s": round(sum(self.tokens) / max(1e-9, total_s), 1),
        }


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def median_ms(run: Callable[[], object], repeats: int) -> float:
    """The median of ``repeats`` timed calls of ``run``, in ms, after one untimed call (its
    first-call allocations)."""
    run()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)
