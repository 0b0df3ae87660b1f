"""Scheduler invariants over random fleets and deployments (hypothesis)."""
from collections import Counter

from hypothesis import given, settings, strategies as st

from modelplane.scheduler import schedule

from helpers import cluster, demand, pack, packs, pool, role

fleets = st.lists(st.tuples(st.integers(0, 6), st.sampled_from([1, 4, 8]), st.sampled_from(["roce", "tcp"])),
                  min_size=1, max_size=3).map(lambda pools: pools)


@st.composite
def scenario(draw):
    clusters = []
    for ci in range(draw(st.integers(1, 4))):
        specs = draw(fleets)
        clusters.append(cluster(f"c{ci}", *[pool(f"p{pi}", gpus=g, max_nodes=m, fabric=f)
                                            for pi, (m, g, f) in enumerate(specs)]))
    demands = []
    for di in range(draw(st.integers(1, 4))):
        roles = [role("decode", tensor=draw(st.sampled_from([1, 4, 8])), pipeline=draw(st.integers(1, 2)),
                      count=draw(st.integers(1, 2)))]
        if draw(st.booleans()):
            roles.append(role("prefill", tensor=draw(st.sampled_from([1, 4])), count=draw(st.integers(1, 3))))
        demands.append(demand(f"ns/d{di}", replicas=draw(st.integers(0, 5)), roles=roles))
    return demands, clusters


def canonical(plan):
    return ([p.to_json() for p in plan.placements], [u.to_json() for u in plan.unplaced])


@settings(max_examples=150, deadline=None)
@given(scenario(), st.randoms(use_true_random=False))
def test_deterministic_and_order_independent(sc, rnd):
    demands, clusters = sc
    first = canonical(schedule(demands, clusters))
    shuffled = [c.__class__(c.name, tuple(rnd.sample(c.pools, len(c.pools))), c.labels, c.queues) for c in clusters]
    assert canonical(schedule(rnd.sample(demands, len(demands)), rnd.sample(shuffled, len(shuffled)))) == first


@settings(max_examples=150, deadline=None)
@given(scenario())
def test_never_overcommits_and_replicas_are_whole(sc):
    """Workers smaller than a node share the nodes of their pool; what the plan puts on a pool
    always packs onto its real nodes (largest first, first fit), multi-node workers on whole
    nodes of their own."""
    demands, clusters = sc
    plan = schedule(demands, clusters)
    by_key = {d.key: d for d in demands}
    for p in plan.placements:
        assert set(p.roles) == {r.name for r in by_key[p.deployment].roles}     # whole replica, one cluster
    assert packs(plan, demands, clusters)
    for d in demands:
        assert plan.placed(d.key) + sum(u.deployment == d.key for u in plan.unplaced) == d.replicas


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 16), max_size=40), st.sampled_from([1, 2, 4, 6, 8, 16]), st.integers(0, 12))
def test_slots_that_fit_a_pools_gpus_fit_its_nodes(gpus, per_node, nodes):
    """The capacity rule behind sharing: slots of a node divide one another, so a set of them
    fits the nodes whenever their sum fits the GPUs."""
    from modelplane.scheduler.model import gpu_slot as slot

    sizes = [slot(g, per_node) for g in gpus if g <= per_node]
    assert all(s >= g for s, g in zip(sizes, (g for g in gpus if g <= per_node)))
    assert all(per_node % s == 0 for s in sizes)
    assert pack(sizes, per_node, nodes) == (sum(sizes) <= per_node * nodes)


@settings(max_examples=100, deadline=None)
@given(scenario())
def test_idempotent_with_previous_and_stable_when_a_cluster_is_added(sc):
    demands, clusters = sc
    plan = schedule(demands, clusters)
    again = schedule(demands, clusters, plan.placements)
    assert canonical(again) == canonical(plan)
    bigger = schedule(demands, clusters + [cluster("zz-new", pool("p", gpus=8, max_nodes=8))], plan.placements)
    before = {(p.deployment, p.replica): p for p in plan.placements}
    for p in bigger.placements:
        if (p.deployment, p.replica) in before:
            assert before[(p.deployment, p.replica)] == p


@settings(max_examples=100, deadline=None)
@given(scenario())
def test_removing_a_cluster_moves_only_its_replicas(sc):
    demands, clusters = sc
    plan = schedule(demands, clusters)
    lost = clusters[0].name
    after = schedule(demands, clusters[1:], plan.placements)
    now = {(p.deployment, p.replica): p for p in after.placements}
    for p in plan.placements:
        if p.cluster != lost:
            assert now[(p.deployment, p.replica)] == p


def test_hash_seed_independence(tmp_path):
    import subprocess
    import sys
    code = ("import json,sys; sys.path.insert(0,'tests'); from helpers import *; from modelplane.scheduler import schedule;"
            "p=schedule([demand(replicas=3)],[cluster('east'),cluster('west')]);"
            "print(json.dumps([x.to_json() for x in p.placements]))")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": str(seed), "PATH": ""}).stdout for seed in (0, 1, 42, 999)}
    assert len(outs) == 1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.sampled_from([1, 4, 8]), st.sampled_from(["roce", "efa", "tcp"]),
                          st.integers(0, 6), st.integers(0, 24)),
                min_size=1, max_size=6),
       st.sampled_from([1, 4, 8]), st.integers(1, 3), st.sampled_from([1, 4]), st.integers(1, 3), st.integers(0, 3))
def test_pair_scoring_agrees_with_the_full_product(specs, t1, n1, t2, n2, count):
    """Also with paid nodes (minNodes) and pools partly used: the pair search scores GPUs bought
    beyond paid ones exactly as the full product does."""
    from modelplane.scheduler.score import _best, _best_product

    pools = [pool(f"p{i}", gpus=g, max_nodes=m, fabric=f, paid_nodes=min(paid, m)) for i, (m, g, f, paid, _) in enumerate(specs)]
    d = demand(roles=[role("decode", tensor=t1, count=n1), role("prefill", tensor=t2, count=n2)])
    per_role = {r.name: [p for p in pools if p.gpus_per_node >= r.gpus_per_node] for r in d.roles}
    free = {("c", p.name): max(0, p.max_nodes * p.gpus_per_node - used) for p, (*_, used) in zip(pools, specs)}
    options = [[p for p in per_role[r.name] if free[("c", p.name)] >= r.need(p)] for r in d.roles]
    reference = _best_product(d, "c", options, free, count) if all(options) else None
    assert _best(d, "c", per_role, free, count) == reference


# --- Issue 36: expert parallelism and NVLink domains ----------------------------------------------------

from modelplane.scheduler import Cluster, Demand, Pool, Role  # noqa: E402
from modelplane.scheduler.filter import memory_problem  # noqa: E402
from modelplane.scheduler.model import RDMA_FABRICS  # noqa: E402

FABRICS = ["tcp", "gpudirect-tcpx", "gpudirect-tcpxo", "roce", "efa"]


@st.composite
def moe_fleet(draw):
    pools = tuple(Pool(f"p{i}", f"cls{i}", draw(st.sampled_from([4, 8])), draw(st.integers(1, 20)), {},
                       draw(st.sampled_from(FABRICS)), draw(st.sampled_from([81559, 143771, 189471])), None,
                       draw(st.sampled_from([0, 0, 9, 18])))
                  for i in range(draw(st.integers(1, 4))))
    roles = []
    for name in ("decode", "prefill")[:draw(st.integers(1, 2))]:
        tensor, local = draw(st.sampled_from([1, 2, 4])), draw(st.sampled_from([1, 2, 4]))
        data = local * draw(st.integers(1, 6))
        weights = draw(st.floats(10, 1000))
        experts = weights * draw(st.sampled_from([0.0, 0.5, 0.95]))
        roles.append(Role(name, "", draw(st.integers(1, 2)), data // local, tensor * local, weights, tensor,
                          expert_gib=experts, expert_gpus=tensor * data, expert=draw(st.booleans()) and experts > 0))
    return [Demand("ml/m", draw(st.integers(1, 3)), tuple(roles))], [Cluster("c", pools)]


@settings(max_examples=200, deadline=None)
@given(moe_fleet())
def test_placed_workers_keep_to_their_nvlink_domain_and_all_to_all_fabric(sc):
    demands, clusters = sc
    pools = {p.name: p for p in clusters[0].pools}
    roles = {r.name: r for r in demands[0].roles}
    for placement in schedule(demands, clusters).placements:
        for name, rp in placement.roles.items():
            role, pool_ = roles[name], pools[rp.pool]
            assert not pool_.domain_nodes or role.nodes_per_worker <= pool_.domain_nodes
            if role.expert and role.nodes_per_worker > 1:
                assert pool_.fabric in RDMA_FABRICS or pool_.domain_nodes >= role.nodes_per_worker
            assert memory_problem(role, pool_) is None


@settings(max_examples=200, deadline=None)
@given(st.floats(10, 2000), st.sampled_from([0.0, 0.3, 0.95]), st.sampled_from([1, 2, 4, 8]),
       st.integers(1, 8), st.sampled_from([81559, 143771]))
def test_more_data_ranks_never_need_more_memory_per_gpu_and_a_dense_rank_never_less(weights, share, tensor, data, mib):
    """A mixture of experts shards its experts over every data rank (more ranks, less per GPU); a dense
    model's data ranks are whole copies (the rule does not depend on data)."""
    pool_ = Pool("p", "cls", 8, 64, {}, "roce", mib)

    def fits(d):
        return memory_problem(Role("decode", "", 1, d, tensor, weights, tensor, expert_gib=weights * share, expert_gpus=tensor * d), pool_) is None
    if fits(data):
        assert fits(data * 2)
    if share == 0.0:
        assert fits(data) == fits(1)


@st.composite
def spot_scenario(draw):
    """A scenario whose pools are spot, reserved (paid nodes) or on-demand, and whose deployments
    are kept off spot or not."""
    from dataclasses import replace

    demands, clusters = draw(scenario())
    kinds = st.sampled_from(["spot", "reservation", "on-demand"])
    clusters = [replace(c, pools=tuple(replace(p, capacity=(k := draw(kinds)),
                                               paid_nodes=draw(st.integers(0, p.max_nodes)) if k != "spot" else 0)
                                       for p in c.pools)) for c in clusters]
    demands = [replace(d, spot=draw(st.sampled_from(["", "priority: critical"]))) for d in demands]
    return demands, clusters


@settings(max_examples=150, deadline=None)
@given(spot_scenario(), st.sampled_from(["auto", "always"]))
def test_a_deployment_kept_off_spot_never_lands_on_spot(sc, exact):
    """Fast path and exact phase alike; and its unplaced replicas account for every replica."""
    demands, clusters = sc
    plan = schedule(demands, clusters, exact=exact)
    spot = {(c.name, p.name) for c in clusters for p in c.pools if p.capacity == "spot"}
    refused = {d.key for d in demands if d.spot}
    for p in plan.placements:
        if p.deployment in refused:
            assert not {(p.cluster, r.pool) for r in p.roles.values()} & spot, p
    assert packs(plan, demands, clusters)
    for d in demands:
        assert plan.placed(d.key) + sum(u.deployment == d.key for u in plan.unplaced) == d.replicas
