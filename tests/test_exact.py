"""Priorities and the exact phase: who gets scarce capacity, and how much runs."""
from collections import Counter

from hypothesis import HealthCheck, given, settings, strategies as st

from modelplane.scheduler import Cluster, Demand, Pool, Role, schedule

from helpers import packs


def pool(name, nodes, gpus=8, fabric="tcp"):
    return Pool(name, "h100", gpus, nodes, {"gpu": {"count": gpus}}, fabric)


def demand(key, replicas, nodes=1, priority=1, prefill=0):
    roles = [Role("decode", "", nodes, 1, 8)] + ([Role("prefill", "", prefill, 1, 8)] if prefill else [])
    return Demand(key, replicas, tuple(roles), priority=priority)


def where(plan):
    return sorted((p.deployment, p.replica, p.cluster) for p in plan.placements)


def test_first_fit_strands_nodes_the_exact_phase_uses():
    """Spread puts one 1-node replica on each 2-node cluster; the 2-node replica of a lower tier then
    fits nowhere. The exact phase packs the small ones on one cluster and places all three. (In one
    tier the fast path serves b/y before a/x's second replica, issue 44.)"""
    clusters = [Cluster("c1", (pool("p", 2),)), Cluster("c2", (pool("q", 2),))]
    demands = [demand("a/x", 2), demand("b/y", 1, nodes=2, priority=0)]
    fast = schedule(demands, clusters, exact="off")
    assert len(fast.placements) == 2 and [u.deployment for u in fast.unplaced] == ["b/y"]
    final = schedule(demands, clusters)
    assert final.phase == "exact" and final.unplaced == []
    # one of the fast path's a/x replicas keeps its spot and the other joins it; b/y takes the
    # other cluster whole (both ways move one replica: an equal plan, the solver's pick)
    assert where(final) == [("a/x", 0, "c2"), ("a/x", 1, "c2"), ("b/y", 0, "c1")]
    assert final.changed == [("a/x", 0, "c1", "c2"), ("b/y", 0, None, "c1")]


def test_a_plan_pauses_the_cycle_collector_and_leaves_it_as_it_found_it(monkeypatch):
    """`schedule` pauses Python's cycle collector while it plans, the fast path and the exact
    phase alike, and restores it: on if it was on, off if the caller had turned it off; the plan
    is the same either way."""
    import gc

    from modelplane.scheduler import core, exact

    seen = []
    for module, name in ((core, "_eligible"), (exact, "refill")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, real=real, **k: seen.append(gc.isenabled()) or real(*a, **k))
    clusters = [Cluster("c1", (pool("p", 2),)), Cluster("c2", (pool("q", 2),))]
    demands = [demand("a/x", 2), demand("b/y", 1, nodes=2, priority=0)]
    was = gc.isenabled()
    try:
        gc.enable()
        on = schedule(demands, clusters)
        assert on.phase == "exact" and gc.isenabled()
        assert len(seen) == 3 and not any(seen)      # two deployments' eligibility, one exact phase
        gc.disable()
        off = schedule(demands, clusters)
        assert not gc.isenabled()
        assert where(off) == where(on) == [("a/x", 0, "c2"), ("a/x", 1, "c2"), ("b/y", 0, "c1")]
    finally:
        (gc.enable if was else gc.disable)()


def test_higher_priority_is_served_first_whatever_its_name():
    clusters = [Cluster("c1", (pool("p", 2),))]
    demands = [demand("a/batch", 1, nodes=2, priority=0), demand("z/chat", 1, nodes=2, priority=2)]
    for mode in ("off", "auto"):
        plan = schedule(demands, clusters, exact=mode)
        assert where(plan) == [("z/chat", 0, "c1")] and [u.deployment for u in plan.unplaced] == ["a/batch"]


def test_the_fast_path_stands_when_nothing_is_left_unplaced():
    plan = schedule([demand("a/x", 1)], [Cluster("c1", (pool("p", 2),))])
    assert plan.phase == "fast path" and plan.changed == []


def test_retained_replicas_never_move():
    clusters = [Cluster("c1", (pool("p", 2),)), Cluster("c2", (pool("q", 2),))]
    demands = [demand("a/x", 2), demand("b/y", 1, nodes=2)]
    previous = schedule([demand("a/x", 2)], clusters, exact="off").placements   # one on each cluster
    plan = schedule(demands, clusters, previous)
    assert [p for p in plan.placements if p.deployment == "a/x"] == previous
    assert [u.deployment for u in plan.unplaced] == ["b/y"]          # stickiness is not traded for packing


def test_a_user_facing_deployment_carries_its_tier(catalog):
    from modelplane.api import ModelDeployment
    from modelplane.engine.fleet import demand_from

    md = ModelDeployment.model_validate({"name": "m", "namespace": "ml", "model": {"uri": "hf://o/m"}, "replicas": 1,
                                         "priority": "critical", "engine": {"image": "i:v1"}})
    assert (md.tier, md.priority_class, demand_from(md).priority) == (2, "modelplane-inference-critical", 2)


def test_the_substrate_installs_one_priority_class_per_tier():
    from modelplane.render.substrate import priority_classes

    assert [(p["metadata"]["name"], p["value"]) for p in priority_classes()] == [
        ("modelplane-inference-low", 100), ("modelplane-inference", 125), ("modelplane-inference-critical", 150)]


# --- invariants ------------------------------------------------------------------------------

fleets = st.lists(st.lists(st.tuples(st.sampled_from((1, 4, 8)), st.integers(1, 4)), min_size=1, max_size=2),
                  min_size=1, max_size=3)
wants = st.lists(st.tuples(st.integers(1, 3), st.sampled_from((1, 4, 8)), st.integers(1, 2), st.integers(0, 2),
                           st.integers(0, 1)), min_size=1, max_size=5)


def build(spec, want):
    clusters = [Cluster(f"c{i}", tuple(Pool(f"p{j}", "x", g, n, {"gpu": {"count": g}}) for j, (g, n) in enumerate(pools)))
                for i, pools in enumerate(spec)]
    demands = []
    for k, (replicas, gpn, nodes, prio, prefill) in enumerate(want):
        roles = [Role("decode", "", nodes, 1, gpn)] + ([Role("prefill", "", 1, 1, gpn)] if prefill else [])
        demands.append(Demand(f"ns/d{k}", replicas, tuple(roles), priority=prio))
    return demands, clusters


def served_then_placed(demands, plan) -> dict:
    """Per tier: (deployments with at least one replica, replicas placed)."""
    tier = {d.key: d.priority for d in demands}
    placed = Counter(tier[p.deployment] for p in plan.placements)
    served = Counter(tier[k] for k in {p.deployment for p in plan.placements})
    return {t: (served[t], placed[t]) for t in set(tier.values())}


def never_worse(demands, fast, final) -> bool:
    """Not below the fast path under the objective: per tier, highest first, (deployments served,
    replicas placed), compared in that order."""
    a, b = served_then_placed(demands, fast), served_then_placed(demands, final)
    return [b[t] for t in sorted(b, reverse=True)] >= [a[t] for t in sorted(a, reverse=True)]


def assert_whole_never_worse_within_capacity(demands, clusters, fast, final):
    """The final plan is never worse than the fast path (per tier, highest first: deployments
    served, then replicas placed), never splits a replica's roles across clusters and never
    over-commits a pool."""
    assert never_worse(demands, fast, final)
    for p in final.placements:
        d = next(d for d in demands if d.key == p.deployment)
        assert set(p.roles) == {r.name for r in d.roles}           # never split: every role, one cluster
    assert packs(final, demands, clusters)                         # every pool holds it, node by node


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets, wants)
def test_the_final_plan_is_never_worse_per_tier_and_never_over_commits(spec, want):
    demands, clusters = build(spec, want)
    fast, final = schedule(demands, clusters, exact="off"), schedule(demands, clusters, exact="always")
    assert_whole_never_worse_within_capacity(demands, clusters, fast, final)
    assert len(final.placements) + len(final.unplaced) == sum(d.replicas for d in demands)
    assert where(final) == where(schedule(demands, clusters, exact="always"))    # deterministic


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets, wants)
def test_retained_replicas_stay_put_through_the_exact_phase(spec, want):
    demands, clusters = build(spec, want)
    previous = schedule(demands[:1], clusters, exact="off").placements
    plan = schedule(demands, clusters, previous, exact="always")
    assert all(p in plan.placements for p in previous)


# --- the count model at fleet scale -------------------------------------------------------------

def scarce(seed, n_clusters, pairs=False):
    """A seeded scarce fleet: 1-3 pools of 1/4/8-GPU nodes per cluster, demand ~1.6x capacity."""
    import random

    rng = random.Random(seed)
    clusters = []
    for c in range(n_clusters):
        pools = []
        for k in range(rng.randint(1, 3)):
            g = rng.choice((1, 4, 8))
            pools.append(Pool(f"p{k}", f"x{g}", g, rng.randint(1, 16), {"gpu": {"count": g}}, rng.choice(("tcp", "roce"))))
        clusters.append(Cluster(f"c{c:02d}", tuple(pools)))
    capacity, used, demands = sum(p.max_nodes for c in clusters for p in c.pools), 0, []
    while used < capacity * 1.6:
        g = rng.choice((1, 4, 8))
        roles = [Role("decode", "", rng.randint(1, 2), 2 if pairs else rng.randint(1, 2), g)]
        if pairs or rng.random() < 1 / 3:
            roles.append(Role("prefill", "", rng.randint(1, 2), 1, g))
        n = rng.randint(1, 5)
        demands.append(Demand(f"ns/d{len(demands):03d}", n, tuple(roles), priority=rng.choice((0, 1, 1, 2))))
        used += n * sum(r.nodes for r in roles)
    return demands, clusters


def test_interchangeable_deployments_share_one_count_per_spot():
    """Same tier, shape and eligible pools: one kind, so the model does not grow with deployments or replicas."""
    from modelplane.scheduler.counts import kinds, spots

    clusters = [Cluster("c1", (pool("p", 4),)), Cluster("c2", (pool("q", 4),))]
    demands = [demand("a/x", 3), demand("b/y", 300), demand("c/z", 2, priority=2), demand("d/w", 1, nodes=2)]
    eligible = {d.key: {c.name: {"decode": list(c.pools)} for c in clusters} for d in demands}
    found = kinds(demands, eligible, {d.key: d.replicas for d in demands})
    assert [[m.key for m in k.members] for k in found] == [["a/x", "b/y"], ["c/z"], ["d/w"]]
    assert found[0].want == 303
    free = {("c1", "p"): 32, ("c2", "q"): 32}      # GPUs: four 8-GPU nodes each
    assert [(s.kind, s.cluster, s.names, s.cap) for s in spots(found, eligible, free)] == [
        (0, "c1", ("p",), 4), (0, "c2", ("q",), 4), (1, "c1", ("p",), 2), (1, "c2", ("q",), 2),
        (2, "c1", ("p",), 1), (2, "c2", ("q",), 1)]   # d/w wants one replica


def test_a_kind_expands_to_its_deployments_fast_path_spots_first_then_spread():
    from modelplane.scheduler.counts import kinds, spots
    from modelplane.scheduler.exact import expand

    clusters = [Cluster("c1", (pool("p", 4),)), Cluster("c2", (pool("q", 4),))]
    demands = [demand("a/x", 2), demand("b/y", 2)]
    eligible = {d.key: {c.name: {"decode": list(c.pools)} for c in clusters} for d in demands}
    found = kinds(demands, eligible, {"a/x": 2, "b/y": 2})
    where = spots(found, eligible, {("c1", "p"): 32, ("c2", "q"): 32})
    # counts: three on c1, one on c2; b/y ran on c2 in the fast path and keeps it
    out = expand(found, where, [3, 1], {"a/x": 2, "b/y": 2}, {"b/y": [("c2", ("q",))]})
    assert out == {"a/x": [("c1", ("p",)), ("c1", ("p",))], "b/y": [("c2", ("q",)), ("c1", ("p",))]}


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(10, 20), st.booleans())
def test_fleet_scale_plans_are_deterministic_whole_and_never_worse_per_tier(seed, n, pairs):
    demands, clusters = scarce(seed, n, pairs)
    fast, final = schedule(demands, clusters, exact="off"), schedule(demands, clusters)
    assert_whole_never_worse_within_capacity(demands, clusters, fast, final)
    again = schedule(list(reversed(demands)), list(reversed(clusters)))
    assert [p.to_json() for p in again.placements] == [p.to_json() for p in final.placements]
    assert again.phase == final.phase and again.changed == final.changed


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(10, 20))
def test_fleet_scale_replicas_that_fit_where_they_are_never_move(seed, n):
    demands, clusters = scarce(seed, n)
    previous = schedule(demands[::2], clusters, exact="off").placements
    plan = schedule(demands, clusters, previous, exact="always")
    assert all(p in plan.placements for p in previous)
    assert not any((d, i) in {(p.deployment, p.replica) for p in previous} for d, i, _, _ in plan.changed)


def test_the_count_model_places_more_than_the_fast_path_on_a_scarce_fleet():
    demands, clusters = scarce(7, 20)
    fast, final = schedule(demands, clusters, exact="off"), schedule(demands, clusters)
    assert final.phase.startswith("exact") and len(final.placements) > len(fast.placements)
    moved = {(d, i) for d, i, _, _ in final.changed}
    # every replica the plan reports as changed is placed, where the plan says
    at = {(p.deployment, p.replica): p.cluster for p in final.placements}
    assert all(at[(d, i)] == after for d, i, _, after in final.changed) and moved


def test_the_count_model_does_not_depend_on_the_hash_seed():
    import json
    import subprocess
    import sys

    code = ("import json, sys; sys.path.insert(0, 'tests'); from test_exact import scarce; "
            "from modelplane.scheduler import schedule; p = schedule(*scarce(3, 12)); "
            "print(json.dumps([p.phase, p.changed, [x.to_json() for x in p.placements]]))")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout for seed in ("0", "4242")}
    assert len(outs) == 1 and json.loads(outs.pop())[0].startswith("exact")


# --- how the count model is solved ------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=4).flatmap(
    lambda most: st.tuples(st.just(most), *[st.tuples(*[st.integers(0, m) for m in most]) for _ in range(2)])))
def test_one_weighted_objective_orders_like_its_levels(case):
    """Levels merged into one objective (replicas per tier, then GPUs; spread, then quality) compare
    two solutions exactly as the levels would, one after the other."""
    from modelplane.scheduler.counts import _merge

    most, a, b = case
    n = len(most)
    weights = _merge([([int(i == j) for i in range(n)], m) for j, m in enumerate(most)])
    value = lambda x: sum(w * v for w, v in zip(weights, x))   # noqa: E731
    assert (value(a) > value(b)) == (a > b) and (value(a) == value(b)) == (a == b)


def test_an_objective_too_wide_for_one_solve_is_solved_level_by_level(monkeypatch):
    from ortools.sat.python import cp_model

    import modelplane.scheduler.counts as counts

    clusters = [Cluster("c1", (pool("p", 4),)), Cluster("c2", (pool("q", 4),))]
    demands = [demand("a/x", 3), demand("c/z", 2, priority=2)]
    eligible = {d.key: {c.name: {"decode": list(c.pools)} for c in clusters} for d in demands}
    found = counts.kinds(demands, eligible, {d.key: d.replicas for d in demands})
    where = counts.spots(found, eligible, {("c1", "p"): 4, ("c2", "q"): 4})
    model = cp_model.CpModel()
    x = {i: model.NewIntVar(0, s.cap, "") for i, s in enumerate(where)}
    levels = lambda: [name for name, *_ in counts._levels(found, where, list(x), x)]   # noqa: E731
    assert levels() == ["served and replicas per tier, and GPUs"]
    monkeypatch.setattr(counts, "WIDE", 100)
    assert levels() == ["served and replicas per tier", "GPUs"]
    # and a fleet solved that way is still whole and never worse per tier than the fast path
    demands, clusters = scarce(7, 20)
    fast, final = schedule(demands, clusters, exact="off"), schedule(demands, clusters)
    assert final.phase.startswith("exact") and never_worse(demands, fast, final)
    assert len(final.placements) > len(fast.placements)


def test_rounding_one_tier_at_a_time_keeps_the_replicas_plain_rounding_costs_a_higher_tier():
    """LP: 2.5 replicas of a/x (tier 2, 2 nodes) on c1, 0.5 on c2, 2 of b/y (tier 0, 1 node) on c2.
    Rounding every tier down first lets b/y take the c2 room a/x's third replica needed."""
    from modelplane.scheduler.counts import kinds, spots, start, start_by_tier

    clusters = [Cluster("c1", (pool("p", 5),)), Cluster("c2", (pool("q", 3),))]
    demands = [demand("a/x", 3, nodes=2, priority=2), demand("b/y", 2, priority=0)]
    eligible = {d.key: {c.name: {"decode": list(c.pools)} for c in clusters} for d in demands}
    found = kinds(demands, eligible, {"a/x": 3, "b/y": 2})
    free = {("c1", "p"): 40, ("c2", "q"): 24}     # GPUs: five and three 8-GPU nodes
    where = spots(found, eligible, free)
    assert [(s.kind, s.cluster) for s in where] == [(0, "c1"), (0, "c2"), (1, "c1"), (1, "c2")]
    lp = [2.5, 0.5, 0.0, 2.0]
    assert start(found, where, free, lp, {}) == [2, 0, 0, 2]             # a/x: 2 of 3
    assert start_by_tier(found, where, free, lp, {}) == [2, 1, 1, 1]     # a/x: 3 of 3, b/y still 2
    # floors first: b/y's floor of 2 is met before a/x tops up to its LP total (here it then cannot)
    assert start_by_tier(found, where, free, lp, {0: 2}, floors_first=True) == [2, 0, 0, 2]


def test_the_cp_sat_model_is_the_one_cp_model_writes():
    """The exact phase writes CP-SAT's proto itself (cpsat.py, without cp_model's numpy and pandas):
    for the same calls the solver gets the bytes cp_model writes (terms merged per variable, in
    variable order, zeros dropped; bounds; a maximised objective negated; hints)."""
    from ortools.sat.python import cp_model

    from modelplane.scheduler import cpsat

    ours, theirs = cpsat.Model(), cp_model.CpModel()
    a = [ours.var(0, 5, f"x{i}") for i in range(4)] + [ours.var(0, 1, "y")]
    b = [theirs.NewIntVar(0, 5, f"x{i}") for i in range(4)] + [theirs.NewBoolVar("y")]
    ws = cp_model.LinearExpr.weighted_sum
    rows = [([(3, 2), (0, 0), (2, 1)], None, 5), ([(1, 0), (-1, 1), (-1, 3)], None, 0),
            ([(1, 1), (1, 3), (-3, 4)], 0, 0), ([(2, 1), (1, 0), (-2, 1)], 7, None)]
    for terms, lb, ub in rows:
        expr = ws([b[v] for _, v in terms], [c for c, _ in terms])
        ours.add(terms, *((lb,) if lb is not None else ()), **({"ub": ub} if ub is not None else {}))
        theirs.Add(expr == lb if lb == ub else expr >= lb if ub is None else expr <= ub)
    assert ours.proto.SerializeToString() == theirs.proto.SerializeToString()
    for terms, maximize in (([(4, 3), (0, 1), (-2, 0)], True), ([(1, 2), (5, 0)], False), ([], True)):
        ours.objective(terms, maximize)
        (theirs.Maximize if maximize else theirs.Minimize)(ws([b[v] for _, v in terms], [c for c, _ in terms]))
        ours.hint([1, 4], [2, 1])
        theirs.ClearHints()
        theirs.AddHint(b[1], 2)
        theirs.AddHint(b[4], 1)
        assert ours.proto.SerializeToString() == theirs.proto.SerializeToString()


def test_the_exact_phase_loads_neither_numpy_nor_pandas():
    """cp_model's Python layer imports numpy and pandas (0.6 s of a first plan); the exact phase
    solves without it."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from modelplane.scheduler import Cluster, Demand, Pool, Role, schedule\n"
            "pool = lambda n: Pool(n, 'h100', 8, 2, {'gpu': {'count': 8}})\n"
            "plan = schedule([Demand('a/x', 2, (Role('decode', '', 1, 1, 8),)), "
            "Demand('b/y', 1, (Role('decode', '', 2, 1, 8),), priority=0)], "
            "[Cluster('c1', (pool('p'),)), Cluster('c2', (pool('q'),))])\n"
            "assert plan.phase == 'exact' and not plan.unplaced, plan.phase\n"
            "print(sorted(m for m in ('numpy', 'pandas') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
