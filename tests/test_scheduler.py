"""Scheduler rules, table-driven, including the upstream behaviours of seed-spec section 6."""
import pytest

from modelplane.scheduler import Placement, allocate, schedule
from modelplane.scheduler.core import DemandError
from modelplane.scheduler.ratio import RatioError

from helpers import cluster, demand, pool, role


def reasons(plan):
    return {(r.cluster, r.pool, r.reason) for u in plan.unplaced for r in u.reasons}


def where(plan):
    return [(p.replica, p.cluster, {k: v.pool for k, v in p.roles.items()}) for p in plan.placements]


def test_cluster_selector_filters_with_reason():
    plan = schedule([demand(labels={"tier": "production"})],
                    [cluster("east", labels={"tier": "production"}), cluster("dev", labels={"tier": "development"})])
    assert [p.cluster for p in plan.placements] == ["east"]
    assert ("dev", None, "clusterSelector") in {(r.cluster, r.pool, r.reason) for r in plan.rejections["ml/kimi"]}


def test_no_eligible_cluster_reports_every_cluster():
    plan = schedule([demand(labels={"tier": "frontier"})], [cluster("east"), cluster("west")])
    assert not plan.placements
    assert {r.cluster for r in plan.unplaced[0].reasons} == {"east", "west"}


def test_cel_picks_the_pool():
    d = demand(roles=[role(cel="gpu.memoryGiB >= 141")])
    plan = schedule([d], [cluster("c", pool("h100", mem=80, product="H100"), pool("h200"))])
    assert where(plan) == [(0, "c", {"decode": "h200"})]


def test_shape_rejects_small_nodes():
    plan = schedule([demand()], [cluster("c", pool("small", gpus=4))])
    assert ("c", "small", "shape") in reasons(plan)


def test_capacity_counts_other_deployments():
    other = demand("ml/aaa", replicas=2, roles=[role(tensor=8)])  # served first (name order), then ml/kimi
    plan = schedule([demand("ml/kimi"), other], [cluster("c", pool(max_nodes=2))])
    assert [(p.deployment, p.replica) for p in plan.placements] == [("ml/aaa", 0), ("ml/kimi", 0)]
    detail = next(r.detail for u in plan.unplaced for r in u.reasons if r.reason == "capacity")
    assert "0/16 GPUs free" in detail and "needs 8 GPUs" in detail


def test_capacity_reserved_across_replicas_spreads_over_clusters():
    plan = schedule([demand(replicas=3)], [cluster("east", pool(max_nodes=2)), cluster("west", pool(max_nodes=2))])
    assert [p.cluster for p in plan.placements] == ["east", "west", "east"]


def test_oversubscribed_places_partially_and_says_so():
    plan = schedule([demand(replicas=4)], [cluster("c", pool(max_nodes=2))])
    assert len(plan.placements) == 2 and [u.replica for u in plan.unplaced] == [2, 3]
    assert plan.unplaced[0].reasons == plan.unplaced[1].reasons   # same reasons, computed once


def test_zero_replicas():
    assert schedule([demand(replicas=0)], [cluster("c")]).placements == []


def test_spread_beats_headroom():
    plan = schedule([demand(replicas=2)], [cluster("big", pool(max_nodes=10)), cluster("small", pool(max_nodes=2))])
    assert sorted(p.cluster for p in plan.placements) == ["big", "small"]


def _prev(cluster_name, replica=0, pool_name="h200", nodes=1, key="ml/kimi"):
    return Placement.from_json({"deployment": key, "replica": replica, "cluster": cluster_name,
                                "roles": {"decode": {"pool": pool_name, "nodes": nodes, "gpusPerNode": 8, "workers": 1}}})


def test_sticky_replica_stays_despite_a_better_new_cluster():
    plan = schedule([demand(replicas=1)], [cluster("east", pool(max_nodes=2)), cluster("a-new", pool(max_nodes=10))],
                    [_prev("east")])
    assert where(plan) == [(0, "east", {"decode": "h200"})]


def test_sticky_index_kept_and_new_index_placed():
    plan = schedule([demand(replicas=2)], [cluster("east"), cluster("west")], [_prev("east")])
    assert [(p.replica, p.cluster) for p in plan.placements] == [(0, "east"), (1, "west")]


def test_scale_down_drops_highest_indices_and_frees_capacity_from_the_next_up():
    """Removed replicas are deleted at the end of `up`, after every create: their nodes are held
    through this plan (a replica created on them could never become Ready) and free in the next."""
    prev = [_prev("c", i) for i in range(3)]
    other = demand("ml/zz", replicas=3)
    plan = schedule([demand(replicas=1), other], [cluster("c", pool(max_nodes=4))], prev)
    assert [p.replica for p in plan.placements if p.deployment == "ml/kimi"] == [0]
    assert sum(p.deployment == "ml/zz" for p in plan.placements) == 1
    assert plan.held == {("c", "h200"): 16}          # GPUs: two 8-GPU nodes
    assert "16 held by replicas this `up` deletes" in plan.unplaced[0].reasons[0].detail
    after = schedule([demand(replicas=1), other], [cluster("c", pool(max_nodes=4))], plan.placements)
    assert sum(p.deployment == "ml/zz" for p in after.placements) == 3 and after.held == {}


def test_replica_on_deleted_cluster_is_replaced_with_a_move():
    plan = schedule([demand()], [cluster("b")], [_prev("a")])
    assert where(plan) == [(0, "b", {"decode": "h200"})]
    assert plan.moves[0].why == "cluster a is gone"


def test_retained_replica_whose_pool_no_longer_matches_moves():
    d = demand(roles=[role(cel='gpu.product == "H200"')])
    plan = schedule([d], [cluster("c", pool("h100", product="H100"), pool("h200"))], [_prev("c", pool_name="h100")])
    assert where(plan) == [(0, "c", {"decode": "h200"})]
    assert "no longer fits" in plan.moves[0].why


def test_disaggregated_needs_both_roles_on_one_cluster():
    decode = role("decode", cel="gpu.memoryGiB >= 141")
    prefill = role("prefill", tensor=1, count=2, cel='gpu.product == "L40S"')
    west = cluster("west", pool("h200"))
    east = cluster("east", pool("h200"), pool("l40s", gpus=4, product="L40S", mem=48))
    plan = schedule([demand(roles=[decode, prefill])], [west, east])
    assert where(plan) == [(0, "east", {"decode": "h200", "prefill": "l40s"})]
    assert any(r.cluster == "west" and r.reason == "coLocation" for r in plan.rejections["ml/kimi"])


def test_5p3d_footprint():
    decode = role("decode", tensor=8, pipeline=2, count=3)
    prefill = role("prefill", tensor=1, count=5)
    plan = schedule([demand(roles=[decode, prefill])],
                    [cluster("c", pool("h200", max_nodes=8), pool("l40s", gpus=4, max_nodes=8, product="L40S"))])
    roles = plan.placements[0].roles
    assert (roles["decode"].nodes, roles["prefill"].nodes) == (6, 5)


def test_same_pool_must_hold_both_roles_and_says_why():
    d = demand(roles=[role("decode", count=2), role("prefill", count=2)])
    plan = schedule([d], [cluster("c", pool(max_nodes=3))])
    assert not plan.placements
    reasons = [r for r in plan.unplaced[0].reasons if r.pool == "h200" and "together" in r.detail]
    assert [r.detail for r in reasons] == ["decode + prefill need 32 GPUs together, 24/24 GPUs free"]


def test_prefers_rdma_pool_pairs_over_tcp_for_kv_transfer():
    d = demand(roles=[role("decode"), role("prefill")])
    pools = [pool("a", fabric="tcp", max_nodes=1), pool("b", fabric="tcp", max_nodes=1),
             pool("r1", fabric="roce", max_nodes=1), pool("r2", fabric="roce", max_nodes=1)]
    assert where(schedule([d], [cluster("c", *pools)]))[0][2] == {"decode": "r1", "prefill": "r2"}


def test_prefers_one_shared_pool_over_two_rdma_pools():
    d = demand(roles=[role("decode"), role("prefill")])
    pools = [pool("x", fabric="roce", max_nodes=1), pool("y", fabric="roce", max_nodes=1), pool("z", fabric="tcp", max_nodes=2)]
    assert where(schedule([d], [cluster("c", *pools)]))[0][2] == {"decode": "z", "prefill": "z"}


def test_prefers_pools_that_strand_fewer_gpus():
    plan = schedule([demand(roles=[role(tensor=1)])], [cluster("c", pool("big", gpus=8), pool("small", gpus=1))])
    assert where(plan)[0][2] == {"decode": "small"}


def test_queue_must_exist_on_cluster():
    plan = schedule([demand(queue="ml")], [cluster("a", queues=("other",)), cluster("b", queues=("ml",))])
    assert [p.cluster for p in plan.placements] == ["b"]
    assert any(r.reason == "queue" and r.cluster == "a" for r in plan.rejections["ml/kimi"])


def test_bad_cel_is_an_input_error():
    with pytest.raises(DemandError, match="does not parse"):
        schedule([demand(roles=[role(cel="gpu.memoryGiB >=")])], [cluster("c")])
    with pytest.raises(DemandError, match="no field .vram."):
        schedule([demand(roles=[role(cel="gpu.vram >= 1")])], [cluster("c")])


@pytest.mark.parametrize("total,preferred,bands,expected", [
    (8, {"prefill": 5, "decode": 3}, {}, {"prefill": 5, "decode": 3}),
    (10, {"prefill": 5, "decode": 3}, {}, {"prefill": 6, "decode": 4}),
    (10, {"prefill": 5, "decode": 3}, {"prefill": (0, 50)}, {"prefill": 5, "decode": 5}),
    (3, {"prefill": 1, "decode": 1}, {}, {"decode": 2, "prefill": 1}),
    (7, {"prefill": 1, "decode": 1}, {"decode": (60, 100)}, {"decode": 5, "prefill": 2}),
])
def test_ratio_allocation_preserves_total(total, preferred, bands, expected):
    got = allocate(total, preferred, bands)
    assert got == expected and sum(got.values()) == total


def test_ratio_infeasible_bands():
    with pytest.raises(RatioError):
        allocate(10, {"prefill": 1, "decode": 1}, {"prefill": (70, 100), "decode": (70, 100)})


def test_three_replicas_spread_then_pack_by_name():
    plan = schedule([demand(replicas=3)], [cluster("b", pool(max_nodes=4)), cluster("a", pool(max_nodes=4))])
    assert [p.cluster for p in plan.placements] == ["a", "b", "a"]


def test_capacity_forces_packing_onto_the_cluster_with_room():
    plan = schedule([demand(replicas=3)], [cluster("a", pool(max_nodes=1)), cluster("b", pool(max_nodes=4))])
    assert sorted(p.cluster for p in plan.placements) == ["a", "b", "b"]


def test_previous_placements_of_removed_deployments_hold_their_nodes_until_up_ends():
    """A removed deployment's replicas are deleted at the end of `up`: their nodes are not free
    for this plan's new replicas; one on a pool that is gone holds nothing."""
    stale = [_prev("c", key="ml/deleted"), _prev("c", pool_name="gone", key="ml/other")]
    plan = schedule([demand(replicas=2)], [cluster("c", pool(max_nodes=2))], stale)
    assert len(plan.placements) == 1 and plan.free[("c", "h200")] == 0 and plan.held == {("c", "h200"): 8}
    again = schedule([demand(replicas=2)], [cluster("c", pool(max_nodes=2))], plan.placements)
    assert len(again.placements) == 2 and again.free[("c", "h200")] == 0


def test_retained_replica_is_charged_at_its_recorded_nodes():
    two_nodes = Placement.from_json({"deployment": "ml/kimi", "replica": 0, "cluster": "c", "roles": {
        "decode": {"pool": "h200", "nodes": 2, "gpusPerNode": 8, "workers": 1}}})
    plan = schedule([demand(roles=[role(tensor=8, pipeline=2)])], [cluster("c", pool(max_nodes=3))], [two_nodes])
    assert where(plan) == [(0, "c", {"decode": "h200"})] and plan.free[("c", "h200")] == 8     # one node's GPUs


def test_cel_parse_error_raises_even_when_no_cluster_is_eligible():
    d = demand(labels={"tier": "nowhere"}, roles=[role(cel="gpu.memoryGiB >=")])
    with pytest.raises(DemandError, match="does not parse"):
        schedule([d], [cluster("c")])


def test_filter_rejections_are_only_built_when_asked_and_are_complete():
    d = demand(roles=[role(cel='gpu.product == "H200"')])
    plan = schedule([d], [cluster("c", pool("h100", product="H100"), pool("small", gpus=4), pool("h200"))])
    assert where(plan) == [(0, "c", {"decode": "h200"})]
    assert [(r.pool, r.reason) for r in plan.rejections["ml/kimi"]] == [("h100", "nodeSelector"), ("small", "shape")]


# --- Issue 36: mixtures of experts (memory per rank), the all-to-all fabric, NVLink domains --------------

from modelplane.api import load_catalog  # noqa: E402
from modelplane.scheduler import DOMAIN, FABRIC, MEMORY, Cluster, Demand, Pool, Role  # noqa: E402

H100, H200, GB200 = 81559, 143771, 189471          # usable MiB per GPU, as the driver reports it


def r1(tensor=1, data=1, data_local=1, pipeline=1, expert=False, weights=None, experts=None) -> Role:
    """DeepSeek-R1 as the catalog describes it (641 GiB, 609 GiB of routed experts), in one worker."""
    facts = load_catalog().models["hf://deepseek-ai/DeepSeek-R1"]
    w = facts.size_gib if weights is None else weights
    e = w * facts.expert_share if experts is None else experts
    return Role("decode", "", 1, pipeline * data // data_local, tensor * data_local, w, tensor * pipeline,
                expert_gib=e, expert_gpus=tensor * pipeline * data, expert=expert)


def one(role: Role, *pools: Pool):
    return schedule([Demand("ml/r1", 1, (role,))], [Cluster("c", pools)])


def test_deepseek_r1_tp8_dp2_fits_two_8x_h100_nodes_per_rank_not_per_copy():
    """Issue 36 acceptance: 32 GiB non-expert / 8 + 609 GiB experts / 16 = 42 GiB per GPU on 80 GB."""
    plan = one(r1(tensor=8, data=2), Pool("h100", "eks-h100-8x-p5", 8, 2, {}, "efa", H100))
    assert [(p.roles["decode"].pool, p.roles["decode"].nodes, p.roles["decode"].gpus_per_node)
            for p in plan.placements] == [("h100", 2, 8)]


@pytest.mark.parametrize("topology,pool_,fits", [
    ({"data": 8, "data_local": 8, "expert": True}, Pool("h200", "a3ultra", 8, 1, {}, "roce", H200), True),  # 108 GiB
    ({"data": 8, "data_local": 8, "expert": True}, Pool("h100", "a3high", 8, 1, {}, "roce", H100), False),  # > 72 GiB
    ({"data": 16, "data_local": 8, "expert": True}, Pool("h100", "h100-ib", 8, 2, {}, "infiniband", H100), True),   # 70 GiB
    ({"data": 16, "data_local": 4, "expert": True}, Pool("gb", "a4x", 4, 18, {}, "roce", GB200, None, 18), True),
])
def test_moe_memory_is_non_expert_per_tensor_plus_experts_per_worker(topology, pool_, fits):
    plan = one(r1(**topology), pool_)
    assert bool(plan.placements) is fits
    if not fits:
        [reason] = plan.unplaced[0].reasons
        assert reason.reason == MEMORY and reason.detail == (
            "decode: 32 GiB of non-expert weights / 1 + 609 GiB of experts / 8 = 108.1 GiB per GPU exceed 90% of "
            "80 GiB (a3high)")


def test_a_dense_copy_that_does_not_fit_one_data_rank_is_refused_with_the_arithmetic():
    """Llama 3.1 405B FP8 (382 GiB, dense) as TP4 x DP2: every data rank holds all of it."""
    dense = Role("decode", "", 1, 2, 4, 382.0, 4, expert_gib=0.0, expert_gpus=8, expert=False)
    plan = one(dense, Pool("h100", "h100-8x", 8, 4, {}, "infiniband", H100))
    [reason] = plan.unplaced[0].reasons
    assert reason.reason == MEMORY and reason.detail == (
        "decode: 382 GiB of weights exceed 90% of 4 x 80 GiB (h100-8x): each data-parallel rank holds the whole "
        "model, 95.5 GiB per GPU")


@pytest.mark.parametrize("fabric,domain,placed", [
    ("roce", 0, True), ("infiniband", 0, True),                        # RDMA with IBGDA (mlx5)
    ("efa", 0, True),       # default all-to-all over aws-ofi-nccl; DeepEP refused by refused_fabrics (G2)
    ("gpudirect-tcpx", 0, False), ("gpudirect-tcpxo", 0, False),       # GPUDirect over TCP: no all-to-all
    ("gpudirect-tcpxo", 18, True),                                     # one NVLink domain carries it
])
def test_expert_parallelism_across_nodes_needs_rdma_or_one_nvlink_domain(fabric, domain, placed):
    plan = one(r1(data=16, data_local=8, expert=True), Pool("p", "cls", 8, 2, {}, fabric, H200, None, domain))
    assert bool(plan.placements) is placed
    if not placed:
        [reason] = plan.unplaced[0].reasons
        assert reason.reason == FABRIC and "needs RDMA (InfiniBand, RoCE) or one NVLink domain" in reason.detail
    # on one node the all-to-all stays on NVLink: any fabric will do
    assert one(r1(data=8, data_local=8, expert=True), Pool("p", "cls", 8, 1, {}, fabric, H200)).placements


def test_a_worker_stays_inside_one_nvlink_domain():
    gb = Pool("gb", "gke-gb200-4x-a4x", 4, 18, {}, "roce", GB200, None, 18)
    assert one(r1(data=72, data_local=4, expert=True), gb).placements          # 18 nodes: the whole rack
    plan = one(r1(data=76, data_local=4, expert=True), gb)                     # 19 nodes
    [reason] = plan.unplaced[0].reasons
    assert reason.reason == DOMAIN and reason.detail == (
        "decode spans 19 nodes per worker; one NVLink domain of gke-gb200-4x-a4x holds 18 nodes, and a worker "
        "stays inside one")


def test_deployments_that_filter_alike_share_a_decision_but_keep_their_own_reasons():
    """Filter decides once per signature (every field it reads): deployments that differ only in
    name, replicas or tier share it; a cluster selector or a spot refusal keeps them apart, and a
    spot refusal names its own deployment."""
    from dataclasses import replace

    spot = pool("spot", capacity="spot")
    fleet = [cluster("east", spot, labels={"tier": "production"}), cluster("west", spot)]
    a, b = demand("ml/a", labels={"tier": "production"}), demand("ml/b", labels={"tier": "production"})
    c = demand("ml/c")
    plan = schedule([replace(a, spot="priority: critical"), replace(b, spot="priority: critical", priority=2), c], fleet)
    assert [(p.deployment, p.cluster) for p in plan.placements] == [("ml/c", "east")]
    for key in ("ml/a", "ml/b"):
        got = {(r.cluster, r.reason) for r in plan.rejections[key]}
        assert got == {("east", "spot"), ("west", "clusterSelector")}
        assert all(key in r.detail for r in plan.rejections[key] if r.reason == "spot")
    assert plan.rejections["ml/c"] == []
    for u in plan.unplaced:         # the reasons of an unplaced replica: its own as well
        assert [r.detail for r in u.reasons if r.reason == "spot"] == \
            [r.detail for r in plan.rejections[u.deployment] if r.reason == "spot"]
    assert sorted(u.deployment for u in plan.unplaced) == ["ml/a", "ml/b"]


def test_a_refused_net_plugin_is_decided_per_pool_not_per_class():
    """Two pools of one class and fabric, one pinning pods to a net plugin the engine cannot load
    (an inventory from another stack's catalog): only that one is refused, whichever is met first."""
    from dataclasses import replace

    from modelplane.scheduler.model import PLUGIN_KEY

    role = replace(r1(tensor=8, data=2, weights=100.0, experts=0.0),
                   refused_fabrics={PLUGIN_KEY + "efa": "image cannot load aws-ofi-nccl"})
    bare = Pool("a-bare", "eks-h100-8x-p5", 8, 2, {}, "efa", H100)
    pinned = replace(bare, name="b-pinned", net_plugin="efa")
    for pools in ((bare, pinned), (pinned, bare)):
        plan = schedule([Demand("ml/r1", 2, (role,))], [Cluster("c", pools)])
        assert [p.roles["decode"].pool for p in plan.placements] == ["a-bare"]
        assert [(r.pool, r.reason) for r in plan.rejections["ml/r1"]] == [("b-pinned", FABRIC)]
