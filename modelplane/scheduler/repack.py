"""What a full re-pack would move and gain: the fleet planned from scratch (no stickiness, exact
phase always on) compared with the sticky plan. A view only; nothing is applied. A re-pack that
places no more replicas (or, at equal replicas, no more GPUs) than the sticky plan moves nothing.

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

    def to_json(self) -> dict:
        return {"phase": self.phase,
                "replicas": {"now": self.replicas[0], "repacked": self.replicas[1]},
                "gpus": {"now": self.gpus[0], "repacked": self.gpus[1]},
                "moves": [{"deployment": d, "replica": i, "from": a, "to": b} for d, i, a, b in self.moves],
                "gained": [{"deployment": d, "to": c} for d, c in self.gained],
                "lost": [{"deployment": d, "replica": i, "from": c} for d, i, c in self.lost]}


def repack(demands, clusters, current, budget: float | None = None) -> Repack:
    """Compare `current` (the sticky plan) with a from-scratch exact plan of the same inputs."""
    fresh = schedule(demands, clusters, (), exact="always", budget=budget)
    phase = fresh.phase
    if (len(fresh.placements), sum(map(_gpus, fresh.placements))) <= (len(current.placements),
                                                                       sum(map(_gpus, current.placements))):
        fresh = current     # no more replicas or GPUs: moving replicas would buy nothing
    out = Repack(replicas=(len(current.placements), len(fresh.placements)),
                 gpus=(sum(map(_gpus, current.placements)), sum(map(_gpus, fresh.placements))), phase=phase)
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
