"""Changes that lose nothing (docs/changes.md): the shape a replica was created with is kept until it
is replaced; a replaced replica surges beside its old self where capacity allows and rolls in
place one at a time beyond that; removed replicas hold their nodes until `up` ends; traffic waits
for the workloads it reaches; outages are reported and refused in production; unpriced capacity
is never $0; production clusters and pools are protected; an unplaceable deployment moves nobody."""
import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

from modelplane.engine import direct, offline
from modelplane.cli import main
from modelplane.scheduler import Cluster, Demand, Placement, Pool, Role, schedule

from helpers import objects, planned

ROOT = Path(__file__).resolve().parents[1]


def _doc(output: str) -> dict:
    """The plan document in a CLI run's output (stderr lines may come before or after it)."""
    return json.JSONDecoder().raw_decode(output[output.index("{"):])[0]


def _prod_changed(tmp_path, prod_json, old: str, new: str, count: int = -1) -> list[str]:
    """The prod stack with OLD replaced by NEW (which must occur) beside prod's plan as --previous:
    the `plan` arguments that compare them."""
    text = (ROOT / "stacks" / "Pulumi.prod.yaml").read_text()
    changed = text.replace(old, new, count)
    assert changed != text, old
    (tmp_path / "Pulumi.prod.yaml").write_text(changed)
    (tmp_path / "prev.json").write_text(json.dumps(prod_json))
    return ["plan", "prod", "--config-file", str(tmp_path / "Pulumi.prod.yaml"), "--previous", str(tmp_path / "prev.json")]


def topo(tensor=8, pipeline=1, data=1, local=1):
    return {"tensor": tensor, "pipeline": pipeline, "data": data, "dataLocal": local}


def placed(key, idx, cluster, pool, nodes, workers=1, gpn=8, t=None, slot=0):
    doc = {"deployment": key, "replica": idx, "cluster": cluster,
           "roles": {"decode": {"pool": pool, "nodes": nodes, "gpusPerNode": gpn, "workers": workers,
                                **({"topology": t} if t else {})}}}
    return {**doc, **({"slot": slot} if slot else {})}


def h200(nodes):
    return Pool("h", "h200-8x", 8, nodes, {}, "infiniband")


def pipelined(key="ml/m", replicas=2, stages=4):
    """A deployment whose workers span `stages` nodes (tensor 8, pipeline `stages`)."""
    return Demand(key, replicas, (Role("decode", "", 1, stages, 8, topology=(8, stages, 1, 1)),))


# ---- 1. the shape a replica was created with ----------------------------------------------------

def test_a_retained_replica_keeps_its_recorded_shape_so_both_replicas_fit():
    """The acceptance scenario: replica 0 runs on 2 nodes (pipeline 2), the topology now needs 4,
    the pool has 6. Replica 0 keeps running as recorded (4 more nodes beside it would not fit once
    replica 1 has its 4), replica 1 is placed at the new shape: both serve."""
    old = Placement.from_json(placed("ml/m", 0, "c", "h", 2, t=topo(pipeline=2)))
    plan = schedule([pipelined()], [Cluster("c", (h200(6),))], [old])
    assert [(p.replica, p.roles["decode"].nodes, p.roles["decode"].topology) for p in plan.placements] == [
        (0, 2, (8, 2, 1, 1)), (1, 4, (8, 4, 1, 1))]
    assert plan.unplaced == [] and plan.free == {("c", "h"): 0}
    assert [(t.replica, t.how) for t in plan.transitions] == [(0, "kept")]
    assert "no room to surge or roll it, so it keeps its recorded shape" in plan.transitions[0].why


def test_placements_record_each_roles_topology_and_read_back_older_plans_without_it():
    plan = schedule([pipelined(replicas=1, stages=2)], [Cluster("c", (h200(4),))])
    doc = plan.placements[0].to_json()
    assert doc["roles"]["decode"]["topology"] == topo(pipeline=2) and "slot" not in doc
    assert Placement.from_json(doc) == plan.placements[0]
    legacy = placed("ml/m", 0, "c", "h", 2)
    assert Placement.from_json(legacy).roles["decode"].topology == ()


# ---- 2. make before break ------------------------------------------------------------------------

def test_a_new_shape_surges_beside_the_old_one_where_there_is_room():
    old = Placement.from_json(placed("ml/m", 0, "c", "h", 2, t=topo(pipeline=2)))
    plan = schedule([pipelined(replicas=1)], [Cluster("c", (h200(6),))], [old])
    (p,) = plan.placements
    assert (p.roles["decode"].nodes, p.slot) == (4, 1)          # the other name slot: both exist during `up`
    assert plan.held == {("c", "h"): 16} and plan.free == {("c", "h"): 0}    # the old one's GPUs until `up` ends
    assert [(t.how, t.before, t.after) for t in plan.transitions] == [("surge", "c", "c")]
    again = schedule([pipelined(replicas=1)], [Cluster("c", (h200(6),))], plan.placements)
    assert again.transitions == [] and again.placements == plan.placements and again.held == {}


def test_without_room_to_surge_replicas_roll_in_place_one_at_a_time_in_order():
    """A full pool and a topology change at the same size: every replica is replaced in place."""
    olds = [Placement.from_json(placed("ml/m", i, "c", "h", 1, t=topo(tensor=4, local=2))) for i in range(3)]
    plan = schedule([pipelined(replicas=3, stages=1)], [Cluster("c", (h200(3),))], olds)
    assert [(t.replica, t.how, t.step) for t in plan.transitions] == [(0, "roll", 1), (1, "roll", 2), (2, "roll", 3)]
    assert all(p.slot == 0 and p.roles["decode"].topology == (8, 1, 1, 1) for p in plan.placements)   # same names


def test_a_roll_frees_what_the_next_replica_surges_into():
    """Replica 0 rolls from 2 nodes to 1; the node it frees lets replica 1 surge beside itself."""
    olds = [Placement.from_json(placed("ml/m", i, "c", "h", 2, t=topo(pipeline=2))) for i in range(3)]
    plan = schedule([pipelined(replicas=3, stages=1)], [Cluster("c", (h200(6),))], olds)
    assert [(t.replica, t.how) for t in plan.transitions] == [(0, "roll"), (1, "surge"), (2, "roll")]


def test_a_replica_whose_roles_changed_cannot_stay_and_is_removed_when_nothing_fits():
    old = Placement.from_json(placed("ml/m", 0, "c", "h", 4, t=topo(pipeline=4)))
    disagg = Demand("ml/m", 1, (Role("decode", "", 1, 4, 8, topology=(8, 4, 1, 1)),
                                Role("prefill", "", 1, 2, 8, topology=(8, 2, 1, 1))))
    plan = schedule([disagg], [Cluster("c", (h200(5),))], [old])
    assert plan.placements == [] and [u.replica for u in plan.unplaced] == [0]
    assert [(t.how, t.after) for t in plan.transitions] == [("removed", None)]


def test_a_moved_replica_holds_its_old_nodes_and_takes_the_other_slot_on_its_own_cluster():
    """Its pool no longer fits: it is re-placed on another pool of the same cluster while the old
    one still runs there (deleted at the end of `up`), so its objects take the other name slot."""
    old = Placement.from_json(placed("ml/m", 0, "c", "a", 1, t=topo()))
    pools = (Pool("a", "l40s", 8, 2, {"gpu": {"product": "L40S"}}, "tcp"),
             Pool("b", "h200-8x", 8, 2, {"gpu": {"product": "H200"}}, "tcp"))
    want = Demand("ml/m", 1, (Role("decode", 'gpu.product == "H200"', 1, 1, 8, topology=(8, 1, 1, 1)),))
    plan = schedule([want], [Cluster("c", pools)], [old])
    (p,) = plan.placements
    assert (p.cluster, p.roles["decode"].pool, p.slot) == ("c", "b", 1)
    assert plan.held == {("c", "a"): 8} and [(t.how, t.after) for t in plan.transitions] == [("moved", "c")]


# ---- 7. stable without --previous ----------------------------------------------------------------

def test_an_unplaceable_deployment_moves_no_other_replica():
    """F7: the exact phase runs because something is left unplaced; when it places no more, the
    fast path stands."""
    clusters = [Cluster("c1", (h200(3),)), Cluster("c2", (h200(3),))]
    others = [Demand("a/x", 3, (Role("decode", "", 1, 1, 8),)), Demand("b/y", 1, (Role("decode", "", 2, 1, 8),))]
    huge = Demand("z/wide", 1, (Role("decode", "", 1, 16, 8),))
    alone = schedule(others, clusters)
    plan = schedule([*others, huge], clusters)
    assert [u.deployment for u in plan.unplaced] == ["z/wide"] and plan.changed == []
    assert plan.placements == alone.placements


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(1, 3), st.integers(1, 3)), min_size=1, max_size=5),
       st.lists(st.integers(1, 6), min_size=1, max_size=3))
def test_adding_a_deployment_that_fits_nowhere_never_changes_the_others(shapes, sizes):
    clusters = [Cluster(f"c{i}", (h200(n),)) for i, n in enumerate(sizes)]
    others = [Demand(f"ns/d{i}", r, (Role("decode", "", 1, nodes, 8),)) for i, (r, nodes) in enumerate(shapes)]
    huge = Demand("zz/wide", 1, (Role("decode", "", 1, max(sizes) + 1, 8),))
    assert schedule([*others, huge], clusters).placements == schedule(others, clusters).placements


def test_prod_with_an_unplaceable_deployment_places_the_others_as_before(tmp_path, prod_run):
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.prod.yaml").read_text())
    wide = {"name": "deepseek-r1-wideep", "namespace": "chat", "model": {"uri": "hf://deepseek-ai/DeepSeek-R1"},
            "replicas": 1, "workers": {"count": 1, "topology": {"tensor": 8, "data": 16, "dataLocal": 1}}}
    stack["config"]["modelplane:deployments"].append(wide)
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(stack))
    base, more = prod_run, direct.run("prod", path)
    assert [u.deployment for u in more.result.plan.unplaced] == ["chat/deepseek-r1-wideep"]
    assert more.result.plan.placements == base.result.plan.placements and more.result.plan.changed == []


# ---- the program: what `up` is told ---------------------------------------------------------------

@pytest.fixture(scope="module")
def prod_json():
    return json.loads(CliRunner().invoke(main, ["plan", "prod", "--json"]).output)


def test_every_workload_is_awaited_and_traffic_depends_on_the_workloads_it_reaches(prod_json):
    res = {r["name"]: r for r in prod_json["resources"]}
    kinds = {r["name"]: r["type"].rsplit(":", 1)[-1] for r in prod_json["resources"]}
    routes = [r for r in prod_json["resources"] if r["type"].endswith(":HTTPRoute")]
    records = [r for r in prod_json["resources"] if r["type"] == "aws:route53/record:Record"
               and not r["name"].startswith("gateway-")]
    assert routes and records
    for r in routes + records:
        assert r.get("dependsOn"), r["name"]
        assert all(kinds[d] == "LLMInferenceService" or kinds[d] == "Deployment" for d in r["dependsOn"]
                   if d in kinds and kinds[d] in ("LLMInferenceService", "Deployment", "LeaderWorkerSet"))
    # chat on eks-use1 waits for exactly the llama replicas there, and for its same-named health
    # check (shown since dependsOn is keyed by URN, runtime review N7)
    # and for the KServe Deployments those replicas roll (their observers, C2)
    # and for the drain that waits for chat's routes there (C5: the record goes before them when
    # eks-use1 leaves chat, the drain's TTL between them)
    # (eks-use1 carries two llama replicas, so chat has a record per replica there, review N11)
    assert res["chat-chat-eks-use1-chat-llama-70b-0"]["dependsOn"] == [
        "chat-chat-eks-use1-chat-llama-70b-0-calculated", "chat-chat-eks-use1-chat-llama-70b-0-drain",
        "eks-use1/chat/deployment/llama-70b-0-kserve", "eks-use1/chat/deployment/llama-70b-2-kserve",
        "eks-use1/chat/llminferenceservice/llama-70b-0", "eks-use1/chat/llminferenceservice/llama-70b-2"]
    assert res["chat-chat-eks-use1-chat-llama-70b-0-drain"]["dependsOn"] == ["eks-use1/chat/httproute/chat",
                                                            "eks-use1/chat/httproute/chat-health",
                                                            "eks-use1/chat/httproute/chat-hop",
                                                            "eks-use1/chat/httproute/chat-http"]
    assert set(res["eks-use1/chat/httproute/chat"]["dependsOn"]) >= {"eks-use1/chat/llminferenceservice/llama-70b-0",
                                                                     "eks-use1/chat/llminferenceservice/llama-70b-2"}
    assert res["eks-use1/search/deployment/qwen3-32b-0-decode"]["deployment"] == "search/qwen3-32b"


# Acceptance of the ordering (issue #43) on `plan prod --json`: what a workload's Ready needs comes
# before the workload; what needs the workload Ready comes after it; nothing closes a loop.
REPLICA_WORKLOADS = ("LLMInferenceService", "LeaderWorkerSet")


@pytest.fixture(scope="module")
def prod_run():
    return planned("prod", engine="direct")



def test_no_inference_pool_waits_for_an_llm_inference_service(prod_json):
    """KServe keeps a service whose pool.ref names a missing pool NotReady (kserve@v0.20.0
    pkg/controller/v1alpha2/llmisvc/router.go L706-715), so a pool after its services never exists."""
    kinds = {r["name"]: r["type"].rsplit(":", 1)[-1] for r in prod_json["resources"]}
    pools = [r for r in prod_json["resources"] if r["type"].endswith(":InferencePool")]
    assert len(pools) >= 6
    for pool in pools:
        assert not [d for d in pool.get("dependsOn", ()) if kinds.get(d) in REPLICA_WORKLOADS], pool["name"]


def test_every_llm_inference_service_with_a_pool_ref_depends_on_its_pool_and_picker(prod_json, prod_run):
    deps = {r["name"]: set(r.get("dependsOn", ())) for r in prod_json["resources"]}
    refs = {name: r.inputs["spec"]["router"]["scheduler"]["pool"]["ref"]["name"]
            for name, r in {r.name: r for r in prod_run.records if r.type.endswith(":LLMInferenceService")}.items()
            if ((r.inputs["spec"].get("router") or {}).get("scheduler") or {}).get("pool")}
    assert len(refs) == 7         # llama 3, deepseek 2, mistral 2: every KServe replica of prod
    for name, ref in refs.items():
        cluster, ns, _, _ = name.split("/")
        picker = ref.removesuffix("-pool") + "-epp"
        assert {f"{cluster}/{ns}/inferencepool/{ref}", f"{cluster}/{ns}/service/{picker}",
                f"{cluster}/{ns}/deployment/{picker}"} <= deps[name], name
    # the P/D twin (v1alpha2, same name) is a dependency too: by key in the graph
    svc = {r.name: r for r in prod_run.records}["eks-use1/chat/llminferenceservice/deepseek-r1-0"]
    twins = [r.urn for r in prod_run.records if r.name == "eks-use1/chat/inferencepool/deepseek-r1-pool"]
    assert len(twins) == 2 and set(twins) <= set(svc.dependencies)


def test_the_prod_plan_has_no_dependency_cycle(prod_run):
    # By URN: names repeat across types (a Route 53 record and its health check share one).
    deps = {r.urn: r.dependencies for r in prod_run.records}
    state: dict[str, int] = {}

    def visit(name, path):
        assert state.get(name) != 1, " -> ".join([*path, name])
        if state.get(name) == 2:
            return
        state[name] = 1
        for d in deps.get(name, ()):
            visit(d, [*path, name])
        state[name] = 2
    for name in sorted(deps):
        visit(name, [])


def test_no_dns_record_of_an_http01_name_depends_on_a_workload(prod_json, prod_run):
    """gke-euw4 proves support.inference.example.com over HTTP-01 (stacks/
    Pulumi.infra-gke-europe-west4.yaml): the challenge needs the record, the https listener needs
    the certificate (envoyproxy/gateway@v1.8.1 internal/gatewayapi/validate.go L500-505) and the
    services' Ready needs the listener (kserve@v0.20.0 router_discovery.go L633-648)."""
    http01 = {c for c, inv in prod_run.result.inventories.items()
              if (((inv.get("gateway") or {}).get("tls")) or {}).get("acme") == "http01"}
    assert http01 == {"gke-euw4"}
    kinds = {r["name"]: r["type"].rsplit(":", 1)[-1] for r in prod_json["resources"]}
    deps = {r["name"]: r.get("dependsOn", ()) for r in prod_json["resources"]}
    # gke-euw4 carries two mistral replicas: a record per replica (review N11), setIdentifier <cluster>/<replica>
    records = [r for r in prod_run.records if r.type == "aws:route53/record:Record"
               and r.inputs.get("setIdentifier", "").partition("/")[0] in http01]
    assert [r.inputs["name"] for r in records] == ["support.inference.example.com"] * 2
    for r in records:
        # the Gateway, and the record's own CALCULATED health check
        assert set(deps[r.name]) == {"gateway-gke-euw4", f"{r.name}-calculated"}
        assert not [d for d in deps[r.name] if kinds.get(d) in (*REPLICA_WORKLOADS, "Deployment", "DeploymentPatch",
                                                               "LeaderWorkerSetPatch")]
    # the DNS-01 clusters' records still wait for their workloads
    assert set(deps["chat-reasoning-gke-usc1"]) == {"gke-usc1/chat/llminferenceservice/deepseek-r1-1",
                                                     "gke-usc1/chat/leaderworkerset/deepseek-r1-1-kserve-mn",
                                                     "gke-usc1/chat/deployment/deepseek-r1-1-kserve-prefill",
                                                     "chat-reasoning-gke-usc1-calculated",  # its health check (N4)
                                                     "chat-reasoning-gke-usc1-drain"}    # and its routes' drain (C5)
    # the HTTP-01 record has no drain: it cannot wait for the routes
    assert [f"{r.name}-drain" in deps for r in records] == [False, False] and "chat-chat-gke-usc1-drain" in deps


def test_every_resource_claim_template_is_replaced_delete_first_on_a_spec_change(prod_json):
    """pulumi-kubernetes asks for delete-first only for its own force-new fields (provider.go
    L1645-1658 at v4.32.0); a same-name create-first replacement fails AlreadyExists."""
    rcts = [r for r in prod_json["resources"] if r["type"].endswith(":ResourceClaimTemplate")]
    assert rcts
    for r in rcts:
        assert (r.get("replaceOnChanges"), r.get("deleteBeforeReplace")) == (["spec"], True), r["name"]


def test_the_wiring_reads_what_nodes_are_not_who_rendered_them():
    """A pool labelled with its deployment is not traffic: it waits for nothing of the workload; the
    service that names it waits for it and for the picker its pool names; a route still waits."""
    from modelplane.render.graph import Graph, Node
    from modelplane.render.rollout import await_pools, await_traffic

    g = Graph()

    def obj(kind, name, spec=None, **labels):
        return Node(f"kubernetes:x/v1:{kind}", f"c/ml/{kind.lower()}/{name}", {
            "kind": kind, "metadata": {"name": name, "namespace": "ml", "labels": labels}, "spec": spec or {}},
            cluster="c")
    ref = {"router": {"scheduler": {"pool": {"ref": {"name": "m-pool"}}}}}
    work = g.add(obj("LLMInferenceService", "m-0", ref, **{"modelplane.ai/deployment": "m", "modelplane.ai/replica": "0"}))
    other = g.add(obj("LLMInferenceService", "n-0", **{"modelplane.ai/deployment": "n", "modelplane.ai/replica": "0"}))
    picker = g.add(obj("Deployment", "m-epp", {"selector": {"matchLabels": {"app": "m-epp"}}},
                       **{"modelplane.ai/deployment": "m"}))
    picker_svc = g.add(obj("Service", "m-epp", {"selector": {"app": "m-epp"}}))
    pool = g.add(obj("InferencePool", "m-pool", {"endpointPickerRef": {"name": "m-epp"}},
                     **{"modelplane.ai/deployment": "m"}))
    route = g.add(obj("HTTPRoute", "svc", **{"modelplane.ai/service": "svc"}))
    await_pools(g)
    await_traffic(g, {"ml/svc": {"hostname": None, "deployments": ["ml/m"]}})
    assert g.nodes[pool].depends_on == () and g.nodes[picker].depends_on == ()
    assert set(g.nodes[work].depends_on) == {pool, picker_svc, picker}
    assert g.nodes[other].depends_on == () and g.nodes[route].depends_on == (work,)


def _single(tmp_path, md_extra=None, replicas=2, max_nodes=4, topology=None, production=False, name="t"):
    cluster = {"name": "c", "existing": {"kubeconfigSecret": "kc", "version": "1.34"},
               "nodePools": [{"name": "h", "class": "h200-8x", "maxNodes": max_nodes}], "queues": [{"namespace": "ml"}]}
    md = {"name": "m", "namespace": "ml", "model": {"uri": "hf://org/m"}, "replicas": replicas,
          "workers": {"topology": topology or {"tensor": 8}}, **(md_extra or {})}
    config = {"modelplane:kc": {"secure": "x"}, "modelplane:clusters": [cluster], "modelplane:deployments": [md]}
    if production:
        config["modelplane:production"] = True
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    return path


def test_a_roll_replaces_in_place_old_first_and_the_engines_record_the_same_options(tmp_path):
    path = _single(tmp_path, max_nodes=2, topology={"tensor": 8})
    old = [placed("ml/m", i, "c", "h", 1, t=topo(tensor=4, local=2)) for i in (0, 1)]   # same 8 GPUs/node, new topology
    fast, real = direct.run("t", path, old), offline.run("t", path, old)
    from test_engines import assert_same
    assert_same(fast, real)
    svc = objects(fast, "LLMInferenceService")
    for i in (0, 1):
        r = svc[f"m-{i}"]
        assert (r.delete_before_replace, r.replace_on_changes) == (True, ("spec",))
    assert svc["m-0"].urn in svc["m-1"].dependencies          # step 2 waits for step 1
    assert [(t.replica, t.how, t.step) for t in fast.result.plan.transitions] == [(0, "roll", 1), (1, "roll", 2)]


def test_a_surge_takes_the_other_slot_and_the_engines_agree(tmp_path):
    path = _single(tmp_path, replicas=1, max_nodes=4, topology={"tensor": 8, "pipeline": 2})
    old = [placed("ml/m", 0, "c", "h", 1, t=topo())]
    fast, real = direct.run("t", path, old), offline.run("t", path, old)
    from test_engines import assert_same
    assert_same(fast, real)
    names = set(objects(fast, "PodGroup")) | set(objects(fast, "LLMInferenceService"))
    assert names == {"m-0-b"}
    assert fast.result.plan.placements[0].slot == 1


# ---- 3. disruptions are never silent -------------------------------------------------------------

def test_a_single_replica_that_must_roll_is_an_outage_the_production_gate_refuses(tmp_path):
    path = _single(tmp_path, replicas=1, max_nodes=2, topology={"tensor": 8, "pipeline": 2}, production=True)
    prev = tmp_path / "prev.json"
    prev.write_text(json.dumps({"stack": "t", "placements": [placed("ml/m", 0, "c", "h", 1, t=topo())]}))
    result = CliRunner().invoke(main, ["plan", "t", "--config-file", str(path), "--previous", str(prev), "--json"])
    assert result.exit_code == 1
    doc = _doc(result.output)
    assert doc["disruptions"] == [{"deployment": "ml/m", "servingBefore": 1, "servingDuring": 0, "replicas": 1,
                                   "cause": doc["disruptions"][0]["cause"]}]
    assert doc["disruptions"][0]["cause"].startswith("#0 roll: decode changed shape")
    (v,) = [v for v in doc["policy"]["violations"] if v["policy"] == "no-outage"]
    assert v["level"] == "mandatory" and v["resource"] == "ml-m" and "serves 0/1 replicas" in v["message"]
    text = CliRunner().invoke(main, ["plan", "t", "--config-file", str(path), "--previous", str(prev)]).output
    assert "! deployment ml/m: serving during change: 0/1 (outage): #0 roll" in " ".join(text.split())
    allowed = _single(tmp_path, {"allowDisruption": True}, replicas=1, max_nodes=2,
                      topology={"tensor": 8, "pipeline": 2}, production=True, name="u")
    ok = CliRunner().invoke(main, ["plan", "t", "--config-file", str(allowed), "--previous", str(prev), "--json"])
    doc = _doc(ok.output)
    assert not [v for v in doc["policy"]["violations"] if v["policy"] == "no-outage"]
    assert doc["disruptions"][0]["allowed"] is True


def test_prod_topology_change_keeps_a_replica_serving_and_says_how(tmp_path, prod_json):
    """The user trial's F1: deepseek-r1 decode {tensor 8, data 2} -> {tensor 8} on prod. One replica
    surges where there is room, the other rolls in place: 1/2 serve, reported; the gate passes."""
    args = _prod_changed(tmp_path, prod_json, "workers: {count: 1, topology: {tensor: 8, data: 2, dataLocal: 1}}",
                         "workers: {count: 1, topology: {tensor: 8}}")
    result = CliRunner().invoke(main, [*args, "--json", "--report", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    doc = _doc(result.output)
    assert sorted((t["replica"], t["how"]) for t in doc["transitions"]) == [(0, "surge"), (1, "roll")]
    assert [(d["deployment"], d["servingDuring"], d["servingBefore"]) for d in doc["disruptions"]] == [
        ("chat/deepseek-r1", 1, 2)]
    assert all(d["servingDuring"] >= 1 for d in doc["disruptions"])
    reps = {r["replica"]: r for r in doc["replicaChanges"] if r["deployment"] == "chat/deepseek-r1"}
    assert reps[0]["change"] == "surged" and reps[1]["change"] == "rolled"
    assert "1 -> 1 workers" not in json.dumps(doc["replicaChanges"])
    assert doc["upOrder"][0].startswith("InferencePools and endpoint pickers first")
    assert doc["upOrder"][1].startswith("create and await Ready: chat/deepseek-r1#0")
    from bs4 import BeautifulSoup
    page = BeautifulSoup((tmp_path / "r.html").read_text(), "html.parser")
    assert "serving during change: 1/2" in page.select_one("#disruptions").text
    assert {tr["data-how"] for tr in page.select("#transitions tr[data-how]")} == {"surge", "roll"}


# ---- 4. traffic delta ------------------------------------------------------------------------------

def test_previous_shows_how_each_services_traffic_moves(tmp_path, prod_json):
    args = _prod_changed(tmp_path, prod_json, "      replicas: 3\n      clusterSelector",
                         "      replicas: 2\n      clusterSelector", 1)
    out = CliRunner().invoke(main, [*args, "--json", "--report", str(tmp_path / "r.html")]).output
    doc = _doc(out)
    (chat,) = doc["trafficDelta"]
    was = next(s["clusters"] for s in prod_json["services"] if s["service"] == "chat/chat")
    assert chat["service"] == "chat/chat" and chat["before"] == was and was["eks-use1"] > was["gke-usc1"]
    assert chat["after"] == {"eks-use1": 500, "gke-usc1": 500}
    out = " ".join(CliRunner().invoke(main, args).output.split())
    moved = (f"traffic chat/chat: eks-use1 {was['eks-use1'] / 10:.1f}% -> 50.0%, "
             f"gke-usc1 {was['gke-usc1'] / 10:.1f}% -> 50.0%")
    assert moved in out
    from bs4 import BeautifulSoup
    page = BeautifulSoup((tmp_path / "r.html").read_text(), "html.parser")
    assert f"eks-use1 {was['eks-use1'] / 10:.1f}% -> 50.0%" in page.select_one("#traffic-delta tr[data-service='chat/chat']").text


# ---- 5. unpriced is never $0 -----------------------------------------------------------------------

def test_a_move_to_an_unpriced_region_is_never_a_saving_and_fails_a_budget_as_unpriced(tmp_path):
    before = CliRunner().invoke(main, ["plan", "dev", "--json"]).output
    (tmp_path / "dev.json").write_text(before)
    moved = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text().replace("us-central1", "us-east4")
    (tmp_path / "Pulumi.dev.yaml").write_text(moved)
    budget = tmp_path / "budget.json"
    budget.write_text(json.dumps({"cost-budget": {"enforcementLevel": "mandatory", "maxHourlyCost": 1000}}))
    args = ["plan", "dev", "--config-file", str(tmp_path / "Pulumi.dev.yaml"), "--previous", str(tmp_path / "dev.json"),
            "--policy-config", str(budget)]
    result = CliRunner().invoke(main, [*args, "--json", "--report", str(tmp_path / "r.html")])
    doc = _doc(result.output)
    stack = doc["costDelta"]["stack"]
    assert stack["after"]["max"] == 0 and stack["unpricedNodes"] == {"before": 0, "after": 4}   # two 4-GPU prefill workers share a node
    assert stack["priced"] is False
    (v,) = [v for v in doc["policy"]["violations"] if v["policy"] == "cost-budget"]
    assert v["level"] == "mandatory" and "none of the stack's capacity is priced: 4 unpriced nodes" in v["message"]
    assert "dev-gke/h100, dev-gke/l4" in v["message"] and "`modelplane prices refresh --regions us-east4`" in v["message"]
    text = " ".join(CliRunner().invoke(main, args).output.split())
    assert "cost stack dev: $108/h -> unpriced (4 nodes) (change not known: 4 nodes unpriced" in text
    assert "$0.00" not in text.split("changes against")[1]
    from bs4 import BeautifulSoup
    page = BeautifulSoup((tmp_path / "r.html").read_text(), "html.parser")
    row = page.select_one("#cost-delta tr[data-row=stack]").text
    assert "unpriced (4 nodes)" in row and "unknown" in row and "$0.00" not in row


def test_a_budget_below_the_priced_part_fails_and_names_the_unpriced_pools(lab):
    from modelplane.policy import evaluate

    found = evaluate(lab, {"cost-budget": {"enforcementLevel": "mandatory", "maxHourlyCost": 1_000_000}})
    (v,) = [v for v in found if v["policy"] == "cost-budget"]
    assert "unpriced nodes" in v["message"] and "could exceed the budget of $1,000,000/hour" in v["message"]


# ---- 6. production protected -----------------------------------------------------------------------

def test_production_clusters_and_gpu_pools_are_protected_and_the_opt_in_lifts_it(tmp_path):
    """And the KServe CRD release: its chart ships the LLMInferenceService CRD without
    `helm.sh/resource-policy: keep` (kserve@v0.20.0 charts/kserve-llmisvc-crd/templates/
    serving.kserve.io_llminferenceservices.yaml L1-7), so `destroy` would delete every workload."""
    doc = json.loads(CliRunner().invoke(main, ["plan", "infra-eks-us-east-1", "--json"]).output)
    protected = sorted(r["name"] for r in doc["resources"] if r.get("protect"))
    assert protected == ["eks-use1", "eks-use1-h100", "eks-use1-h200", "eks-use1-kserve-llmisvc-crd",
                         "eks-use1-l40s"]      # not the system pool
    dev = json.loads(CliRunner().invoke(main, ["plan", "dev", "--json"]).output)
    assert sorted(r["name"] for r in dev["resources"] if r.get("protect")) == ["dev-gke-h100", "dev-gke-l4"]   # carry replicas
    text = (ROOT / "stacks" / "Pulumi.infra-eks-us-east-1.yaml").read_text()
    lifted = text.replace("  modelplane:production: true\n", "  modelplane:production: true\n  modelplane:unprotect: [eks-use1/l40s]\n")
    (tmp_path / "infra.yaml").write_text(lifted)
    doc = json.loads(CliRunner().invoke(main, ["plan", "infra-eks-us-east-1", "--config-file", str(tmp_path / "infra.yaml"),
                                               "--json"]).output)
    assert sorted(r["name"] for r in doc["resources"] if r.get("protect")) == [
        "eks-use1", "eks-use1-h100", "eks-use1-h200", "eks-use1-kserve-llmisvc-crd"]


def test_deleting_a_protected_pool_is_refused_until_an_up_unprotects_it(tmp_path):
    before = CliRunner().invoke(main, ["plan", "infra-eks-us-east-1", "--json"]).output
    (tmp_path / "prev.json").write_text(before)
    text = (ROOT / "stacks" / "Pulumi.infra-eks-us-east-1.yaml").read_text()
    start = text.index("        - {name: l40s")
    gone = text[:start] + text[text.index("\n", start) + 1:]
    (tmp_path / "infra.yaml").write_text(gone)
    args = ["plan", "infra-eks-us-east-1", "--config-file", str(tmp_path / "infra.yaml"), "--previous",
            str(tmp_path / "prev.json")]
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 1
    (c,) = [c for c in _doc(result.output)["changes"] if c["name"] == "eks-use1-l40s" and c["type"] == "aws:eks/nodeGroup:NodeGroup"]
    assert c["action"] == "delete" and c["protected"] and c["destructive"]
    assert "`up` refuses it; list it in modelplane:unprotect and run `up` once before this change" in result.output
    # after an `up` that lifted it, the delete goes through, still shown as destructive
    lifted = json.loads(before)
    for r in lifted["resources"]:
        if r["name"] == "eks-use1-l40s" and r["type"] == "aws:eks/nodeGroup:NodeGroup":
            del r["protect"]
    (tmp_path / "prev.json").write_text(json.dumps(lifted))
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    (c,) = [c for c in _doc(result.output)["changes"] if c["name"] == "eks-use1-l40s" and c["type"] == "aws:eks/nodeGroup:NodeGroup"]
    assert c["destructive"] and not c.get("protected")


def test_an_engine_args_change_rolls_replicas_one_at_a_time_each_awaited(tmp_path, prod_json):
    """F1(3): new engine args update every LLMInferenceService of the deployment; the replicas that
    already run wait for each other, so one rolls at a time and the others serve."""
    args = _prod_changed(tmp_path, prod_json, "--max-model-len=65536", "--max-model-len=32768")
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    doc = _doc(result.output)
    # N11: llama-70b#1 is alone on gke-usc1, so while it rolls chat's DNS share there fails until it is
    # back or DNS drops the cluster: the view says so, with the detection window (3 x 30 s + 60 s TTL),
    # and when the share returns (3 passed checks). #0 and #2 share eks-use1, whose record is one per
    # replica: each fails nothing while it rolls, and its own record leaves DNS after the window.
    assert doc["disruptions"] == [{"deployment": "chat/llama-70b", "servingBefore": 3, "servingDuring": 2, "replicas": 3,
                                   "cause": "#0, #1, #2 roll one at a time: their workload changes, each awaited Ready "
                                            "before the next; a replica alone on its cluster takes that cluster's "
                                            "DNS share with it while it restarts (chat/chat 33% on gke-usc1): those "
                                            "requests fail until it is Ready again or DNS drops the cluster, about "
                                            "150 s (3 failed checks 30 s apart, then the TTL), whichever comes first; "
                                            "a dropped share goes to the other clusters and returns about 90 s after "
                                            "the replica is Ready (3 passed checks); a replica beside others on its "
                                            "cluster fails no request while it restarts (its picker sends them to the "
                                            "others), and its own DNS record (chat/chat on eks-use1) leaves after about "
                                            "150 s, moving its part to every record left, until about 90 s after it "
                                            "is Ready",
                                   "detectionSeconds": 150}]
    res = {r["name"]: r for r in doc["resources"]}
    assert "eks-use1/chat/llminferenceservice/llama-70b-0" in res["gke-usc1/chat/llminferenceservice/llama-70b-1"]["dependsOn"]
    assert "gke-usc1/chat/llminferenceservice/llama-70b-1" in res["eks-use1/chat/llminferenceservice/llama-70b-2"]["dependsOn"]


def test_an_engine_args_change_of_a_single_production_replica_is_an_outage_plan_previous_refuses(tmp_path):
    path = _single(tmp_path, replicas=1, production=True)
    first = CliRunner().invoke(main, ["plan", "t", "--config-file", str(path), "--json"])
    (tmp_path / "prev.json").write_text(json.dumps(_doc(first.output)))
    changed = _single(tmp_path, {"engine": {"args": ["--max-model-len=8192"]}}, replicas=1, production=True, name="u")
    result = CliRunner().invoke(main, ["plan", "t", "--config-file", str(changed), "--previous",
                                       str(tmp_path / "prev.json"), "--json"])
    assert result.exit_code == 1
    doc = _doc(result.output)
    assert [(d["servingDuring"], d["servingBefore"]) for d in doc["disruptions"]] == [(0, 1)]
    (v,) = [v for v in doc["policy"]["violations"] if v["policy"] == "no-outage"]
    assert v["level"] == "mandatory" and "roll one at a time" in v["message"]


@pytest.mark.parametrize("recorded", [True, False], ids=["fresh-previous", "previous-without-shapes"])
def test_a_replica_kept_at_its_recorded_shape_passes_the_production_gate(tmp_path, prod_json, recorded):
    """deepseek-r1 decode data 2 -> 3 on prod: no room to surge #0 or roll it beside #1's roll, so it
    is kept at {tensor 8, data 2} on its 2 nodes, and `topology-fits` judges it by that shape. A
    previous plan written before shapes were recorded gives the same: the shape is read back from
    its GPUs per node and nodes per worker with the deployment's tensor and pipeline."""
    text = (ROOT / "stacks" / "Pulumi.prod.yaml").read_text()
    changed = text.replace("workers: {count: 1, topology: {tensor: 8, data: 2, dataLocal: 1}}",
                           "workers: {count: 1, topology: {tensor: 8, data: 3, dataLocal: 1}}")
    assert changed != text
    (tmp_path / "Pulumi.prod.yaml").write_text(changed)
    prev = json.loads(json.dumps(prod_json))
    if not recorded:
        for p in prev["placements"]:
            for rp in p["roles"].values():
                del rp["topology"]
    (tmp_path / "prev.json").write_text(json.dumps(prev))
    result = CliRunner().invoke(main, ["plan", "prod", "--config-file", str(tmp_path / "Pulumi.prod.yaml"),
                                       "--previous", str(tmp_path / "prev.json"), "--json"])
    assert result.exit_code == 0, result.output
    doc = _doc(result.output)
    assert sorted((t["replica"], t["how"]) for t in doc["transitions"]) == [(0, "kept"), (1, "roll")]
    assert not [v for v in doc["policy"]["violations"] if v["policy"] in ("topology-fits", "no-outage")]
    (kept,) = [p for p in doc["placements"] if p["deployment"] == "chat/deepseek-r1" and p["replica"] == 0]
    assert kept["roles"]["decode"]["topology"] == {"tensor": 8, "pipeline": 1, "data": 2, "dataLocal": 1}
    assert kept["roles"]["decode"]["nodes"] == 2


def test_an_in_place_change_of_multi_node_kserve_replicas_is_an_outage_the_gate_refuses(tmp_path, prod_json):
    """deepseek-r1's engine args change: KServe reports Ready before its LeaderWorkerSet rolls
    (kserve@v0.20.0 workload_multi_node.go L82-85, L113-136), so the one-at-a-time chain does not
    hold and both groups restart together (LWS maxSurge 0): 0/2, refused by `no-outage`."""
    old = "workers: {count: 1, topology: {tensor: 8, data: 2, dataLocal: 1}}\n      engine:\n        args: [--max-model-len=131072,"
    result = CliRunner().invoke(main, [*_prod_changed(tmp_path, prod_json, old, old.replace("131072", "65536")), "--json"])
    assert result.exit_code == 1
    doc = _doc(result.output)
    (row,) = doc["disruptions"]
    assert (row["deployment"], row["servingBefore"], row["servingDuring"]) == ("chat/deepseek-r1", 2, 0)
    assert row["cause"].startswith("#0, #1 restart at once: their multi-node LLMInferenceService changes")
    assert [v for v in doc["policy"]["violations"] if v["policy"] == "no-outage" and v["level"] == "mandatory"]


# C2 (issue #43): KServe reports Ready at the new generation before its Deployment or LeaderWorkerSet
# rolls (kserve@v0.20.0 pkg/controller/v1alpha2/llmisvc/controller.go L240-252, workload_single_node.go
# L83-86 and L324-350, workload_multi_node.go L82-85 and L113-136), so `up` awaits those children.
CHILD_WAIT = {"kubernetes:apps/v1:DeploymentPatch": (
                  '["condition=Available", "jsonpath={.status.conditions[?(@.type==\\"Progressing\\")].reason}'
                  '=NewReplicaSetAvailable"]'),
              "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSetPatch": "condition=Available"}


def test_every_kserve_replica_is_awaited_on_the_workloads_kserve_rolls(prod_run):
    """One Patch per child KServe makes (names: workload_single_node.go L511-517, workload_multi_node.go
    L663-669), right after its LLMInferenceService, depending on it, awaited on the child's rollout."""
    records = prod_run.records
    at = {r.urn: i for i, r in enumerate(records)}
    services = [r for r in records if r.type.endswith(":LLMInferenceService")]
    observers = [r for r in records if r.type in CHILD_WAIT]
    assert len(services) == 7
    expected = set()
    for s in services:
        cluster, ns, _, name = s.name.split("/")
        multi = s.inputs["spec"].get("worker") is not None
        expected.add((f"{cluster}/{ns}/{'leaderworkerset' if multi else 'deployment'}/{name}-kserve"
                      f"{'-mn' if multi else ''}", s.urn))
        if s.inputs["spec"].get("prefill") is not None:
            pmulti = s.inputs["spec"]["prefill"].get("worker") is not None
            expected.add((f"{cluster}/{ns}/{'leaderworkerset' if pmulti else 'deployment'}/{name}-kserve"
                          f"{'-mn' if pmulti else ''}-prefill", s.urn))
    assert {(o.name, o.dependencies[0]) for o in observers} == expected
    # deepseek-r1: decode a LeaderWorkerSet (data 2 over two nodes), prefill a Deployment
    assert {o.name for o in observers if "deepseek-r1-0" in o.name} == {
        "eks-use1/chat/leaderworkerset/deepseek-r1-0-kserve-mn", "eks-use1/chat/deployment/deepseek-r1-0-kserve-prefill"}
    for o in observers:
        meta = o.inputs["metadata"]
        assert set(o.inputs) == {"apiVersion", "kind", "metadata"}          # writes metadata only
        assert meta["annotations"]["pulumi.com/waitFor"] == CHILD_WAIT[o.type]
        assert meta["annotations"]["pulumi.com/timeoutSeconds"] == "3600"   # a roll that cannot finish fails `up`
        assert len(meta["annotations"]["modelplane.ai/spec-digest"]) == 16
        assert at[o.urn] > at[o.dependencies[0]]
        # its delete must not apply a bare identity to a child KServe already deleted (ssa/actions.go L34-58)
        assert o.retain_on_delete


def test_an_engine_args_change_chains_each_replica_after_the_previous_replicas_rollout(tmp_path, prod_json):
    """llama-70b's args change: each replica's observer gets a new spec digest (so its await runs in
    this `up`), and replica i+1's service waits for replica i's KServe Deployment to have rolled."""
    args = _prod_changed(tmp_path, prod_json, "--max-model-len=65536", "--max-model-len=32768")
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    doc = _doc(result.output)
    res = {r["name"]: r for r in doc["resources"]}
    old = {r["name"]: r for r in prod_json["resources"]}
    chain = ["eks-use1/chat/{}/llama-70b-0{}", "gke-usc1/chat/{}/llama-70b-1{}", "eks-use1/chat/{}/llama-70b-2{}"]
    for before, now in zip(chain, chain[1:]):
        assert before.format("deployment", "-kserve") in res[now.format("llminferenceservice", "")]["dependsOn"]
    for name in chain:
        obs = name.format("deployment", "-kserve")
        assert res[obs]["fieldDigests"]["metadata.annotations"] != old[obs]["fieldDigests"]["metadata.annotations"]
        assert name.format("llminferenceservice", "") in res[obs]["dependsOn"]
    changed = {c["name"]: c for c in doc["changes"] if c["type"] == "kubernetes:apps/v1:DeploymentPatch"}
    assert sorted(changed) == sorted(n.format("deployment", "-kserve") for n in chain)
    assert {(c["action"], tuple(c["fields"])) for c in changed.values()} == {("update", ("metadata.annotations",))}


def test_kserve_child_names_follow_kserve_and_a_name_kserve_would_hash_is_refused():
    from modelplane.render.kserve import children
    assert children("m-0", {"template": {}}) == [("apps/v1", "Deployment", "m-0-kserve")]
    assert children("m-0", {"worker": {}, "prefill": {"template": {}}}) == [
        ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "m-0-kserve-mn"), ("apps/v1", "Deployment", "m-0-kserve-prefill")]
    assert children("m-0", {"template": {}, "prefill": {"worker": {}}})[1] == (
        "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "m-0-kserve-mn-prefill")
    with pytest.raises(ValueError, match=r"longer than 63 characters.*shorten the deployment's name by 2 characters"):
        children("x" * 50, {"template": {}, "prefill": {"template": {}}})


# ---- C5: a cluster leaving a service -----------------------------------------------------------------

def _delete_rounds(resources: list[dict], gone: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """The round in which Pulumi deletes each of `gone` at the end of `up`, by the dependencies the
    previous state recorded: antichains of the condemned graph, reversed, so a resource goes only
    after everything that depended on it (pulumi/pulumi@v3.259.0 pkg/resource/deploy/
    step_generator.go L2721-2794 ScheduleDeletes). dependsOn names a resource by name; names repeat
    across types (a record and its health check), so a name stands for each of them."""
    by_name: dict[str, list[tuple[str, str]]] = {}
    for r in resources:
        by_name.setdefault(r["name"], []).append((r["type"], r["name"]))
    deps = {(r["type"], r["name"]): {k for d in r.get("dependsOn", ()) for k in by_name.get(d, ())
                                     if k != (r["type"], r["name"])} for r in resources}
    left, rounds = set(gone), []
    while left:
        now = {k for k in left if not deps[k] & left}
        assert now, "a cycle among the deletes"
        rounds.append(now)
        left -= now
    return {k: i for i, keys in enumerate(reversed(rounds)) for k in keys}


LEAVE_EKS = ("clusterSelector: {matchLabels: {modelplane.ai/tier: production, modelplane.ai/residency: us}}",
             "clusterSelector: {matchLabels: {modelplane.ai/tier: production, modelplane.ai/cloud: gcp}}")


def test_a_cluster_leaving_a_service_loses_its_dns_record_then_the_drain_then_its_routes(tmp_path, prod_json):
    """Scenario b of the change review (C5): llama-70b restricted to GCP, so eks-use1 leaves chat.
    Its Route 53 record is deleted first, then its drain (whose delete waits the TTL + 5 s,
    render/drain.py), then chat's routes there, then the replicas: one round each, by the
    dependencies the previous plan recorded (pulumi/pulumi@v3.259.0 step_generator.go
    L2721-2794). The change view says the name is drained over 65 s."""
    args = _prod_changed(tmp_path, prod_json, *LEAVE_EKS, 1)
    doc = _doc(CliRunner().invoke(main, [*args, "--json"]).output)
    gone = {(c["type"], c["name"]) for c in doc["changes"] if c["action"] == "delete"}
    # eks-use1 had a record per llama replica (review N11), each with its drain
    records = [("aws:route53/record:Record", f"chat-chat-eks-use1-chat-llama-70b-{i}") for i in (0, 2)]
    drains = [("pulumi-python:dynamic/modelplane:DnsDrain", f"{name}-drain") for _, name in records]
    routes = {k for k in gone if k[0].endswith(":HTTPRoute") and k[1].startswith("eks-use1/chat/httproute/chat")}
    replicas = {k for k in gone if k[0].endswith(":LLMInferenceService") and "/llama-70b-" in k[1]}
    assert {*records, *drains} <= gone and len(routes) == 4 and len(replicas) == 2
    order = _delete_rounds(prod_json["resources"], gone)
    assert all(order[record] < order[drain] < order[r] < order[w] for record, drain in zip(records, drains)
               for r in routes for w in replicas), order
    (chat,) = [t for t in doc["trafficDelta"] if t["service"] == "chat/chat"]
    assert chat["after"].get("eks-use1", 0) == 0 and chat["drained"] == {"clusters": ["eks-use1"], "seconds": 65}
    assert "undrained" not in chat
    assert doc["upOrder"][-1].startswith("delete at the end of `up`, a cluster's DNS record, then its drain (it waits "
                                         "the TTL), then its routes, routes before replicas: the old chat/llama-70b#")
    out = " ".join(CliRunner().invoke(main, args).output.split())
    assert ("DNS drained over 65 s: eks-use1 leaves the name's DNS answers first, and its routes there go 65 s "
            "later") in out
    assert "DNS not drained" not in out


def test_a_cluster_leaving_a_service_before_any_drain_was_recorded_is_undrained(tmp_path, prod_json):
    """A previous plan from before the drain (no `drainSeconds`, no drain resources): the state's
    record depends on the routes directly, so they go seconds apart; the plan says so, with the fix."""
    before = json.loads(json.dumps(prod_json))
    before["resources"] = [r for r in before["resources"] if not r["name"].endswith("-drain")]
    for svc in before["services"]:
        for row in svc["dns"]:
            row.pop("drainSeconds", None)
    doc = _doc(CliRunner().invoke(main, [*_prod_changed(tmp_path, before, *LEAVE_EKS, 1), "--json"]).output)
    (chat,) = [t for t in doc["trafficDelta"] if t["service"] == "chat/chat"]
    assert chat["undrained"] == {"clusters": ["eks-use1"], "ttl": 60} and "drained" not in chat
    out = " ".join(CliRunner().invoke(main, _prod_changed(tmp_path, before, *LEAVE_EKS, 1)).output.split())
    assert ("DNS not drained: eks-use1 leaves the name's DNS answers in the same `up` that deletes its routes there "
            "(a Route 53 record goes seconds before them), so clients that resolved it in the last 60 s") in out
    assert "fix: lower dns.ttl (e.g. 5) in an `up` before this one" in out


# ---- C6: a node pool replaced in an infra stack ----------------------------------------------------

@pytest.mark.parametrize("pool, old, new, outage", [
    ("h100", "subnetIds: [subnet-0b22c0ffee0000002]}", "subnetIds: [subnet-0b22c0ffee0000002], capacity: {type: spot}}",
     False),
    ("l40s", "capacity: {type: spot}}", "capacity: {type: on-demand}}", True)])
def test_an_infra_pool_replacement_names_the_apps_replicas_it_restarts_and_no_outage_judges_them(
        tmp_path, pool, old, new, outage):
    """Scenario f of the change review (C6): an eks-use1 pool bought another way (its capacity type
    forces a new node group), unprotected. The infra plan has no placements of its own; prod's fleet
    names the stack, so prod's replicas on the pool are named on the replacement, their deployments'
    serving dip is a disruption, and `no-outage` refuses the one left with none serving (qwen3-32b,
    all three replicas on l40s)."""
    before = CliRunner().invoke(main, ["plan", "infra-eks-us-east-1", "--json"]).output
    (tmp_path / "prev.json").write_text(before)
    text = (ROOT / "stacks" / "Pulumi.infra-eks-us-east-1.yaml").read_text()
    line = next(x for x in text.splitlines() if x.startswith(f"        - {{name: {pool},"))
    changed = text.replace(line, line.replace(old, new)).replace(
        "  modelplane:production: true\n", f"  modelplane:production: true\n  modelplane:unprotect: [eks-use1/{pool}]\n", 1)
    assert old in line and "unprotect" in changed
    (tmp_path / "infra.yaml").write_text(changed)
    prod = planned("prod", engine="direct")
    hit = [p for p in prod.result.plan.placements if p.cluster == "eks-use1" and any(rp.pool == pool for rp in p.roles.values())]
    assert hit
    args = ["plan", "infra-eks-us-east-1", "--config-file", str(tmp_path / "infra.yaml"), "--previous",
            str(tmp_path / "prev.json")]
    result = CliRunner().invoke(main, [*args, "--json"])
    doc = _doc(result.output)
    (c,) = [c for c in doc["changes"] if c["name"] == f"eks-use1-{pool}" and c["type"] == "aws:eks/nodeGroup:NodeGroup"]
    assert c["action"] == "replace" and c["replicas"] == sorted(f"{p.deployment}#{p.replica}" for p in hit)
    (key,) = {p.deployment for p in hit}
    placed = sum(1 for p in prod.result.plan.placements if p.deployment == key)
    assert doc["disruptions"] == [{"deployment": key, "stack": "prod", "servingBefore": placed,
                                   "servingDuring": placed - len(hit), "replicas": placed,
                                   "cause": f"{', '.join(f'#{p.replica}' for p in hit)} restart at once: node pool "
                                            f"eks-use1-{pool} is replaced"}]
    verdicts = [v for v in doc["policy"]["violations"] if v["policy"] == "no-outage"]
    if outage:
        assert [v["message"] for v in verdicts] == [
            f"{key} serves 0/{placed} replicas while `up` applies this change (#0, #1, #2 restart at once: node pool "
            f"eks-use1-{pool} is replaced)"] and result.exit_code == 1
    else:
        assert verdicts == [] and result.exit_code == 0, result.output
    text = " ".join(CliRunner().invoke(main, args).output.split())
    assert f"serving during change: {placed - len(hit)}/{placed}" in text


# ---- N1's migration: an install from before the shared pools ---------------------------------------

def test_an_install_on_per_replica_pools_moves_to_the_shared_pools_in_two_ups(tmp_path):
    """A previous plan without the shared pools (each KServe replica on the pool KServe made for
    it): naming the shared pool now would make KServe delete each replica's own pool while the
    routes still point at it (kserve@v0.20.0 scheduler.go L188-209), so the plan refuses with the
    two-step fix; the first step keeps KServe's own pools (no pool.ref) while the shared pools,
    pickers and routes to them are made; the second names them."""
    text = (ROOT / "stacks" / "Pulumi.prod.yaml").read_text()
    step1 = text.replace("  modelplane:dns:", "  modelplane:perReplicaPools: true\n  modelplane:dns:", 1)
    assert step1 != text
    (tmp_path / "Pulumi.prod.yaml").write_text(step1)
    first = _doc(CliRunner().invoke(main, ["plan", "prod", "--config-file", str(tmp_path / "Pulumi.prod.yaml"),
                                           "--json"]).output)
    # the install before the shared pools: its services named no pool, and no shared pool existed
    old = {**first, "resources": [r for r in first["resources"] if not r["type"].endswith(":InferencePool")]}
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "Pulumi.prod.yaml").write_text(text)
    args = ["plan", "prod", "--config-file", str(tmp_path / "Pulumi.prod.yaml"), "--previous", str(tmp_path / "old.json")]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2
    said = " ".join(refused.output.split())
    assert "config.modelplane:perReplicaPools" in said and "eks-use1: chat/llama-70b" in said
    assert "naming the shared pool now makes KServe delete those pools while the routes still point at them" in said
    assert "move in two `up`s: first with modelplane:perReplicaPools: true" in said
    # step 1: KServe keeps its own pools; the shared pools, pickers and routes to them are made
    (tmp_path / "Pulumi.prod.yaml").write_text(step1)
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    changes = _doc(result.output)["changes"]
    assert not [c for c in changes if c["type"].endswith(":LLMInferenceService")]
    assert {c["action"] for c in changes if c["type"].endswith(":InferencePool")} == {"create"}
    run = direct.run("prod", tmp_path / "Pulumi.prod.yaml")
    services = [r for r in run.records if r.type.endswith(":LLMInferenceService")]
    assert len(services) == 7 and all(r.inputs["spec"]["router"]["scheduler"] == {} for r in services)
    kinds = {r.urn: r.type for r in run.records}
    assert not [d for r in services for d in r.dependencies if kinds.get(d, "").endswith(":InferencePool")]
    pools = {b["name"] for r in run.records if r.type.endswith(":HTTPRoute") and r.name.startswith("eks-use1/chat/")
             for rule in r.inputs["spec"]["rules"] for b in rule.get("backendRefs", ()) if b.get("kind") == "InferencePool"}
    assert pools == {"llama-70b-pool", "deepseek-r1-pool"}
    # step 2: the previous plan has the shared pools; without the switch, the services name them
    (tmp_path / "step1.json").write_text(result.output[result.output.index("{"):])
    (tmp_path / "Pulumi.prod.yaml").write_text(text)
    second = CliRunner().invoke(main, ["plan", "prod", "--config-file", str(tmp_path / "Pulumi.prod.yaml"),
                                       "--previous", str(tmp_path / "step1.json"), "--json"])
    assert second.exit_code != 2 and "perReplicaPools" not in second.output
    updated = {c["name"] for c in _doc(second.output)["changes"] if c["type"].endswith(":LLMInferenceService")}
    assert updated == {r.name for r in services}


def test_a_deployments_await_seconds_bounds_every_await_of_its_replicas(tmp_path):
    """`awaitSeconds` is the `pulumi.com/timeoutSeconds` of the replica's LLMInferenceService and of
    the observers of what KServe rolls (pulumi-kubernetes v4.32.0 provider/pkg/metadata/overrides.go):
    a replica that cannot serve fails `up` after it, not after the default hour. Others, and the
    deployment's endpoint picker (shared, quick to start), keep 3600."""
    text = (ROOT / "stacks" / "Pulumi.prod.yaml").read_text()
    anchor = "    - name: deepseek-r1\n      namespace: chat\n"
    assert anchor in text
    (tmp_path / "Pulumi.prod.yaml").write_text(text.replace(anchor, anchor + "      awaitSeconds: 900\n"))
    run = direct.run("prod", tmp_path / "Pulumi.prod.yaml")
    timeouts = {r.name: r.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"] for r in run.records
                if r.type.startswith("kubernetes:") and "pulumi.com/timeoutSeconds" in
                (r.inputs.get("metadata", {}).get("annotations") or {}) and "/chat/" in r.name}
    deepseek = {n: t for n, t in timeouts.items() if re.search(r"/deepseek-r1-\d", n)}
    # per replica: the service, its decode LeaderWorkerSet and its prefill Deployment (KServe's children)
    assert {n.split("/", 2)[2] for n in deepseek} == {f"{k}/deepseek-r1-{i}{s}" for i in (0, 1) for k, s in (
        ("llminferenceservice", ""), ("leaderworkerset", "-kserve-mn"), ("deployment", "-kserve-prefill"))}, deepseek
    assert set(deepseek.values()) == {"900"}
    assert {t for n, t in timeouts.items() if n not in deepseek} == {"3600"}


def _order_options(run) -> list[tuple]:
    return [(r.urn, r.dependencies, r.protect, r.replace_on_changes, r.delete_before_replace, r.retain_on_delete)
            for r in run.records]


@pytest.mark.parametrize("stack", ["dev", "lab", "prod", "example-5p3d", "example-inplace", "example-slo",
                                   "example-wide-ep", "prod rolled"])
def test_the_passes_read_the_index_as_they_read_the_graph(stack, tmp_path, prod_json, monkeypatch):
    """`order_up` reads the graph once (rollout.Index) and checks only the nodes its passes edited
    for order: the renderers register every node after its parent, provider and dependencies, and
    the records (order, dependencies, options) are those of passes that read every node."""
    from modelplane.engine import assemble
    from modelplane.render import rollout

    if stack == "prod rolled":      # rolls and chains: one_at_a_time and replace_in_place at work
        args = _prod_changed(tmp_path, prod_json, "--max-model-len=65536", "--max-model-len=32768")
        stack, config, previous = "prod", Path(args[3]), prod_json["placements"]
    else:
        config, previous = ROOT / "stacks" / f"Pulumi.{stack}.yaml", None
    rendered = []
    order_up = assemble.order_up

    def check_first(graph, *a, **k):
        rendered.append(rollout._in_order(graph.nodes))
        return order_up(graph, *a, **k)

    monkeypatch.setattr(assemble, "order_up", check_first)
    indexed = _order_options(direct.run(stack, config, previous))
    assert rendered == [True]
    monkeypatch.setattr(rollout, "Index", lambda graph: None)      # every pass reads every node
    assert _order_options(direct.run(stack, config, previous)) == indexed
    if previous:
        assert any(r[4] for r in indexed)       # a roll: replaced in place, old first


def test_the_rollout_index_takes_any_kind_and_answers_only_text_kinds():
    """An object whose `kind` is not text (no renderer writes one) is indexed by type and never
    found by kind, as a pass comparing kinds would never find it; indexing it does not fail."""
    from modelplane.render.graph import Graph, Node
    from modelplane.render.rollout import Index

    g = Graph()
    odd = Node("kubernetes:apps/v1:Deployment", "odd", {"kind": ["Deployment"], "metadata": {"name": "odd"}})
    plain = Node("kubernetes:apps/v1:Deployment", "plain", {"kind": "Deployment", "metadata": {"name": "plain"}})
    g.add(odd)
    g.add(plain)
    index = Index(g)
    assert index.of(("Deployment",)) == [plain]
    assert index.of(types=("kubernetes:apps/v1:Deployment",)) == [odd, plain]
