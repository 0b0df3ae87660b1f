"""Priorities and the exact phase: who gets scarce capacity, and how much runs."""
from collections import Counter

from hypothesis import HealthCheck, given, settings, strategies as st

from modelplane.scheduler import Cluster, Demand, Pool, Role, schedule


def pool(name, nodes, gpus=8, fabric="tcp"):
    return Pool(name, "h100", gpus, nodes, {"gpu": {"count": gpus}}, fabric)


def demand(key, replicas, nodes=1, priority=1, prefill=0):
    roles = [Role("decode", "", nodes, 1, 8)] + ([Role("prefill", "", prefill, 1, 8)] if prefill else [])
    return Demand(key, replicas, tuple(roles), priority=priority)


def where(plan):
    return sorted((p.deployment, p.replica, p.cluster) for p in plan.placements)


def test_first_fit_strands_nodes_the_exact_phase_uses():
    """Spread puts one 1-node replica on each 2-node cluster; the 2-node replica then fits nowhere.
    The exact phase packs the small ones on one cluster and places all three."""
    clusters = [Cluster("c1", (pool("p", 2),)), Cluster("c2", (pool("q", 2),))]
    demands = [demand("a/x", 2), demand("b/y", 1, nodes=2)]
    fast = schedule(demands, clusters, exact="off")
    assert len(fast.placements) == 2 and [u.deployment for u in fast.unplaced] == ["b/y"]
    final = schedule(demands, clusters)
    assert final.phase == "exact" and final.unplaced == []
    # the fast path's a/x#1 on c2 keeps its spot; a/x#0 joins it, b/y takes c1 whole
    assert where(final) == [("a/x", 0, "c2"), ("a/x", 1, "c2"), ("b/y", 0, "c1")]
    assert final.changed == [("a/x", 0, "c1", "c2"), ("b/y", 0, None, "c1")]


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
    from modelplane.fleet import demand_from

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


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets, wants)
def test_the_final_plan_is_never_worse_per_tier_and_never_over_commits(spec, want):
    demands, clusters = build(spec, want)
    fast, final = schedule(demands, clusters, exact="off"), schedule(demands, clusters, exact="always")
    tier = {d.key: d.priority for d in demands}
    fast_n = Counter(tier[p.deployment] for p in fast.placements)
    final_n = Counter(tier[p.deployment] for p in final.placements)
    assert all(final_n[t] >= n for t, n in fast_n.items())
    used = Counter()
    for p in final.placements:
        d = next(d for d in demands if d.key == p.deployment)
        assert set(p.roles) == {r.name for r in d.roles}           # never split: every role, one cluster
        for r in d.roles:
            used[(p.cluster, p.roles[r.name].pool)] += r.nodes
    size = {(c.name, q.name): q.max_nodes for c in clusters for q in c.pools}
    assert all(n <= size[k] for k, n in used.items())
    assert len(final.placements) + len(final.unplaced) == sum(d.replicas for d in demands)
    assert where(final) == where(schedule(demands, clusters, exact="always"))    # deterministic


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets, wants)
def test_retained_replicas_stay_put_through_the_exact_phase(spec, want):
    demands, clusters = build(spec, want)
    previous = schedule(demands[:1], clusters, exact="off").placements
    plan = schedule(demands, clusters, previous, exact="always")
    assert all(p in plan.placements for p in previous)
