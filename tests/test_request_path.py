"""Issue 24: every request reaches a GPU. Route rules are ones Envoy Gateway + AI Gateway program
(../shared/docs/runtime-review-2026-11-23.md N1, N2), and `plan --trace` follows every host."""
from pathlib import Path
import copy
import subprocess
import sys

import pytest

from modelplane import offline
from modelplane.policy import POLICIES, Resource
from modelplane.render.addons import (ENVOY_HTTP_CONTAINER_PORT, ENVOY_NAMESPACE, LOOPBACK_SERVICE, envoy_gateway_values,
                                      gateway_objects)
from modelplane.render.routing import POOL_HEADER, cluster_routes, rule_problems
from modelplane.trace import TraceError, trace

ROOT = Path(__file__).resolve().parents[1]

HTTPROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"


def routes(run):
    return {r.name: r.inputs for r in run.records if r.type == HTTPROUTE}


def pool(name, weight):
    return {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": name, "port": 8000, "weight": weight}


def test_no_example_stack_renders_a_rule_the_gateway_refuses(prod, example, lab):
    seen = 0
    for run in (prod, example, lab, offline.run("dev"), offline.run("example-inplace")):
        for name, route in routes(run).items():
            seen += 1
            assert rule_problems(route) == [], name
            for rule in route["spec"]["rules"]:
                refs = rule.get("backendRefs") or []
                pools = [r for r in refs if r["kind"] == "InferencePool"]
                assert len(pools) <= 1 and (not pools or len(refs) == 1), name
    assert seen >= 8


def test_a_shared_cluster_splits_by_weight_through_the_loopback_and_one_rule_per_pool(prod):
    chat = routes(prod)["eks-use1/chat/httproute/chat"]["spec"]
    refs = chat["rules"][0]["backendRefs"]
    assert [(r["kind"], r["name"], r["weight"]) for r in refs] == [
        ("Service", LOOPBACK_SERVICE, 317), ("Service", LOOPBACK_SERVICE, 317), ("Backend", "chat-together", 33)]
    tags = [r["filters"][0]["requestHeaderModifier"]["set"][0] for r in refs[:2]]
    assert tags == [{"name": POOL_HEADER, "value": "chat.llama-70b-0-inference-pool"},
                    {"name": POOL_HEADER, "value": "chat.llama-70b-2-inference-pool"}]
    assert all(r["namespace"] == ENVOY_NAMESPACE and r["port"] == 80 for r in refs[:2])
    # prod terminates TLS: clients enter on https; the http listener carries the hop's pool rules and
    # redirects everything else of the host to https.
    assert chat["parentRefs"][0]["sectionName"] == "https"
    http = routes(prod)["eks-use1/chat/httproute/chat-http"]["spec"]
    assert http["hostnames"] == ["chat.inference.example.com"] and http["parentRefs"][0]["sectionName"] == "http"
    assert [(rule["matches"][0]["headers"][0]["value"], rule["backendRefs"]) for rule in http["rules"][:2]] == [
        ("chat.llama-70b-0-inference-pool", [pool("llama-70b-0-inference-pool", 1)]),
        ("chat.llama-70b-2-inference-pool", [pool("llama-70b-2-inference-pool", 1)])]
    assert http["rules"][2] == {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "filters": [
        {"type": "RequestRedirect", "requestRedirect": {"scheme": "https", "statusCode": 301}}]}
    # A cluster with one target keeps the direct rule: no hop.
    reasoning = routes(prod)["gke-usc1/chat/httproute/reasoning"]["spec"]["rules"]
    assert reasoning[0]["backendRefs"] == [pool("deepseek-r1-1-inference-pool", 500)]
    grant = next(r.inputs for r in prod.records if r.name == "eks-use1/envoy-gateway-system/referencegrant/"
                 "modelplane-loopback-chat-chat")
    assert grant["spec"] == {"from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "chat"}],
                             "to": [{"group": "", "kind": "Service", "name": LOOPBACK_SERVICE}]}


def test_without_tls_the_pool_rules_sit_in_their_own_route_on_every_listener():
    gw = {"name": "inference", "namespace": "modelplane-gateway"}
    refs = [pool("a-0-inference-pool", 600), pool("a-1-inference-pool", 400)]
    split, pools = cluster_routes("svc", "ns", "svc.example.com", gw, refs)
    assert split["metadata"]["name"] == "svc" and pools["metadata"]["name"] == "svc-pools"
    assert "sectionName" not in split["spec"]["parentRefs"][0]
    assert [r["weight"] for r in split["spec"]["rules"][0]["backendRefs"]] == [600, 400]
    assert [r["backendRefs"][0]["name"] for r in pools["spec"]["rules"]] == ["a-0-inference-pool", "a-1-inference-pool"]
    # One target keeps the direct rule.
    assert cluster_routes("svc", "ns", None, gw, refs[:1])[0]["spec"]["rules"][0]["backendRefs"] == refs[:1]


def test_the_loopback_service_selects_the_gateways_own_envoy_pods(gke, eks):
    svc = next(o for o in gateway_objects() if o["kind"] == "Service")
    assert svc["metadata"] == {"name": LOOPBACK_SERVICE, "namespace": ENVOY_NAMESPACE,
                               "labels": {"app.kubernetes.io/managed-by": "modelplane"}}
    assert svc["spec"]["selector"]["gateway.envoyproxy.io/owning-gateway-name"] == "inference"
    assert svc["spec"]["selector"]["gateway.envoyproxy.io/owning-gateway-namespace"] == "modelplane-gateway"
    assert svc["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": ENVOY_HTTP_CONTAINER_PORT, "protocol": "TCP"}]
    for run in (gke, eks):
        assert any(r.name.endswith(f"{ENVOY_NAMESPACE}/service/{LOOPBACK_SERVICE}") for r in run.records)


def test_envoy_gateway_fails_closed_when_the_ai_gateway_extension_fails():
    assert envoy_gateway_values()["config"]["envoyGateway"]["extensionManager"]["failOpen"] is False


@pytest.mark.parametrize("rule, words", [
    ({"backendRefs": [pool("a", 1), pool("b", 1)]}, "references 2 InferencePools (a, b)"),
    ({"backendRefs": [pool("a", 95), {"group": "gateway.envoyproxy.io", "kind": "Backend", "name": "p", "weight": 5}]},
     "mixes InferencePool a with 1 other backend(s)"),
])
def test_the_route_rules_policy_refuses_both_broken_forms(rule, words):
    route = {"kind": "HTTPRoute", "metadata": {"name": "chat", "namespace": "chat"}, "spec": {"rules": [rule]}}
    found = POLICIES["route-rules"].check(HTTPROUTE, route)
    assert len(found) == 1 and words in found[0]


def test_the_pack_refuses_a_broken_route_over_grpc():
    from modelplane.policy import Analyzer

    bad = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
           "metadata": {"name": "chat", "namespace": "chat"},
           "spec": {"rules": [{"backendRefs": [pool("a", 1), pool("b", 1)]}]}}
    with Analyzer() as analyzer:
        analyzer.configure({})
        found = analyzer.analyze([Resource(HTTPROUTE, "urn:pulumi:x::y::" + HTTPROUTE + "::chat", "chat", bad)])
    assert [(v["policy"], v["level"]) for v in found] == [("route-rules", "mandatory")]


def test_every_prod_host_reaches_gpu_pods_and_the_provider_share_reaches_the_provider(prod):
    shares = {}
    for host in ("chat.inference.example.com", "reasoning.inference.example.com", "support.inference.example.com"):
        t = trace(prod, host)
        assert t.broken == [], [h.broken for h in t.broken]
        shares[host] = t.to_json()["reaches"]
        for hop in t.hops:
            assert hop.path[0].startswith("Gateway modelplane-gateway/inference")
            assert hop.lands in ("gpu", "provider")
    assert shares["chat.inference.example.com"] == {"gpu": 950, "provider": 50, "broken": 0}
    assert shares["reasoning.inference.example.com"] == {"gpu": 1000, "provider": 0, "broken": 0}
    assert shares["support.inference.example.com"] == {"gpu": 1000, "provider": 0, "broken": 0}


def test_every_host_of_every_example_stack_traces_to_a_gpu_or_a_provider(example, lab):
    for run in (example, lab, offline.run("dev"), offline.run("example-inplace")):
        for svc in run.result.spec.services:
            if svc.hostname:
                t = trace(run, svc.hostname)
                assert not t.broken and sum(h.share for h in t.hops) == 1000, (run.stack, svc.hostname)


def test_the_trace_names_the_first_broken_link(prod):
    run = copy.copy(prod)
    run.records = [r for r in prod.records if r.name != "eks-use1/chat/httproute/chat-http"]
    t = trace(run, "chat.inference.example.com")
    assert [h.broken for h in t.broken] == [f"no route rule matches {POOL_HEADER}: chat.llama-70b-0-inference-pool",
                                            f"no route rule matches {POOL_HEADER}: chat.llama-70b-2-inference-pool"]
    assert t.to_json()["reaches"] == {"gpu": 316, "provider": 50, "broken": 634}
    # The old single rule is named by the rule check, on every share of that cluster.
    old = copy.deepcopy(routes(prod)["eks-use1/chat/httproute/chat"])
    old["spec"]["rules"][0]["backendRefs"][:2] = [pool("llama-70b-0-inference-pool", 317),
                                                   pool("llama-70b-2-inference-pool", 317)]
    run.records = [copy.copy(r) for r in prod.records]
    for r in run.records:
        if r.name == "eks-use1/chat/httproute/chat":
            r.inputs = old
    t = trace(run, "chat.inference.example.com")
    assert {h.cluster for h in t.broken} == {"eks-use1"} and "references 2 InferencePools" in t.broken[0].broken
    with pytest.raises(TraceError, match="nope.example.com is not the hostname of a service in stack prod"):
        trace(prod, "nope.example.com")


def test_plan_trace_prints_the_path_and_an_unknown_host_writes_nothing(tmp_path):
    cmd = [sys.executable, "-m", "modelplane", "plan", "prod"]
    ok = subprocess.run([*cmd, "--trace", "chat.inference.example.com", "--json"], capture_output=True, text=True,
                        cwd=ROOT)
    assert ok.returncode == 0, ok.stderr
    import json
    doc = json.loads(ok.stdout)
    assert doc["trace"][0]["reaches"] == {"gpu": 950, "provider": 50, "broken": 0}
    bad = subprocess.run([*cmd, "--trace", "nope.example.com", "--out", str(tmp_path / "out")], capture_output=True,
                         text=True, cwd=ROOT)
    assert bad.returncode == 2 and "nope.example.com is not the hostname" in bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "out").exists()
