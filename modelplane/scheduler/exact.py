"""The exact phase: re-solve the fill as an integer program when the fast path leaves replicas
unplaced (or when asked). The model is `counts.py`: integer counts per (kind of deployment,
cluster, pool per role), so it grows with the fleet, not with the replicas.

This module turns counts into replicas. Per kind, each deployment first keeps the spots the fast
path gave it where the counts have them; the remaining spots go to the kind's deployments in name
order, each taking the cluster where it has the fewest replicas so far (spread). Per deployment,
replicas the fast path placed keep their index and spot when the solution has room for them
there; the rest take the lowest free indices, clusters interleaved. Retained replicas are fixed
before any of this (they are not in the model).

The result is never worse than the fast path in any tier: the fast path's count per tier is a
constraint of the model, and a solution that still falls short is discarded.
"""
from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass
from types import MappingProxyType

from .counts import Kind, Spot, kinds as _kinds, optimise, spots as _spots
from .model import Demand, Placement, RolePlacement

DEFAULT_BUDGET = 0.15     # deterministic seconds for all CP-SAT levels together (work units, not wall time)


@dataclass
class Outcome:
    fills: dict[str, list[tuple[str, tuple[str, ...]]]] | None   # per deployment: (cluster, pools) per new replica
    phase: str                                                   # the line the plan prints


def solve(demands, eligible: dict, free: dict, missing: dict[str, int], greedy: dict[str, list],
          budget: float = DEFAULT_BUDGET, keep_fast: bool = False) -> Outcome:
    """`free`: nodes per (cluster, pool) after Retain; `missing`: replicas to place per deployment;
    `greedy`: the fast path's (cluster, pool names) per new replica."""
    kinds_ = _kinds(demands, eligible, missing)
    spots_ = _spots(kinds_, eligible, free)
    if not spots_:
        return Outcome(None, "fast path (nothing the exact phase could add)")
    at = {(s.kind, s.cluster, s.names): i for i, s in enumerate(spots_)}
    kind_of = {d.key: k for k, kind in enumerate(kinds_) for d in kind.members}
    fast = [0] * len(spots_)
    for dk, fills in greedy.items():
        for cluster, names in fills:
            fast[at[(kind_of[dk], cluster, names)]] += 1
    solved = optimise(kinds_, spots_, free, fast, budget, keep_fast)
    phase = "exact"
    if solved.unproven:
        phase += f" (best found within the budget; not proven optimal: {', '.join(solved.unproven)})"
    if solved.stopped:
        phase += f" (the budget ran out at the {solved.stopped} level; the levels above it stand)"
    if solved.skipped:
        phase += " (spread and quality as the start left them: the model is too large to optimise them in the budget)"
    return Outcome(expand(kinds_, spots_, solved.counts, missing, greedy), phase)


def expand(kinds_: list[Kind], spots_: list[Spot], counts: list[int], missing: dict[str, int],
           greedy: dict[str, list]) -> dict[str, list]:
    """Counts per spot -> (cluster, pool names) per new replica of each deployment: the fast path's
    spots first, then the kind's remaining spots in name order, fewest on the cluster first."""
    left: dict[int, Counter] = defaultdict(Counter)
    for s, n in zip(spots_, counts):
        if n:
            left[s.kind][(s.cluster, s.names)] += n
    out = {}
    for k, kind in enumerate(kinds_):
        free = left[k]
        for d in kind.members:
            out[d.key] = []
            for spot in greedy.get(d.key, []):
                if free[spot]:
                    free[spot] -= 1
                    out[d.key].append(spot)
        for d in kind.members:
            on = Counter(c for c, _ in out[d.key])
            for _ in range(missing[d.key] - len(out[d.key])):
                spot = min((s for s, n in free.items() if n), key=lambda s: (on[s[0]], s), default=None)
                if spot is None:
                    break
                free[spot] -= 1
                on[spot[0]] += 1
                out[d.key].append(spot)
    return out


def _partial(d: Demand, placements) -> bool:
    full = d.shapes[0]
    return any(tuple(p.roles[r.name].workers for r in d.roles) != full for p in placements)


def refill(demands, eligible, after_retain, kept, filled, budget, only_if_better: bool = False):
    """Run the exact phase; keep the fast path's replicas where the solution has room for them
    there, give the rest the solution's remaining spots in index order. Deployments with a
    replica at a smaller step keep the fast path's fill (the program counts full shapes only).
    `only_if_better` (the phase run because the fast path left replicas unplaced): the solution
    stands only if it places more (per tier, then GPUs) and moves as few fast-path replicas as it
    can; otherwise nothing moves, so a deployment that fits nowhere never moves another's replicas."""
    fixed = {d.key for d in demands if _partial(d, [*kept[d.key].values(), *filled[d.key].values()])}
    original = filled
    if fixed:
        after_retain = dict(after_retain)
        for d in demands:
            for p in filled[d.key].values() if d.key in fixed else ():
                for rp in p.roles.values():
                    after_retain[(p.cluster, rp.pool)] -= rp.nodes
        kept = {k: ({**v, **filled[k]} if k in fixed else v) for k, v in kept.items()}
        filled = {k: ({} if k in fixed else v) for k, v in filled.items()}
    missing = {d.key: d.replicas - len(kept[d.key]) for d in demands}
    greedy = {k: [(p.cluster, tuple(rp.pool for rp in p.roles.values())) for _, p in sorted(v.items())]
              for k, v in filled.items()}
    outcome = solve(demands, eligible, after_retain, missing, greedy, budget or DEFAULT_BUDGET, only_if_better)
    fast_free = dict(after_retain)
    for d in demands:
        for p in filled[d.key].values():
            for role in d.roles:
                fast_free[(p.cluster, p.roles[role.name].pool)] -= role.nodes
    if outcome.fills is None:
        return original, fast_free, outcome.phase, []
    by_tier_fast, by_tier_exact = Counter(), Counter()
    gpus = [0, 0]
    for d in demands:
        size = sum(r.nodes * r.gpus_per_node for r in d.roles)
        by_tier_fast[d.priority] += len(filled[d.key])
        by_tier_exact[d.priority] += len(outcome.fills.get(d.key, []))
        gpus[0] += size * len(filled[d.key])
        gpus[1] += size * len(outcome.fills.get(d.key, []))
    tiers = sorted(set(by_tier_fast) | set(by_tier_exact), reverse=True)
    fast_rank, exact_rank = ([*(c[t] for t in tiers), g] for c, g in ((by_tier_fast, gpus[0]), (by_tier_exact, gpus[1])))
    if any(by_tier_exact[t] < n for t, n in by_tier_fast.items()) or (only_if_better and exact_rank <= fast_rank):
        return original, fast_free, "fast path (the exact phase found no better plan)", []
    free, out, changed = dict(after_retain), {}, []
    for d in demands:
        spots = Counter(outcome.fills.get(d.key, []))
        mine = {}
        for idx, p in sorted(filled[d.key].items()):
            spot = (p.cluster, tuple(p.roles[r.name].pool for r in d.roles))
            if spots[spot]:
                spots[spot] -= 1
                mine[idx] = p
        rest = sorted(spots.elements())
        # interleave clusters so the remaining replicas of a deployment spread by index
        rest = [s for _, s in sorted((i, s) for c, group in itertools.groupby(rest, key=lambda s: s[0])
                                     for i, s in enumerate(group))]
        free_idx = [i for i in range(d.replicas) if i not in kept[d.key] and i not in mine]
        for idx, (cluster, names) in zip(free_idx, rest):
            roles = {r.name: RolePlacement(pool, r.nodes, r.gpus_per_node, r.workers, r.topology)
                     for r, pool in zip(d.roles, names)}
            mine[idx] = Placement(d.key, idx, cluster, MappingProxyType(roles))
            before = filled[d.key].get(idx)
            changed.append((d.key, idx, before.cluster if before else None, cluster))
        for idx, p in mine.items():
            for role in d.roles:
                free[(p.cluster, p.roles[role.name].pool)] -= role.nodes
        out[d.key] = original[d.key] if d.key in fixed else mine
    return out, free, outcome.phase, sorted(changed)
