"""Topology changes of placed replicas, and whether they could surge (pure).

A retained replica whose shape changed (a new topology: nodes per worker or GPUs per node) is
re-placed at the new shape (core.py `_retain_problem`, a `Move` saying "changed shape"), and its
old nodes count as free at once. Its objects keep their names, so `up` replaces the running
replica rather than running old and new side by side: KServe rejects a parallelism change
(`validateImmutableParallelism`) and the native workloads never surge (maxSurge 0). A true surge
(keep the old replica until the new shape is placed) would have to render the old replica from
its old topology, which a previous placement does not record (only workers, nodes and GPUs per
node). So the plan reports each change instead: how many replicas of the deployment serve while
it runs, and whether the fleet has room to hold the old shape beside the new one (what a surge
would need).
"""
from __future__ import annotations

from collections import Counter

RESHAPE = "changed shape"      # the words of core.py's _retain_problem for a topology change


def _shape(p) -> str:
    return ", ".join(f"{name} {rp.workers}x{rp.nodes // max(rp.workers, 1)}x{rp.gpus_per_node}"
                     for name, rp in sorted(p.roles.items()))


def reshapes(plan, previous) -> list[dict]:
    """One row per replica re-placed for a new shape: old and new shape (role workers x nodes per
    worker x GPUs per node), replicas serving while `up` replaces them, and surge room: whether the
    GPUs the old replica holds would still be free after the plan."""
    before = {(p.deployment, p.replica): p for p in previous}
    now = {(p.deployment, p.replica): p for p in plan.placements}
    moved = [m for m in plan.moves if RESHAPE in m.why and (m.deployment, m.replica) in before]
    changing = Counter(m.deployment for m in moved)
    out = []
    for m in sorted(moved, key=lambda m: (m.deployment, m.replica)):
        old, new = before[(m.deployment, m.replica)], now.get((m.deployment, m.replica))
        held = Counter()
        for rp in old.roles.values():
            held[(old.cluster, rp.pool)] += rp.need(plan.gpus_per_node.get((old.cluster, rp.pool), rp.gpus_per_node))
        short = sorted(f"{c}/{p}" for (c, p), n in held.items() if plan.free.get((c, p), 0) < n)
        placed = plan.placed(m.deployment)
        out.append({"deployment": m.deployment, "replica": m.replica, "from": {"cluster": old.cluster, "shape": _shape(old)},
                    "to": {"cluster": new.cluster, "shape": _shape(new)} if new else None,
                    "servingDuringChange": placed - sum(1 for x in moved if x.deployment == m.deployment
                                                        and (x.deployment, x.replica) in now),
                    "replicas": plan.desired.get(m.deployment, 0), "changingTogether": changing[m.deployment],
                    "surgeRoom": not short, "surgeShort": short})
    return out
