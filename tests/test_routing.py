"""Issue 11: one stable endpoint per service, weighted across deployments, clusters, regions and providers."""
from pathlib import Path
import copy
import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import cli
from modelplane.engine import offline
from modelplane.output import report
from modelplane.api import load_catalog, parse_stack_config
from modelplane.api.loader import Source
from modelplane.errors import InputError
from modelplane.manifests import read_documents
from modelplane.policy import evaluate
from modelplane.scheduler.traffic import TOTAL_UNITS, Target, route

ROOT = Path(__file__).resolve().parents[1]


def objects(run, kind):
    return {r.name: r.inputs for r in run.records if r.type.startswith("kubernetes:") and r.type.endswith(f":{kind}")}


# Weights ----------------------------------------------------------------------------------------

def test_weights_split_by_endpoint_then_by_cluster_and_add_up_exactly():
    r = route([Target("deployment", "ns/a", 70), Target("deployment", "ns/b", 25), Target("provider", "p", 5)],
              {"ns/a": [("east", 0), ("east", 1), ("west", 2)], "ns/b": [("west", 0)]}, ["east", "west"])
    units = {(b.cluster, b.kind, b.name): b.units for b in r.backends}
    # One backend per deployment and cluster (its shared pool there), in proportion to its replicas.
    assert {(b.cluster, b.name): b.replicas for b in r.backends if b.kind == "deployment"} == {
        ("east", "ns/a"): (0, 1), ("west", "ns/a"): (2,), ("west", "ns/b"): (0,)}
    assert units[("east", "deployment", "ns/a")] == 467 and units[("west", "deployment", "ns/a")] == 233
    assert units[("west", "deployment", "ns/b")] == 250
    # The provider's 50 follow each cluster's self-hosted share (east 467, west 483).
    assert units[("east", "provider", "p")] + units[("west", "provider", "p")] == 50
    assert sum(r.clusters.values()) == TOTAL_UNITS and sum(r.dns.values()) == 100
    assert [e["units"] for e in r.endpoints] == [700, 250, 50] and not r.degraded


def test_an_endpoint_with_nothing_placed_gives_its_weight_to_the_others():
    r = route([Target("deployment", "ns/a", 70), Target("deployment", "ns/b", 30)], {"ns/a": [("east", 0)]}, ["east"])
    assert r.degraded and r.missing == ["deployment:ns/b"]
    assert r.endpoints[0]["units"] == TOTAL_UNITS and r.endpoints[1] == {"target": "deployment:ns/b", "weight": 30,
                                                                         "units": 0, "clusters": {}}


def test_a_provider_only_service_enters_through_its_gateway_clusters():
    r = route([Target("provider", "p", 1)], {}, ["a", "b", "c"])
    assert r.clusters == {"a": 334, "b": 333, "c": 333} and r.dns == {"a": 34, "b": 33, "c": 33}


@settings(max_examples=200, deadline=None)
@given(weights=st.lists(st.integers(1, 1000), min_size=1, max_size=6),
       spread=st.lists(st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=5), min_size=6, max_size=6),
       provider=st.integers(0, 1000))
def test_units_are_whole_and_exact_whatever_the_weights(weights, spread, provider):
    targets = [Target("deployment", f"ns/d{i}", w) for i, w in enumerate(weights)]
    if provider:
        targets.append(Target("provider", "p", provider))
    replicas = {f"ns/d{i}": [(c, j) for j, c in enumerate(spread[i])] for i in range(len(weights)) if spread[i]}
    r = route(targets, replicas, ["a", "b"])
    live = [t for t in targets if t.kind == "provider" or replicas.get(t.name)]
    assert sum(b.units for b in r.backends) == (TOTAL_UNITS if live else 0)
    assert all(b.units > 0 for b in r.backends)
    for e in r.endpoints:
        assert sum(e["clusters"].values()) == e["units"]
    if r.dns:
        assert sum(r.dns.values()) == 100 and all(w >= 1 for w in r.dns.values())
    assert route(targets, replicas, ["a", "b"]) == r      # deterministic


# What is rendered -------------------------------------------------------------------------------

def test_prod_routes_carry_the_planned_weights_to_kserve_inference_pools(prod):
    routes = objects(prod, "HTTPRoute")
    pairs = (("gke-usc1", "chat", "chat"), ("eks-use1", "chat", "chat"), ("gke-usc1", "chat", "reasoning"),
             ("eks-use1", "chat", "reasoning"), ("gke-euw4", "eu-support", "support"))
    assert set(routes) == {f"{c}/{ns}/httproute/{svc}{kind}" for c, ns, svc in pairs for kind in ("", "-http", "-health")} \
        | {"gke-usc1/chat/httproute/chat-hop", "eks-use1/chat/httproute/chat-hop"}   # chat shares with a provider
    plan = {s["service"]: s for s in report.services(prod)}
    for name, route_ in routes.items():
        cluster, ns, _, svc = name.split("/")
        if svc.endswith(("-http", "-health", "-hop")):   # redirect, DNS health, hop rules (test_request_path)
            continue
        spec = route_["spec"]
        assert spec["parentRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "inference",
                                       "namespace": "modelplane-gateway", "sectionName": "https"}]
        assert spec["hostnames"] == [f"{svc}.inference.example.com"]
        refs = spec["rules"][0]["backendRefs"]
        if len(refs) > 1:
            assert sum(ref["weight"] for ref in refs) == plan[f"{ns}/{svc}"]["clusters"][cluster]
        for ref in refs:
            if ref["kind"] == "InferencePool":   # one shared pool per deployment and cluster
                assert ref["group"] == "inference.networking.k8s.io" and ref["name"].endswith("-pool")
    chat = plan["chat/chat"]
    assert [e["share"] for e in chat["endpoints"]] == [950, 50]
    assert sum(chat["clusters"].values()) == 1000 and sum(d["weight"] for d in chat["dns"]) == 100


def test_the_provider_is_reached_over_tls_with_its_own_host_and_its_key_from_a_secret(prod, tmp_path):
    backend = objects(prod, "Backend")["gke-usc1/chat/backend/chat-together"]["spec"]
    assert backend == {"endpoints": [{"fqdn": {"hostname": "api.together.xyz", "port": 443}}],
                       "tls": {"sni": "api.together.xyz", "wellKnownCACertificates": "System"}}
    # R1: the Host is a core URLRewrite on the backendRef (Envoy Gateway v1.8.1 turns it into the weighted
    # cluster's host_rewrite_literal, internal/xds/translator/route.go L374-380); the HTTPRouteFilter, whose
    # backend-level hostname rewrite Envoy Gateway drops, only injects the key.
    ref = next(r for r in objects(prod, "HTTPRoute")["gke-usc1/chat/httproute/chat"]["spec"]["rules"][0]["backendRefs"]
               if r["kind"] == "Backend")
    assert ref["filters"] == [{"type": "URLRewrite", "urlRewrite": {"hostname": "api.together.xyz"}},
                              {"type": "ExtensionRef", "extensionRef": {"group": "gateway.envoyproxy.io",
                                                                        "kind": "HTTPRouteFilter", "name": "chat-together"}}]
    filt = objects(prod, "HTTPRouteFilter")["gke-usc1/chat/httproutefilter/chat-together"]["spec"]
    assert filt == {"credentialInjection": {"header": "Authorization", "overwrite": True,
                                            "credential": {"valueRef": {"name": "chat-together-credential"}}}}
    secret = objects(prod, "Secret")["gke-usc1/chat/secret/chat-together-credential"]
    assert "4dabf18193072939515e22adb298388d" in secret["stringData"]          # a Pulumi secret, encrypted in state
    report.write_out(prod, tmp_path)
    written = (tmp_path / "gke-usc1" / "chat" / "secret-chat-together-credential.yaml").read_text()
    assert "credential: (secret)" in written
    stand_in = offline.OFFLINE_KUBECONFIG        # what the offline engine reads for any secret config value
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and stand_in in p.read_text()]


def test_deployments_answer_to_the_model_name_their_services_send(prod):
    llama = objects(prod, "LLMInferenceService")["gke-usc1/chat/llminferenceservice/llama-70b-1"]["spec"]
    args = llama["template"]["containers"][0]["args"]
    # its own name (<namespace>/<deployment> by default), the service's, then KServe's publisher form of its own
    assert args[-4:] == ["--served-model-name", "chat/llama-70b", "meta-llama/Llama-3.3-70B-Instruct-Turbo",
                         "publishers/chat/models/chat/llama-70b"]


def test_weighted_dns_records_point_at_each_clusters_gateway(prod):
    records = {r.name: r.inputs for r in prod.records if r.type == "aws:route53/record:Record"}
    chat = {n: r for n, r in records.items() if r["name"] == "chat.inference.example.com"}
    # eks-use1 carries two replicas: its 67 % is a record per replica (review N11, tests/test_replica_records.py)
    assert {r["setIdentifier"]: r["weightedRoutingPolicies"][0]["weight"] for r in chat.values()} == \
        {"eks-use1/chat/llama-70b#0": 34, "eks-use1/chat/llama-70b#2": 33, "gke-usc1": 33}
    assert all(r["type"] == "CNAME" and r["records"] == [f"{r['setIdentifier'].partition('/')[0]}.gateways."
                                                          "inference.example.com"] for r in chat.values())
    gateways = {r["name"]: r["type"] for r in records.values() if ".gateways." in r["name"]}
    assert gateways == {"gke-usc1.gateways.inference.example.com": "A", "eks-use1.gateways.inference.example.com": "CNAME",
                        "gke-euw4.gateways.inference.example.com": "A"}


def test_cross_namespace_routes_get_a_reference_grant(tmp_path):
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.prod.yaml").read_text())
    doc["config"]["modelplane:services"].append({"name": "search-chat", "namespace": "search",
                                                 "endpoints": [{"deployment": "chat/llama-70b"}]})
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(yaml.safe_dump(doc))
    run = offline.run("x", path)
    grants = {k: v for k, v in objects(run, "ReferenceGrant").items() if "/modelplane-hop-" not in k}
    assert set(grants) == {"gke-usc1/chat/referencegrant/modelplane-routes-from-search",
                           "eks-use1/chat/referencegrant/modelplane-routes-from-search"}
    route_ = objects(run, "HTTPRoute")["gke-usc1/search/httproute/search-chat"]["spec"]
    assert all(ref["namespace"] == "chat" for ref in route_["rules"][0]["backendRefs"])
    assert "hostnames" not in route_


def test_every_routing_object_passes_the_schemas(prod, tmp_path, schema_catalog):
    report.write_out(prod, tmp_path)
    lines = [schema_catalog.report(obj) for path in sorted(tmp_path.rglob("*.yaml"))
             for obj in read_documents(path)]
    assert [line for status, line in lines if status != "ok"] == []
    kinds = {line.split()[1] for _, line in lines}
    assert {"gateway.networking.k8s.io/v1/HTTPRoute", "gateway.envoyproxy.io/v1alpha1/Backend",
            "gateway.envoyproxy.io/v1alpha1/HTTPRouteFilter"} <= kinds


# Rules ------------------------------------------------------------------------------------------

def problems(doc):
    with pytest.raises(InputError) as err:
        parse_stack_config(doc, Source("stacks/Pulumi.t.yaml", None), load_catalog())
    return [(p.path, p.rule, p.message) for p in err.value.problems]


MD = {"name": "m", "namespace": "ml", "model": {"uri": "hf://org/m"}, "replicas": 1,
      "labels": {"modelplane.ai/residency": "us"}}
PROVIDER = {"name": "together", "url": "https://api.together.xyz/v1", "model": "org/m-turbo",
            "apiKey": {"secret": "key"}, "labels": {"modelplane.ai/residency": "us"}}


@pytest.mark.parametrize("services,providers,path,words", [
    ([{"name": "s", "namespace": "ml", "labels": {"modelplane.ai/residency": "eu"}, "endpoints": [{"deployment": "m"}]}],
     [], "modelplane:services[0].endpoints[0]", "labelled modelplane.ai/residency=eu"),
    ([{"name": "s", "namespace": "ml", "model": "m", "endpoints": [{"deployment": "m"}, {"provider": "together"}]}],
     [PROVIDER], "modelplane:services[0].endpoints[1].provider", "requests reach provider 'together' unchanged"),
    ([{"name": "s", "namespace": "ml", "hostname": "a.example.com", "model": "m", "endpoints": [{"deployment": "m"}]},
      {"name": "t", "namespace": "ml", "hostname": "a.example.com", "model": "m", "endpoints": [{"deployment": "m"}]}],
     [], "modelplane:services[1].hostname", "already served by services[0] with the same model name 'm'"),
    ([{"name": "s", "namespace": "ml", "endpoints": [{"deployment": "m", "provider": "together"}]}],
     [PROVIDER], "modelplane:services[0].endpoints[0]", "exactly one of deployment or provider"),
    ([{"name": "s", "namespace": "ml", "endpoints": [{"deployment": "m", "weight": 0}]}],
     [], "modelplane:services[0].endpoints[0].weight", "must be at least 1"),
    ([{"name": "s", "namespace": "ml", "endpoints": [{"provider": "togther"}]}],
     [PROVIDER], "modelplane:services[0].endpoints[0].provider", "unknown provider 'togther'"),
    ([], [{**PROVIDER, "url": "http://api.together.xyz/v1"}], "modelplane:providers[0].url", "not an https URL"),
    ([], [{**PROVIDER, "apiKey": {"secretKeyRef": {"name": "k", "key": "api-key"}}}],
     "modelplane:providers[0].apiKey", "from key 'credential'"),
])
def test_service_rules_name_the_field_and_the_fix(services, providers, path, words):
    found = problems({"modelplane:deployments": [MD], "modelplane:services": services,
                      "modelplane:providers": providers, "modelplane:key": {"secure": "x"}})
    assert any(p == path and words in m for p, _, m in found), found


def test_hostnames_must_lie_in_the_dns_zone():
    found = problems({"modelplane:deployments": [MD], "modelplane:dns": {"route53": {"zoneId": "Z1", "domain": "x.com"}},
                      "modelplane:services": [{"name": "s", "namespace": "ml", "hostname": "s.y.com",
                                               "endpoints": [{"deployment": "m"}]}]})
    assert ("modelplane:services[0].hostname", "service-hostnames") in {(p, r) for p, r, _ in found}


def test_cloud_dns_cannot_weight_a_load_balancer_hostname(tmp_path):
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.prod.yaml").read_text())
    doc["config"]["modelplane:dns"] = {"cloudDns": {"project": "p", "managedZone": "z", "domain": "inference.example.com"}}
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match="eks-use1, whose Gateway has a load balancer hostname"):
        offline.run("x", path)


def test_losing_a_cluster_degrades_a_service_and_production_refuses_it(tmp_path):
    plan = cli("plan", "prod", "--without", "gke-euw4", env={"PULUMI_ERROR_OUTPUT_STRING": "true"})
    assert plan.returncode == 1
    assert "policy service-endpoints-placed (mandatory" in plan.stdout
    assert "traffic eu-support/support: gke-euw4 100.0% -> 0.0%" in plan.stdout
    doc = json.loads(cli("plan", "prod", "--json").stdout)
    assert [s["status"] for s in doc["services"]] == ["ok", "ok", "ok"]


def test_the_pack_checks_residency_from_the_components(prod):
    from modelplane.policy import resources_of
    from modelplane.policy.routing import service_residency

    class Args:
        def __init__(self, r):
            self.resource_type, self.props, self.urn = r.type, copy.deepcopy(r.props), r.urn
    assert not [v for v in evaluate(prod) if v["policy"].startswith("service-") and v["level"] == "mandatory"]
    resources = [Args(r) for r in resources_of(prod)]
    assert service_residency(resources) == []
    for r in resources:
        if r.resource_type == "modelplane:index:ModelService" and r.props["spec"]["name"] == "chat":
            r.props["providers"]["together"]["labels"] = {"modelplane.ai/residency": "eu"}
    (found,) = service_residency(resources)
    assert "provider 'together' is labelled eu" in found[0]


# Model-name routing on a shared hostname (issue 45) -----------------------------------------------

@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """prod with chat and reasoning on one hostname (each cluster's certificate covers it)."""
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.prod.yaml").read_text())
    for s in doc["config"]["modelplane:services"]:
        if s["name"] in ("chat", "reasoning"):
            s["hostname"] = "chat.inference.example.com"
    path = tmp_path_factory.mktemp("shared") / "Pulumi.shared.yaml"
    path.write_text(yaml.safe_dump(doc))
    return offline.run("shared", path)


LLAMA = "meta-llama/Llama-3.3-70B-Instruct-Turbo"


def test_services_on_one_hostname_are_routed_by_the_requests_model(shared):
    routes = {r.name: r.inputs for r in shared.records if r.type.endswith(":AIGatewayRoute")}
    assert sorted(routes) == ["eks-use1/chat/aigatewayroute/chat", "eks-use1/chat/aigatewayroute/reasoning",
                              "gke-usc1/chat/aigatewayroute/chat", "gke-usc1/chat/aigatewayroute/reasoning"]
    chat = routes["eks-use1/chat/aigatewayroute/chat"]["spec"]
    assert chat["hostnames"] == ["chat.inference.example.com"]
    assert chat["parentRefs"][0]["sectionName"] == "https"
    assert chat["rules"] == [{"matches": [{"headers": [{"type": "Exact", "name": "x-ai-eg-model", "value": LLAMA}]}],
                              "backendRefs": [{"name": "chat-entry"}],
                              "timeouts": {"request": "0s", "backendRequest": "0s"}}]
    assert routes["eks-use1/chat/aigatewayroute/reasoning"]["spec"]["rules"][0]["matches"][0]["headers"][0]["value"] \
        == "reasoning"
    # No plain HTTPRoute for the host on the public Gateway competes with them.
    http = objects(shared, "HTTPRoute")
    assert "eks-use1/chat/httproute/chat" not in http and "eks-use1/chat/httproute/reasoning" not in http
    # The backend enters the hop Gateway tagged with the service; a client's own target header is dropped.
    backend = objects(shared, "AIServiceBackend")["eks-use1/chat/aiservicebackend/chat-entry"]["spec"]
    assert backend["backendRef"] == {"group": "gateway.envoyproxy.io", "kind": "Backend", "name": "chat-entry"}
    assert backend["headerMutation"] == {"set": [{"name": "x-modelplane-service", "value": "chat.chat"}],
                                         "remove": ["x-modelplane-target"]}
    fqdn = objects(shared, "Backend")["eks-use1/chat/backend/chat-entry"]["spec"]["endpoints"][0]["fqdn"]
    assert fqdn == {"hostname": "modelplane-hop.envoy-gateway-system.svc.cluster.local", "port": 80}
    # There the service's split runs as before: the pool share through the hop again, the provider's direct.
    hop = http["eks-use1/chat/httproute/chat-hop"]["spec"]
    assert "hostnames" not in hop
    entry = hop["rules"][0]
    assert entry["matches"] == [{"path": {"type": "PathPrefix", "value": "/"},
                                 "headers": [{"type": "Exact", "name": "x-modelplane-service", "value": "chat.chat"}]}]
    assert entry["filters"] == [{"type": "RequestHeaderModifier",
                                 "requestHeaderModifier": {"remove": ["x-modelplane-service"]}}]
    assert [(r["kind"], r["name"]) for r in entry["backendRefs"]] == [("Service", "modelplane-hop"),
                                                                      ("Backend", "chat-together")]


def test_a_shared_hostname_has_one_record_per_cluster_checked_for_every_service(shared):
    checks = {r.name: r.inputs for r in shared.records if r.type == "aws:route53/healthCheck:HealthCheck"}
    calc = checks["chat-inference-example-com-eks-use1"]
    # reasoning is P/D: its check through the picker joins the AND (N4).
    assert calc["type"] == "CALCULATED" and calc["childHealthThreshold"] == 3
    assert sorted(calc["childHealthchecks"]) == ["chat-chat-eks-use1-id", "chat-reasoning-eks-use1-id",
                                                 "chat-reasoning-eks-use1-picker-id"]
    records = {r.name: r.inputs for r in shared.records if r.type == "aws:route53/record:Record"
               and r.inputs["name"] == "chat.inference.example.com"}
    assert sorted(records) == ["chat-inference-example-com-eks-use1", "chat-inference-example-com-gke-usc1"]
    weights = [records[n]["weightedRoutingPolicies"][0]["weight"] for n in sorted(records)]
    assert sum(weights) == 100 and records["chat-inference-example-com-eks-use1"]["healthCheckId"] == \
        "chat-inference-example-com-eks-use1-id"


def test_the_plan_lists_each_hostnames_model_names(shared):
    served = report.models_by_hostname(report.services(shared))
    assert served["chat.inference.example.com"] == {LLAMA: "chat/chat", "reasoning": "chat/reasoning"}
    assert {s["service"]: s["routedBy"] for s in report.services(shared)}["chat/chat"] == "model"


def test_the_trace_follows_a_model_name_and_reports_one_nobody_serves(shared):
    from modelplane.output.trace import TraceError, trace
    t = trace(shared, "chat.inference.example.com", ["eks-use1"], LLAMA).to_json()["reaches"]
    assert (t["broken"], t["gpu"] + t["provider"]) == (0, 1000)
    with pytest.raises(TraceError, match="routes by model name: give --model"):
        trace(shared, "chat.inference.example.com")
    with pytest.raises(TraceError, match="answers to model 'gpt-4': Envoy AI Gateway answers 404"):
        trace(shared, "chat.inference.example.com", (), "gpt-4")


def test_services_with_different_model_names_may_share_a_hostname_except_under_cloud_dns():
    services = [{"name": n, "namespace": "ml", "hostname": "a.x.com", "model": n, "endpoints": [{"deployment": "m"}]}
                for n in ("s", "t")]
    parse_stack_config({"modelplane:deployments": [MD], "modelplane:services": services},
                       Source("stacks/Pulumi.t.yaml", None), load_catalog())
    found = problems({"modelplane:deployments": [MD], "modelplane:services": services, "modelplane:dns": {
        "cloudDns": {"project": "p", "managedZone": "z", "domain": "x.com"}}})
    assert ("modelplane:services[1].hostname", "service-hostnames") in {(p, r) for p, r, _ in found}


def test_services_sharing_a_hostname_must_be_carried_on_the_same_clusters():
    from types import SimpleNamespace as NS
    from modelplane.analysis.services import shared_host_problems
    from modelplane.scheduler.traffic import Routes
    svcs = [NS(key=f"ml/{n}", hostname="a.x.com") for n in ("s", "t")]
    routes = {"ml/s": Routes(dns={"a": 50, "b": 50}), "ml/t": Routes(dns={"a": 100})}
    inventories = {"a": {"gateway": {"hop": {"name": "inference-hop"}}}, "b": {"gateway": {"name": "mine", "namespace": "gw"}}}
    found = shared_host_problems(NS(services=svcs), routes, inventories)
    assert found == ["services ml/s, ml/t share hostname a.x.com but are carried on different clusters (ml/s: a, b; "
                     "ml/t: a): DNS sends every model's requests to every one of them",
                     "hostname a.x.com is shared by several services, routed by model name through the hop Gateway, "
                     "but cluster b serves through its own Gateway (gatewayRef), which has none"]
