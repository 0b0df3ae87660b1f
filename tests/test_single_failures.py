"""Issue 45 point 3 and the runtime review's N3, N6, N8: each single failure of the request path
costs only its capacity, health checks see what clients use, and `--down` models every part."""
import pytest

from modelplane.output.trace import TraceError, trace

CHAT = "chat.inference.example.com"
SUPPORT = "support.inference.example.com"


def of(run, kind):
    return {r.name: r.inputs for r in run.records if r.type.endswith(f":{kind}")}


def reaches(run, host, *down):
    return trace(run, host, list(down)).to_json()["reaches"]


def test_the_health_check_enters_the_hop_gateway_where_requests_do(prod):
    """N3: chat's pool share goes main Envoy -> hop Envoy -> pool; its check takes the same way, so
    a hop Envoy that is down (its Service has no endpoint: Envoy Gateway v1.8.1
    internal/xds/translator/route.go L351, L391-395) or a missing hop rule fails it."""
    rule = of(prod, "HTTPRoute")["eks-use1/chat/httproute/chat-health"]["spec"]["rules"][0]
    assert [(r["kind"], r["name"]) for r in rule["backendRefs"]] == [("Service", "modelplane-hop")]
    assert rule["backendRefs"][0]["filters"][0]["requestHeaderModifier"]["set"] == \
        [{"name": "x-modelplane-target", "value": "chat.llama-70b-pool"}]
    # Envoy keeps the check's Host on its way to the hop, so the hop route answers it.
    hop = of(prod, "HTTPRoute")["eks-use1/chat/httproute/chat-hop"]["spec"]
    assert "eks-use1.gateways.inference.example.com" in hop["hostnames"]
    t = trace(prod, CHAT, ["eks-use1/hop"])
    assert t.to_json()["reaches"]["broken"] == 0
    assert "the hop Gateway's Envoy" in next(h for h in t.hops if h.cluster == "eks-use1").path[0]


def test_a_single_target_service_still_probes_its_pool_directly(prod):
    rule = of(prod, "HTTPRoute")["gke-euw4/eu-support/httproute/support-health"]["spec"]["rules"][0]
    assert [r["kind"] for r in rule["backendRefs"]] == ["InferencePool"]


def test_a_provider_only_cluster_is_checked_at_its_gateway(prod, tmp_path):
    """N6: a cluster that only forwards to a provider answers the check itself (Envoy Gateway v1.8.1
    HTTPRouteFilter directResponse, api/v1alpha1/httproutefilter_types.go L77-91), so its record has a
    health check and a dead cluster leaves DNS."""
    import shutil
    from pathlib import Path
    import yaml
    from modelplane.engine import offline
    root = Path(__file__).resolve().parents[1]
    for f in (root / "stacks").glob("Pulumi.*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    doc = yaml.safe_load((tmp_path / "Pulumi.prod.yaml").read_text())
    doc["config"]["modelplane:services"].append({"name": "ext", "namespace": "chat", "hostname": "ext.inference.example.com",
                                                 "model": "meta-llama/Llama-3.3-70B-Instruct-Turbo",
                                                 "labels": {"modelplane.ai/residency": "us"},
                                                 "clusterSelector": {"matchLabels": {"modelplane.ai/region": "us-central1"}},
                                                 "endpoints": [{"provider": "together"}]})
    (tmp_path / "Pulumi.ext.yaml").write_text(yaml.safe_dump(doc))
    run = offline.run("ext", tmp_path / "Pulumi.ext.yaml")
    record = of(run, "Record")["chat-ext-gke-usc1"]
    assert record["name"] == "ext.inference.example.com" and record["healthCheckId"] == "chat-ext-gke-usc1-id"
    health = of(run, "HTTPRoute")["gke-usc1/chat/httproute/ext-health"]["spec"]["rules"][0]
    assert "backendRefs" not in health
    assert health["filters"][0]["extensionRef"] == {"group": "gateway.envoyproxy.io", "kind": "HTTPRouteFilter",
                                                    "name": "ext-health"}
    assert of(run, "HTTPRouteFilter")["gke-usc1/chat/httproutefilter/ext-health"]["spec"]["directResponse"][
        "statusCode"] == 200
    assert reaches(run, "ext.inference.example.com") == {"gpu": 0, "provider": 1000, "broken": 0}
    t = trace(run, "ext.inference.example.com", ["gke-usc1/certificate"])
    assert "dropped from DNS" not in t.hops[0].path[0]     # a lone record stays answered (all failing)
    assert t.to_json()["reaches"]["broken"] == 1000


@pytest.mark.parametrize("down, where, words", [
    ("chat/llama-70b-epp", "eks-use1", "endpoint picker chat/llama-70b-epp is down"),
    ("eks-use1/chat/llama-70b-epp", "eks-use1", "endpoint picker chat/llama-70b-epp is down"),
    ("gke-usc1/certificate", "gke-usc1", "is not issued: it has no HTTPS listener"),
    ("eks-use1/hop", "eks-use1", "hop Gateway's Envoy"),
])
def test_down_names_a_picker_a_hop_or_a_certificate_and_prints_the_detection_window(prod, down, where, words):
    """N8: --down models a picker (AI Gateway's fail-closed ext_proc, ai-gateway v1.0.0
    internal/extensionserver/inferencepool.go L295-315), a hop Envoy, a certificate not issued (Envoy
    Gateway drops the listener, internal/gatewayapi/listener.go L319-323), and says how long DNS
    takes: 3 failed checks 30 s apart plus the TTL."""
    t = trace(prod, CHAT, [down])
    assert words in " ".join(h.path[0] for h in t.hops if h.cluster == where) + \
        " ".join(h.broken for h in t.hops if h.cluster == where)
    assert t.to_json()["detectionSeconds"] == 150
    assert any("DNS detection window: about 150 s" in n for n in t.notes)


def test_a_picker_down_on_one_cluster_costs_only_that_cluster(prod):
    assert reaches(prod, CHAT, "eks-use1/chat/llama-70b-epp")["broken"] == 0
    # Down everywhere: nothing but the provider's share is left (the trace says so, not 0 %).
    assert reaches(prod, CHAT, "chat/llama-70b-epp") == {"gpu": 0, "provider": 50, "broken": 950}


def test_a_provider_down_breaks_only_its_weighted_share(prod):
    assert reaches(prod, CHAT, "together") == {"gpu": 950, "provider": 0, "broken": 50}


def test_an_unknown_down_name_lists_every_form(prod):
    with pytest.raises(TraceError, match="endpoint picker .*hop Gateway .*certificate"):
        trace(prod, CHAT, ["eks-use1/nothing"])


def test_a_pd_cluster_is_also_checked_through_its_picker_and_dns_ands_both(prod):
    """N4: a P/D deployment's first check asks its decode pods (a ready prefill pod must not keep the
    cluster in DNS); a second rule of the health route goes where clients go, the pool and its picker,
    which answers a bodyless request with a random pod of the pool and 500 with none
    (llm-d-router@v0.9.0 pkg/epp/handlers/request.go L41-47, L60-63; director.go L571-578) or when it
    is down (AI Gateway's fail-closed ext_proc, ai-gateway@v1.0.0 inferencepool.go L295-315). A
    Route 53 CALCULATED check (childHealthThreshold 2) ANDs them."""
    rules = of(prod, "HTTPRoute")["eks-use1/chat/httproute/reasoning-health"]["spec"]["rules"]
    assert [r["matches"][0]["path"]["value"] for r in rules] == \
        ["/modelplane/health/chat/reasoning", "/modelplane/health/chat/reasoning/picker"]
    assert [(b["kind"], b["name"]) for b in rules[0]["backendRefs"]] == [("Service", "deepseek-r1-decode")]
    assert [(b["kind"], b["name"]) for b in rules[1]["backendRefs"]] == [("InferencePool", "deepseek-r1-pool")]
    checks = of(prod, "HealthCheck")
    assert checks["chat-reasoning-eks-use1-picker"]["resourcePath"] == "/modelplane/health/chat/reasoning/picker"
    assert checks["chat-reasoning-eks-use1-calculated"] == {
        "type": "CALCULATED", "childHealthThreshold": 2,
        "childHealthchecks": ["chat-reasoning-eks-use1-id", "chat-reasoning-eks-use1-picker-id"]}
    assert of(prod, "Record")["chat-reasoning-eks-use1"]["healthCheckId"] == "chat-reasoning-eks-use1-calculated-id"
    # A unified deployment's check already passes through its picker: no picker rule (the others probe
    # each of gke-euw4's two replicas alone, review N11).
    paths = [r["matches"][0]["path"]["value"] for r in
             of(prod, "HTTPRoute")["gke-euw4/eu-support/httproute/support-health"]["spec"]["rules"]]
    assert paths == ["/modelplane/health/eu-support/support",
                     "/modelplane/health/eu-support/support/replicas/eu-support/mistral-small-24b/0",
                     "/modelplane/health/eu-support/support/replicas/eu-support/mistral-small-24b/1"]
    assert "chat-chat-eks-use1-picker" not in checks


def test_a_pd_picker_down_drops_its_cluster_from_dns_so_nothing_breaks(prod):
    t = trace(prod, "reasoning.inference.example.com", ["eks-use1/chat/deepseek-r1-epp"])
    assert t.to_json()["reaches"] == {"gpu": 1000, "provider": 0, "broken": 0}
    dropped = next(h for h in t.hops if h.cluster == "eks-use1").path[0]
    assert "its check through the picker: endpoint picker chat/deepseek-r1-epp is down" in dropped
    assert t.to_json()["detectionSeconds"] == 150


REASONING = "reasoning.inference.example.com"


def test_a_prefill_role_down_is_served_decode_only_and_dns_keeps_the_cluster(prod):
    """--down <ns>/<dep>#<i>/prefill: the picker's P/D profile handler keeps a decode-only result
    (llm-d-router@v0.9.0 pkg/epp/framework/plugins/scheduling/profilehandler/disagg/
    disagg_profile_handler.go L351-362) and the routing sidecar skips the prefill stage without its
    header (pkg/sidecar/proxy/chat_completions.go L85-107): served, degraded; both checks still pass."""
    t = trace(prod, REASONING, ["chat/deepseek-r1#0/prefill"])
    assert t.to_json()["reaches"] == {"gpu": 1000, "provider": 0, "broken": 0, "degraded": 500}
    eks = next(h for h in t.hops if h.cluster == "eks-use1")
    assert eks.lands == "gpu" and eks.degraded.startswith("served decode-only (degraded)")
    assert "detectionSeconds" not in t.to_json()
    assert any("DNS keeps the cluster and there is no DNS detection window" in n for n in t.notes)
    from modelplane.output.trace import render
    assert render(t)[-1] == "  reaches GPU pods 100.0% (50.0% degraded: decode-only), providers 0.0%, broken 0.0%"


def test_a_decode_role_down_drops_its_cluster_after_the_detection_window(prod):
    """With its only replica's decode pods gone, the decode probe fails (a request needs a decode pod:
    disagg_profile_handler.go L351-354), the CALCULATED check with it: the cluster leaves DNS."""
    t = trace(prod, REASONING, ["chat/deepseek-r1#0/decode"])
    assert t.to_json()["reaches"] == {"gpu": 1000, "provider": 0, "broken": 0}
    assert "dropped from DNS" in next(h for h in t.hops if h.cluster == "eks-use1").path[0]
    assert t.to_json()["detectionSeconds"] == 150


def test_a_role_is_a_down_name_only_of_a_placed_pd_replica(prod):
    with pytest.raises(TraceError, match="only of a KServe P/D deployment"):
        trace(prod, CHAT, ["chat/llama-70b#0/prefill"])
    with pytest.raises(TraceError, match="no placed replica chat/deepseek-r1#7"):
        trace(prod, REASONING, ["chat/deepseek-r1#7/decode"])
