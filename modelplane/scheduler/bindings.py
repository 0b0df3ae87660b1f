"""Ratio bindings of InPlace scaling (RBG ResourceScalingGroup): roles sized from one root role.

A binding `role: ratio per <per>` keeps `role` at ceil(ratio x count(per)) — the ceiling, so a
bound role is never below its binding (largest remainder, which ratio bands use, may round a role
down). Bindings form a DAG rooted at `decode`, whose worker count is the replica's size. Ratios
are exact fractions of their decimal text, so 0.1 x 30 is 3, not 3.0000000000000004 rounded up.

Scale order, so every binding holds at every intermediate state: growing, the roles furthest
from the root change first and the root last; shrinking, the root first and then outward. Roles
at the same depth change in name order.
"""
from __future__ import annotations

import math
from fractions import Fraction

ROOT = "decode"


class BindingError(ValueError):
    pass


def _ratio(value) -> Fraction:
    return Fraction(str(value))


def depths(bindings: dict[str, tuple[str, float]]) -> dict[str, int]:
    """Distance of every role from the root. `bindings`: role -> (per, ratio). Raises
    BindingError on a cycle or a chain that does not reach the root."""
    depth: dict[str, int] = {ROOT: 0}

    def visit(role, seen=()):
        if role in depth:
            return depth[role]
        if role in seen:
            raise BindingError(f"bindings form a cycle: {' -> '.join((*seen, role))}")
        if role not in bindings:
            raise BindingError(f"role {role!r} is neither {ROOT!r} nor bound to a role")
        depth[role] = visit(bindings[role][0], (*seen, role)) + 1
        return depth[role]

    for role in sorted(bindings):
        visit(role)
    return depth


def order(bindings: dict[str, tuple[str, float]]) -> list[str]:
    """Bound roles, parents before children (name order within a depth)."""
    depth = depths(bindings)
    return sorted(bindings, key=lambda r: (depth[r], r))


def resolve(bindings: dict[str, tuple[str, float]], root: int) -> dict[str, int]:
    """Counts of every role when the root runs `root` workers."""
    counts = {ROOT: root}
    for role in order(bindings):
        per, ratio = bindings[role]
        counts[role] = math.ceil(_ratio(ratio) * counts[per])
    return counts


def holds(bindings: dict[str, tuple[str, float]], counts: dict[str, int]) -> bool:
    """Every bound role at or above its binding."""
    return all(counts[r] >= _ratio(ratio) * counts[per] for r, (per, ratio) in bindings.items())


def scale_path(bindings: dict[str, tuple[str, float]], start: dict[str, int], root: int) -> list[dict[str, int]]:
    """The states one role at a time from `start` to the counts at `root` workers (scale order above)."""
    goal = resolve(bindings, root)
    depth = depths(bindings)
    grow = goal[ROOT] >= start[ROOT]
    path, now = [], dict(start)
    for role in sorted(depth, key=lambda r: (-depth[r] if grow else depth[r], r)):
        if now[role] != goal[role]:
            now = {**now, role: goal[role]}
            path.append(now)
    return path
