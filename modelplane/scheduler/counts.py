"""The count model of the exact phase: how many replicas of each kind go on each (cluster, pool
per role), as integers, at a size that grows with the fleet and not with the replicas.

Deployments that are interchangeable (same tier, same nodes and GPUs per role, same eligible pools
everywhere) form one kind; a count is the number of replicas of a kind on one spot (a cluster and
one pool per role).

The objective, lexicographic (issue 44, nobody starved): per tier, highest first, deployments
served (at least one replica), then replicas; then GPUs. A kind serves as many of its members that
had nothing placed (`fresh`) as it places replicas, up to that number (exact.expand gives each of
them one before any gets a second), so served is min(replicas of the kind, fresh): one bounded
variable per kind. The plan is never worse than the fast path under this order (a higher tier may
take room a lower tier had in the fast path: that is what the tiers mean). Four stages, each
deterministic:

1. LP: the relaxation, solved with GLOP (primal simplex), the same order through weights. It
   bounds what any plan can place and says where capacity should go.
2. Start: the LP's counts rounded down, the tiers short of the fast path's count topped up to it,
   then every tier topped up greedily; the same rounding one tier at a time (a higher tier topped
   up to its LP total before a lower one takes room), and so again with every tier first topped
   up only to its floor; the same top-up from the fast path's counts; and served first (one
   replica for each fresh member of every kind, tier by tier, smallest replicas first, on the
   spots the LP uses most; once with every tier first served and topped up only to the fast
   path's counts, once without). The best of these (by the objective; never below the fast path)
   is the start: the closer it is, the less CP-SAT has to find within its budget.
3. CP-SAT on the spots the LP, the start or the fast path use (a few per kind instead of every
   pool of every cluster), lexicographic: served and replicas per tier and GPUs in one solve (one
   weighted objective), then on small models spread and quality in a second. Lexicographic levels
   share a solve because each solve pays a presolve, a hint search and a root LP whatever its
   budget. Every solve starts from the best solution so far, so none ends below the start.
4. Room and trades, each kept only if it raises the objective: whole replicas added where the
   solution left room on spots CP-SAT did not see (a large model's), highest tier first, serving
   first (`trades.fill_room`); then each deployment still unserved given a replica by moving what
   blocks it to another spot, or taking off what is worth less (`trades.make_room`), and room filled
   again.
"""
from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from dataclasses import dataclass

from . import cpsat
from .score import _fabric_tier as fabric_tier
from .trades import Fill, fill_room, make_room

EPS = 1e-6
PLACE, POLISH = 2 / 3, 1 / 3          # of the budget: served and replicas per tier and GPUs; spread and quality
# CP-SAT's linearization level where replicas are placed: 2 puts the Boolean constraints in its LP
# relaxation too, not only the linear ones (ortools 9.12, sat_parameters_pb2.pyi L1805-1813).
# Measured, not derived: at level 1 P/D fleets (a prefill and a 2-node decode per replica) ended
# 1-4 standard deployments short of the reference in the same budget (issue 44)
LINEAR = 2
WIDE = 2 ** 62                       # a weighted objective stays below this (int64 with room), else levels split
HUGE = 10_000                        # models above this many counts solve their LP unscaled first (relax)
SMALL = 700                          # models up to this many counts are solved whole, every level


@dataclass
class Kind:
    """Interchangeable deployments: one tier, one shape, one set of eligible pools. A kind of a
    group is one candidate of a deployment sized from an SLO: at most one kind of a group is
    placed, and then whole (`want` replicas), which counts as `units` replicas of its tier."""

    priority: int
    members: list                 # the demands, by key
    want: int                     # replicas missing over all members
    gpus: int                     # GPUs per replica
    group: str | None = None      # the sized deployment's key (its candidates share it)
    units: int = 0                # what placing the group's candidate whole is worth at its tier
    eligible: dict | None = None  # the candidate's own eligible pools (members of a group share a key)
    fresh: int = 0                # members with nothing placed yet: served by their first replica


class Spot:
    """One kind on one cluster with one pool per role, and what a replica of it takes there."""

    __slots__ = ("kind", "cluster", "pools", "names", "need", "rows", "cap", "cost", "price")

    def __init__(self, kind: int, cluster: str, pools: tuple, need: dict, cap: int, cost: int, price: int = 0,
                 rows: tuple | None = None):
        self.kind, self.cluster, self.pools, self.need, self.cap = kind, cluster, pools, need, cap
        # need keyed as `free` is, ((cluster, pool), GPUs) per pool; spots() passes it made once per combination
        self.rows = rows if rows is not None else ledger_rows(cluster, need)
        self.names = tuple(p.name for p in pools)
        self.cost = cost          # quality: fabric tier and GPUs stranded (lower is better)
        self.price = price        # a group's replica here, in cents per hour (sizing's cost)


def ledger_rows(cluster: str, need: dict) -> tuple:
    """A spot's GPUs per pool keyed as the ledger (`free`) is: ((cluster, pool), GPUs) per pool."""
    return tuple(((cluster, p), n) for p, n in need.items())


def kinds(demands, eligible: dict, missing: dict) -> list[Kind]:
    """Deployments with replicas missing, grouped into kinds in a stable order."""
    groups: dict[tuple, list] = {}
    seen: dict[tuple, tuple] = {}     # deployments that filter alike share their eligible pools (one dict)
    for d in sorted(demands, key=lambda d: d.key):
        if missing.get(d.key, 0) <= 0:
            continue
        at = (id(eligible[d.key]), tuple(r.name for r in d.roles))
        where = seen.get(at)
        if where is None:
            where = seen[at] = tuple((c, tuple(tuple(p.name for p in per[r.name]) for r in d.roles))
                                     for c, per in sorted(eligible[d.key].items()))
        sig = (d.priority, tuple((r.nodes, r.gpus_per_node, r.nodes_per_worker) for r in d.roles), where)
        groups.setdefault(sig, []).append(d)
    return [Kind(ds[0].priority, ds, sum(missing[d.key] for d in ds), sum(r.gpus for r in ds[0].roles),
                 fresh=sum(1 for d in ds if missing[d.key] == d.replicas)) for ds in groups.values()]


def spots(kinds_: list[Kind], eligible: dict, free: dict, price=None) -> list[Spot]:
    """Every (kind, cluster, pool per role) with room for at least one replica, in a stable order.
    `price(demand, cluster, pool names)`: $/hour of a group's replica there."""
    out = []
    # kinds with the same eligible pools (one dict: deployments that filter alike, in any tier)
    # and the same shape have the same pool combinations: made once, their GPUs shared (read only)
    made: dict[tuple, list] = {}
    for k, kind in enumerate(kinds_):
        d = kind.members[0]
        where = kind.eligible if kind.eligible is not None else eligible[d.key]
        at = (id(where), tuple((r.name, r.nodes, r.gpus_per_node, r.nodes_per_worker) for r in d.roles))
        if at not in made:
            made[at] = _combinations(d.roles, where)
        for cluster, combo, need, rows, cost in made[at]:
            cap = kind.want
            for key, n in rows:
                cap = min(cap, free[key] // n)
            if cap > 0:
                cents = round(100 * price(d, cluster, tuple(p.name for p in combo))) if kind.group and price else 0
                out.append(Spot(k, cluster, combo, need, cap, cost, cents, rows))
    return out


def _combinations(roles, where: dict) -> list[tuple]:
    """(cluster, one pool per role, GPUs per pool, the same keyed as the ledger is, quality cost)
    for every combination, clusters in name order."""
    out = []
    gpus = [r.gpus for r in roles]
    for cluster, per_role in sorted(where.items()):
        # GPUs each role takes of each of its pools (model.need), once per pool, not per combination
        options = [[(pool, role.need(pool)) for pool in per_role[role.name]] for role in roles]
        for pairs in itertools.product(*options):
            need: dict[str, int] = {}
            stranded = 0
            for (pool, n), g in zip(pairs, gpus):
                need[pool.name] = need.get(pool.name, 0) + n
                stranded += n - g
            combo = tuple(pool for pool, _ in pairs)
            out.append((cluster, combo, need, ledger_rows(cluster, need), (2 - fabric_tier(combo)) * 1000 + stranded))
    return out


def _most(kinds_: list[Kind]) -> dict[int, tuple[int, int]]:
    """Per tier: the most deployments it can serve and the most replicas (or units) it can place."""
    out = {}
    for t in sorted({k.priority for k in kinds_}):
        mine = [k for k in kinds_ if k.priority == t]
        out[t] = (sum(k.fresh for k in mine if not k.group) + len({k.group for k in mine if k.group}),
                  sum(_worth(k) for k in mine))
    return out


def _weights(kinds_: list[Kind]) -> dict[int, tuple[int, int]]:
    """Per tier (a replica's weight, a deployment served's weight), lexicographic: per tier,
    highest first, deployments served outweigh every replica of the tier, which outweigh
    everything in the tiers below."""
    out, scale = {}, 1
    for t, (served, placed) in _most(kinds_).items():
        out[t] = (scale, scale * (placed + 1))
        scale *= (placed + 1) * (served + 1)
    return out


def _worth(k: Kind) -> int:
    """The most a kind can add to its tier: its replicas, or its group's units."""
    return k.units if k.group else k.want


def groups_of(kinds_: list[Kind]) -> dict[str, list[int]]:
    """Sized deployment -> the kinds of its candidates."""
    out: dict[str, list[int]] = {}
    for k, kind in enumerate(kinds_):
        if kind.group:
            out.setdefault(kind.group, []).append(k)
    return out


def relax(kinds_, spots_, free) -> list[float]:
    """The LP relaxation (GLOP; deterministic for the same model): per tier, deployments served
    then replicas, lexicographic through weights. Values per spot. Built as one model proto (whole
    columns and rows at once, no Python object per variable)."""
    from ortools.linear_solver import linear_solver_pb2 as mp
    from ortools.linear_solver import pywraplp

    weight = _weights(kinds_)
    request = mp.MPModelRequest(solver_type=mp.MPModelRequest.GLOP_LINEAR_PROGRAMMING)
    model = request.model
    model.maximize = True
    rows: dict = {}           # (cluster, pool) -> (spot indices, GPUs)
    for i, s in enumerate(spots_):
        v = model.variable.add()
        kind = kinds_[s.kind]
        v.lower_bound, v.upper_bound = 0.0, float(s.cap)
        v.objective_coefficient = 0.0 if kind.group else float(weight[kind.priority][0])
        for key, n in s.rows:
            idx, coef = rows.setdefault(key, ([], []))
            idx.append(i)
            coef.append(float(n))
    for key, (idx, coef) in rows.items():
        model.constraint.add(var_index=idx, coefficient=coef, lower_bound=-math.inf, upper_bound=float(free[key]))
    per_kind = [[] for _ in kinds_]
    for i, s in enumerate(spots_):
        per_kind[s.kind].append(i)
    for k, idx in zip(kinds_, per_kind):
        model.constraint.add(var_index=idx, coefficient=[1.0] * len(idx), lower_bound=-math.inf, upper_bound=float(k.want))
    # served: one variable per kind with fresh members, at most its replicas (and its fresh members)
    srv = {}
    for j, (k, idx) in enumerate(zip(kinds_, per_kind)):
        if k.fresh and idx and not k.group:
            srv[j] = len(model.variable)
            v = model.variable.add()
            v.lower_bound, v.upper_bound = 0.0, float(k.fresh)
            v.objective_coefficient = float(weight[k.priority][1])
            model.constraint.add(var_index=[*idx, srv[j]], coefficient=[1.0] * len(idx) + [-1.0],
                                 lower_bound=0.0, upper_bound=math.inf)
    # a group's candidate: y in [0, 1] of it placed whole (its replicas = want * y), one candidate at most
    y = {}
    for g, ks in groups_of(kinds_).items():
        for k in ks:
            y[k] = len(model.variable)
            v = model.variable.add()
            v.lower_bound, v.upper_bound = 0.0, 1.0
            v.objective_coefficient = float(weight[kinds_[k].priority][0] * kinds_[k].units
                                            + weight[kinds_[k].priority][1])
            model.constraint.add(var_index=[*per_kind[k], y[k]], coefficient=[1.0] * len(per_kind[k]) + [-float(kinds_[k].want)],
                                 lower_bound=0.0, upper_bound=0.0)
        model.constraint.add(var_index=[y[k] for k in ks], coefficient=[1.0] * len(ks), lower_bound=-math.inf, upper_bound=1.0)
    # the weights span 1 to ~1e12 on large fleets and GLOP, scaling the problem, may give up on
    # them (status ABNORMAL; issue 44: 5 of the benchmark's 24 fleets of 20-100 clusters, whose
    # exact phase then ran with no LP at all). Without its scaling it solves them (OR-Tools 9.12
    # `ortools/glop/parameters_pb2.pyi` L356-359, `use_scaling`); failing that, the same order one
    # level at a time, each level's optimum kept as a row. Above 10,000 counts (the benchmark's
    # mixed fleets of 80-100 clusters, three of four of which GLOP gave up on) unscaled comes
    # first, which saves the failed solve (0.06-0.09 s) and placed as many or more there; first
    # on every model above 700 counts it found other optimal vertices, and two P/D fleets of
    # 45-60 clusters then served one deployment fewer
    for params in (("use_scaling: false", "") if len(spots_) > HUGE else ("", "use_scaling: false")):
        request.solver_specific_parameters = params
        response = mp.MPSolutionResponse()
        pywraplp.Solver.SolveWithProto(request, response)
        if response.status == mp.MPSOLVER_OPTIMAL:
            break
    else:
        request.solver_specific_parameters = ""
        response = _by_levels(request, kinds_, spots_, srv, y)
    if response.status != mp.MPSOLVER_OPTIMAL:
        return [0.0] * len(spots_)
    return list(response.variable_value)[:len(spots_)]


def _by_levels(request, kinds_, spots_, srv: dict, y: dict):
    """The relaxation lexicographically, one GLOP solve per level (per tier, highest first:
    deployments served, then replicas): each level maximised with coefficients 0 and 1 (a group's
    units), then held at its optimum less a tolerance. Variables: the spots', then `srv` and `y`
    (kind -> its served or group variable's index)."""
    from ortools.linear_solver import linear_solver_pb2 as mp
    from ortools.linear_solver import pywraplp

    model = request.model
    kind_of = [None] * len(model.variable)
    for k, j in srv.items():
        kind_of[j] = ("served", k)
    for k, j in y.items():
        kind_of[j] = ("group", k)
    response = mp.MPSolutionResponse()
    for t in sorted({k.priority for k in kinds_}, reverse=True):
        for level in ("served", "replicas"):
            coefs = []
            for j in range(len(model.variable)):
                tag = kind_of[j]
                if tag is None:
                    k = spots_[j].kind
                    c = 1.0 if level == "replicas" and not kinds_[k].group and kinds_[k].priority == t else 0.0
                else:
                    k = tag[1]
                    c = 0.0
                    if kinds_[k].priority == t:
                        c = 1.0 if level == "served" else float(kinds_[k].units if tag[0] == "group" else 0)
                coefs.append(c)
            if not any(coefs):
                continue
            for v, c in zip(model.variable, coefs):
                v.objective_coefficient = c
            response = mp.MPSolutionResponse()
            pywraplp.Solver.SolveWithProto(request, response)
            if response.status != mp.MPSOLVER_OPTIMAL:
                return response
            best = response.objective_value
            idx = [j for j, c in enumerate(coefs) if c]
            model.constraint.add(var_index=idx, coefficient=[coefs[j] for j in idx],
                                 lower_bound=best - EPS * max(1.0, abs(best)), upper_bound=math.inf)
    return response


def _order(memo: dict | None, name, idx, key) -> list[int]:
    """`idx` sorted by `key`, once per `name` for the starts that share `memo` (same spots and values)."""
    if memo is None:
        return sorted(idx, key=key)
    if name not in memo:
        memo[name] = sorted(idx, key=key)
    return memo[name]


def _shape(memo: dict | None, kinds_, spots_, values) -> tuple:
    """(GPUs per spot, spots per tier, spots per kind, fraction of the LP's value per spot), made
    once for the starts that share `memo` (same spots and values); read only."""
    if memo is not None and "shape" in memo:
        return memo["shape"]
    by_tier, by_kind = defaultdict(list), defaultdict(list)
    for i, s in enumerate(spots_):
        by_kind[s.kind].append(i)
        by_tier[kinds_[s.kind].priority].append(i)
    out = ([sum(s.need.values()) for s in spots_], dict(by_tier), dict(by_kind), [v - int(v + EPS) for v in values])
    if memo is not None:
        memo["shape"] = out
    return out


def start(kinds_, spots_, free, values, floors: dict[int, int], memo: dict | None = None) -> list[int]:
    """An integer solution: the LP's counts rounded down; then the tiers below their floor topped
    up to it, then every tier topped up (highest first). Top-up places the largest replicas first,
    on the spots the LP used most fractionally, then on the lowest quality cost."""
    fill = Fill(kinds_, spots_, free)
    counts, room = fill.counts, fill.room             # room: replicas each kind may still place
    per_tier = Counter()

    def put(i, most):
        per_tier[kinds_[spots_[i].kind].priority] += fill.put(i, most)

    size, by_tier, _, frac = _shape(memo, kinds_, spots_, values)
    for i, v in enumerate(values):
        if v >= 1 - EPS:
            put(i, int(v + EPS))
    order = {t: _order(memo, ("largest", t), mine, lambda i: (-size[i], -frac[i], spots_[i].cost, i))
             for t, mine in by_tier.items()}
    for tier in sorted(by_tier, reverse=True):                  # up to the floors
        target = floors.get(tier, 0)
        for i in order[tier]:
            if per_tier[tier] >= target:
                break
            if room[spots_[i].kind]:
                put(i, target - per_tier[tier])
    for tier in sorted(by_tier, reverse=True):                  # then as far as room goes
        for i in order[tier]:
            if room[spots_[i].kind]:
                put(i, room[spots_[i].kind])
    return counts


def start_by_tier(kinds_, spots_, free, values, floors: dict[int, int], floors_first: bool = False,
                  memo: dict | None = None) -> list[int]:
    """An integer solution built one tier at a time, highest first: the tier's LP counts rounded
    down, then topped up to the tier's LP total (or its floor, if higher) on the spots the LP used
    most fractionally, before any lower tier takes room; then every tier topped up, largest
    replicas first. Where rounding costs a higher tier replicas, this start keeps them (`start`
    rounds every tier down first). It may leave a lower tier short of its floor (and is then not
    used); `floors_first` tops every tier up to its floor first, then to its LP total."""
    fill = Fill(kinds_, spots_, free)
    counts, room, put = fill.counts, fill.room, fill.put

    size, by_tier, _, frac = _shape(memo, kinds_, spots_, values)
    order = {t: _order(memo, ("fraction", t), mine, lambda i: (-frac[i], -size[i], spots_[i].cost, i))
             for t, mine in by_tier.items()}
    lp = {t: int(sum(values[i] for i in mine) + EPS) for t, mine in by_tier.items()}
    have = {}

    def top_up(tier, goal):
        for i in order[tier]:
            if have[tier] >= goal:
                break
            if room[spots_[i].kind]:
                have[tier] += put(i, goal - have[tier])

    for tier in sorted(by_tier, reverse=True):
        have[tier] = sum(put(i, int(values[i] + EPS)) for i in by_tier[tier] if values[i] >= 1 - EPS)
        top_up(tier, floors.get(tier, 0) if floors_first else max(lp[tier], floors.get(tier, 0)))
    if floors_first:
        for tier in sorted(by_tier, reverse=True):
            top_up(tier, lp[tier])
    for tier in sorted(by_tier, reverse=True):
        for i in _order(memo, ("largest", tier), by_tier[tier], lambda i: (-size[i], -frac[i], spots_[i].cost, i)):
            if room[spots_[i].kind]:
                put(i, room[spots_[i].kind])
    return counts


def start_served(kinds_, spots_, free, values, floors: dict[int, int], served: dict[int, int],
                 memo: dict | None = None) -> list[int]:
    """Served first, one tier at a time, highest first, in two rounds: first every tier only up to
    its floors (`served` deployments, then `floors` replicas: the fast path's), so a higher tier
    does not take the room a lower one needs to stay as good; then every tier serves all it can
    and tops up to its LP total; then every tier is topped up, largest replicas first. Serving
    takes one replica for a fresh member of a kind, kinds with the smallest replicas first (the
    most deployments fit), on the spots the LP uses most."""
    fill = Fill(kinds_, spots_, free)
    counts, room, placed, put = fill.counts, fill.room, fill.placed, fill.put

    size, by_tier, by_kind, frac = _shape(memo, kinds_, spots_, values)
    lp = {t: int(sum(values[i] for i in mine) + EPS) for t, mine in by_tier.items()}
    fresh = {t: sorted((k for k in by_kind if kinds_[k].priority == t and kinds_[k].fresh and not kinds_[k].group),
                       key=lambda k: (kinds_[k].gpus, k)) for t in by_tier}

    def serve(tier, goal):
        done = sum(min(placed[k], kinds_[k].fresh) for k in fresh[tier])
        for k in fresh[tier]:
            for i in _order(memo, ("kind", k), by_kind[k], lambda i: (-values[i], spots_[i].cost, i)):
                if done >= goal or placed[k] >= kinds_[k].fresh:
                    break
                done += put(i, min(kinds_[k].fresh - placed[k], goal - done))

    def top_up(tier, goal):
        have = sum(placed[k] for k in by_kind if kinds_[k].priority == tier)
        for i in _order(memo, ("most", tier), by_tier[tier], lambda i: (-frac[i], -values[i], -size[i], spots_[i].cost, i)):
            if have >= goal:
                break
            have += put(i, goal - have)

    for tier in sorted(by_tier, reverse=True):
        serve(tier, served.get(tier, 0))
        top_up(tier, floors.get(tier, 0))
    for tier in sorted(by_tier, reverse=True):
        serve(tier, sum(kinds_[k].fresh for k in fresh[tier]))
        top_up(tier, max(lp[tier], floors.get(tier, 0)))
    for tier in sorted(by_tier, reverse=True):
        for i in _order(memo, ("largest", tier), by_tier[tier], lambda i: (-size[i], -frac[i], spots_[i].cost, i)):
            if room[spots_[i].kind]:
                put(i, room[spots_[i].kind])
    return counts


def _served(kinds_, spots_, counts) -> Counter:
    """Deployments served per tier: a kind serves as many of its fresh members as it places
    replicas (exact.expand gives each one a replica before any gets a second); a group's candidate
    serves its deployment when placed whole."""
    per_kind, out = Counter(), Counter()
    for s, n in zip(spots_, counts):
        if n:
            per_kind[s.kind] += n
    for k, n in per_kind.items():
        kind = kinds_[k]
        out[kind.priority] += int(n == kind.want) if kind.group else min(n, kind.fresh)
    return out


def _tiers(kinds_, spots_, counts) -> Counter:
    """Replicas per tier; a group's candidate counts its units when placed whole, else nothing."""
    out, per_kind = Counter(), Counter()
    for s, n in zip(spots_, counts):
        if n:
            if kinds_[s.kind].group:
                per_kind[s.kind] += n
            else:
                out[kinds_[s.kind].priority] += n
    for k, n in per_kind.items():
        if n == kinds_[k].want:
            out[kinds_[k].priority] += kinds_[k].units
    return out


def _rank(kinds_, spots_, counts) -> tuple:
    """Per tier (highest first) deployments served, then replicas (as `_served` and `_tiers` count
    them); then GPUs, then a group's cost (lower): larger is better. One pass over the spots with
    replicas: it runs for every start and solve, on models of 40,000 spots."""
    per_kind, price = Counter(), 0
    for i in itertools.compress(range(len(counts)), counts):
        s = spots_[i]
        per_kind[s.kind] += counts[i]
        price += s.price * counts[i]
    per, srv, gpus = Counter(), Counter(), 0
    for k, n in per_kind.items():
        kind = kinds_[k]
        if not kind.group:
            per[kind.priority] += n
            srv[kind.priority] += min(n, kind.fresh)
            gpus += kind.gpus * n
        elif n == kind.want:
            per[kind.priority] += kind.units
            srv[kind.priority] += 1
    return (*(x for t in sorted({k.priority for k in kinds_}, reverse=True) for x in (srv[t], per[t])), gpus, -price)


def _merge(parts: list[tuple[list[int], int]], limit: int | None = WIDE) -> list[int] | None:
    """Coefficients per variable of one objective that orders lexicographically by `parts`
    (coefficients per variable, most important first, each with the largest value its sum can
    take); None when the weighted sum could exceed `limit`."""
    scale, top, out = 1, 0, [0] * len(parts[0][0])
    for coefs, most in reversed(parts):
        out = [o + scale * c for o, c in zip(out, coefs)]
        top += scale * most
        scale = top + 1
    return out if limit is None or top < limit else None


def _levels(kinds_, spots_, use, x, y=None, served=None) -> list[tuple]:
    """Per tier (highest first) deployments served, then replicas; then GPUs, then what sized
    deployments cost: one CP-SAT solve with one weighted objective (a solve costs a presolve, a
    hint search and a root LP whatever its budget), more if the weights get too wide. A group's
    candidate adds its units to its tier and serves its deployment through its y, and its cost
    (negated) instead of its GPUs; `served`: kind -> its served variable (min of its replicas and
    its fresh members). (name, terms, maximise, share of the budget, linearization level) per solve."""
    tiers = sorted({k.priority for k in kinds_}, reverse=True)
    y, served = y or {}, served or {}
    ys, ss = sorted(y), sorted(served)
    variables = [x[i] for i in use] + [y[k] for k in ys] + [served[k] for k in ss]
    plain = [not kinds_[spots_[i].kind].group for i in use]
    most = _most(kinds_)
    parts = []
    for t in tiers:
        parts.append(([0] * len(use) + [int(kinds_[k].priority == t) for k in ys]
                      + [int(kinds_[k].priority == t) for k in ss], most[t][0]))
        parts.append(([int(p and kinds_[spots_[i].kind].priority == t) for i, p in zip(use, plain)]
                      + [kinds_[k].units * int(kinds_[k].priority == t) for k in ys] + [0] * len(ss), most[t][1]))
    parts = [part for part in parts if part[1]]
    top_parts = len(parts)
    gpus = [kinds_[spots_[i].kind].gpus * int(p) for i, p in zip(use, plain)] + [0] * (len(ys) + len(ss))
    parts.append((gpus, sum(k.want * k.gpus for k in kinds_ if not k.group)))
    if ys:
        top = defaultdict(int)
        for i in use:
            top[spots_[i].kind] = max(top[spots_[i].kind], spots_[i].price)
        parts.append(([-spots_[i].price for i in use] + [0] * (len(ys) + len(ss)),
                      sum(kinds_[k].want * c for k, c in top.items())))
    both = _merge(parts, WIDE)
    if both is not None:
        name = "served and replicas per tier, GPUs and cost" if ys else "served and replicas per tier, and GPUs"
        return [(name, list(zip(both, variables)), True, PLACE, LINEAR)]
    by_tier = _merge(parts[:top_parts], limit=None)      # tiers alone: as wide as they need (int64)
    rest = parts[top_parts:]
    out = [("served and replicas per tier", list(zip(by_tier, variables)), True, PLACE / 2, LINEAR)]
    merged = _merge(rest, WIDE)
    if merged is not None or len(rest) == 1:
        return out + [("GPUs and cost" if ys else "GPUs", list(zip(merged or rest[0][0], variables)), True, PLACE / 2,
                       LINEAR)]
    return out + [("GPUs", list(zip(rest[0][0], variables)), True, PLACE / 4, LINEAR),
                  ("cost", list(zip(rest[1][0], variables)), True, PLACE / 4, LINEAR)]


def paid_left(spots_, use, free: dict) -> dict:
    """(cluster, pool) -> its paid GPUs still unused (minNodes: reserved, committed, Capacity Block
    or flex-start nodes, billed whether used or not), for the pools the model uses that have any;
    score.bought counts the same for one replica."""
    out = {}
    for i in use:
        s = spots_[i]
        for p in s.pools:
            key = (s.cluster, p.name)
            if p.paid_nodes and key not in out:
                left = p.paid_gpus - (p.max_nodes * p.gpus_per_node - free[key])
                if left > 0:
                    out[key] = left
    return out


def _polish(kinds_, spots_, use, x, fast, top_of, keep_fast: bool = False, paid=()) -> list[tuple]:
    """Spread (the most replicas of a kind on one cluster, summed over kinds), then GPUs bought
    (paid GPUs left unused count against it: `paid` is (variable, most) per pool, the paid GPUs a
    plan uses there), then quality (fabric and stranded GPUs, then replicas off the fast path's
    spots): one solve, more if too wide; the order of Score's key (spread, bought, stranded).
    `keep_fast`: replicas off the fast path's spots come first, before spread (the exact phase run
    because something was left unplaced moves no more than it must). Without CP-SAT's LP
    (linearization level 0): a min-max objective gives its root LP much work and little to prune,
    and the budget is then counted faithfully."""
    off = sum(k.want for k in kinds_) + 1
    moved = [0 if fast[i] else 1 for i in use]
    quality = [spots_[i].cost * (1 if keep_fast else off) + (0 if keep_fast else m) for i, m in zip(use, moved)]
    worst = defaultdict(int)
    for i, q in zip(use, quality):
        worst[spots_[i].kind] = max(worst[spots_[i].kind], q)
    tops = list(top_of.values())
    n, m = len(tops), len(paid)
    spread = ([1] * n + [0] * (len(use) + m), sum(kinds_[k].want for k in top_of))
    parts = [spread, ([0] * n + quality + [0] * m, sum(kinds_[k].want * q for k, q in worst.items()))]
    names = ["spread", "quality"]
    if paid:     # each paid GPU used is one fewer bought: minimised as minus the paid GPUs used
        parts.insert(1, ([0] * (n + len(use)) + [-1] * m, sum(most for _, most in paid)))
        names.insert(1, "GPUs bought")
    if keep_fast:
        parts.insert(0, ([0] * n + moved + [0] * m, sum(k.want for k in kinds_)))
        names.insert(0, "moves")
    merged = _merge(parts, WIDE)
    variables = tops + [x[i] for i in use] + [v for v, _ in paid]
    if merged is not None:
        name = ", ".join(names[:-1]) + " and " + names[-1]
        return [(name, [(c, v) for c, v in zip(merged, variables) if c], False, POLISH, 0)]
    return [(name, [(c, v) for c, v in zip(coefs, variables) if c], False, POLISH / len(parts), 0)
            for name, (coefs, _) in zip(names, parts)]


@dataclass
class Solved:
    counts: list[int]             # replicas per spot
    unproven: list[str]           # levels CP-SAT did not prove optimal within their share
    stopped: str | None           # the level at which CP-SAT found nothing (the levels above stand)
    skipped: bool = False         # a large model: spread and quality were not optimised


def _group_start(kinds_, spots_, fast) -> list[int]:
    """Each sized deployment's fast-path candidate where the fast path placed it whole, else none."""
    per_kind = Counter()
    for s, n in zip(spots_, fast):
        per_kind[s.kind] += n
    return [n if kinds_[s.kind].group and per_kind[s.kind] == kinds_[s.kind].want else 0
            for s, n in zip(spots_, fast)]


def _starts(kinds_, spots_, free, values, fast, floors, served) -> list[list[int]]:
    """The starts (see the module's docstring) over the kinds that are not groups; the groups keep
    their fast-path candidate (a start is only a hint: CP-SAT chooses the candidates)."""
    fixed = _group_start(kinds_, spots_, fast)
    left = dict(free)
    for s, n in zip(spots_, fixed):
        for key, m in s.rows:
            left[key] -= n * m
    plain = [i for i, s in enumerate(spots_) if not kinds_[s.kind].group]
    sub = [spots_[i] for i in plain]
    got = _tiers(kinds_, spots_, fixed)
    rest = {t: max(0, n - got[t]) for t, n in floors.items()}
    serving = _served(kinds_, spots_, fixed)
    to_serve = {t: max(0, n - serving[t]) for t, n in served.items()}
    vals = [values[i] for i in plain]
    # the spots per tier and kind, and their orders by the LP's values: once for the starts that share them
    memo = {}
    tries = [start(kinds_, sub, left, vals, rest, memo), start_by_tier(kinds_, sub, left, vals, rest, memo=memo),
             start_by_tier(kinds_, sub, left, vals, rest, floors_first=True, memo=memo),
             start(kinds_, sub, left, [float(fast[i]) for i in plain], rest, {}),
             start_served(kinds_, sub, left, vals, rest, to_serve, memo), start_served(kinds_, sub, left, vals, {}, {}, memo)]
    out = []
    for counts in tries:
        full = list(fixed)
        for i, n in zip(plain, counts):
            full[i] = n
        out.append(full)
    return out


def optimise(kinds_: list[Kind], spots_: list[Spot], free: dict, fast: list[int], budget: float,
             keep_fast: bool = False) -> Solved:
    """Counts per spot, lexicographic: per tier deployments served then replicas, GPUs, the cost
    of sized deployments, spread, quality (two solves, see `_levels` and `_polish`). `fast`: the
    fast path's counts per spot (the least the result may be under that order, the starts' targets
    per tier, and the last tie-break: an equal plan moves nothing); `keep_fast`: see `_polish`."""
    floors, served = _tiers(kinds_, spots_, fast), _served(kinds_, spots_, fast)
    values = relax(kinds_, spots_, free)
    tries = _starts(kinds_, spots_, free, values, fast, floors, served)
    # never worse than the fast path under the objective: a start below it is not used (and every
    # CP-SAT solve starts from the best so far, so none ends below it)
    least = _rank(kinds_, spots_, fast)
    ok = [c for c in tries if _rank(kinds_, spots_, c) >= least]
    hint = max(ok, key=lambda c: _rank(kinds_, spots_, c), default=_group_start(kinds_, spots_, fast))
    # a small model is solved whole; a large one on the spots the LP, the start or the fast path use
    use = [i for i in range(len(spots_)) if len(spots_) <= SMALL or values[i] > EPS or hint[i] or fast[i]]

    model = cpsat.Model()
    x = {i: model.var(0, spots_[i].cap, f"x{i}") for i in use}
    rows, per_kind = defaultdict(list), defaultdict(list)
    for i in use:
        s = spots_[i]
        for key, n in s.rows:
            rows[key].append((n, x[i]))
        per_kind[s.kind].append(x[i])
    for key, terms in rows.items():
        model.add(terms, ub=free[key])
    serves = {}          # per kind with fresh members: deployments served, min(replicas, fresh)
    for k, vs in sorted(per_kind.items()):
        model.add([(1, v) for v in vs], ub=kinds_[k].want)
        if kinds_[k].fresh and not kinds_[k].group:
            serves[k] = model.var(0, kinds_[k].fresh, f"s{k}")
            model.add([(1, serves[k])] + [(-1, v) for v in vs], ub=0)
    y = {}
    for g, ks in groups_of(kinds_).items():
        for k in ks:
            y[k] = model.var(0, 1, f"y{k}")
            mine = [(1, v) for v in per_kind.get(k, [])]
            # replicas == want * y (with no spot, want * y == 0: the sign cp_model wrote it with)
            model.add(mine + [(-kinds_[k].want, y[k])] if mine else [(kinds_[k].want, y[k])], 0, 0)
        model.add([(1, y[k]) for k in ks], ub=1)
    levels = _levels(kinds_, spots_, use, x, y, serves)
    whole = len(use) <= SMALL
    top_of, used, paid = {}, {}, {}
    if whole:
        # spread: the most replicas of a kind on one cluster, summed over kinds
        by_cluster = defaultdict(list)
        for i in use:
            by_cluster[(spots_[i].kind, spots_[i].cluster)].append(i)
        top_of = {k: model.var(0, kinds_[k].want, f"top{k}") for k in sorted(per_kind)}
        for (k, _), idx in sorted(by_cluster.items()):
            model.add([(1, x[i]) for i in idx] + [(-1, top_of[k])], ub=0)
        # paid GPUs used per pool: at most its unused paid GPUs and at most what the plan puts there
        paid = paid_left(spots_, use, free)
        for j, (key, most) in enumerate(sorted(paid.items())):
            used[key] = model.var(0, most, f"paid{j}")
            model.add([(1, used[key])] + [(-n, v) for n, v in rows[key]], ub=0)
        levels += _polish(kinds_, spots_, use, x, fast, top_of, keep_fast,
                          [(used[key], paid[key]) for key in sorted(used)])

    # symmetry detection costs wall time here and finds little
    parameters = cpsat.parameters(num_workers=1, random_seed=7, symmetry_level=0)
    ys, ss = sorted(y), sorted(serves)
    hinted = [x[i] for i in use] + [y[k] for k in ys] + [serves[k] for k in ss] + list(top_of.values()) \
        + [used[key] for key in sorted(used)]
    placed = Counter()
    for i in use:
        placed[spots_[i].kind] += hint[i]
    current = [hint[i] for i in use] + [int(placed[k] == kinds_[k].want and placed[k] > 0) for k in ys] \
        + [min(placed[k], kinds_[k].fresh) for k in ss]
    for k in top_of:
        current.append(max(Counter(spots_[i].cluster for i in use if spots_[i].kind == k for _ in range(hint[i])).values(),
                           default=0))
    taken = Counter()
    for i in use:
        for key, n in spots_[i].rows:
            taken[key] += n * hint[i]
    current += [min(taken[key], paid[key]) for key in sorted(used)]
    unproven, stopped = [], None
    for name, terms, maximize, share, linearization in levels:
        parameters.max_deterministic_time = budget * share
        parameters.linearization_level = linearization
        model.objective(terms, maximize)
        model.hint(hinted, current)
        status, solution = model.solve(parameters)
        if status not in (cpsat.OPTIMAL, cpsat.FEASIBLE):
            stopped = name
            break
        if status == cpsat.FEASIBLE:
            unproven.append(name)
        current = [solution[v] for v in hinted]
        best = cpsat.value(terms, solution)     # exact (an int), however wide the weights
        model.add(terms, lb=best) if maximize else model.add(terms, ub=best)
    counts = [0] * len(spots_)
    for i, value in zip(use, current):
        counts[i] = value
    counts = fill_room(kinds_, spots_, free, counts)
    better = fill_room(kinds_, spots_, free, make_room(kinds_, spots_, free, counts))
    if _rank(kinds_, spots_, better) > _rank(kinds_, spots_, counts):
        counts = better
    return Solved(counts, unproven, stopped, not whole)
