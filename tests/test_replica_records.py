"""Review N11: a cluster carrying several replicas of a service gets one Route 53 record per
replica, so DNS sheds a lost replica's part alone, not the cluster's whole share, and not nothing.

Route 53 tells the records of one weighted group apart by `setIdentifier` (developer guide, "Values
specific for weighted records"); a CALCULATED health check is healthy while at least
`childHealthThreshold` of its `childHealthchecks` are (pulumi-aws `aws.route53.HealthCheck`). Cloud
DNS takes one `routingPolicy.healthCheck` per record set (REST `RRSetRoutingPolicy.healthCheck`),
so it cannot check two replicas behind one address apart: no split there."""
from pathlib import Path
from types import SimpleNamespace

import yaml

from modelplane.engine import offline
from modelplane.output.trace import render, trace
from modelplane.render.stack import split_records
from modelplane.scheduler.traffic import Backend, Routes, replica_weights

CHAT = "chat.inference.example.com"
ROOT = Path(__file__).resolve().parent.parent


def of(run, kind):
    return {r.name: r.inputs for r in run.records if r.type.endswith(f":{kind}")}


def test_a_clusters_weight_splits_over_its_replicas_with_a_provider_share_riding_along():
    routes = Routes(backends=[Backend("a", "deployment", "ml/x", (0, 2), 600), Backend("a", "provider", "p", (), 60),
                              Backend("a", "deployment", "ml/y", (1,), 100), Backend("b", "deployment", "ml/x", (1,), 240)],
                    dns={"a": 76, "b": 24})
    # x's 600 units over two replicas (300 each) against y's one (100): 76 split 3:3:1, whole, summing to 76
    assert replica_weights(routes) == {"a": {("ml/x", 0): 33, ("ml/x", 2): 32, ("ml/y", 1): 11}}
    # a weight below the replica count gives each record 1 (0 would make it a standby)
    tiny = Routes(backends=[Backend("a", "deployment", "ml/x", (0, 1, 2), 30)], dns={"a": 2})
    assert replica_weights(tiny) == {"a": {("ml/x", 0): 1, ("ml/x", 1): 1, ("ml/x", 2): 1}}


def test_only_route53_splits_and_never_a_shared_hostname(prod):
    svc = next(s for s in prod.result.spec.services if s.key == "chat/chat")
    routes = prod.result.routes["chat/chat"]
    assert split_records(prod.result.spec.dns, svc, routes) == {"eks-use1": {("chat/llama-70b", 0): 34,
                                                                             ("chat/llama-70b", 2): 33}}
    assert split_records(SimpleNamespace(kind="clouddns"), svc, routes) == {}
    assert split_records(prod.result.spec.dns, svc, routes, shared=True) == {}


def test_each_replica_of_a_cluster_has_its_own_record_checked_by_the_cluster_and_by_itself(prod):
    records = {r["setIdentifier"]: (n, r) for n, r in of(prod, "Record").items() if r["name"] == CHAT}
    assert {sid: r["weightedRoutingPolicies"][0]["weight"] for sid, (_, r) in records.items()} == \
        {"eks-use1/chat/llama-70b#0": 34, "eks-use1/chat/llama-70b#2": 33, "gke-usc1": 33}
    checks = of(prod, "HealthCheck")
    name, record = records["eks-use1/chat/llama-70b#0"]
    assert name == "chat-chat-eks-use1-chat-llama-70b-0"
    assert record["records"] == ["eks-use1.gateways.inference.example.com"]
    assert record["healthCheckId"] == f"{name}-calculated-id"
    # the cluster's own check (through the listener, hop and picker) AND the replica's probe
    assert checks[f"{name}-calculated"] == {"type": "CALCULATED", "childHealthThreshold": 2,
                                            "childHealthchecks": ["chat-chat-eks-use1-id", f"{name}-probe-id"]}
    assert checks[f"{name}-probe"] == {
        "type": "HTTPS", "port": 443, "fqdn": "eks-use1.gateways.inference.example.com", "enableSni": True,
        "resourcePath": "/modelplane/health/chat/chat/replicas/chat/llama-70b/0", "requestInterval": 30,
        "failureThreshold": 3}
    # a single-replica cluster keeps one record on its cluster's check
    assert records["gke-usc1"][1]["healthCheckId"] == "chat-chat-gke-usc1-id"


def test_the_replica_probe_reaches_that_replicas_pods_alone(prod):
    rules = of(prod, "HTTPRoute")["eks-use1/chat/httproute/chat-health"]["spec"]["rules"]
    probe = next(r for r in rules if r["matches"][0]["path"]["value"].endswith("/replicas/chat/llama-70b/2"))
    assert probe["matches"][0]["path"]["type"] == "Exact"
    assert probe["filters"] == [{"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplaceFullPath",
                                                                                "replaceFullPath": "/health"}}}]
    assert [(b["kind"], b["name"], b["port"]) for b in probe["backendRefs"]] == [("Service", "llama-70b-2-health", 8000)]
    service = of(prod, "Service")["eks-use1/chat/service/llama-70b-2-health"]["spec"]
    assert service["selector"] == {"modelplane.ai/deployment": "llama-70b", "kserve.io/component": "workload",
                                   "modelplane.ai/replica": "2"}
    # only where a record is split: gke-usc1's one replica gets no probe Service
    assert "gke-usc1/chat/service/llama-70b-1-health" not in of(prod, "Service")


def test_a_lost_replica_takes_only_its_own_part_out_of_dns(prod):
    """With llama-70b#0 down, its record leaves DNS (after the detection window): eks-use1 keeps #2's
    record, so the survivors everywhere take #0's part in proportion, about 1.5x their plan each,
    instead of eks-use1's survivor taking it alone (2x, the runtime review's N11)."""
    t = trace(prod, CHAT, ["chat/llama-70b#0"])
    j = t.to_json()
    assert j["reaches"] == {"gpu": 950, "provider": 50, "broken": 0}
    assert j["detectionSeconds"] == 150
    assert j["load"] == [{"cluster": "eks-use1", "replica": "llama-70b-2", "perMille": 475, "plannedPerMille": 318},
                         {"cluster": "gke-usc1", "replica": "llama-70b-1", "perMille": 475, "plannedPerMille": 313}]
    assert any(n.startswith("DNS drops record eks-use1/chat/llama-70b#0 (weight 34): its replica's own check fails")
               for n in j["notes"])
    assert sum(h.share for h in t.hops if h.cluster == "eks-use1") == 500     # 33 of 66 left
    lines = render(t)
    assert ("  DNS 67% -> eks-use1.gateways.inference.example.com -> eks-use1 (modelplane-gateway/inference); "
            "a record per replica: chat/llama-70b#0 34%, chat/llama-70b#2 33%") in lines
    assert ("  load on the serving replicas after DNS detection: llama-70b-2 on eks-use1 47.5% (plan 31.8%, 1.49x), "
            "llama-70b-1 on gke-usc1 47.5% (plan 31.3%, 1.52x)") in lines


def test_a_cluster_down_and_both_its_replicas_down_still_drop_the_whole_cluster(prod):
    for down in (["eks-use1"], ["chat/llama-70b#0", "chat/llama-70b#2"]):
        j = trace(prod, CHAT, down).to_json()
        assert j["reaches"] == {"gpu": 949, "provider": 51, "broken": 0}, down
        assert j["load"] == [{"cluster": "gke-usc1", "replica": "llama-70b-1", "perMille": 949,
                              "plannedPerMille": 313}], down
        assert j["hops"][0]["path"][0].startswith("dropped from DNS, its health check fails"), down


def test_nothing_down_has_no_load_line(prod):
    assert "load" not in trace(prod, CHAT).to_json()


def test_a_native_deployments_replica_records_probe_its_own_service(tmp_path):
    """A native deployment: each replica already has its Service `<name>-<i>-decode` over its pods."""
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.prod.yaml").read_text())
    # reasoning (a name eks-use1's certificate covers) served by the native qwen3-32b, 3 replicas on eks-use1
    svc = next(s for s in doc["config"]["modelplane:services"] if s["name"] == "reasoning")
    svc["endpoints"] = [{"deployment": "search/qwen3-32b"}]
    del svc["labels"]
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(yaml.safe_dump(doc))
    run = offline.run("x", path)
    host = "reasoning.inference.example.com"
    records = {r["setIdentifier"]: r["weightedRoutingPolicies"][0]["weight"] for r in of(run, "Record").values()
               if r["name"] == host}
    assert records == {"eks-use1/search/qwen3-32b#0": 34, "eks-use1/search/qwen3-32b#1": 33,
                       "eks-use1/search/qwen3-32b#2": 33}
    rules = of(run, "HTTPRoute")["eks-use1/chat/httproute/reasoning-health"]["spec"]["rules"]
    assert [[(b["kind"], b.get("namespace"), b["name"]) for b in r["backendRefs"]] for r in rules[1:]] == \
        [[("Service", "search", f"qwen3-32b-{i}-decode")] for i in range(3)]
    assert "eks-use1/search/service/qwen3-32b-1-decode" in of(run, "Service")
    assert not [k for k in of(run, "Service") if "qwen3-32b" in k and k.endswith("-health")]   # KServe replicas only
    j = trace(run, host, ["search/qwen3-32b#1"]).to_json()
    assert j["reaches"]["broken"] == 0
    # one cluster: its two survivors share everything (each Service endpoint alike)
    assert [(r["replica"], r["perMille"], r["plannedPerMille"]) for r in j["load"]] == \
        [("qwen3-32b-0-decode", 500, 333), ("qwen3-32b-2-decode", 500, 333)]
    assert any(n.startswith("DNS drops record eks-use1/search/qwen3-32b#1 (weight 33)") for n in j["notes"])


def test_the_plan_lists_a_clusters_records_per_replica():
    from click.testing import CliRunner

    from modelplane.cli import main

    out = CliRunner().invoke(main, ["plan", "prod"]).output
    assert ("  chat/chat: eks-use1 67% (a record per replica: llama-70b#0 34%, llama-70b#2 33%), gke-usc1 33% "
            "(weighted DNS records)") in out


def test_a_set_identifier_route53_would_refuse_stops_rendering_with_the_characters_to_cut():
    """Route 53 ResourceRecordSet.SetIdentifier is 1-128 characters (botocore route53 model,
    ResourceRecordSetIdentifier); a 40-character cluster, 63-character namespace and 40-character
    deployment pass it."""
    import pytest
    from modelplane.render.names import NameTooLong
    from modelplane.render.stack import record_id

    assert record_id("eks-use1", ("chat/llama-70b", 2)) == "eks-use1/chat/llama-70b#2"
    with pytest.raises(NameTooLong, match=r"longer than Route 53's 128 characters; fix: .* by 20 characters"):
        record_id("c" * 40, ("n" * 63 + "/" + "d" * 40, 12))


def test_the_plan_refuses_it_as_input_naming_the_deployment_and_the_fix(monkeypatch):
    """Never a traceback: the limit reaches the user as invalid input (exit 2) on the deployment."""
    import pytest
    from modelplane.errors import InputError
    from modelplane.render import stack

    monkeypatch.setattr(stack, "SET_IDENTIFIER_MAX", 20)      # prod's "eks-use1/chat/llama-70b#0" is 25
    with pytest.raises(InputError) as caught:
        offline.run("prod")
    (problem,) = caught.value.problems
    assert problem.file.endswith("Pulumi.prod.yaml") and problem.path.startswith("modelplane:deployments[")
    assert "setIdentifier 'eks-use1/chat/llama-70b#0'" in problem.message
    assert problem.fix == "shorten the deployment's namespace or name (or the cluster's) by 5 characters"
