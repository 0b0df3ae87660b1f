"""Rollout progress per deployment: the target in GPU workers, what the plan placed, and the first
batch that is stuck with its reason (RBG KEP-75's partial rollout, reported rather than hidden).

A batch is one replica: the lowest index that is unplaced, or placed at a smaller
ratio-preserving shape than its target. Its reason is the scheduler's own: for an unplaced
replica the capacity rejections (or the first Filter reason when no pool fits at all); for a
partial one, the role that is short and the room its pool has left.
"""
from __future__ import annotations

from dataclasses import replace

from .model import CAPACITY, Demand, Placement, Unplaced

MAX_DETAILS = 3


def _free(free, capacity, cluster, pool) -> str:
    return f"{free[(cluster, pool)]}/{capacity[(cluster, pool)]} GPUs free"


def progress(d: Demand, placed: list[Placement], unplaced: list[Unplaced], free, capacity, pools) -> dict:
    """`free`, `capacity`: GPUs per (cluster, pool); `pools`: the scheduler's Pool per (cluster, pool)."""
    full = d.shapes[0]
    per_replica = sum(full)
    target = d.replicas * per_replica
    got = sum(p.roles[r.name].workers for p in placed for r in d.roles)
    out = {"deployment": d.key, "target": target, "placed": got,
           "percent": round(100.0 * got / target, 1) if target else 100.0,
           "replicas": {"target": d.replicas, "placed": len(placed)}, "stuck": None}
    if got >= target:
        return out
    short = {p.replica: p for p in placed if tuple(p.roles[r.name].workers for r in d.roles) != full}
    first_unplaced = min((u for u in unplaced), key=lambda u: u.replica, default=None)
    first_short = min(short, default=None)
    if first_short is not None and (first_unplaced is None or first_short < first_unplaced.replica):
        p = short[first_short]
        lacking = [(r, w) for r, w in zip(d.roles, full) if p.roles[r.name].workers < w]
        runs = " and ".join(f"{p.roles[r.name].workers} of {w} {r.name}" for r, w in lacking)
        more: dict[str, int] = {}
        for r, w in lacking:
            pool = p.roles[r.name].pool
            extra = replace(r, workers=w - p.roles[r.name].workers)
            more[pool] = more.get(pool, 0) + extra.need(pools[(p.cluster, pool)])
        needs = ", ".join(f"{n} more GPU{'s' if n != 1 else ''} on {p.cluster}/{pool} "
                          f"({_free(free, capacity, p.cluster, pool)})" for pool, n in sorted(more.items()))
        out["stuck"] = {"replica": p.replica, "role": lacking[0][0].name, "reason": CAPACITY,
                        "detail": f"runs {runs} workers; needs {needs}"}
        return out
    u = first_unplaced
    capacity = [r for r in u.reasons if r.reason == CAPACITY]
    reasons = capacity or list(u.reasons)
    details = [f"{r.cluster}/{r.pool}: {r.detail}" if r.pool else f"{r.cluster}: {r.detail}"
               for r in reasons[:MAX_DETAILS]]
    if len(reasons) > MAX_DETAILS:
        details.append(f"and {len(reasons) - MAX_DETAILS} more")
    out["stuck"] = {"replica": u.replica, "role": reasons[0].role, "reason": reasons[0].reason,
                    "detail": "; ".join(details)}
    return out
