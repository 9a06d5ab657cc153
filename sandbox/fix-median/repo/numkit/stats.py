"""Summary statistics over plain lists of numbers."""

from collections import Counter


def mean(values):
    if not values:
        raise ValueError("mean of an empty list")
    return sum(values) / len(values)


def median(values):
    if not values:
        raise ValueError("median of an empty list")
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]


def mode(values):
    if not values:
        raise ValueError("mode of an empty list")
    counts = Counter(values)
    best = max(counts.values())
    return min(v for v, n in counts.items() if n == best)


def clamp(value, low, high):
    return max(low, min(high, value))
