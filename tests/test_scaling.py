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
                            "detail": "runs 2 of 4 decode workers; needs 16 more GPUs on c/h (0/16 GPUs free)"}


def test_below_the_smallest_step_the_replica_is_unplaced_and_the_reason_is_capacity():
    plan = schedule([demand(workers=4, steps=((3,),))], [Cluster("c", (pool("h", 2),))])
    assert plan.placements == [] and len(plan.unplaced) == 1
    stuck = plan.progress[0]["stuck"]
    assert stuck["reason"] == "capacity" and "c/h: decode needs 32 GPUs, 16/16 GPUs free" in stuck["detail"]


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


# --- InPlace with ratio bindings, and adoption, end to end (stacks/Pulumi.example-inplace.yaml) ---

import pytest  # noqa: E402

from modelplane.engine import offline  # noqa: E402
from modelplane.api import load_catalog  # noqa: E402
from modelplane.api.loader import Source, parse_stack_config  # noqa: E402
from modelplane.errors import InputError  # noqa: E402

from helpers import PROM, objects, planned  # noqa: E402


@pytest.fixture(scope="module")
def inplace():
    return planned("example-inplace")


def test_inplace_places_the_largest_ratio_preserving_part_and_sizes_bound_roles(inplace):
    p = next(p for p in inplace.result.plan.placements if p.deployment == "ml/deepseek")
    assert {r: rp.workers for r, rp in p.roles.items()} == {"decode": 3, "prefill": 5}   # 3 decode x 1.5 -> 5
    deployments = objects(inplace, "Deployment")
    assert deployments["deepseek-0-decode"].inputs["spec"]["replicas"] == 3
    assert deployments["deepseek-0-prefill"].inputs["spec"]["replicas"] == 5
    # No endpoint picker as a role (M-c); the one picker per model and cluster is qwen's (KServe, docs/routing.md).
    assert set(deployments) == {"deepseek-0-decode", "deepseek-0-prefill", "qwen-epp"}
    assert objects(inplace, "PodGroup")["deepseek-0"].inputs["spec"]["minMember"] == 8
    row = next(r for r in inplace.result.plan.progress if r["deployment"] == "ml/deepseek")
    assert (row["target"], row["placed"], row["percent"]) == (10, 8, 80.0)
    assert row["stuck"]["detail"] == ("runs 3 of 4 decode and 5 of 6 prefill workers; needs 16 more GPUs on "
                                      "h200-inplace/h200 (0/64 GPUs free)")


def test_the_adopted_object_is_imported_under_its_own_name_and_routing_follows_it(inplace):
    llmis = objects(inplace, "LLMInferenceService")
    assert set(llmis) == {"qwen-legacy"} and llmis["qwen-legacy"].import_id == "ml/qwen-legacy"
    assert not any(r.import_id for r in inplace.records if r.name.rsplit("/", 1)[-1] != "qwen-legacy")
    p = next(p for p in inplace.result.plan.placements if p.deployment == "ml/qwen")
    assert (p.cluster, p.roles["decode"].pool) == ("h200-inplace", "h100")


def test_the_plan_prints_the_import_and_the_rollout(inplace):
    from click.testing import CliRunner

    from modelplane.cli import main

    out = CliRunner().invoke(main, ["plan", "example-inplace"]).output
    assert "import LLMInferenceService ml/qwen-legacy on h200-inplace" in out
    assert "rollout ml/deepseek: 8/10 GPU workers (80%)" in out
    assert "policy rollout-complete (advisory, 1)" in out


def test_an_adopted_replica_is_bound_before_the_fill_like_a_retained_one():
    d = Demand("ml/a", 1, (Role("decode", "", 1, 1, 8),), pinned={0: "far"})
    plan = schedule([Demand("ml/0first", 1, (Role("decode", "", 1, 1, 8),)), d],
                    [Cluster("far", (pool("h", 1),)), Cluster("near", (pool("h", 1),))])
    # without the pin, ml/0first (first by name) would take `far`... the adopted replica keeps it
    assert {p.deployment: p.cluster for p in plan.placements} == {"ml/a": "far", "ml/0first": "near"}


def test_an_adopted_replica_that_does_not_fit_its_cluster_is_reported_as_a_move():
    d = Demand("ml/a", 1, (Role("decode", "", 2, 1, 8),), pinned={0: "far"})
    plan = schedule([d], [Cluster("far", (pool("h", 1),)), Cluster("near", (pool("h", 4),))])
    assert [(m.cluster, m.why) for m in plan.moves] == [("far", "it is adopted there, but far has no room for it "
                                                         "at its shape")]
    assert plan.placements[0].cluster == "near"


BASE = {"name": "m", "namespace": "ml", "model": {"uri": "hf://org/m"}, "replicas": 1, "backend": "native",
        "engine": {"image": "vllm/vllm-openai:v0.10.2"}, "workers": {"count": 4, "topology": {"tensor": 8}},
        "prefill": {"engine": {"image": "vllm/vllm-openai:v0.10.2"}, "workers": {"topology": {"tensor": 8}}}}
BIND = {"mode": "InPlace", "bindings": [{"role": "prefill", "per": "decode", "ratio": 2}]}


def _stack(**deployment):
    cluster = {"name": "c", "existing": {"kubeconfigSecret": "kc", "version": "1.34"},
               "nodePools": [{"name": "h", "class": "h200-8x", "maxNodes": 16}], "queues": [{"namespace": "ml"}]}
    return {"modelplane:kc": {"secure": "x"}, "modelplane:clusters": [cluster],
            "modelplane:deployments": [{**BASE, **deployment}]}


@pytest.mark.parametrize("deployment,path,words", [
    ({"scaling": {"bindings": BIND["bindings"]}}, "scaling.bindings", "only to mode: InPlace"),
    ({"scaling": {"mode": "InPlace", "bindings": [{"role": "prefil", "per": "decode", "ratio": 2}]}},
     "scaling.bindings[0].role", "did you mean 'prefill'"),
    ({"scaling": {"mode": "InPlace", "bindings": [{"role": "decode", "per": "prefill", "ratio": 2}]}},
     "scaling.bindings[0].role", "decode cannot be bound"),
    ({"scaling": {"mode": "InPlace", "bindings": []}}, "scaling.bindings", "prefill has no binding"),
    ({"scaling": {"mode": "InPlace", "bindings": [{"role": "prefill", "per": "router", "ratio": 1},
                                                  {"role": "router", "per": "prefill", "ratio": 1}]},
      "roles": [{"name": "router", "image": "r:v1"}]}, "scaling.bindings", "cycle"),
    ({"scaling": BIND, "prefill": {**BASE["prefill"], "workers": {"count": 3, "topology": {"tensor": 8}}}},
     "prefill.workers.count", "contradicts its binding (8 at 4 decode workers)"),
    ({"scaling": BIND, "autoscaling": [{"role": "prefill", "maxReplicas": 9, "serverAddress": PROM, "query": "q", "threshold": "1"}]},
     "autoscaling[0].role", "an autoscaler would fight them"),
    ({"scaling": BIND, "coordination": {"totalWorkers": 12, "bands": [{"role": "prefill", "min": 10, "max": 50}]}},
     "coordination.bands", "bindings and bands contradict: the bindings give prefill 8 of 12 workers (67%)"),
    ({"adopt": [{"cluster": "c", "kind": "LLMInferenceService", "name": "old"}]}, "adopt[0].kind",
     "as kind Deployment, not LLMInferenceService"),
    ({"adopt": [{"cluster": "cc", "kind": "Deployment", "name": "old"}]}, "adopt[0].cluster", "did you mean 'c'"),
    ({"adopt": [{"cluster": "c", "kind": "Deployment", "name": "old", "replica": 2}]}, "adopt[0].replica",
     "replica 2 does not exist"),
])
def test_bad_bindings_and_adoptions_name_the_field_and_the_fix(deployment, path, words):
    with pytest.raises(InputError) as err:
        parse_stack_config(_stack(**deployment), Source("stacks/Pulumi.t.yaml", None), load_catalog())
    full = f"modelplane:deployments[0].{path}"
    assert any(p.path == full and words in f"{p.message} (fix: {p.fix})" for p in err.value.problems), err.value.render()


def test_valid_inplace_bindings_pass():
    spec = parse_stack_config(_stack(scaling=BIND), Source("stacks/Pulumi.t.yaml", None), load_catalog())
    from modelplane.engine.fleet import demand_from
    d = demand_from(spec.deployments[0])
    assert d.shapes == ((4, 8), (3, 6), (2, 4), (1, 2))     # every step keeps prefill = 2 x decode


def test_scale_order_edges_follow_the_bindings_unless_depends_on_says_otherwise():
    from modelplane.render.order import rank, role_edges

    depth = {"decode": 0, "prefill": 1, "router": 1}
    roles, deps = ["decode", "prefill", "router"], {"router": ["decode", "prefill"]}
    grow = role_edges(roles, deps, depth, True)
    assert grow == {"decode": {"prefill"}, "prefill": set(), "router": {"decode", "prefill"}}
    assert rank(grow) == {"prefill": 0, "decode": 1, "router": 2}
    shrink = role_edges(roles, deps, depth, False)
    assert shrink == {"decode": set(), "prefill": {"decode"}, "router": {"decode", "prefill"}}
    assert role_edges(roles, deps) == {"decode": set(), "prefill": set(), "router": {"decode", "prefill"}}


def test_a_growing_inplace_replica_grows_prefill_before_decode(inplace):
    small = {"deployment": "ml/deepseek", "replica": 0, "cluster": "h200-inplace",
             "roles": {"decode": {"pool": "h200", "nodes": 2, "gpusPerNode": 8, "workers": 2},
                       "prefill": {"pool": "h200", "nodes": 3, "gpusPerNode": 8, "workers": 3}}}
    others = [p.to_json() for p in inplace.result.plan.placements if p.deployment != "ml/deepseek"]
    run = offline.run("example-inplace", None, [small, *others])
    p = next(p for p in run.result.plan.placements if p.deployment == "ml/deepseek")
    assert {r: rp.workers for r, rp in p.roles.items()} == {"decode": 3, "prefill": 5} and run.result.plan.moves == []
    deployments = {k: v for k, v in objects(run, "Deployment").items() if not k.endswith("-epp")}
    assert deployments["deepseek-0-prefill"].urn in deployments["deepseek-0-decode"].dependencies
    assert deployments["deepseek-0-decode"].urn not in deployments["deepseek-0-prefill"].dependencies
    # The order is awaited: every workload waits until it serves (pulumi.com/waitFor), so decode
    # grows only once the prefill it needs is Ready; the plan says so.
    assert all("pulumi.com/skipAwait" not in d.inputs["metadata"]["annotations"] for d in deployments.values())
    assert all(d.inputs["metadata"]["annotations"]["pulumi.com/waitFor"].startswith('["condition=Available"')
               for d in deployments.values())
    from modelplane.output import report
    assert report.document(run, [])["scaleOrder"] == [
        {"deployment": "ml/deepseek", "replica": 0, "cluster": "h200-inplace", "decode": {"from": 2, "to": 3},
         "order": ["prefill", "decode"], "awaited": True}]
    assert report.document(inplace, [])["scaleOrder"] == []


def test_the_plan_calls_the_scale_order_submission_order(tmp_path):
    import json

    from click.testing import CliRunner

    from modelplane.cli import main

    small = {"deployment": "ml/deepseek", "replica": 0, "cluster": "h200-inplace",
             "roles": {"decode": {"pool": "h200", "nodes": 2, "gpusPerNode": 8, "workers": 2},
                       "prefill": {"pool": "h200", "nodes": 3, "gpusPerNode": 8, "workers": 3}}}
    prev = tmp_path / "prev.json"
    prev.write_text(json.dumps({"stack": "example-inplace", "placements": [small]}))
    out = CliRunner().invoke(main, ["plan", "example-inplace", "--previous", str(prev)]).output
    assert ("scale ml/deepseek#0 on h200-inplace: decode 2 -> 3 workers; changes prefill -> decode in that order, "
            "each role's workload awaited Ready before the next") in " ".join(out.split())


def test_the_exact_phase_keeps_a_partially_placed_deployment_and_never_over_commits():
    a = Demand("ml/a", 1, (Role("decode", "", 4, 1, 8),), steps=((3,), (2,), (1,)))
    b = Demand("ml/b", 2, (Role("decode", "", 2, 1, 8),))
    plan = schedule([a, b], [Cluster("c1", (pool("h", 2),)), Cluster("c2", (pool("h", 3),))])
    # the second ml/b fits nowhere, whatever the exact phase does: it places no more, so nothing moves
    assert plan.phase == "fast path (the exact phase found no better plan)" and plan.changed == []
    assert [(p.deployment, p.cluster, shape(p)) for p in plan.placements] == [
        ("ml/a", "c2", {"decode": 3}), ("ml/b", "c1", {"decode": 2})]
    assert plan.free == {("c1", "h"): 0, ("c2", "h"): 0}


def test_inplace_on_the_kserve_backend_sizes_the_llminferenceservice_roles(tmp_path, schema_catalog):
    import yaml as _yaml

    doc = _stack(backend="kserve", engine={}, prefill={"workers": {"topology": {"tensor": 8}}},
                 scaling={"mode": "InPlace", "bindings": [{"role": "prefill", "per": "decode", "ratio": 1.5},
                                                          {"role": "router", "per": "prefill", "ratio": 0.5}]},
                 roles=[{"name": "router", "image": "ghcr.io/example/router:v1"}])
    path = tmp_path / "Pulumi.t.yaml"
    path.write_text(_yaml.safe_dump({"config": doc}))
    run = offline.run("t", path)
    spec = objects(run, "LLMInferenceService")["m-0"].inputs["spec"]
    assert (spec["replicas"], spec["prefill"]["replicas"]) == (4, 6)        # 16 nodes hold 4 + 6
    assert objects(run, "Deployment")["m-0-router"].inputs["spec"]["replicas"] == 3   # ceil(0.5 x 6)
    checked = set()
    for r in run.records:
        if r.type.startswith("kubernetes:") and r.inputs.get("kind"):
            status, line = schema_catalog.report({k: v for k, v in r.inputs.items() if k != "__defaults"})
            assert status in ("ok", "unknown"), line
            checked.add((r.inputs["kind"], status))
    assert {("LLMInferenceService", "ok"), ("Deployment", "ok"), ("PodGroup", "ok")} <= checked


def test_an_adopted_native_workload_keeps_its_name_and_the_autoscaler_targets_it(tmp_path):
    import yaml as _yaml

    doc = _stack(prefill=None, adopt=[{"cluster": "c", "kind": "Deployment", "name": "m-by-hand"}],
                 workers={"count": 1, "topology": {"tensor": 8}},
                 autoscaling=[{"role": "decode", "maxReplicas": 2, "serverAddress": PROM, "query": "q", "threshold": "1"}])
    doc["modelplane:deployments"][0].pop("prefill")
    path = tmp_path / "Pulumi.t.yaml"
    path.write_text(_yaml.safe_dump({"config": doc}))
    run = offline.run("t", path)
    deployment = objects(run, "Deployment")["m-by-hand"]
    assert deployment.import_id == "ml/m-by-hand"
    assert objects(run, "ScaledObject")["m-by-hand"].inputs["spec"]["scaleTargetRef"]["name"] == "m-by-hand"
    assert "m-0-decode" in objects(run, "Service")       # our Service, selecting the pods by label


def test_a_topology_change_surges_what_fits_and_keeps_the_rest_at_its_recorded_shape(tmp_path):
    """A new topology on a full pool: replica 0 surges into the free nodes beside its old self (name
    slot b), replica 1 has no room to surge or roll and keeps running at its recorded shape; the
    plan says so, and nothing dips. The next plan rolls replica 1 into the nodes #0's old shape freed."""
    import json

    import yaml
    from click.testing import CliRunner

    from modelplane.output import report
    from modelplane.cli import main

    cluster = {"name": "c", "existing": {"kubeconfigSecret": "kc", "version": "1.34"},
               "nodePools": [{"name": "h", "class": "h200-8x", "maxNodes": 4}], "queues": [{"namespace": "ml"}]}
    md = {"name": "m", "namespace": "ml", "model": {"uri": "hf://org/m"}, "replicas": 2, "backend": "native",
          "engine": {"image": "vllm/vllm-openai:v0.10.2"}, "workers": {"topology": {"tensor": 8, "pipeline": 2}}}
    path = tmp_path / "Pulumi.t.yaml"
    path.write_text(yaml.safe_dump({"config": {"modelplane:kc": {"secure": "x"}, "modelplane:clusters": [cluster],
                                               "modelplane:deployments": [md]}}))
    topo = {"tensor": 8, "pipeline": 1, "data": 1, "dataLocal": 1}
    old = [{"deployment": "ml/m", "replica": i, "cluster": "c",
            "roles": {"decode": {"pool": "h", "nodes": 1, "gpusPerNode": 8, "workers": 1, "topology": topo}}}
           for i in (0, 1)]
    run = offline.run("t", path, old)
    doc = report.document(run, [])
    assert [(t["replica"], t["how"], t["from"]["shape"], t["to"]["shape"], t["to"].get("slot")) for t in doc["transitions"]] == [
        (0, "surge", "decode 1x1x8 (tensor 8)", "decode 1x2x8 (tensor 8, pipeline 2)", 1),
        (1, "kept", "decode 1x1x8 (tensor 8)", "decode 1x1x8 (tensor 8)", None)]
    assert doc["disruptions"] == []
    lws = {r.inputs["metadata"]["name"]: r.inputs for r in run.records if r.inputs.get("kind") == "LeaderWorkerSet"}
    assert lws["m-0-b-decode"]["spec"]["leaderWorkerTemplate"]["size"] == 2        # the new shape, beside the old
    kept = next(r.inputs for r in run.records if r.inputs.get("kind") == "Deployment")
    assert kept["metadata"]["name"] == "m-1-decode" and "--pipeline-parallel-size=2" not in str(kept)   # as it runs
    prev = tmp_path / "prev.json"
    prev.write_text(json.dumps({"stack": "t", "placements": old}))
    out = " ".join(CliRunner().invoke(main, ["plan", "t", "--config-file", str(path), "--previous", str(prev)]).output.split())
    assert ("surge ml/m#0: decode 1x1x8 (tensor 8) on c -> decode 1x2x8 (tensor 8, pipeline 2) on c (name slot b): "
            "created beside it and awaited Ready, the old deleted at the end of `up`") in out
    assert "kept ml/m#1 at decode 1x1x8 (tensor 8) on c: decode changed shape" in out
    nxt = offline.run("t", path, [p.to_json() for p in run.result.plan.placements])
    assert [(t.replica, t.how, t.step) for t in nxt.result.plan.transitions] == [(1, "roll", 1)]
    assert {p.replica: p.roles["decode"].nodes for p in nxt.result.plan.placements} == {0: 2, 1: 2}
