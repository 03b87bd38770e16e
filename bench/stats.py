"""What the benchmarks share for reading their figures."""

from __future__ import annotations


def quantile(values: list[float], q: float) -> float:
    """The q-quantile by the nearest-rank method (p99: q=0.99); 0.0 for no values."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))] if ordered else 0.0
