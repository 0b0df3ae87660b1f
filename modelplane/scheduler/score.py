"""Score and Bind (pure): the best pool combination for one more replica of a demand on one
cluster, and binding a replica there. Shared by the fill (core.py), the exact phase (counts.py)
and the replacement of changed replicas (surge.py)."""
from __future__ import annotations

import itertools
from types import MappingProxyType

from .model import RDMA_FABRICS, Demand, Placement, RolePlacement


def _fabric_tier(pools) -> int:
    """How well the pools of one replica can move KV cache between roles (higher is better)."""
    if len(pools) < 2 or len({p.name for p in pools}) == 1:
        return 2
    return 1 if all(p.fabric in RDMA_FABRICS for p in pools) else 0


def bought(pool, have: int, want: int) -> int:
    """GPUs of `want` that `pool` must buy: those beyond its paid GPUs (minNodes: reserved,
    committed, Capacity Block or flex-start nodes, billed whether used or not) still unused when
    `have` of its GPUs are free. Paid GPUs are sunk cost, so Score fills them first."""
    unused_paid = pool.paid_gpus - (pool.max_nodes * pool.gpus_per_node - have)
    return max(0, want - max(0, unused_paid))


def _best(d: Demand, cluster: str, per_role, free, count: int):
    """Score: the lowest key (count, -fabric tier, bought, stranded, node size, leftover, cluster,
    pools) of one more replica of `d` on this cluster, or None when no pool combination has room.
    Capacity is in GPUs of a pool: a role takes whole nodes for multi-node workers, else its
    workers' slots (model.need); bought counts the GPUs it takes beyond the pools' paid, unused
    GPUs (`bought`); stranded counts the GPUs it takes beyond those it uses; node size (GPUs per
    node of the chosen pools) keeps big nodes for big workers."""
    if len(d.roles) == 1:    # the hot path: one loop, no intermediate lists
        role = d.roles[0]
        gpus, best = role.gpus, None
        for p in per_role[role.name]:
            have, want = free[(cluster, p.name)], role.need(p)
            if have >= want:
                key = (count, -2, bought(p, have, want) if p.paid_nodes else want, want - gpus, p.gpus_per_node,
                       have - want, cluster, (p.name,))
                if best is None or key < best:
                    best = key
        return best
    options = []
    for role in d.roles:     # each role alone must fit before any combination can
        fits = [p for p in per_role[role.name] if free[(cluster, p.name)] >= role.need(p)]
        if not fits:
            return None
        options.append(fits)
    if len(d.roles) == 2:
        return _best_pair(d, cluster, options, free, count)
    return _best_product(d, cluster, options, free, count)


def _best_pair(d: Demand, cluster: str, options, free, count: int):
    """Two roles without the full product. A pool holding both wins outright (best fabric tier).
    Otherwise the key of a pair of distinct pools is a per-role sum, so the best pair is among
    each role's two best pools (one may collide with the other role's pick), tried first over
    RDMA pools only (tier 1), then over all pools (tier 0)."""
    (r1, r2), (o1, o2) = d.roles, options
    both = {p.name for p in o2}
    shared = [p for p in o1 if p.name in both and free[(cluster, p.name)] >= r1.need(p) + r2.need(p)]
    if shared:
        return min((count, -2, bought(p, free[(cluster, p.name)], r1.need(p) + r2.need(p)),
                    r1.need(p) - r1.gpus + r2.need(p) - r2.gpus, 2 * p.gpus_per_node,
                    free[(cluster, p.name)] - r1.need(p) - r2.need(p), cluster, (p.name, p.name)) for p in shared)

    def top2(role, pools):
        # per role, as _key sums it: lexicographic order survives the sum of two roles' terms
        return sorted(pools, key=lambda p: (bought(p, free[(cluster, p.name)], role.need(p)), role.need(p) - role.gpus,
                                            p.gpus_per_node, free[(cluster, p.name)] - role.need(p), p.name))[:2]

    for tier, keep in ((1, lambda p: p.fabric in RDMA_FABRICS), (0, lambda p: True)):
        pairs = [(a, b) for a in top2(r1, filter(keep, o1)) for b in top2(r2, filter(keep, o2)) if a.name != b.name]
        if pairs:
            return min(_key(d, cluster, pair, free, count) for pair in pairs)
    return None


def _key(d: Demand, cluster: str, combo, free, count: int):
    want: dict[str, int] = {}
    stranded = 0
    for role, pool in zip(d.roles, combo):
        n = role.need(pool)
        want[pool.name] = want.get(pool.name, 0) + n
        stranded += n - role.gpus
    if len(want) < len(combo) and any(free[(cluster, name)] < n for name, n in want.items()):
        return None     # a pool shared by roles must hold their sum
    leftover = sum(free[(cluster, name)] - n for name, n in want.items())
    size = sum(p.gpus_per_node for p in combo)
    by_name = {p.name: p for p in combo}
    buys = sum(bought(by_name[name], free[(cluster, name)], n) for name, n in want.items())
    return (count, -_fabric_tier(combo), buys, stranded, size, leftover, cluster, tuple(p.name for p in combo))


def _best_product(d: Demand, cluster: str, options, free, count: int):
    """Every combination of pools; the reference the faster paths must agree with."""
    keys = [k for combo in itertools.product(*options) if (k := _key(d, cluster, combo, free, count))]
    return min(keys) if keys else None


def _bind(d: Demand, idx: int, cluster: str, names, free, pools, slot: int = 0) -> Placement:
    """Reserve the GPUs of replica `idx` on `cluster` (one pool name per role; `pools`: the
    scheduler's Pool per (cluster, pool)); it records each role's topology, the shape it is
    created with."""
    roles = {}
    for role, pool in zip(d.roles, names):
        free[(cluster, pool)] -= role.need(pools[(cluster, pool)])
        roles[role.name] = RolePlacement(pool, role.nodes, role.gpus_per_node, role.workers, role.topology)
    return Placement(d.key, idx, cluster, MappingProxyType(roles), slot)
