"""The exact phase: re-solve the fill as an integer program when the fast path leaves replicas
unplaced (or when asked), with OR-Tools CP-SAT.

Variables: x[d, c, combo] = replicas of deployment d placed on cluster c with one pool per GPU
role (`combo`). Capacity: per pool, the nodes of every combo using it fit the nodes left after
Retain. Objective, lexicographic (one solve per level, each fixing the level above):
  1. replicas placed, per priority tier, highest tier first;
  2. GPUs placed;
  3. spread: the most replicas of one deployment on one cluster, summed over deployments;
  4. quality: 2 - fabric tier per replica (same pool > RDMA > TCP), then GPUs stranded.
Retained replicas are fixed; replicas the fast path placed keep their spot when the solution
has room for them there, so the exact phase moves only what it must.

Deterministic: one worker, a fixed seed and a deterministic time budget (CP-SAT's
`max_deterministic_time`), so the same inputs give the same plan on any machine; when a level
is not solved to optimality within its budget, or the result is not at least the fast path's in
every tier, the fast path's plan stands and the plan says so.
"""
from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass

from .model import RDMA_FABRICS

DEFAULT_BUDGET = 4.0      # deterministic seconds for all levels together (about wall seconds on one core)


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
    # hint: the fast path's choice
    hint = Counter()
    for dk, fills in greedy.items():
        for cluster, names in fills:
            hint[(dk, cluster, names)] += 1
    for (dk, i), var in sorted(x.items()):
        cluster, combo, _, _ = combos[(dk, i)]
        model.AddHint(var, hint.get((dk, cluster, tuple(p.name for p in combo)), 0))

    gpus = {d.key: sum(r.nodes * r.gpus_per_node for r in d.roles) for d in demands}
    tiers = sorted({d.priority for d in demands if d.key in by_d}, reverse=True)
    levels = [(f"tier {t}", [(1, v) for (dk, i), v in x.items() if combos[(dk, i)][3].priority == t], True)
              for t in tiers]
    levels.append(("GPUs", [(gpus[dk], v) for (dk, i), v in x.items()], True))
    spread = []
    for dk in sorted(by_d):
        per_cluster = defaultdict(list)
        for (k, i), v in x.items():
            if k == dk:
                per_cluster[combos[(k, i)][0]].append(v)
        top = model.NewIntVar(0, missing[dk], f"top_{len(spread)}")
        for vs in per_cluster.values():
            model.Add(sum(vs) <= top)
        spread.append((1, top))
    levels.append(("spread", spread, False))
    quality = []
    for (dk, i), v in x.items():
        cluster, combo, need, d = combos[(dk, i)]
        stranded = sum(r.nodes * (p.gpus_per_node - r.gpus_per_node) for r, p in zip(d.roles, combo))
        quality.append(((2 - _tier(combo)) * 1000 + stranded, v))
    levels.append(("quality", quality, False))

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 7
    solver.parameters.max_deterministic_time = budget / len(levels)
    for name, terms, maximize in levels:
        expr = sum(c * v for c, v in terms)
        (model.Maximize if maximize else model.Minimize)(expr)
        status = solver.Solve(model)
        if status != cp_model.OPTIMAL:
            if status == cp_model.FEASIBLE and name in ("spread", "quality"):
                break       # the counts are settled; keep the best found for the tie-breaking levels
            return Outcome(None, f"fast path (the exact phase did not prove the {name} level within its budget)")
        best = int(round(solver.ObjectiveValue()))
        model.Add(expr >= best) if maximize else model.Add(expr <= best)
        model.ClearHints()                      # the next level starts from this solution
        for var in x.values():
            model.AddHint(var, solver.Value(var))
    fills = defaultdict(list)
    for (dk, i), var in sorted(x.items()):
        cluster, combo, _, _ = combos[(dk, i)]
        fills[dk] += [(cluster, tuple(p.name for p in combo))] * solver.Value(var)
    return Outcome(dict(fills), "exact")
