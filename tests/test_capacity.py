"""Capacity the way a fleet owner pays for it (issue 44): paid nodes first, nobody starved."""
from dataclasses import replace

from modelplane.scheduler import schedule

from helpers import cluster, demand, planned, pool, role


def pools_of(plan, key):
    return [(p.replica, p.cluster, {k: v.pool for k, v in p.roles.items()}) for p in plan.placements
            if p.deployment == key]


def trial_cluster():
    """The user trial's gke-usc1 (B1): a reserved H100 pool with minNodes 4 (of 8) and a spot pool."""
    return cluster("gke-usc1", pool("h100", gpus=8, max_nodes=8, capacity="reservation", paid_nodes=4),
                   pool("h100-spot", gpus=8, max_nodes=4, capacity="spot"))


def test_paid_reservation_is_filled_before_spot():
    """Llama (TP4 prefill + TP4 decode, critical) and three SLO-sized Qwen replicas (4 x TP1 prefill +
    TP4 decode) take 32 GPUs: exactly the 4 reserved nodes, none of the spot pool. Before, best fit
    put them on the smaller spot pool and left the reservation idle."""
    llama = replace(demand("chat/llama", roles=[role("decode", tensor=4), role("prefill", tensor=4)]), priority=2)
    qwen = demand("search/qwen", replicas=3, roles=[role("decode", tensor=4), role("prefill", tensor=1, count=4)])
    plan = schedule([llama, qwen], [trial_cluster()])
    assert {pool for p in plan.placements for pool in (r.pool for r in p.roles.values())} == {"h100"}
    assert plan.free[("gke-usc1", "h100")] == 32 and plan.free[("gke-usc1", "h100-spot")] == 32


def test_beyond_paid_nodes_best_fit_decides_again():
    """Once the paid GPUs are used, a new node is bought where best fit says (the smaller spot pool)."""
    d = demand("ns/big", replicas=5)
    plan = schedule([d], [cluster("c", pool("h100", gpus=8, max_nodes=8, capacity="reservation", paid_nodes=4),
                                  pool("h100-spot", gpus=8, max_nodes=2, capacity="spot"))])
    used = [p.roles["decode"].pool for p in plan.placements]
    assert used[:4] == ["h100"] * 4 and used[4] == "h100-spot"


def test_paid_nodes_on_a_pair_of_pools():
    """Prefill and decode on two pools: the pair search counts GPUs bought per pool too."""
    c = cluster("c", pool("a", gpus=8, max_nodes=2), pool("b", gpus=8, max_nodes=2, paid_nodes=2),
                pool("p", gpus=8, max_nodes=1))
    d = demand(roles=[role("decode", tensor=8, count=2), role("prefill", tensor=8)])
    plan = schedule([d], [c])
    assert pools_of(plan, "ml/kimi") == [(0, "c", {"decode": "b", "prefill": "p"})]


def test_many_small_replicas_do_not_starve_a_big_one():
    """1,000 replicas of a 1-GPU model beside one 8-GPU replica on 3 nodes of 8: both are served
    (the fast path serves every deployment of a tier first; the exact phase may not unserve one)."""
    small = demand("a/small", replicas=1000, roles=[role(tensor=1)])
    big = demand("b/big", replicas=1, roles=[role(tensor=8)])
    plan = schedule([small, big], [cluster("c", pool("h", gpus=8, max_nodes=3))])
    assert plan.placed("b/big") == 1 and plan.placed("a/small") == 16
    assert sum(u.deployment == "a/small" for u in plan.unplaced) == 984


def test_a_selector_sees_the_pool_and_the_cluster():
    """`pool.capacity != "spot"` keeps a deployment off spot (trial step 13); the rejection names
    the false clause and the pool's value, as --explain shows it."""
    from modelplane.scheduler.model import Cluster

    spot_only = Cluster("gke-usc1", (pool("h100-spot", gpus=8, max_nodes=4, capacity="spot"),), {"team": "a"},
                        None, "us-central1", "gcp")
    paid = Cluster("eks-use1", (pool("p5", gpus=8, max_nodes=2, labels={"tier": "prod"}),), {}, None,
                   "us-east-1", "aws")
    cel = 'gpu.count == 8 && pool.capacity != "spot"'
    plan = schedule([demand("chat/llama", roles=[role(cel=cel)])], [spot_only, paid])
    assert pools_of(plan, "chat/llama") == [(0, "eks-use1", {"decode": "p5"})]
    why = [r.detail for r in plan.rejections["chat/llama"] if r.reason == "nodeSelector"]
    assert why == ['decode: false for class class-h100-spot: pool.capacity != "spot" is false (pool.capacity = "spot")']
    for cel, where in (('cluster.region == "us-central1"', "gke-usc1"), ('cluster.cloud == "aws"', "eks-use1"),
                       ('"tier" in pool.labels && pool.labels["tier"] == "prod"', "eks-use1"),
                       ('"team" in cluster.labels && pool.name == "h100-spot"', "gke-usc1")):
        got = schedule([demand("ns/x", roles=[role(cel=cel)])], [spot_only, paid])
        assert [p.cluster for p in got.placements] == [where], cel


def test_an_unknown_variable_names_pool_and_cluster():
    from modelplane.scheduler.core import DemandError

    import pytest
    with pytest.raises(DemandError, match=r"unknown name 'zone' \(variables: .*pool, cluster\)"):
        schedule([demand(roles=[role(cel='zone == "a"')])], [cluster("c")])


def test_a_cluster_selector_in_cel_sees_labels_region_and_cloud():
    """clusterSelector.cel (issue 44) picks clusters by cluster.labels, .region and .cloud; a refused
    cluster's rejection names the false clause and the cluster's value, as --explain shows it."""
    from modelplane.scheduler.model import Cluster

    gke = Cluster("gke-usc1", (pool("h100", gpus=8, max_nodes=2),), {"team": "a"}, None, "us-central1", "gcp")
    eks = Cluster("eks-use1", (pool("p5", gpus=8, max_nodes=2),), {}, None, "us-east-1", "aws")
    for cel, where in (('cluster.cloud == "aws"', "eks-use1"), ('cluster.region.startsWith("us-central")', "gke-usc1"),
                       ('"team" in cluster.labels && cluster.labels["team"] == "a"', "gke-usc1")):
        got = schedule([replace(demand("ns/x"), cluster_cel=cel)], [gke, eks])
        assert [p.cluster for p in got.placements] == [where], cel
    plan = schedule([replace(demand("ns/x"), cluster_cel='cluster.cloud == "gcp" && cluster.region == "europe-west4"')],
                    [gke, eks])
    assert not plan.placements
    why = {r.cluster: r.detail for r in plan.rejections["ns/x"] if r.reason == "clusterSelector"}
    assert why == {"gke-usc1": 'cel: cluster.region == "europe-west4" is false (cluster.region = "us-central1")',
                   "eks-use1": 'cel: cluster.cloud == "gcp" is false (cluster.cloud = "aws")'}


def test_the_exact_phase_buys_no_gpu_the_reservation_has():
    """The exact phase's objective counts GPUs bought beyond the paid, unused ones (issue 44): on
    the trial's cluster (reserved minNodes 4 + spot pool), what it places itself goes onto the 32
    reserved GPUs, not onto spot. Without that term it put all 24 GPUs on spot (equal quality)."""
    from modelplane.scheduler.cel import Matcher
    from modelplane.scheduler.exact import solve
    from modelplane.scheduler.filter import Verdicts, eligible

    c = trial_cluster()
    ds = [demand("chat/llama", replicas=2, roles=[role("decode", tensor=8)]),
          demand("search/qwen", replicas=2, roles=[role("decode", tensor=4)])]
    where = {d.key: eligible(d, [c], Verdicts(d, Matcher())) for d in ds}
    free = {("gke-usc1", "h100"): 64, ("gke-usc1", "h100-spot"): 32}
    out = solve(ds, where, free, {d.key: d.replicas for d in ds}, {})
    assert out.phase == "exact"
    assert {names for fills in out.fills.values() for _, names in fills} == {("h100",)}
    # 4 of the reservation's 8 nodes are paid: 32 GPUs; beyond them the reservation's nodes are
    # bought like spot's, and the exact phase is indifferent between the two
    free = {("gke-usc1", "h100"): 64 - 32, ("gke-usc1", "h100-spot"): 32}    # the paid nodes already used
    out = solve(ds, where, free, {d.key: d.replicas for d in ds}, {})
    assert sum(len(f) for f in out.fills.values()) == 4


def test_repack_names_idle_paid_capacity_and_what_moving_onto_it_saves():
    """The trial's old placement (B1: every replica on spot, the reservation idle): --repack moves
    them onto the reserved nodes, names the idle paid pool and the spot nodes no longer bought,
    priced. Before, equal replicas and GPUs read as 'nothing to gain'."""
    import io

    from rich.console import Console

    from modelplane.output.tables import repack as show
    from modelplane.scheduler.model import Cluster
    from modelplane.scheduler.repack import repack

    c = trial_cluster()
    c = Cluster(c.name, (replace(c.pools[0], hourly=60.0), replace(c.pools[1], hourly=53.09)))
    llama = replace(demand("chat/llama", roles=[role("decode", tensor=4), role("prefill", tensor=4)]), priority=2)
    qwen = demand("search/qwen", replicas=3, roles=[role("decode", tensor=4), role("prefill", tensor=1, count=4)])
    on_spot = [replace(d, roles=tuple(replace(r, cel='pool.capacity == "spot"') for r in d.roles)) for d in (llama, qwen)]
    old = schedule(on_spot, [c])
    assert {rp.pool for p in old.placements for rp in p.roles.values()} == {"h100-spot"}
    doc = repack([llama, qwen], [c], old).to_json()
    assert len(doc["moves"]) == 4 and {m["to"] for m in doc["moves"]} == {"gke-usc1/h100"}
    assert doc["paid"] == {"idle": [{"pool": "gke-usc1/h100", "capacity": "reservation",
                                     "idleNodes": {"now": 4, "repacked": 0}, "idleGpus": {"now": 32, "repacked": 0}}],
                           "boughtNodes": {"now": 4, "repacked": 0}, "savesHourly": 212.36}
    text = io.StringIO()
    show(Console(file=text, width=200), doc)
    assert "idle paid gke-usc1/h100 (reservation, paid whether used or not): 4 nodes (32 GPUs) -> 0 (0 GPUs)" \
        in text.getvalue()
    assert "nodes bought beyond the paid ones 4 -> 0: the re-pack saves $212/h ($155,023/month)" in text.getvalue()
    # placed on the reservation already: nothing to gain, and no idle paid pool
    doc = repack([llama, qwen], [c], schedule([llama, qwen], [c])).to_json()
    assert not doc["moves"] and doc["paid"]["idle"] == [] and doc["paid"]["savesHourly"] == 0


def test_a_service_cluster_selector_in_cel_picks_where_provider_traffic_enters():
    """The same rule (filter.selector_problem) serves a service's entry clusters: prod's chat
    service with only its hosted provider enters where clusterSelector.cel is true."""
    from modelplane.analysis.services import plan_routes

    run = planned("prod")
    spec = run.result.spec
    chat = next(s for s in spec.services if s.key == "chat/chat")
    only = [e for e in chat.endpoints if e.provider]
    for cel, entry in (('cluster.cloud == "aws"', {"eks-use1"}), ('cluster.region == "us-central1"', {"gke-usc1"}),
                       (None, {"eks-use1", "gke-usc1", "gke-euw4"})):
        svc = chat.model_copy(update={"endpoints": only,
                                      "cluster_selector": chat.cluster_selector.model_copy(update={"cel": cel})})
        routes = plan_routes(spec.model_copy(update={"services": [svc]}), run.result.plan.placements,
                             run.result.inventories)
        assert set(routes["chat/chat"].clusters) == entry, cel
