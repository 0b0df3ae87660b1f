"""Nobody starved (issue 44): per priority tier, deployments served (at least one replica) come
before replicas, in the fast path and in the exact phase. Checked against an independent CP-SAT
model on small fleets, and as the invariant a reviewer would check by hand."""
import itertools
from collections import Counter

from hypothesis import HealthCheck, given, settings, strategies as st

from modelplane.scheduler import Cluster, Demand, Pool, Role, schedule
from modelplane.scheduler.cel import Matcher
from modelplane.scheduler.filter import Verdicts, eligible

from helpers import packs

TIERS = (2, 1, 0)

fleets = st.lists(st.lists(st.tuples(st.sampled_from((1, 4, 8)), st.integers(1, 4)), min_size=1, max_size=2),
                  min_size=1, max_size=3)
wants = st.lists(st.tuples(st.integers(1, 4), st.sampled_from((1, 2, 4, 8)), st.integers(1, 2), st.integers(0, 2),
                           st.integers(0, 1)), min_size=2, max_size=6)


def build(spec, want):
    clusters = [Cluster(f"c{i}", tuple(Pool(f"p{j}", f"x{g}", g, n, {"gpu": {"count": g}})
                                       for j, (g, n) in enumerate(pools))) for i, pools in enumerate(spec)]
    demands = []
    for k, (replicas, gpus, nodes, prio, prefill) in enumerate(want):
        per_node = min(gpus, 8)
        roles = [Role("decode", "", 1, nodes, per_node)] + ([Role("prefill", "", 1, 1, per_node)] if prefill else [])
        demands.append(Demand(f"ns/d{k}", replicas, tuple(roles), priority=prio))
    return demands, clusters


def ranked(demands, placed: Counter) -> tuple:
    """The objective's order, per tier (highest first): deployments served, then replicas."""
    tier = {d.key: d.priority for d in demands}
    served = Counter(tier[k] for k, n in placed.items() if n)
    reps = Counter()
    for k, n in placed.items():
        reps[tier[k]] += n
    return tuple(x for t in TIERS for x in (served[t], reps[t]))


def options(d, clusters):
    """(cluster, GPUs per pool) for every place one replica of `d` may take, as the Filter allows."""
    out = []
    for cluster, per_role in sorted(eligible(d, clusters, Verdicts(d, Matcher())).items()):
        for combo in itertools.product(*(per_role[r.name] for r in d.roles)):
            need = Counter()
            for role, p in zip(d.roles, combo):
                need[p.name] += role.need(p)
            out.append((cluster, dict(need)))
    return out


def reference(demands, clusters) -> tuple:
    """The best (served, replicas) per tier, level by level, of an independent model: a count per
    deployment and place, a 0/1 served flag per deployment, GPUs per pool."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    free = {(c.name, p.name): p.max_nodes * p.gpus_per_node for c in clusters for p in c.pools}
    use, served, reps = {key: [] for key in free}, {t: [] for t in TIERS}, {t: [] for t in TIERS}
    for d in demands:
        xs = []
        for cluster, need in options(d, clusters):
            x = model.NewIntVar(0, d.replicas, "")
            xs.append(x)
            for pool, n in need.items():
                use[(cluster, pool)].append(n * x)
        if not xs:
            continue
        s = model.NewBoolVar("")
        model.Add(sum(xs) <= d.replicas)
        model.Add(sum(xs) >= s)
        served[d.priority].append(s)
        reps[d.priority] += xs
    for key, terms in use.items():
        if terms:
            model.Add(sum(terms) <= free[key])
    best = []
    for t in TIERS:
        for level in (sum(served[t]), sum(reps[t])):
            model.Maximize(level)
            solver = cp_model.CpSolver()
            solver.parameters.num_workers = 1
            assert solver.Solve(model) == cp_model.OPTIMAL
            value = int(solver.ObjectiveValue())
            model.Add(level == value)
            best.append(value)
    return tuple(best)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets, wants)
def test_the_plan_serves_what_an_independent_served_first_model_serves(spec, want):
    """Per tier, highest first, the plan serves as many deployments, then places as many
    replicas, as the best an independent CP-SAT model finds under the same Filter and GPU packing."""
    demands, clusters = build(spec, want)
    plan = schedule(demands, clusters)
    assert ranked(demands, Counter(p.deployment for p in plan.placements)) == reference(demands, clusters)
    assert packs(plan, demands, clusters)


def gives_room(plan, demands, clusters) -> list[tuple[str, str]]:
    """(unserved deployment, replica) pairs where giving up that extra replica of a deployment of
    the same tier (one of two or more it has) frees room for the unserved one's first replica."""
    placed = Counter(p.deployment for p in plan.placements)
    tier = {d.key: d.priority for d in demands}
    gpn = {(c.name, p.name): p.gpus_per_node for c in clusters for p in c.pools}
    out = []
    for u in demands:
        if placed[u.key]:
            continue
        where = options(u, clusters)
        for p in plan.placements:
            if tier[p.deployment] != u.priority or placed[p.deployment] < 2:
                continue
            free = dict(plan.free)
            for rp in p.roles.values():
                free[(p.cluster, rp.pool)] += rp.need(gpn[(p.cluster, rp.pool)])
            if any(c == p.cluster and all(free[(c, q)] >= n for q, n in need.items()) for c, need in where):
                out.append((u.key, f"{p.deployment}#{p.replica}"))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets, wants, st.sampled_from(("off", "auto")))
def test_no_deployment_is_unserved_while_one_of_its_tier_has_an_extra_replica_to_give_up(spec, want, mode):
    demands, clusters = build(spec, want)
    plan = schedule(demands, clusters, exact=mode)
    assert gives_room(plan, demands, clusters) == []


def test_a_scale_up_waits_for_a_new_deployment_of_its_tier():
    """a/x runs one 8-GPU replica and is scaled to 2; b/y is new, one 8-GPU replica, same tier, on
    one cluster of two 8-GPU nodes. b/y gets the second node: a retained deployment's missing
    replicas come after every new deployment's first (before, a/x took it by name order)."""
    clusters = [Cluster("c", (Pool("p", "x8", 8, 2, {"gpu": {"count": 8}}),))]
    one = Role("decode", "", 1, 1, 8)
    previous = schedule([Demand("a/x", 1, (one,))], clusters).placements
    demands = [Demand("a/x", 2, (one,)), Demand("b/y", 1, (one,))]
    for mode in ("off", "auto"):
        plan = schedule(demands, clusters, previous, exact=mode)
        assert sorted((p.deployment, p.replica) for p in plan.placements) == [("a/x", 0), ("b/y", 0)], mode
        assert [(u.deployment, u.replica) for u in plan.unplaced] == [("a/x", 1)]
        assert [p for p in plan.placements if p.deployment == "a/x"] == previous     # sticky


def test_scarce_fleets_where_counting_replicas_alone_served_fewer():
    """Seeded scarce fleets (test_exact.scarce) on which the exact phase, when it maximised replicas
    per tier alone, served fewer deployments of a tier than the independent model: e.g. seed 5 on 2
    clusters, 3 standard deployments served of 4 possible; seed 20 on 3 clusters, one more low
    replica instead of one more standard."""
    from test_exact import scarce

    for seed, n in ((5, 2), (5, 3), (14, 2), (20, 3)):
        demands, clusters = scarce(seed, n)
        plan = schedule(demands, clusters)
        assert ranked(demands, Counter(p.deployment for p in plan.placements)) == reference(demands, clusters), seed


def test_prefill_decode_fleets_where_the_exact_phase_served_fewer_than_the_independent_model():
    """Seeded P/D fleets (test_exact.scarce with pairs: a prefill and a 2-node decode per replica)
    on 8 clusters where the exact phase, with CP-SAT's LP at linearization level 1, ended short of
    the independent model within its budget: seed 8, 7 standard deployments served of 8 possible
    (a low one served instead); seed 3, 20 standard replicas of 22. Level 2 (its cuts) finds both."""
    from test_exact import scarce

    for seed, served_standard, standard_replicas in ((8, 8, 12), (3, 9, 22)):
        demands, clusters = scarce(seed, 8, pairs=True)
        plan = schedule(demands, clusters)
        got = ranked(demands, Counter(p.deployment for p in plan.placements))
        assert got == reference(demands, clusters), seed
        assert got[2:4] == (served_standard, standard_replicas), seed
        assert packs(plan, demands, clusters)


def test_room_a_solution_leaves_is_filled_serving_first():
    """A large model's CP-SAT sees only some spots; room left on the others is filled afterwards,
    per tier, highest first, a replica for each deployment not yet served before a second for any:
    with room for one more 1-GPU replica, the unserved standard deployment gets it, not the one
    already running, nor the low one. `free` is after Retain; the solution's replicas take from it."""
    from modelplane.scheduler.counts import Kind, Spot
    from modelplane.scheduler.trades import fill_room

    pool = Pool("p", "x1", 1, 2)
    one = Role("decode", "", 1, 1, 1)
    # a/run has one replica already (retained) and two missing; the solution gave it one of them
    running, new, low = (Demand(k, n, (one,), priority=p)
                         for k, n, p in (("a/run", 3, 1), ("a/new", 2, 1), ("a/low", 2, 0)))
    kinds = [Kind(1, [running], 2, 1), Kind(1, [new], 2, 1, fresh=1), Kind(0, [low], 2, 1, fresh=1)]
    spots = [Spot(k, "c", (pool,), {"p": 1}, 2, 0) for k in range(3)]
    assert fill_room(kinds, spots, {("c", "p"): 2}, [1, 0, 0]) == [1, 1, 0]
    # with room for three more: the new one served, then the standard tier's replicas, then the low tier
    assert fill_room(kinds, spots, {("c", "p"): 4}, [1, 0, 0]) == [2, 2, 0]
    assert fill_room(kinds, spots, {("c", "p"): 5}, [1, 0, 0]) == [2, 2, 1]


def test_an_unserved_deployment_gets_room_by_moving_or_giving_up_what_is_worth_less():
    """A solution may leave a deployment unserved where one replica on its only cluster would fit
    if another moved: a/std (standard) fits on c1 or c2 and sits on c1; a/low fits only on c1.
    a/std moves to c2's free node and a/low is served (nothing lost). On c3, b/two runs two low
    replicas and b/new (low, only c3) none: one of b/two's goes, b/new is served (a deployment
    served outranks a replica of its tier)."""
    from modelplane.scheduler.counts import Kind, Spot
    from modelplane.scheduler.trades import make_room

    def pool(nodes):
        return Pool("p", "x1", 1, nodes)

    one = Role("decode", "", 1, 1, 1)
    std, low, two, new = (Demand(k, n, (one,), priority=p)
                          for k, n, p in (("a/std", 1, 1), ("a/low", 1, 0), ("b/two", 2, 0), ("b/new", 1, 0)))
    kinds = [Kind(1, [std], 1, 1, fresh=1), Kind(0, [low], 1, 1, fresh=1), Kind(0, [two], 2, 1, fresh=1),
             Kind(0, [new], 1, 1, fresh=1)]
    spots = [Spot(0, "c1", (pool(1),), {"p": 1}, 1, 0), Spot(0, "c2", (pool(1),), {"p": 1}, 1, 0),
             Spot(1, "c1", (pool(1),), {"p": 1}, 1, 0), Spot(2, "c3", (pool(2),), {"p": 1}, 2, 0),
             Spot(3, "c3", (pool(2),), {"p": 1}, 1, 0)]
    free = {("c1", "p"): 1, ("c2", "p"): 1, ("c3", "p"): 2}
    assert make_room(kinds, spots, free, [1, 0, 0, 2, 0]) == [0, 1, 1, 1, 1]
    # a higher tier is never given up for a lower one: with c2 full, a/low stays unserved
    assert make_room(kinds, spots, {**free, ("c2", "p"): 0}, [1, 0, 0, 2, 0]) == [1, 0, 0, 1, 1]


def test_the_lp_relaxation_is_solved_where_its_weights_span_twelve_orders_of_magnitude(monkeypatch):
    """On 100 clusters of prefill/decode pairs the LP's weights run from 1 to ~1e12 and GLOP gave
    up on them (ABNORMAL): the exact phase then ran with no LP at all (no guidance, no starts from
    it, CP-SAT on the fast path's spots only) and served 152 critical replicas and 42 standard
    deployments. Solved without GLOP's scaling it serves 159 and 63. One level at a time (the last
    resort) gives the same totals per tier."""
    from modelplane.scheduler import counts, exact
    from ortools.linear_solver import linear_solver_pb2 as mp
    from test_exact import scarce

    demands, clusters = scarce(3, 100, pairs=True)
    plan = schedule(demands, clusters)
    got = ranked(demands, Counter(p.deployment for p in plan.placements))
    assert got[:2] == (53, 159) and got[2] >= 63, got
    assert packs(plan, demands, clusters)

    seen = {}

    def capture(kinds_, spots_, free, *_):
        seen.update(kinds=kinds_, spots=spots_, free=free)
        raise RuntimeError("captured")

    monkeypatch.setattr(exact, "optimise", capture)
    try:
        schedule(demands, clusters)
    except RuntimeError:
        pass
    kinds_, spots_, free = seen["kinds"], seen["spots"], seen["free"]

    def per_tier(values):
        out = Counter()
        for s, v in zip(spots_, values):
            out[kinds_[s.kind].priority] += v
        return dict(out)

    unscaled = per_tier(counts.relax(kinds_, spots_, free))
    assert unscaled[2] >= 159 and unscaled[1] >= 65, unscaled      # a bound on what the plan places
    # the last resort, one level at a time: GLOP failing both weighted solves
    from ortools.linear_solver import pywraplp

    solve = pywraplp.Solver.SolveWithProto

    def weighted_fails(request, response):
        solve(request, response)
        if max(abs(v.objective_coefficient) for v in request.model.variable) > 1:
            response.status = mp.MPSOLVER_ABNORMAL

    monkeypatch.setattr(pywraplp.Solver, "SolveWithProto", staticmethod(weighted_fails))
    levels = per_tier(counts.relax(kinds_, spots_, free))
    assert levels.keys() == unscaled.keys()
    assert all(abs(levels[t] - unscaled[t]) < 0.01 for t in levels), (levels, unscaled)


def test_a_missing_replica_gets_room_by_moving_or_giving_up_a_lower_tier():
    """After every deployment that can be is served, a kind still short of replicas gets more by
    the same trades, giving up only a lower tier's replica (one of its own tier's gains nothing).
    a/std (standard) runs one replica elsewhere and misses one, which fits only on c1; a/low's
    only replica holds c1. With c3 free a/low moves there (nothing lost); with c3 full a/low is
    given up (a standard replica outranks a low deployment). b/two, standard, holds c1 with two
    replicas instead: neither is given up. Measured on the benchmark's mixed fleets: 1-7 more
    replicas of a tier on 7 of 10 of 30-100 clusters (30 clusters, seed 3000: 43 low replicas, not 36)."""
    from modelplane.scheduler.counts import Kind, Spot
    from modelplane.scheduler.trades import make_room

    one = Role("decode", "", 1, 1, 1)
    std, low, two = (Demand(k, n, (one,), priority=p) for k, n, p in (("a/std", 2, 1), ("a/low", 1, 0), ("b/two", 2, 1)))
    kinds = [Kind(1, [std], 1, 1), Kind(0, [low], 1, 1, fresh=1), Kind(1, [two], 2, 1, fresh=1)]

    def spot(kind, cluster, nodes):
        return Spot(kind, cluster, (Pool("p", "x1", 1, nodes),), {"p": 1}, 2, 0)

    spots = [spot(0, "c1", 1), spot(1, "c1", 1), spot(1, "c3", 1)]
    assert make_room(kinds, spots, {("c1", "p"): 1, ("c3", "p"): 1}, [0, 1, 0]) == [1, 0, 1]
    assert make_room(kinds, spots, {("c1", "p"): 1, ("c3", "p"): 0}, [0, 1, 0]) == [1, 0, 0]
    spots = [spot(0, "c1", 2), spot(2, "c1", 2)]
    assert make_room(kinds, spots, {("c1", "p"): 2}, [0, 2]) == [0, 2]


def test_an_unserved_pair_gets_room_by_moving_another_pairs_prefill_to_another_pool():
    """A prefill/decode pair needs room on two pools at once. x/low (low, unserved) fits on c1 only
    with its 2-node decode on pool a and its prefill on pool b; x/crit (critical) holds c1 with its
    decode and prefill both on a, leaving one GPU of a. Nothing elsewhere has room, and a critical
    replica is never given up for a low one: x/crit's prefill moves to b on the same cluster, which
    frees the GPU of a that x/low's decode lacks, and both are served. Measured on the benchmark's
    100-cluster P/D fleet 1: the CP-SAT reference served a low deployment this way that the plan did
    not."""
    from modelplane.scheduler.counts import Kind, Spot
    from modelplane.scheduler.trades import make_room

    roles = (Role("decode", "", 1, 2, 1), Role("prefill", "", 1, 1, 1))
    crit, low = Demand("x/crit", 1, roles, priority=2), Demand("x/low", 1, roles, priority=0)
    a, b = Pool("a", "x1", 1, 4, fabric="roce"), Pool("b", "x8", 8, 1, fabric="roce")
    kinds = [Kind(2, [crit], 1, 3), Kind(0, [low], 1, 3, fresh=1)]
    spots = [Spot(0, "c1", (a, a), {"a": 3}, 1, 0), Spot(0, "c1", (a, b), {"a": 2, "b": 1}, 1, 0),
             Spot(1, "c1", (a, b), {"a": 2, "b": 1}, 1, 0)]
    free = {("c1", "a"): 4, ("c1", "b"): 2}
    # x/crit's replica moves from (a, a) to (a, b); x/low's first replica takes (a, b) beside it
    assert make_room(kinds, spots, free, [1, 0, 0]) == [0, 1, 1]
    # with no GPU of b to spare the move would not free enough, and x/crit stays where it is
    assert make_room(kinds, spots, {("c1", "a"): 4, ("c1", "b"): 1}, [1, 0, 0]) == [1, 0, 0]
