"""Largest-remainder allocation: split an integer total by weights, within per-key bounds.

`largest_remainder` is the one allocator; ratio bands (`allocate`) and traffic weights (traffic.py)
both use it. Each key's ideal share is total x weight / sum(weights), clamped to its bounds;
counts are floored, then the remainder is handed out one unit at a time to the keys with the
largest fractional part still below their upper bound (ties: key order), or taken back from the
smallest when the clamped floors overshoot. The total is preserved exactly, no bound is broken,
nothing is negative, and the result depends only on the inputs (never on dict order).
"""
from __future__ import annotations

import heapq
import math
from fractions import Fraction


class RatioError(ValueError):
    pass


def largest_remainder(total: int, weights: dict, lo: dict | None = None, hi: dict | None = None) -> dict:
    """{key: count} with sum == total and lo[key] <= count <= hi[key]; weights are non-negative
    numbers (a zero-weight key gets its lower bound). Raises RatioError when the bounds cannot
    hold the total."""
    keys = sorted(weights)
    if not keys:
        if total:
            raise RatioError(f"nothing to split {total} over")
        return {}
    lo = {k: (lo or {}).get(k, 0) for k in keys}
    hi = {k: (hi or {}).get(k, total) for k in keys}
    if any(lo[k] > hi[k] for k in keys) or sum(lo.values()) > total or sum(hi.values()) < total:
        raise RatioError(f"no split of {total} fits the bounds {[(k, lo[k], hi[k]) for k in keys]}")
    positive = {k: Fraction(max(0, weights[k])) for k in keys}
    weight = sum(positive.values())
    ideal = {k: (positive[k] / weight * total if weight else Fraction(total, len(keys))) for k in keys}
    ideal = {k: min(max(ideal[k], lo[k]), hi[k]) for k in keys}
    counts = {k: min(max(math.floor(ideal[k]), lo[k]), hi[k]) for k in keys}
    left = total - sum(counts.values())
    step = 1 if left > 0 else -1
    bound = hi if step > 0 else lo
    # Largest remainder first when adding, smallest first when taking away; key order breaks ties.
    # One unit at a time, the key that takes it next found on a heap: only its own rank changes.
    heap = [(step * (counts[k] - ideal[k]), i, k) for i, k in enumerate(keys) if counts[k] != bound[k]]
    heapq.heapify(heap)
    while left:
        _, i, k = heapq.heappop(heap)
        counts[k] += step
        left -= step
        if counts[k] != bound[k]:
            heapq.heappush(heap, (step * (counts[k] - ideal[k]), i, k))
    return counts


def allocate(total: int, preferred: dict[str, int], bands: dict[str, tuple[int, int]]) -> dict[str, int]:
    """Split a worker budget across roles within share bands (percent): shares follow the roles'
    declared worker counts; bounds are ceil(min% x total) .. floor(max% x total), and every role
    gets at least one worker."""
    roles = sorted(preferred)
    if total < len(roles):
        raise RatioError(f"{total} workers cannot give {len(roles)} roles one each")
    lo = {r: max(1, math.ceil(Fraction(bands.get(r, (0, 100))[0] * total, 100))) for r in roles}
    hi = {r: max(0, math.floor(Fraction(bands.get(r, (0, 100))[1] * total, 100))) for r in roles}
    try:
        return largest_remainder(total, {r: max(0, preferred[r]) for r in roles}, lo, hi)
    except RatioError:
        raise RatioError(f"no split of {total} workers fits the bands {dict(sorted(bands.items()))}") from None
