"""`plan --repack`: what a plan from scratch would move and gain, without moving anything."""
from modelplane.scheduler import Cluster, Demand, Placement, Pool, Role, schedule
from modelplane.scheduler.repack import repack


def _fleet():
    clusters = [Cluster("c", (Pool("big", "h100", 8, 2, {}), Pool("tiny", "h100", 8, 1, {})))]
    demands = [Demand("a/small", 1, (Role("decode", "", 1, 1, 8),)),
               Demand("b/large", 1, (Role("decode", "", 2, 1, 8),))]
    return demands, clusters


def test_stickiness_is_kept_and_the_repack_names_the_move_and_the_gain():
    demands, clusters = _fleet()
    old = Placement.from_json({"deployment": "a/small", "replica": 0, "cluster": "c",
                               "roles": {"decode": {"pool": "big", "nodes": 1, "gpusPerNode": 8, "workers": 1}}})
    sticky = schedule(demands, clusters, [old])
    # retained where it runs: the 2-node replica has no room, and the exact phase does not move a/small
    assert [(p.deployment, p.roles["decode"].pool) for p in sticky.placements] == [("a/small", "big")]
    assert [u.deployment for u in sticky.unplaced] == ["b/large"]
    r = repack(demands, clusters, sticky)
    assert r.moves == [("a/small", 0, "c/big", "c/tiny")]
    assert r.gained == [("b/large", "c/big")] and r.lost == []
    assert (r.replicas, r.gpus) == ((1, 2), (8, 24))
    assert r.to_json()["moves"] == [{"deployment": "a/small", "replica": 0, "from": "c/big", "to": "c/tiny"}]


def test_a_repack_that_gains_nothing_moves_nothing():
    demands, clusters = _fleet()
    plan = schedule(demands[:1], clusters)
    r = repack(demands[:1], clusters, plan)
    assert (r.moves, r.gained, r.lost) == ([], [], [])
    assert r.replicas == (1, 1)


def test_the_cli_shows_the_repack_and_the_json_carries_it():
    import json

    from click.testing import CliRunner

    from modelplane.cli import main

    result = CliRunner().invoke(main, ["plan", "prod", "--repack"])
    assert ("re-pack: nothing to gain; a plan from scratch places the same 10 replicas (108 GPUs placed; the stack's "
            "109 GPUs include 1 on idle nodes)") in result.output      # the cost table counts 109
    doc = json.loads(CliRunner().invoke(main, ["plan", "prod", "--repack", "--json"]).output)
    assert doc["repack"]["moves"] == [] and doc["repack"]["replicas"] == {"now": 10, "repacked": 10}


def test_modelplane_repack_plans_from_scratch_for_one_up(tmp_path):
    """The config key applies the re-pack: the previous placements are not retained."""
    from pathlib import Path

    from helpers import planned
    from modelplane.engine import offline

    first = planned("dev").result.plan.placements
    moved = [p.to_json() for p in first]
    other = sorted({p["cluster"] for p in moved} | {"elsewhere"})
    moved[0]["cluster"] = other[-1] if moved[0]["cluster"] != other[-1] else other[0]
    text = Path("stacks/Pulumi.dev.yaml").read_text().replace("config:\n", "config:\n  modelplane:repack: true\n", 1)
    (tmp_path / "Pulumi.dev.yaml").write_text(text)
    sticky = offline.run("dev", None, moved).result.plan
    fresh = offline.run("dev", tmp_path / "Pulumi.dev.yaml", moved).result.plan
    assert [p.to_json() for p in fresh.placements] == [p.to_json() for p in first]
    assert sticky.moves and not fresh.moves     # the sticky plan explains the moved replica; the re-pack ignores it
