"""Small statistics helpers."""

from collections.abc import Iterable


def mean(xs: Iterable[float]) -> float:
    values = list(xs)
    return sum(values) / len(values)


def variance(xs: Iterable[float]) -> float:
    values = list(xs)
    m = mean(values)
