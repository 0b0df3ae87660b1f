"""The exact phase: re-solve the fill as an integer program when the fast path leaves replicas
unplaced (or when asked), with OR-Tools CP-SAT.

Variables: x[d, c, combo] = replicas of deployment d placed on cluster c with one pool per GPU
role (`combo`). Capacity: per pool, the nodes of every combo using it fit the nodes left after
Retain. Objective, lexicographic (one solve per level, each fixing the level above):
  1. replicas placed, per priority tier, highest tier first;
  2. GPUs placed;
  3. spread: the most replicas of one deployment on one cluster, summed over deployments;
  4. quality: 2 - fabric tier per replica (same pool > RDMA > TCP), then GPUs stranded, then
     replicas off the fast path's spots (an equally good plan moves nothing).
Retained replicas are fixed; replicas the fast path placed keep their spot when the solution
has room for them there, so the exact phase moves only what it must.

Deterministic: one worker, a fixed seed and a deterministic time budget (CP-SAT's
`max_deterministic_time`, split evenly over the levels), so the same inputs give the same plan on
any machine. Every level starts from the best solution so far (the fast path's fill at first)
and the fast path's count per tier is a constraint, so the result is never worse than the fast
path in any tier. A level that is not proven optimal within its share keeps the best solution
found (the plan names the unproven levels); a level that finds none leaves the levels above it
standing.
"""
from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass
from types import MappingProxyType

from .model import RDMA_FABRICS, Demand, Placement, RolePlacement

DEFAULT_BUDGET = 1.0      # deterministic seconds for all levels together (CP-SAT work units, not wall time)


@dataclass
class Outcome:
    fills: dict[str, list[tuple[str, tuple[str, ...]]]] | None   # per deployment: (cluster, pools) per new replica
    phase: str                                                   # the line the plan prints


def _tier(pools) -> int:
    if len(pools) < 2 or len({p.name for p in pools}) == 1:
        return 2
    return 1 if all(p.fabric in RDMA_FABRICS for p in pools) else 0


def candidates(d, eligible: dict, free: dict) -> list[tuple[str, tuple, dict[str, int]]]:
    """(cluster, pools per role, nodes per pool) that could hold one replica of `d` in `free`."""
    out = []
    for cluster in sorted(eligible):
        per_role = eligible[cluster]
        for combo in itertools.product(*(per_role[r.name] for r in d.roles)):
            need = Counter()
            for role, pool in zip(d.roles, combo):
                need[pool.name] += role.nodes
            if all(free[(cluster, name)] >= n for name, n in need.items()):
                out.append((cluster, combo, dict(need)))
    return out


def solve(demands, eligible: dict, free: dict, missing: dict[str, int], greedy: dict[str, list],
          budget: float = DEFAULT_BUDGET) -> Outcome:
    """`free`: nodes per (cluster, pool) after Retain; `missing`: replicas to place per deployment;
    `greedy`: the fast path's (cluster, pool names) per new replica, used as the hint."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    x, combos, usage = {}, {}, defaultdict(list)
    for d in demands:
        if not missing.get(d.key):
            continue
        for i, (cluster, combo, need) in enumerate(candidates(d, eligible[d.key], free)):
            cap = min([missing[d.key]] + [free[(cluster, p)] // n for p, n in need.items()])
            if cap <= 0:
                continue
            var = model.NewIntVar(0, cap, f"x{len(x)}")
            x[(d.key, i)] = var
            combos[(d.key, i)] = (cluster, combo, need, d)
            for pool, n in need.items():
                usage[(cluster, pool)].append((n, var))
    if not x:
        return Outcome(None, "fast path (nothing the exact phase could add)")
    for key, terms in usage.items():
        model.Add(sum(n * v for n, v in terms) <= free[key])
    by_d = defaultdict(list)
    for (dk, i), var in x.items():
        by_d[dk].append(var)
    for dk, vars_ in by_d.items():
        model.Add(sum(vars_) <= missing[dk])
    # the fast path's choice: each level's starting point (hinted below) and the last tie-break
    hint = Counter()
    for dk, fills in greedy.items():
        for cluster, names in fills:
            hint[(dk, cluster, names)] += 1

    gpus = {d.key: sum(r.nodes * r.gpus_per_node for r in d.roles) for d in demands}
    tiers = sorted({d.priority for d in demands if d.key in by_d}, reverse=True)
    # Never fewer replicas of a tier than the fast path placed (it is a feasible floor).
    priority = {d.key: d.priority for d in demands}
    floor = Counter()
    for dk, fills in greedy.items():
        floor[priority[dk]] += len(fills)
    for t in tiers:
        model.Add(sum(v for (dk, i), v in x.items() if priority[dk] == t) >= floor[t])
    levels = [(f"tier {t}", [(1, v) for (dk, i), v in x.items() if combos[(dk, i)][3].priority == t], True)
              for t in tiers]
    levels.append(("GPUs", [(gpus[dk], v) for (dk, i), v in x.items()], True))
    spread, tops = [], {}
    for dk in sorted(by_d):
        per_cluster = defaultdict(list)
        for (k, i), v in x.items():
            if k == dk:
                per_cluster[combos[(k, i)][0]].append(v)
        top = model.NewIntVar(0, missing[dk], f"top_{len(spread)}")
        for vs in per_cluster.values():
            model.Add(sum(vs) <= top)
        spread.append((1, top))
        tops[dk] = top
    levels.append(("spread", spread, False))
    quality = []
    # Below fabric and stranded GPUs, prefer the fast path's spots: an equal plan moves nothing.
    unhinted = sum(missing.values()) + 1
    for (dk, i), v in x.items():
        cluster, combo, need, d = combos[(dk, i)]
        stranded = sum(r.nodes * (p.gpus_per_node - r.gpus_per_node) for r, p in zip(d.roles, combo))
        moved = 0 if hint.get((dk, cluster, tuple(p.name for p in combo))) else 1
        quality.append((((2 - _tier(combo)) * 1000 + stranded) * unhinted + moved, v))
    levels.append(("quality", quality, False))

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 7
    solver.parameters.max_deterministic_time = budget / len(levels)
    solver.parameters.symmetry_level = 0    # symmetry detection costs wall time here and finds little
    # Start from the fast path's fill: a complete, feasible solution of every level.
    hinted = [*x.values(), *tops.values()]
    values = [hint.get((dk, combos[(dk, i)][0], tuple(p.name for p in combos[(dk, i)][1])), 0) for dk, i in x]
    values += [max(Counter(c for c, _ in greedy.get(dk, [])).values(), default=0) for dk in tops]
    wanted = Counter()
    for dk, n in missing.items():
        wanted[priority[dk]] += n
    unproven, stopped = [], None
    for name, terms, maximize in levels:
        expr = sum(c * v for c, v in terms)
        if name.startswith("tier ") and floor[int(name[5:])] >= wanted[int(name[5:])]:
            continue            # the fast path already placed every replica of this tier
        (model.Maximize if maximize else model.Minimize)(expr)
        model.ClearHints()
        for var, value in zip(hinted, values):
            model.AddHint(var, value)
        status = solver.Solve(model)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            stopped = name      # keep the best plan of the levels above
            break
        if status == cp_model.FEASIBLE:
            unproven.append(name)
        values = [solver.Value(var) for var in hinted]
        best = int(round(solver.ObjectiveValue()))
        model.Add(expr >= best) if maximize else model.Add(expr <= best)
    fills = defaultdict(list)
    for ((dk, i), _), value in sorted(zip(x.items(), values), key=lambda kv: kv[0][0]):
        cluster, combo, _, _ = combos[(dk, i)]
        fills[dk] += [(cluster, tuple(p.name for p in combo))] * value
    phase = "exact"
    if unproven:
        phase += f" (best found within the budget; not proven optimal: {', '.join(unproven)})"
    if stopped:
        phase += f" (the budget ran out at the {stopped} level; the levels above it stand)"
    return Outcome(dict(fills), phase)


def _partial(d: Demand, placements) -> bool:
    full = d.shapes[0]
    return any(tuple(p.roles[r.name].workers for r in d.roles) != full for p in placements)


def refill(demands, eligible, after_retain, kept, filled, budget):
    """Run the exact phase; keep the fast path's replicas where the solution has room for them
    there, give the rest the solution's remaining spots in index order. Deployments with a
    replica at a smaller step keep the fast path's fill (the program counts full shapes only)."""
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
    outcome = solve(demands, eligible, after_retain, missing, greedy, budget or DEFAULT_BUDGET)
    fast_free = dict(after_retain)
    for d in demands:
        for p in filled[d.key].values():
            for role in d.roles:
                fast_free[(p.cluster, p.roles[role.name].pool)] -= role.nodes
    if outcome.fills is None:
        return original, fast_free, outcome.phase, []
    by_tier_fast, by_tier_exact = Counter(), Counter()
    for d in demands:
        by_tier_fast[d.priority] += len(filled[d.key])
        by_tier_exact[d.priority] += len(outcome.fills.get(d.key, []))
    if any(by_tier_exact[t] < n for t, n in by_tier_fast.items()):
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
            roles = {r.name: RolePlacement(pool, r.nodes, r.gpus_per_node, r.workers) for r, pool in zip(d.roles, names)}
            mine[idx] = Placement(d.key, idx, cluster, MappingProxyType(roles))
            before = filled[d.key].get(idx)
            changed.append((d.key, idx, before.cluster if before else None, cluster))
        for idx, p in mine.items():
            for role in d.roles:
                free[(p.cluster, p.roles[role.name].pool)] -= role.nodes
        out[d.key] = original[d.key] if d.key in fixed else mine
    return out, free, outcome.phase, sorted(changed)
