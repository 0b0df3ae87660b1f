"""Scaling semantics: autoscaling envelopes and InPlace steps that shrink to fit, grow in place,
and report how far a rollout got."""
from modelplane.scheduler import Cluster, Demand, Placement, Pool, Role, schedule


def pool(name, nodes):
    return Pool(name, "h200", 8, nodes, {})


def demand(workers=4, steps=((3,), (2,), (1,)), replicas=1, key="ml/m"):
    return Demand(key, replicas, (Role("decode", "", workers, 1, 8),), steps=steps)


def shape(p):
    return {name: rp.workers for name, rp in p.roles.items()}


def test_a_replica_whose_full_shape_fits_nowhere_takes_the_largest_step_that_does():
    plan = schedule([demand()], [Cluster("c", (pool("h", 2),))])
    assert [shape(p) for p in plan.placements] == [{"decode": 2}] and plan.unplaced == []
    row = plan.progress[0]
    assert (row["target"], row["placed"], row["percent"]) == (4, 2, 50.0)
    assert row["stuck"] == {"replica": 0, "role": "decode", "reason": "capacity",
                            "detail": "runs 2 of 4 decode workers; 2 more nodes needed on c/h, 0/2 free"}


def test_below_the_smallest_step_the_replica_is_unplaced_and_the_reason_is_capacity():
    plan = schedule([demand(workers=4, steps=((3,),))], [Cluster("c", (pool("h", 2),))])
    assert plan.placements == [] and len(plan.unplaced) == 1
    stuck = plan.progress[0]["stuck"]
    assert stuck["reason"] == "capacity" and "c/h: decode needs 4 nodes, 2/2 free" in stuck["detail"]


def test_a_retained_replica_grows_in_place_when_its_pool_has_room():
    old = Placement.from_json({"deployment": "ml/m", "replica": 0, "cluster": "c",
                               "roles": {"decode": {"pool": "h", "nodes": 2, "gpusPerNode": 8, "workers": 2}}})
    clusters = [Cluster("c", (pool("h", 3),)), Cluster("d", (pool("h", 8),))]
    plan = schedule([demand()], clusters, [old])
    # it stays on c (not moved to d, where the full shape would fit) and grows to what c holds
    assert [(p.cluster, shape(p)) for p in plan.placements] == [("c", {"decode": 3})] and plan.moves == []


def test_full_placements_report_no_stuck_batch():
    plan = schedule([demand(replicas=2)], [Cluster("c", (pool("h", 8),))])
    assert plan.progress[0] == {"deployment": "ml/m", "target": 8, "placed": 8, "percent": 100.0,
                                "replicas": {"target": 2, "placed": 2}, "stuck": None}
