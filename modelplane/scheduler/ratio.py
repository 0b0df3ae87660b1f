"""Ratio coordination: split a worker budget across roles within share bands (percent).

The preferred share of each role is its declared worker count over the total, clamped to its
band. Counts are floored, then the remainder is handed out one worker at a time to the roles
with the largest fractional part that are still below their upper bound (ties: role name), so
the total is preserved exactly and no bound is broken. Bounds: ceil(min% x total) .. floor(max% x total),
and every role gets at least one worker.
"""
from __future__ import annotations

import math
from fractions import Fraction


class RatioError(ValueError):
    pass


def allocate(total: int, preferred: dict[str, int], bands: dict[str, tuple[int, int]]) -> dict[str, int]:
    roles = sorted(preferred)
    if total < len(roles):
        raise RatioError(f"{total} workers cannot give {len(roles)} roles one each")
    lo = {r: max(1, math.ceil(Fraction(bands.get(r, (0, 100))[0] * total, 100))) for r in roles}
    hi = {r: max(0, math.floor(Fraction(bands.get(r, (0, 100))[1] * total, 100))) for r in roles}
    if any(lo[r] > hi[r] for r in roles) or sum(lo.values()) > total or sum(hi.values()) < total:
        raise RatioError(f"no split of {total} workers fits the bands {dict(sorted(bands.items()))}")
    weight = sum(max(0, preferred[r]) for r in roles) or len(roles)
    ideal = {r: Fraction(max(0, preferred[r]) if weight else 1, weight) * total for r in roles}
    ideal = {r: min(max(ideal[r], lo[r]), hi[r]) for r in roles}
    counts = {r: math.floor(ideal[r]) for r in roles}
    counts = {r: min(max(counts[r], lo[r]), hi[r]) for r in roles}
    left = total - sum(counts.values())
    while left:
        step = 1 if left > 0 else -1
        movable = [r for r in roles if (counts[r] < hi[r] if step > 0 else counts[r] > lo[r])]
        # Largest remainder first when adding, smallest first when taking away; name breaks ties.
        key = (lambda r: (-(ideal[r] - counts[r]), r)) if step > 0 else (lambda r: (ideal[r] - counts[r], r))
        counts[min(movable, key=key)] += step
        left -= step
    return counts
