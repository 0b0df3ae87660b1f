"""Issue 45 point 2: a provider that takes a model's traffic when no replica anywhere can.

Envoy AI Gateway v1.0.0 puts each AIGatewayRoute backendRef's priority on its endpoints in the
rule's one Envoy cluster (api/v1beta1/ai_gateway_route.go L362-372, internal/extensionserver/
post_translate_modify.go L236-239); Envoy Gateway v1.8.1 turns a BackendTrafficPolicy's
numAttemptsPerPriority into Envoy's previous_priorities retry (internal/xds/translator/route.go
L811-823); Route 53 answers zero-weight records only once every non-zero one is unhealthy.
"""
from pathlib import Path
import shutil

import pytest
import yaml

from modelplane.engine import offline
from modelplane.errors import InputError
from modelplane.output.trace import trace
from modelplane.scheduler.traffic import Target, route

ROOT = Path(__file__).resolve().parents[1]
HOST = "chat.inference.example.com"


def test_a_fallback_takes_no_share_and_every_other_gateway_cluster_stands_by():
    r = route([Target("deployment", "ml/a", 1), Target("provider", "p", 1, fallback=True)],
              {"ml/a": [("x", 0), ("y", 1)]}, ["x", "y", "z"])
    assert [(b.cluster, b.kind, b.units) for b in r.backends] == [("x", "deployment", 500), ("y", "deployment", 500)]
    assert (r.fallback, r.standby, r.dns) == ("p", ["z"], {"x": 50, "y": 50})
    # Nothing placed: the fallback alone, from every gateway cluster, and the service is degraded.
    r = route([Target("deployment", "ml/a", 1), Target("provider", "p", 1, fallback=True)], {}, ["x", "y"])
    assert (r.backends, r.standby, r.degraded) == ([], ["x", "y"], True)


@pytest.fixture(scope="module")
def fb(tmp_path_factory):
    """prod, chat backed by Together as a fallback instead of a 5 % share; gke-euw4's certificate
    (a DNS-01 issuer) covers the domain, so it can stand by for chat."""
    d = tmp_path_factory.mktemp("fallback")
    for f in (ROOT / "stacks").glob("Pulumi.*.yaml"):
        shutil.copy(f, d / f.name)
    doc = yaml.safe_load((d / "Pulumi.prod.yaml").read_text())
    chat = next(s for s in doc["config"]["modelplane:services"] if s["name"] == "chat")
    chat["endpoints"] = [{"deployment": "llama-70b"}, {"provider": "together", "fallback": True}]
    (d / "Pulumi.fb.yaml").write_text(yaml.safe_dump(doc))
    infra = d / "Pulumi.infra-gke-europe-west4.yaml"
    text = infra.read_text().replace("hostnames: [support.inference.example.com]",
                                     'hostnames: ["*.inference.example.com"]')
    infra.write_text(text.replace("acme: {email: ml-platform@acme-ml.com}", "issuerRef: {name: letsencrypt-dns01}"))
    return offline.run("fb", d / "Pulumi.fb.yaml")


def of(run, kind):
    return {r.name: r.inputs for r in run.records if r.type.endswith(f":{kind}")}


def test_every_cluster_routes_the_model_to_its_replicas_first_and_the_provider_at_priority_1(fb):
    routes = of(fb, "AIGatewayRoute")
    assert sorted(routes) == ["eks-use1/chat/aigatewayroute/chat", "gke-euw4/chat/aigatewayroute/chat",
                              "gke-usc1/chat/aigatewayroute/chat"]
    rule = routes["eks-use1/chat/aigatewayroute/chat"]["spec"]["rules"][0]
    assert rule["backendRefs"] == [{"name": "chat-entry", "priority": 0}, {"name": "chat-together", "priority": 1}]
    assert rule["matches"][0]["headers"][0] == {"type": "Exact", "name": "x-ai-eg-model",
                                                "value": "meta-llama/Llama-3.3-70B-Instruct-Turbo"}
    # The standby carries no replica: the provider alone, and no hop route.
    assert routes["gke-euw4/chat/aigatewayroute/chat"]["spec"]["rules"][0]["backendRefs"] == \
        [{"name": "chat-together", "priority": 1}]
    assert "gke-euw4/chat/httproute/chat-hop" not in of(fb, "HTTPRoute")
    # The retry that moves a failed attempt to priority 1 is on the model route only.
    policies = of(fb, "BackendTrafficPolicy")
    main = policies["eks-use1/chat/backendtrafficpolicy/chat"]["spec"]
    assert [t["name"] for t in main["targetRefs"]] == ["chat"]
    assert main["retry"]["numAttemptsPerPriority"] == 1
    assert {500, 503} <= set(main["retry"]["retryOn"]["httpStatusCodes"])
    assert "connect-failure" in main["retry"]["retryOn"]["triggers"]
    hop = policies["eks-use1/chat/backendtrafficpolicy/chat-hop"]["spec"]
    assert [t["name"] for t in hop["targetRefs"]] == ["chat-hop"] and "retry" not in hop


def test_the_provider_is_an_ai_service_backend_with_its_key_in_the_secret_ai_gateway_reads(fb, tmp_path):
    backend = of(fb, "AIServiceBackend")["gke-euw4/chat/aiservicebackend/chat-together"]["spec"]
    assert backend == {"schema": {"name": "OpenAI"},
                       "backendRef": {"group": "gateway.envoyproxy.io", "kind": "Backend", "name": "chat-together"}}
    policy = of(fb, "BackendSecurityPolicy")["gke-euw4/chat/backendsecuritypolicy/chat-together"]["spec"]
    assert policy == {"targetRefs": [{"group": "aigateway.envoyproxy.io", "kind": "AIServiceBackend",
                                      "name": "chat-together"}],
                      "type": "APIKey", "apiKey": {"secretRef": {"name": "chat-together-credential"}}}
    from modelplane.output import report
    report.write_out(fb, tmp_path)
    secret = yaml.safe_load((tmp_path / "gke-euw4" / "chat" / "secret-chat-together-credential.yaml").read_text())
    assert secret["stringData"] == {"apiKey": "(secret)"}     # no weighted share here: no header filter's value
    both = yaml.safe_load((tmp_path / "eks-use1" / "chat" / "secret-chat-together-credential.yaml").read_text())
    assert both["stringData"] == {"apiKey": "(secret)"}
    assert "gke-euw4/chat/httproutefilter/chat-together" not in of(fb, "HTTPRouteFilter")


def test_the_standby_has_a_zero_weight_record_checked_at_its_gateway(fb):
    records = {n: r for n, r in of(fb, "Record").items() if r["name"] == HOST}
    assert {n: r["weightedRoutingPolicies"][0]["weight"] for n, r in records.items()} == \
        {"chat-chat-eks-use1-chat-llama-70b-0": 34, "chat-chat-eks-use1-chat-llama-70b-2": 33,   # a record per replica (N11)
         "chat-chat-gke-usc1": 33, "chat-chat-gke-euw4": 0}
    assert all(r.get("healthCheckId") for r in records.values())
    health = of(fb, "HTTPRoute")["gke-euw4/chat/httproute/chat-health"]["spec"]["rules"][0]
    assert "backendRefs" not in health and health["filters"][0]["extensionRef"]["name"] == "chat-health"
    assert of(fb, "HTTPRouteFilter")["gke-euw4/chat/httproutefilter/chat-health"]["spec"]["directResponse"][
        "statusCode"] == 200


def reaches(run, *down):
    return trace(run, HOST, list(down)).to_json()["reaches"]


def test_with_every_replica_down_the_provider_carries_everything(fb):
    down = [f"chat/llama-70b#{i}" for i in range(3)]
    t = trace(fb, HOST, down)
    assert t.to_json()["reaches"] == {"gpu": 0, "provider": 1000, "broken": 0}
    assert any("standby records (weight 0: gke-euw4)" in n for n in t.notes)      # once DNS notices
    # Before DNS notices, or with no standby: each carrying cluster retries at the provider itself.
    t = trace(fb, HOST, [*down, "gke-euw4"])
    assert t.to_json()["reaches"] == {"gpu": 0, "provider": 1000, "broken": 0}
    hop = next(h for h in t.hops if h.cluster == "eks-use1")
    assert any("priority 0 fails (every replica behind it is down" in step and "retries at priority 1" in step
               for step in hop.path)


def test_with_every_carrying_cluster_down_dns_answers_the_standby(fb):
    t = trace(fb, HOST, ["eks-use1", "gke-usc1"])
    assert t.to_json()["reaches"] == {"gpu": 0, "provider": 1000, "broken": 0}
    assert any("standby records (weight 0: gke-euw4)" in n for n in t.notes)
    # One cluster down: the replicas elsewhere take it, the provider stays idle.
    assert reaches(fb, "eks-use1") == {"gpu": 1000, "provider": 0, "broken": 0}


def test_a_provider_down_too_is_reported_broken(fb):
    down = [f"chat/llama-70b#{i}" for i in range(3)]
    assert reaches(fb, *down, "together")["broken"] == 1000


def test_the_fallback_objects_pass_the_schemas(fb, tmp_path, schema_catalog):
    from modelplane.manifests import read_documents
    from modelplane.output import report
    report.write_out(fb, tmp_path)
    lines = [schema_catalog.report(obj) for path in sorted(tmp_path.glob("*/chat/*.yaml"))
             for obj in read_documents(path)]
    assert [line for status, line in lines if status != "ok"] == []
    kinds = {line.split()[1] for _, line in lines}
    assert {"aigateway.envoyproxy.io/v1beta1/BackendSecurityPolicy", "aigateway.envoyproxy.io/v1beta1/AIGatewayRoute",
            "gateway.envoyproxy.io/v1alpha1/BackendTrafficPolicy"} <= kinds


@pytest.mark.parametrize("endpoints, words", [
    ([{"deployment": "llama-70b", "fallback": True}], "fallback: true is for a provider endpoint"),
    ([{"deployment": "llama-70b"}, {"provider": "together", "fallback": True, "weight": 5}],
     "a fallback endpoint takes no weighted share"),
    ([{"provider": "together", "fallback": True}], "no deployment to fall back from"),
])
def test_a_misplaced_fallback_is_an_input_error_with_its_fix(tmp_path, endpoints, words):
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.prod.yaml").read_text())
    for f in (ROOT / "stacks").glob("Pulumi.infra-*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    next(s for s in doc["config"]["modelplane:services"] if s["name"] == "chat")["endpoints"] = endpoints
    (tmp_path / "Pulumi.bad.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError) as err:
        offline.run("bad", tmp_path / "Pulumi.bad.yaml")
    text = str(err.value)
    assert words in text and "modelplane:services" in text and "fix" in text.lower()


def test_a_fallback_key_must_be_one_ai_gateway_can_send():
    from modelplane.api.rules import _fallback_findings
    from modelplane.api.service import ModelService, Provider
    svc = ModelService.model_validate({"name": "s", "namespace": "ml", "endpoints": [
        {"deployment": "a"}, {"provider": "p", "fallback": True}]})
    p = Provider.model_validate({"name": "p", "url": "https://x.ai/v1", "apiKey": {
        "secretKeyRef": {"name": "k", "key": "credential"}}})
    found = _fallback_findings(0, svc, {"p": p})
    assert [f.path for f in found] == [("services", 0, "endpoints", 1, "fallback")]
    assert "Authorization: Bearer" in found[0].message and "secret: <config key>" in found[0].fix


def test_ai_gateway_objects_come_after_what_they_name_and_go_before_it(fb):
    """e2e g4's destroy hung on AI Gateway's finalizer of the provider's AIServiceBackend: AI Gateway
    v1.0.0 removes a finalizer with one Update and only logs its conflict (internal/controller/
    controller.go L606-619), and ignores metadata-only changes (GenerationChangedPredicate, L298-302),
    so a backend deleted while its BackendSecurityPolicy's deletion had AI Gateway write its status
    kept the finalizer. Each now depends on what it names, so `destroy` removes them one by one:
    route, backend, policy, Secret (render/rollout.py await_references)."""
    at = {r.urn: i for i, r in enumerate(fb.records)}
    by_name = {r.name: r for r in fb.records}
    checked = 0
    for name, r in by_name.items():
        if not name.endswith("/aigatewayroute/chat"):
            continue
        cluster = name.split("/")[0]
        refs = [x["name"] for rule in r.inputs["spec"]["rules"] for x in rule["backendRefs"]]
        backends = [by_name[f"{cluster}/chat/aiservicebackend/{n}"] for n in refs]
        assert {b.urn for b in backends} <= set(r.dependencies), (name, r.dependencies)
        provider = by_name[f"{cluster}/chat/aiservicebackend/chat-together"]
        policy = by_name[f"{cluster}/chat/backendsecuritypolicy/chat-together"]
        secret = by_name[f"{cluster}/chat/secret/chat-together-credential"]
        assert policy.urn in provider.dependencies and secret.urn in policy.dependencies
        assert at[secret.urn] < at[policy.urn] < at[provider.urn] < at[r.urn]     # registered in that order
        checked += 1
    assert checked == 3
