"""Largest remainder (scheduler/ratio.py): the heap hands out units exactly as the rule reads,
one unit at a time to the largest remainder below its bound (key order on ties)."""
from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.scheduler.ratio import RatioError, largest_remainder


def _by_the_rule(total, weights, lo, hi):
    """The rule as docs state it, one unit per pass over every key: slow, plainly right."""
    keys = sorted(weights)
    positive = {k: Fraction(max(0, weights[k])) for k in keys}
    weight = sum(positive.values())
    ideal = {k: min(max(positive[k] / weight * total if weight else Fraction(total, len(keys)), lo[k]), hi[k])
             for k in keys}
    counts = {k: min(max(math.floor(ideal[k]), lo[k]), hi[k]) for k in keys}
    left = total - sum(counts.values())
    while left:
        step = 1 if left > 0 else -1
        movable = [k for k in keys if (counts[k] < hi[k] if step > 0 else counts[k] > lo[k])]
        counts[min(movable, key=lambda k: ((counts[k] - ideal[k]) * step, keys.index(k)))] += step
        left -= step
    return counts


@st.composite
def splits(draw):
    keys = draw(st.lists(st.sampled_from("abcdefghij"), min_size=1, max_size=8, unique=True))
    weights = {k: draw(st.integers(0, 50)) for k in keys}
    lo = {k: draw(st.integers(0, 20)) for k in keys}
    hi = {k: lo[k] + draw(st.integers(0, 400)) for k in keys}
    total = draw(st.integers(sum(lo.values()), sum(hi.values())))
    return total, weights, lo, hi


@settings(max_examples=400, deadline=None)
@given(splits())
def test_the_heap_gives_what_the_rule_gives(case):
    total, weights, lo, hi = case
    got = largest_remainder(total, weights, lo, hi)
    assert got == _by_the_rule(total, weights, lo, hi)
    assert sum(got.values()) == total and all(lo[k] <= got[k] <= hi[k] for k in got)


def test_a_large_total_over_many_keys_is_split_by_remainder():
    weights = {f"k{i:03d}": 1 + i % 7 for i in range(300)}
    got = largest_remainder(100_000, weights, hi={"k000": 10})
    assert got["k000"] == 10 and sum(got.values()) == 100_000
    assert got == _by_the_rule(100_000, weights, {k: 0 for k in weights}, {k: 10 if k == "k000" else 100_000
                                                                          for k in weights})


def test_bounds_that_cannot_hold_the_total_are_refused():
    try:
        largest_remainder(5, {"a": 1}, hi={"a": 4})
    except RatioError as exc:
        assert "no split of 5" in str(exc)
    else:
        raise AssertionError("a split over its bounds was accepted")
