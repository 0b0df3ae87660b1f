"""The exact phase: re-solve the fill as an integer program when the fast path leaves replicas
unplaced (or when asked). The model is `counts.py`: integer counts per (kind of deployment,
cluster, pool per role), so it grows with the fleet, not with the replicas.

This module turns counts into replicas. Per kind, each deployment first keeps the spots the fast
path gave it where the counts have them; the remaining spots go to the kind's deployments in name
order, each taking the cluster where it has the fewest replicas so far (spread). Per deployment,
replicas the fast path placed keep their index and spot when the solution has room for them
there; the rest take the lowest free indices, clusters interleaved. Retained replicas are fixed
before any of this (they are not in the model).

The result is never worse than the fast path under the objective (per tier, highest first,
deployments served, then replicas; then GPUs): CP-SAT starts from a solution at least as good, and
one that still falls short is discarded. A higher tier may take room a lower tier had in the fast
path (issue 44: a lower tier's floor kept a standard deployment unserved for a low one).
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
    picks: dict[str, int] | None = None                          # sized deployment -> the candidate placed


@dataclass
class Group:
    """A sized deployment in the exact phase: its candidates (each a Demand with its key and its
    own eligible pools), the fast path's pick, and what placing one whole is worth at its tier."""

    key: str
    candidates: list
    eligible: list
    fast: int
    units: int


def solve(demands, eligible: dict, free: dict, missing: dict[str, int], greedy: dict[str, list],
          budget: float = DEFAULT_BUDGET, keep_fast: bool = False, groups: list[Group] = (), price=None) -> Outcome:
    """`free`: GPUs per (cluster, pool) after Retain; `missing`: replicas to place per deployment;
    `greedy`: the fast path's (cluster, pool names) per new replica; `keep_fast`: see
    counts._polish; `groups`: sized deployments whose candidate is chosen here;
    `price(demand, cluster, pools)`: $/hour of one of its replicas."""
    kinds_ = _kinds(demands, eligible, missing)
    fast_kind = {}
    for g in groups:
        for i, (d, where) in enumerate(zip(g.candidates, g.eligible)):
            if i == g.fast:
                fast_kind[g.key] = len(kinds_)
            kinds_.append(Kind(d.priority, [d], d.replicas, sum(r.gpus for r in d.roles),
                               g.key, g.units, where))
    spots_ = _spots(kinds_, eligible, free, price)
    if not spots_:
        return Outcome(None, "fast path (nothing the exact phase could add)")
    at = {(s.kind, s.cluster, s.names): i for i, s in enumerate(spots_)}
    kind_of = {d.key: k for k, kind in enumerate(kinds_) for d in kind.members if not kind.group}
    kind_of.update(fast_kind)
    fast = [0] * len(spots_)
    for dk, fills in greedy.items():
        for cluster, names in fills:
            fast[at[(kind_of[dk], cluster, names)]] += 1
    # served first (issue 44): per tier deployments served, then replicas; expand() gives each
    # deployment with nothing placed a replica before any deployment of its kind gets a second
    solved = optimise(kinds_, spots_, free, fast, budget, keep_fast)
    phase = "exact"
    if solved.unproven:
        phase += f" (best found within the budget; not proven optimal: {', '.join(solved.unproven)})"
    if solved.stopped:
        phase += f" (the budget ran out at the {solved.stopped} level; the levels above it stand)"
    if solved.skipped:
        phase += " (spread and quality as the start left them: the model is too large to optimise them in the budget)"
    fills = expand(kinds_, spots_, solved.counts, missing, greedy)
    picks = {}
    for g in groups:
        base = next(k for k, kind in enumerate(kinds_) if kind.group == g.key)
        used = {s.kind for s, n in zip(spots_, solved.counts) if n and kinds_[s.kind].group == g.key}
        if used:
            picks[g.key] = min(used) - base
    return Outcome(fills, phase, picks)


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
        if kind.group:                  # a sized deployment: only its placed candidate fills it
            if sum(free.values()):
                key = kind.members[0].key
                out[key] = []
                for spot in greedy.get(key, []):
                    if free[spot]:
                        free[spot] -= 1
                        out[key].append(spot)
                out[key] += sorted(free.elements())
            continue
        # served first: every member with nothing placed takes one spot (its fast-path spot if the
        # counts have it) before any member takes another; then members keep their other fast-path spots
        for d in kind.members:
            out[d.key] = []
        for d in kind.members:
            if not missing[d.key] or missing[d.key] != d.replicas:
                continue
            spot = next((s for s in greedy.get(d.key, []) if free[s]), None)
            spot = spot or min((s for s, n in free.items() if n), default=None)
            if spot is not None:
                free[spot] -= 1
                out[d.key].append(spot)
        for d in kind.members:
            mine = Counter(out[d.key])
            for spot in greedy.get(d.key, []):
                if mine[spot]:
                    mine[spot] -= 1       # the spot it took above
                elif free[spot]:
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


def refill(demands, eligible, after_retain, kept, filled, budget, only_if_better: bool = False, choice=None,
           pools=None):
    """Run the exact phase; keep the fast path's replicas where the solution has room for them
    there, give the rest the solution's remaining spots in index order. Deployments with a
    replica at a smaller step keep the fast path's fill (the program counts full shapes only).
    `only_if_better` (the phase run on its own, not asked for): the solution stands only if it
    places more (per tier, then GPUs) or costs sized deployments less, and moves as few fast-path
    replicas as it can; otherwise nothing moves, so a deployment that fits nowhere never moves
    another's replicas. Sized deployments the fast path picked a candidate for (`choice.open`)
    have theirs chosen again with everything else. Returns (fills, free, phase, changed, {key:
    new candidate})."""
    fixed = {d.key for d in demands if _partial(d, [*kept[d.key].values(), *filled[d.key].values()])}
    original = filled
    if fixed:
        after_retain = dict(after_retain)
        for d in demands:
            for p in filled[d.key].values() if d.key in fixed else ():
                for rp in p.roles.values():
                    after_retain[(p.cluster, rp.pool)] -= rp.need(pools[(p.cluster, rp.pool)].gpus_per_node)
        kept = {k: ({**v, **filled[k]} if k in fixed else v) for k, v in kept.items()}
        filled = {k: ({} if k in fixed else v) for k, v in filled.items()}
    open_keys = {o.key for o in choice.open} if choice else set()
    groups = [Group(o.key, list(o.candidates), [choice.eligible_of(o.key, i) for i in range(len(o.candidates))],
                    choice.chosen[o.key], choice.candidate(o.key, choice.chosen[o.key]).replicas)
              for o in (choice.open if choice else ())]
    plain = [d for d in demands if d.key not in open_keys]
    missing = {d.key: d.replicas - len(kept[d.key]) for d in plain}
    greedy = {k: [(p.cluster, tuple(rp.pool for rp in p.roles.values())) for _, p in sorted(v.items())]
              for k, v in filled.items()}
    outcome = solve(plain, eligible, after_retain, missing, greedy, budget or DEFAULT_BUDGET, only_if_better, groups,
                    choice.replica_cost if choice else None)
    fast_free = dict(after_retain)
    for d in demands:
        for p in filled[d.key].values():
            for rp in p.roles.values():
                fast_free[(p.cluster, rp.pool)] -= rp.need(pools[(p.cluster, rp.pool)].gpus_per_node)
    if outcome.fills is None:
        return original, fast_free, outcome.phase, [], {}
    units = {g.key: g.units for g in groups}
    by_tier_fast, by_tier_exact = Counter(), Counter()
    served_fast, served_exact = Counter(), Counter()    # deployments with at least one replica, per tier
    gpus, cost = [0, 0], [0.0, 0.0]
    for d in demands:
        got = len(outcome.fills.get(d.key, []))
        by_tier_fast[d.priority] += len(filled[d.key])
        served_fast[d.priority] += bool(kept[d.key] or filled[d.key])
        served_exact[d.priority] += bool(kept[d.key] or got)
        if d.key in open_keys:             # a sized deployment: its units when placed whole, and its cost
            g = next(g for g in groups if g.key == d.key)
            pick = outcome.picks.get(d.key, g.fast)
            by_tier_exact[d.priority] += units[d.key] if got else 0
            cost[0] += sum(choice.replica_cost(d, p.cluster, tuple(rp.pool for rp in p.roles.values()))
                           for p in filled[d.key].values())
            cost[1] += sum(choice.replica_cost(g.candidates[pick], c, names) for c, names in outcome.fills.get(d.key, []))
            continue
        size = sum(r.nodes * r.gpus_per_node for r in d.roles)
        by_tier_exact[d.priority] += got
        gpus[0] += size * len(filled[d.key])
        gpus[1] += size * got
    tiers = sorted(set(by_tier_fast) | set(by_tier_exact), reverse=True)
    # per tier, highest first: deployments served, then replicas; then GPUs, then sized cost
    fast_rank, exact_rank = ([x for t in tiers for x in (s[t], c[t])] + [g, -round(m, 6)]
                             for s, c, g, m in ((served_fast, by_tier_fast, gpus[0], cost[0]),
                                                (served_exact, by_tier_exact, gpus[1], cost[1])))
    # Never worse than the fast path under the objective (per tier, highest first, deployments
    # served then replicas; then GPUs): a higher tier may take room a lower one had in the fast path.
    if exact_rank < fast_rank or (only_if_better and exact_rank <= fast_rank):
        return original, fast_free, "fast path (the exact phase found no better plan)", [], {}
    swapped = {}
    for g in groups:
        pick = outcome.picks.get(g.key, g.fast)
        if pick != g.fast:
            swapped[g.key] = g.candidates[pick]
            choice.chosen[g.key] = pick
    free, out, changed = dict(after_retain), {}, []
    for d in demands:
        d = swapped.get(d.key, d)
        spots = Counter(outcome.fills.get(d.key, []))
        mine = {}
        for idx, p in sorted(filled[d.key].items()) if d.key not in swapped else ():
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
            for rp in p.roles.values():
                free[(p.cluster, rp.pool)] -= rp.need(pools[(p.cluster, rp.pool)].gpus_per_node)
        out[d.key] = original[d.key] if d.key in fixed else mine
    return out, free, outcome.phase, sorted(changed), swapped
