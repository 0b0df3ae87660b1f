"""Choosing among a sized deployment's candidates (one Options per deployment): which class,
shape and replica count the scheduler places.

- **Sticky**: when the previous placements of the deployment all match one candidate (its roles,
  workers and shape on pools of its class), that candidate is kept and its replicas are retained
  like any other; a re-plan never re-sizes what runs while it still meets the objective.
- **Fast path** (`pick`), at the deployment's turn in the fill order (tier, then name): every
  candidate is filled on a copy of the ledger; the one that places all its replicas (else the
  largest share of them) at the lowest cost wins, ties by candidate order.
- **Exact phase**: when a pick costs more than the cheapest candidate could on the cheapest pools
  it may use (a lower bound, capacity aside), or replicas stay unplaced, the count model chooses
  the candidates of every sized deployment together with the fill of everything else
  (counts.py: one kind per candidate, at most one candidate per deployment, placed whole).

Cost is $/hour of the GPUs a replica takes on its pools (model.need: whole nodes for multi-node
workers, slots of shared nodes for smaller ones) at each pool's node price over its GPUs
(`Pool.hourly`); an unpriced pool counts at twice the dearest GPU-hour of the fleet, so it is
chosen only when nothing priced fits.
"""
from __future__ import annotations

import math

from .filter import Verdicts, eligible as _eligible
from .model import Demand, Options, Placement

UNPRICED_FACTOR = 2.0


class Choice:
    def __init__(self, options, clusters, matcher):
        self.options = {o.key: o for o in options}
        self.chosen: dict[str, int] = {}
        self.open: list[Options] = []
        self._verdicts = {o.key: [Verdicts(c, matcher) for c in o.candidates] for o in options}
        self._eligible = {o.key: [_eligible(c, clusters, v) for c, v in zip(o.candidates, self._verdicts[o.key])]
                          for o in options}
        self.pools = {(c.name, p.name): p for c in clusters for p in c.pools}
        per_gpu = [p.hourly / p.gpus_per_node for p in self.pools.values() if p.hourly is not None]
        self.unpriced_gpu_hour = UNPRICED_FACTOR * max(per_gpu, default=1.0)

    # -- lookups ---------------------------------------------------------------------------
    def candidate(self, key: str, index: int) -> Demand:
        return self.options[key].candidates[index]

    def eligible_of(self, key: str, index: int | None = None) -> dict:
        return self._eligible[key][self.chosen[key] if index is None else index]

    def verdicts_of(self, key: str, index: int | None = None) -> Verdicts:
        return self._verdicts[key][self.chosen[key] if index is None else index]

    def gpu_price(self, cluster: str, pool: str) -> float:
        """$ per GPU-hour of a pool: its node price over its GPUs."""
        p = self.pools[(cluster, pool)]
        return p.hourly / p.gpus_per_node if p.hourly is not None else self.unpriced_gpu_hour

    def replica_cost(self, d: Demand, cluster: str, names) -> float:
        """$/hour of one replica of `d` on these pools (one per role): the GPUs it takes there
        (whole nodes for multi-node workers, slots of shared nodes for smaller ones)."""
        return sum(r.need(self.pools[(cluster, name)]) * self.gpu_price(cluster, name) for r, name in zip(d.roles, names))

    def placed_cost(self, placements) -> float:
        return sum(rp.need(self.pools[(p.cluster, rp.pool)].gpus_per_node) * self.gpu_price(p.cluster, rp.pool)
                   for p in placements for rp in p.roles.values())

    def bound(self, key: str, index: int) -> float:
        """No placement of this candidate costs less: every role on its cheapest eligible pool."""
        d, eligible = self.candidate(key, index), self._eligible[key][index]
        total = 0.0
        for role in d.roles:
            prices = [role.need(p) * self.gpu_price(c, p.name) for c, per in eligible.items() for p in per[role.name]]
            if not prices:
                return math.inf
            total += min(prices)
        return d.replicas * total

    # -- the choice ------------------------------------------------------------------------
    def sticky(self, previous: dict, clusters: dict) -> dict[str, Demand]:
        """Sized deployments whose previous placements all match one candidate: that candidate."""
        out = {}
        for key, o in self.options.items():
            old = list(previous.get(key, {}).values())
            match = next((i for i, c in enumerate(o.candidates)
                          if old and all(_matches(c, p, self._eligible[key][i]) for p in old)), None)
            if match is None:
                self.open.append(o)
            else:
                self.chosen[key] = match
                out[key] = o.candidates[match]
        return out

    def why_open(self, key: str, old) -> str:
        """Why a running replica of a sized deployment matches none of its candidates: its cluster
        left every candidate's filter (a clusterSelector edit, a queue removed), else the shape."""
        if all(old.cluster not in eligible for eligible in self._eligible[key]):
            return f"cluster {old.cluster} no longer passes the filter, so sizing chose again"
        return "sizing chose another configuration"

    def pick(self, o: Options, free: dict, fill):
        """Fill each candidate on a copy of `free`; keep the one that places the largest share of its
        replicas, then costs least, then comes first. Returns (demand, placements, free, failed index)."""
        best = None
        for i, d in enumerate(o.candidates):
            trial = dict(free)
            placed, failed = fill(d, {}, self._eligible[o.key][i], trial)
            score = (failed is not None, -len(placed) / max(d.replicas, 1), self.placed_cost(placed.values()), i)
            if best is None or score < best[0]:
                best = (score, i, d, placed, trial, failed)
        _, i, d, placed, trial, failed = best
        self.chosen[o.key] = i
        return d, placed, trial, failed

    def dearer_than_bound(self, filled: dict) -> bool:
        """Whether some fast-path pick may cost more than the cheapest candidate could (the exact
        phase then chooses again, with everything else)."""
        for o in self.open:
            cheapest = min(self.bound(o.key, i) for i in range(len(o.candidates)))
            if self.placed_cost(filled.get(o.key, {}).values()) > cheapest * (1 + 1e-9) + 1e-9:
                return True
        return False


def _matches(d: Demand, p: Placement, eligible: dict) -> bool:
    """Whether a running replica is one of this candidate: same roles, workers and shape, on pools
    the candidate may use."""
    if set(p.roles) != {r.name for r in d.roles} or p.cluster not in eligible:
        return False
    for role in d.roles:
        rp = p.roles[role.name]
        if (rp.workers, rp.nodes, rp.gpus_per_node) != (role.workers, role.nodes, role.gpus_per_node):
            return False
        if rp.pool not in {q.name for q in eligible[p.cluster][role.name]}:
            return False
    return True
