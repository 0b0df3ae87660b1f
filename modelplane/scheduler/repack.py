"""What a full re-pack would move and gain: the fleet planned from scratch (no stickiness, exact
phase always on) compared with the sticky plan. A view only; nothing is applied. A re-pack that
places no more replicas (or, at equal replicas, no more GPUs) than the sticky plan, and buys no
fewer nodes beyond the paid ones, moves nothing.

Paid capacity (a pool's minNodes: reserved, committed, Capacity Block or flex-start nodes, billed
whether used or not) left idle while replicas run on nodes bought beyond it is named: per pool,
the paid nodes idle now and after the re-pack, and what the nodes the re-pack no longer buys cost
($/hour at the pools' prices; None where a pool is unpriced).

A replica "stays" when the re-pack has a spot for its deployment on the same cluster and pools
(matched as multisets, so renumbering alone is not a move); every other placed replica of the
sticky plan "moves"; spots the sticky plan does not fill are "gains".
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .core import schedule


def _spot(p) -> tuple:
    return p.cluster, tuple(sorted((name, rp.pool) for name, rp in p.roles.items()))


def _where(spot) -> str:
    return f"{spot[0]}/{'+'.join(sorted({pool for _, pool in spot[1]}))}"


def _gpus(p) -> int:
    return sum(rp.nodes * rp.gpus_per_node for rp in p.roles.values())


@dataclass
class Repack:
    moves: list[tuple[str, int, str, str]] = field(default_factory=list)   # deployment, replica, from, to (cluster/pools)
    gained: list[tuple[str, str]] = field(default_factory=list)            # deployment, cluster
    lost: list[tuple[str, int, str]] = field(default_factory=list)         # deployment, replica, cluster
    replicas: tuple[int, int] = (0, 0)       # placed: sticky plan, re-pack
    gpus: tuple[int, int] = (0, 0)
    phase: str = ""
    # paid pools idle now: cluster/pool, capacity type, idle paid nodes now and after the re-pack, GPUs per node
    idle_paid: list[tuple[str, str, int, int, int]] = field(default_factory=list)
    bought: tuple[int, int] = (0, 0)         # nodes bought beyond the paid ones: sticky plan, re-pack
    saves: float | None = 0.0                # $/hour the re-pack no longer buys (None: an unpriced pool)

    def to_json(self) -> dict:
        return {"phase": self.phase,
                "replicas": {"now": self.replicas[0], "repacked": self.replicas[1]},
                "gpus": {"now": self.gpus[0], "repacked": self.gpus[1]},
                "paid": {"idle": [{"pool": w, "capacity": c, "idleNodes": {"now": a, "repacked": b},
                                   "idleGpus": {"now": a * g, "repacked": b * g}} for w, c, a, b, g in self.idle_paid],
                         "boughtNodes": {"now": self.bought[0], "repacked": self.bought[1]},
                         "savesHourly": None if self.saves is None else round(self.saves, 2)},
                "moves": [{"deployment": d, "replica": i, "from": a, "to": b} for d, i, a, b in self.moves],
                "gained": [{"deployment": d, "to": c} for d, c in self.gained],
                "lost": [{"deployment": d, "replica": i, "from": c} for d, i, c in self.lost]}


def nodes_used(placements, pools: dict) -> Counter:
    """(cluster, pool) -> nodes the placements take (workers within a node share them)."""
    took = Counter()
    for p in placements:
        for rp in p.roles.values():
            took[(p.cluster, rp.pool)] += rp.need(pools[(p.cluster, rp.pool)].gpus_per_node)
    return Counter({k: -(-n // pools[k].gpus_per_node) for k, n in took.items()})


def bought_nodes(used: Counter, pools: dict) -> dict:
    """(cluster, pool) -> nodes used beyond its paid nodes (minNodes): what the plan buys."""
    return {k: max(0, n - min(pools[k].paid_nodes, pools[k].max_nodes)) for k, n in used.items()}


def _rank(plan, pools: dict) -> tuple:
    """Larger is better: replicas, GPUs placed, then fewer nodes bought beyond the paid ones."""
    return (len(plan.placements), sum(map(_gpus, plan.placements)),
            -sum(bought_nodes(nodes_used(plan.placements, pools), pools).values()))


def repack(demands, clusters, current, budget: float | None = None) -> Repack:
    """Compare `current` (the sticky plan) with a from-scratch exact plan of the same inputs."""
    pools = {(c.name, q.name): q for c in clusters for q in c.pools}
    fresh = schedule(demands, clusters, (), exact="always", budget=budget)
    phase = fresh.phase
    if _rank(fresh, pools) <= _rank(current, pools):
        fresh = current     # no more replicas or GPUs, no fewer nodes bought: moving replicas would gain nothing
    out = Repack(replicas=(len(current.placements), len(fresh.placements)),
                 gpus=(sum(map(_gpus, current.placements)), sum(map(_gpus, fresh.placements))), phase=phase)
    used = [nodes_used(current.placements, pools), nodes_used(fresh.placements, pools)]
    bought = [bought_nodes(u, pools) for u in used]
    out.bought = (sum(bought[0].values()), sum(bought[1].values()))
    for key, q in sorted(pools.items()):
        paid = min(q.paid_nodes, q.max_nodes)
        if paid > used[0][key]:
            out.idle_paid.append((f"{key[0]}/{key[1]}", q.capacity, paid - used[0][key], max(0, paid - used[1][key]),
                                  q.gpus_per_node))
    for key in sorted(set(bought[0]) | set(bought[1])):
        fewer = bought[0].get(key, 0) - bought[1].get(key, 0)
        if fewer and out.saves is not None:
            out.saves = None if pools[key].hourly is None else out.saves + fewer * pools[key].hourly
    for d in sorted({p.deployment for p in current.placements} | {p.deployment for p in fresh.placements}):
        now = [p for p in current.placements if p.deployment == d]
        spots = Counter(_spot(p) for p in fresh.placements if p.deployment == d)
        leaving = []
        for p in now:
            if spots[_spot(p)]:
                spots[_spot(p)] -= 1
            else:
                leaving.append(p)
        free = sorted(spots.elements())
        for p, spot in zip(leaving, free):
            out.moves.append((d, p.replica, _where(_spot(p)), _where(spot)))
        out.lost += [(d, p.replica, _where(_spot(p))) for p in leaving[len(free):]]
        out.gained += [(d, _where(spot)) for spot in free[len(leaving):]]
    return out
