"""Issue 34: serving that survives a lost replica, certificates that issue, and a trace that models
the gateway as it really behaves. Each finding of the 2026-11-24 runtime review (R1-R15) has a test
here against the rendered objects, citing the upstream line it follows."""
from pathlib import Path
import copy
import io
import json

import pytest
import yaml

from helpers import cli, planned
from modelplane.engine import offline
from modelplane.errors import InputError
from modelplane.policy import POLICIES, Resource, evaluate
from modelplane.render.addons import (ENVOY_HTTP_CONTAINER_PORT, ENVOY_NAMESPACE, HOP_GATEWAY, HOP_SERVICE,
                                      envoy_gateway_values, gateway_objects)
from modelplane.render.picker import EPP_IMAGE, picker_config
from modelplane.render.routing import HOP_HEADER, Target, cluster_routes, rule_problems
from modelplane.output.trace import TraceError, trace

ROOT = Path(__file__).resolve().parents[1]

HTTPROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
HOSTS = ("chat.inference.example.com", "reasoning.inference.example.com", "support.inference.example.com")


def routes(run):
    return {r.name: r.inputs for r in run.records if r.type == HTTPROUTE}


def kind(run, k, api=None):
    return {r.name: r.inputs for r in run.records if r.type.startswith("kubernetes:") and r.type.endswith(f":{k}")
            and (api is None or r.inputs.get("apiVersion") == api)}


def pool(name, weight=1):
    return {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": name, "port": 8000, "weight": weight}


@pytest.fixture
def with_infra(tmp_path):
    """A folder holding a copy of the prod stack: planned from there, it reads the infra stack
    variants written beside it (and the others from stacks/)."""
    (tmp_path / "Pulumi.prod.yaml").write_text((ROOT / "stacks" / "Pulumi.prod.yaml").read_text())
    return tmp_path


def stack_variant(tmp_path, name, edit, stack="prod"):
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    edit(doc["config"])
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


# ---- R7: one InferencePool and one endpoint picker per model per cluster ----------------------------

def test_every_kserve_deployment_has_one_pool_and_picker_per_cluster_that_every_replica_names(prod):
    pools = kind(prod, "InferencePool", "inference.networking.k8s.io/v1")
    placed = {(p.cluster, *p.deployment.split("/")) for p in prod.result.plan.placements}
    kserve = {md.key for md in prod.result.spec.deployments if md.backend == "kserve"}
    assert set(pools) == {f"{c}/{ns}/inferencepool/{d}-pool" for c, ns, d in placed if f"{ns}/{d}" in kserve}
    services = kind(prod, "LLMInferenceService")
    for name, svc in services.items():
        cluster, ns, _, _ = name.split("/")
        dep = svc["metadata"]["labels"]["modelplane.ai/deployment"]
        # KServe v0.20.0: with pool.ref it runs no picker of its own and points its route at the ref
        # (pkg/controller/v1alpha2/llmisvc/config_merge.go L212-214, L355-368).
        assert svc["spec"]["router"]["scheduler"] == {"pool": {"ref": {"name": f"{dep}-pool"}}}
        spec = pools[f"{cluster}/{ns}/inferencepool/{dep}-pool"]["spec"]
        # The pool selects the pods of every replica: the deployment label every role's spec.labels carries,
        # and KServe's workload label (single-node pods, LWS leaders, prefill pods; workload_multi_node.go L139-159).
        assert spec["selector"]["matchLabels"] == {"modelplane.ai/deployment": dep, "kserve.io/component": "workload"}
        for role in ("labels", ):
            assert svc["spec"][role]["modelplane.ai/deployment"] == dep
        if "prefill" in svc["spec"]:
            assert svc["spec"]["prefill"]["labels"]["modelplane.ai/deployment"] == dep
        assert spec["targetPorts"] == [{"number": 8000}]
        assert spec["endpointPickerRef"] == {"kind": "Service", "name": f"{dep}-epp", "port": {"number": 9002},
                                             "failureMode": "FailClose"}
    # support's two replicas share one pool on gke-euw4, llama-70b's two on eks-use1 theirs.
    members = {}
    for name, svc in services.items():
        cluster, ns, _, _ = name.split("/")
        members.setdefault((cluster, svc["spec"]["router"]["scheduler"]["pool"]["ref"]["name"]), []).append(name)
    assert len(members[("gke-euw4", "mistral-small-24b-pool")]) == 2 and len(members[("eks-use1", "llama-70b-pool")]) == 2


def test_the_picker_runs_what_kserves_own_scheduler_preset_runs(prod):
    dep = kind(prod, "Deployment")["gke-euw4/eu-support/deployment/mistral-small-24b-epp"]["spec"]["template"]["spec"]
    epp = dep["containers"][0]
    # kserve/kserve@v0.20.0 config/llmisvcconfig/config-llm-scheduler.yaml L49, L69-84.
    assert epp["image"] == EPP_IMAGE == "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0"
    args = epp["args"]
    assert args[args.index("--pool-name") + 1] == "mistral-small-24b-pool"
    assert args[args.index("--pool-namespace") + 1] == "eu-support"
    assert args[args.index("--grpc-port") + 1] == "9002" and args[args.index("--grpc-health-port") + 1] == "9003"
    # No --secure-serving=false: Envoy AI Gateway v1.0.0 dials the picker over TLS
    # (internal/extensionserver/inferencepool.go L202-272).
    assert not any(a.startswith("--secure-serving") for a in args)
    config = yaml.safe_load(args[args.index("--config-text") + 1])
    assert [p["type"] for p in config["plugins"]][0] == "single-profile-handler"
    pd = yaml.safe_load(picker_config(True))
    assert [p["name"] for p in pd["schedulingProfiles"]] == ["prefill", "decode"]
    # Every picker of a namespace on a cluster runs as one account with KServe's rights.
    assert dep["serviceAccountName"] == "modelplane-epp"
    role = kind(prod, "Role")["gke-euw4/eu-support/role/modelplane-epp"]
    assert {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]} in role["rules"]
    assert set(kind(prod, "RoleBinding")) >= {"gke-usc1/chat/rolebinding/modelplane-epp",
                                              "eks-use1/chat/rolebinding/modelplane-epp"}
    assert [n for n in kind(prod, "Role") if n.startswith("gke-usc1/chat/")] == ["gke-usc1/chat/role/modelplane-epp"]


def test_pd_pools_get_the_v1alpha2_twin_the_routing_sidecars_allowlist_reads(prod):
    # llm-d-router@v0.9.0 pkg/sidecar/proxy/allowlist.go L250-274 reads the x-k8s.io group's flat selector;
    # KServe's decode template points the sidecar at that group (config-llm-decode-template.yaml L277-288).
    twins = kind(prod, "InferencePool", "inference.networking.x-k8s.io/v1alpha2")
    assert set(twins) == {"gke-usc1/chat/inferencepool/deepseek-r1-pool", "eks-use1/chat/inferencepool/deepseek-r1-pool"}
    assert twins["gke-usc1/chat/inferencepool/deepseek-r1-pool"]["spec"] == {
        "selector": {"modelplane.ai/deployment": "deepseek-r1", "kserve.io/component": "workload"},
        "targetPortNumber": 8000, "extensionRef": {"name": "deepseek-r1-epp", "portNumber": 9002,
                                                   "failureMode": "FailClose"}}


@pytest.mark.parametrize("host, down", [
    ("chat.inference.example.com", ["chat/llama-70b#0"]),
    ("chat.inference.example.com", ["eks-use1"]),
    ("reasoning.inference.example.com", ["gke-usc1"]),
    ("support.inference.example.com", ["eu-support/mistral-small-24b#1"]),
])
def test_losing_a_replica_or_a_cluster_breaks_nothing_when_another_carries_the_service(prod, host, down):
    t = trace(prod, host, down)
    assert t.to_json()["reaches"]["broken"] == 0, [h.broken for h in t.hops]
    assert sum(h.share for h in t.hops) == 1000


def test_a_lost_replica_is_skipped_by_its_picker_and_a_lost_cluster_leaves_dns(prod):
    t = trace(prod, "chat.inference.example.com", ["chat/llama-70b#0"])
    eks = [h for h in t.hops if h.cluster == "eks-use1" and h.lands == "gpu"][0]
    assert "GPU pods of llama-70b-2 on h100 (1 replica(s) down, skipped)" in eks.path[-1]
    t = trace(prod, "chat.inference.example.com", ["eks-use1"])
    assert [h.share for h in t.hops if h.cluster == "eks-use1"] == [0]
    assert t.to_json()["reaches"] == {"gpu": 949, "provider": 51, "broken": 0}
    # Both support replicas gone: no other cluster carries it, so every request fails (503 from the picker).
    t = trace(prod, "support.inference.example.com", ["eu-support/mistral-small-24b#0", "eu-support/mistral-small-24b#1"])
    assert t.to_json()["reaches"]["broken"] == 1000 and "endpoint picker finds no ready pod" in t.hops[0].broken
    with pytest.raises(TraceError, match="no placed replica of that name"):
        trace(prod, "support.inference.example.com", ["eu-support/mistral-small-24b#7"])
    with pytest.raises(TraceError, match="not a cluster, a replica .* of this stack"):
        trace(prod, "support.inference.example.com", ["nowhere"])


def test_the_services_table_and_the_report_say_what_the_trace_follows(prod):
    """DNS sends whole percents (67/33), so the services table, the report's bars and --trace give
    one figure per cluster (the trial saw 63.3 % in the table and 63.7 % in the trace; issue 47)."""
    from modelplane.output.fleetreport import render
    from modelplane.output.report import document, services
    from modelplane.scheduler.traffic import delivered
    from modelplane.output.tables import routing_table

    docs = services(prod)
    for s in docs:
        if not s["hostname"]:
            continue
        served = delivered({d["cluster"]: d["weight"] for d in s["dns"]}, s["endpoints"])
        mine = {}
        for e, per in zip(s["endpoints"], served):
            for c, u in per.items():
                mine[(c, "gpu" if e["target"].startswith("deployment:") else "provider")] = u
        followed = {}
        for h in trace(prod, s["hostname"]).hops:
            followed[(h.cluster, h.lands)] = followed.get((h.cluster, h.lands), 0) + h.share
        assert mine == followed, s["service"]
    chat = next(s for s in docs if s["service"] == "chat/chat")
    assert {d["cluster"]: d["weight"] for d in chat["dns"]} == {"eks-use1": 67, "gke-usc1": 33}
    from rich.console import Console

    console = Console(width=250, record=True, file=io.StringIO())
    console.print(routing_table({"stack": "prod", "services": docs}))
    text = console.export_text()
    assert "eks-use1 63.7%, gke-usc1 31.3%" in text and "eks-use1 3.3%, gke-usc1 1.7%" in text
    page = render(document(prod, []))
    assert 'data-service="chat/chat" data-cluster="eks-use1" data-share="670"' in page


def test_plan_trace_down_prints_the_what_if_and_exits_by_what_breaks(tmp_path):
    cmd = ["plan", "prod", "--trace", "chat.inference.example.com"]
    ok = cli(*cmd, "--down", "eks-use1", "--json")
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)["trace"][0]
    assert doc["down"] == ["eks-use1"] and doc["reaches"]["broken"] == 0
    text = cli(*cmd, "--down", "chat/llama-70b#0")
    assert "as if chat/llama-70b#0 were down" in text.stdout and "broken 0.0%" in text.stdout
    alone = cli("plan", "prod", "--down", "eks-use1")
    assert alone.returncode == 2 and "--trace HOST" in alone.stderr and "Traceback" not in alone.stderr


# ---- R1: the provider keeps its own Host --------------------------------------------------------------

def test_a_backend_without_a_host_rewrite_or_with_a_backend_level_path_rewrite_is_refused():
    # envoyproxy/gateway@v1.8.1 internal/xds/translator/route.go L340-395: a weighted cluster gets only
    # URLRewrite.Host.Name (host_rewrite_literal); backend-level path rewrites are dropped.
    bare = {"group": "gateway.envoyproxy.io", "kind": "Backend", "name": "p", "port": 443, "weight": 5}
    route = {"metadata": {"name": "chat"}, "spec": {"rules": [{"backendRefs": [bare]}]}}
    assert "would receive the client's Host" in rule_problems(route)[0]
    path = {**bare, "filters": [{"type": "URLRewrite", "urlRewrite": {"hostname": "p.example.com", "path": {
        "type": "ReplacePrefixMatch", "replacePrefixMatch": "/openai/v1/"}}}]}
    route["spec"]["rules"][0]["backendRefs"] = [path]
    assert "rewrites the path, which Envoy Gateway drops" in rule_problems(route)[0]


def test_a_provider_with_another_base_path_gets_a_rule_of_its_own_through_the_hop(tmp_path):
    def edit(cfg):
        cfg["modelplane:providers"][0]["url"] = "https://api.together.xyz/openai/v1"
    run = offline.run("pp", stack_variant(tmp_path, "pp", edit))
    hop = routes(run)["eks-use1/chat/httproute/chat-hop"]["spec"]
    assert hop["parentRefs"][0]["name"] == HOP_GATEWAY
    rule = next(r for r in hop["rules"] if r["backendRefs"][0]["kind"] == "Backend")
    assert rule["filters"][1] == {"type": "URLRewrite", "urlRewrite": {
        "hostname": "api.together.xyz", "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/openai/v1/"}}}
    assert all(rule_problems({"metadata": {"name": n}, "spec": r["spec"]}) == [] for n, r in
               ((n.split("/")[-1], r) for n, r in routes(run).items()))
    assert trace(run, "chat.inference.example.com").to_json()["reaches"] == {"gpu": 950, "provider": 50, "broken": 0}


# ---- R2, R11, R14, R15: certificates that issue ----------------------------------------------------------

def test_no_rendered_http01_issuer_covers_a_name_dns_sends_to_two_clusters(prod, eks):
    issuers = kind(eks, "ClusterIssuer")
    solver = issuers["eks-use1/_/clusterissuer/modelplane-acme"]["spec"]["acme"]["solvers"]
    # cert-manager@v1.21.1 pkg/apis/acme/v1/types_issuer.go L622-718: route53 with ambient credentials.
    assert solver == [{"dns01": {"route53": {"region": "us-east-1", "hostedZoneID": "Z0INFERENCEEXAMPLE"}}}]
    shared = {h for s in prod.result.spec.services if len(prod.result.routes[s.key].dns) > 1 for h in [s.hostname]}
    assert shared == {"chat.inference.example.com", "reasoning.inference.example.com"}
    for run in (eks, planned("infra-gke-europe-west4"), planned("infra-gke-us-central1")):
        for issuer in kind(run, "ClusterIssuer").values():
            if any("http01" in s for s in issuer["spec"]["acme"]["solvers"]):
                certs = kind(run, "Certificate").values()
                assert not shared & {n for c in certs for n in c["spec"]["dnsNames"]}


def test_dns01_in_route53_runs_as_cert_managers_own_pod_identity(eks):
    assoc = {r.name: r.inputs for r in eks.records if r.type == "aws:eks/podIdentityAssociation:PodIdentityAssociation"}
    cm = assoc["eks-use1-cert-manager"]
    assert (cm["namespace"], cm["serviceAccount"]) == ("cert-manager", "cert-manager")
    policy = json.loads(next(r.inputs["policy"] for r in eks.records if r.name == "eks-use1-cert-manager"
                             and r.type == "aws:iam/rolePolicy:RolePolicy"))
    actions = {a for st in policy["Statement"] for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])}
    assert actions == {"route53:GetChange", "route53:ChangeResourceRecordSets", "route53:ListResourceRecordSets",
                       "route53:ListHostedZonesByName"}
    # N9: it may change only the challenge's TXT records, never the weighted service records (Route 53
    # condition keys; cert-manager v1.21.1 route53.go L261-300 writes `_acme-challenge.<name>` TXT).
    change = next(st for st in policy["Statement"] if st["Action"] == "route53:ChangeResourceRecordSets")
    assert change["Condition"] == {
        "ForAllValues:StringLike": {"route53:ChangeResourceRecordSetsNormalizedRecordNames": ["_acme-challenge.*"]},
        "ForAllValues:StringEquals": {"route53:ChangeResourceRecordSetsRecordTypes": ["TXT"]}}
    assert change["Resource"] == "arn:aws:route53:::hostedzone/Z0INFERENCEEXAMPLE"
    release = next(r.inputs for r in eks.records if r.name == "eks-use1-cert-manager"
                   and r.type == "kubernetes:helm.sh/v3:Release")
    assert "config" not in release["values"]     # no HTTP-01 through the Gateway here
    # The release starts once cert-manager's role is bound to its ServiceAccount.
    deps = next(r for r in eks.records if r.name == "eks-use1-cert-manager"
                and r.type == "kubernetes:helm.sh/v3:Release").dependencies
    assert any(d.endswith("PodIdentityAssociation::eks-use1-cert-manager") for d in deps)


def test_dns01_in_cloud_dns_runs_as_a_workload_identity_and_http01_keeps_gateway_api_on(tmp_path):
    def edit(cfg):
        cfg["modelplane:clusters"][0]["tls"]["acme"]["dns01"] = {"cloudDns": {"project": "acme-ml-dns",
                                                                              "managedZone": "inference"}}
    run = offline.run("cd", stack_variant(tmp_path, "cd", edit, "infra-gke-europe-west4"))
    by = {(r.type, r.name): r.inputs for r in run.records}
    account = by[("gcp:serviceaccount/account:Account", "gke-euw4-dns01")]
    assert account["accountId"] == "gke-euw4-dns01"
    # N9: bound on the managed zone, not the project (pulumi-gcp gcp.dns.DnsManagedZoneIamMember), and
    # the issuer names the zone, so cert-manager lists no zone of the project (cert-manager@v1.21.1
    # pkg/issuer/acme/dns/clouddns/clouddns.go L244-246).
    assert not [r for r in run.records if r.type == "gcp:projects/iAMMember:IAMMember"]
    assert by[("gcp:dns/dnsManagedZoneIamMember:DnsManagedZoneIamMember", "gke-euw4-dns01-dns")] == {
        "project": "acme-ml-dns", "managedZone": "inference", "role": "roles/dns.admin",
        "member": "serviceAccount:gke-euw4-dns01@acme-ml-prod-eu.iam.gserviceaccount.com"}
    issuer = next(r.inputs for r in run.records if r.inputs.get("kind") == "ClusterIssuer"
                  if isinstance(r.inputs, dict))
    assert issuer["spec"]["acme"]["solvers"][0]["dns01"]["cloudDNS"] == {"project": "acme-ml-dns",
                                                                        "hostedZoneName": "inference"}
    assert by[("gcp:serviceaccount/iAMMember:IAMMember", "gke-euw4-dns01-workload-identity")]["member"] == \
        "serviceAccount:acme-ml-prod-eu.svc.id.goog[cert-manager/cert-manager]"
    values = by[("kubernetes:helm.sh/v3:Release", "gke-euw4-cert-manager")]["values"]
    assert values["serviceAccount"]["annotations"] == {
        "iam.gke.io/gcp-service-account": "gke-euw4-dns01@acme-ml-prod-eu.iam.gserviceaccount.com"}


def test_dns01_in_cloud_dns_without_a_managed_zone_is_an_input_error_with_the_fix(tmp_path):
    from modelplane.errors import InputError
    def edit(cfg):
        cfg["modelplane:clusters"][0]["tls"]["acme"]["dns01"] = {"cloudDns": {"project": "acme-ml-dns"}}
    with pytest.raises(InputError) as err:
        offline.run("cd", stack_variant(tmp_path, "cd", edit, "infra-gke-europe-west4"))
    text = str(err.value)
    assert "Pulumi.cd.yaml" in text and "cloudDns" in text and "needs managedZone" in text
    assert "gcloud dns managed-zones list" in text and ":" in text.split("Pulumi.cd.yaml")[1][:8]


def test_http01_turns_on_cert_managers_gateway_api_support():
    # R14: HTTP-01 (the stack as shipped) turns on Gateway API support with the v1.21 key
    # (cert-manager@v1.21.1 pkg/apis/config/controller/v1alpha1/types.go L152-153).
    shipped = planned("infra-gke-europe-west4")
    values = next(r.inputs for r in shipped.records if r.name == "gke-euw4-cert-manager"
                  and r.type == "kubernetes:helm.sh/v3:Release")["values"]
    assert values["config"] == {"gatewayAPI": {"enabled": True}}


def test_http01_on_a_name_dns_splits_is_a_mandatory_violation_and_the_trace_drops_that_cluster(with_infra):
    stack_variant(with_infra, "infra-eks-us-east-1", lambda cfg: cfg["modelplane:clusters"][0]["tls"]["acme"].pop(
        "dns01"), "infra-eks-us-east-1")
    run = offline.run("prod", with_infra / "Pulumi.prod.yaml")
    found = [v for v in evaluate(run, {"all": "mandatory"}) if v["policy"] == "certificate-issuable"]
    assert len(found) == 2 and all("cannot issue" in v["message"] and "dns01" in v["message"] for v in found)
    t = trace(run, "chat.inference.example.com")
    eks = [h for h in t.hops if h.cluster == "eks-use1"]
    assert eks[0].share == 0 and "cannot issue" in eks[0].path[0] and t.to_json()["reaches"]["broken"] == 0


def test_an_external_issuer_is_reported_and_traced_as_assumed(prod):
    found = [v for v in evaluate(prod, {}) if v["policy"] == "certificate-issuer-external"]
    assert [v["level"] for v in found] == ["advisory"]
    assert "ClusterIssuer letsencrypt-dns01, which no modelplane stack creates" in found[0]["message"]
    t = trace(prod, "reasoning.inference.example.com")
    assert "which no modelplane stack creates: assumed to exist" in next(h for h in t.hops if h.cluster == "gke-usc1").path[0]


# ---- R3, R4, R5, R12, R13: the hop, safe ------------------------------------------------------------------

def test_the_hop_goes_to_an_in_cluster_gateway_whose_rules_never_lead_back(prod, gke):
    chat = routes(prod)["eks-use1/chat/httproute/chat"]["spec"]
    refs = chat["rules"][0]["backendRefs"]
    assert [(r["kind"], r["name"], r["weight"]) for r in refs] == [("Service", HOP_SERVICE, 633),
                                                                  ("Backend", "chat-together", 33)]
    assert refs[0]["filters"] == [{"type": "RequestHeaderModifier", "requestHeaderModifier": {
        "set": [{"name": HOP_HEADER, "value": "chat.llama-70b-pool"}]}}]
    hop = routes(prod)["eks-use1/chat/httproute/chat-hop"]["spec"]
    assert hop["parentRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": HOP_GATEWAY,
                                  "namespace": "modelplane-gateway", "sectionName": "http"}]
    (rule,) = hop["rules"]
    assert rule["backendRefs"] == [pool("llama-70b-pool")]
    # The header is stripped before the pool (Envoy Gateway honours a rule-level remove:
    # internal/gatewayapi/filters.go L567-603).
    assert rule["filters"] == [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"remove": [HOP_HEADER]}}]
    for name, r in routes(prod).items():
        if r["spec"]["parentRefs"][0]["name"] == HOP_GATEWAY:   # no loop: nothing on the hop Gateway goes back to it
            assert all(b["name"] != HOP_SERVICE for rr in r["spec"]["rules"] for b in rr["backendRefs"]), name
    objs = {(o["kind"], o["metadata"]["name"]): o for o in gateway_objects()}
    proxy = objs[("EnvoyProxy", HOP_GATEWAY)]["spec"]["provider"]["kubernetes"]
    assert proxy["envoyService"] == {"type": "ClusterIP"}       # no client outside the cluster reaches it
    assert objs[("Gateway", HOP_GATEWAY)]["spec"]["infrastructure"]["parametersRef"]["name"] == HOP_GATEWAY
    svc = objs[("Service", HOP_SERVICE)]
    assert svc["metadata"]["namespace"] == ENVOY_NAMESPACE
    assert svc["spec"]["selector"]["gateway.envoyproxy.io/owning-gateway-name"] == HOP_GATEWAY
    assert svc["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": ENVOY_HTTP_CONTAINER_PORT, "protocol": "TCP"}]
    assert any(r.name.endswith(f"{ENVOY_NAMESPACE}/service/{HOP_SERVICE}") for r in gke.records)
    # The public listener holds only the 308 redirect for the host (R12: 308 keeps a POST a POST).
    http = routes(prod)["eks-use1/chat/httproute/chat-http"]["spec"]
    assert http["rules"] == [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "filters": [
        {"type": "RequestRedirect", "requestRedirect": {"scheme": "https", "statusCode": 308}}]}]


def test_one_target_per_cluster_needs_no_hop():
    gw = {"name": "inference", "namespace": "modelplane-gateway", "hop": {"name": HOP_GATEWAY}}
    one = cluster_routes("svc", "ns", "svc.example.com", gw, [Target(pool("a-pool"), 1000, own_rule=True)])
    assert len(one) == 1 and one[0]["spec"]["rules"][0]["backendRefs"] == [pool("a-pool", 1000)]


def test_circuit_breakers_are_sized_for_long_streams(prod):
    # R13: Envoy's default is 1,024 per cluster; EG sets only max_retries (cluster.go L728-787).
    btp = kind(prod, "BackendTrafficPolicy")["eks-use1/chat/backendtrafficpolicy/chat"]["spec"]
    assert btp["targetRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "chat"},
                                 {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "chat-hop"}]
    assert btp["circuitBreaker"] == {"maxConnections": 4096, "maxPendingRequests": 4096, "maxParallelRequests": 4096}


def _gateway_ref(cfg):
    c = cfg["modelplane:clusters"][0]
    c.pop("tls")
    c["substrate"] = {"gateway": False}
    c["gatewayRef"] = {"name": "shared", "namespace": "infra-gw"}


def test_a_gateway_ref_cluster_routes_one_target_directly_and_refuses_a_split(with_infra):
    tmp_path = with_infra
    stack_variant(tmp_path, "infra-gke-europe-west4", _gateway_ref, "infra-gke-europe-west4")
    run = offline.run("prod", tmp_path / "Pulumi.prod.yaml")
    support = routes(run)["gke-euw4/eu-support/httproute/support"]["spec"]
    assert support["rules"][0]["backendRefs"] == [pool("mistral-small-24b-pool", 1000)]
    assert not [r for r in run.records if "modelplane-hop" in r.name and r.name.startswith("gke-euw4/")]
    svc = kind(run, "LLMInferenceService")["gke-euw4/eu-support/llminferenceservice/mistral-small-24b-0"]
    assert svc["spec"]["router"]["gateway"] == {"refs": [{"name": "shared", "namespace": "infra-gw"}]}

    def split(cfg):
        cfg["modelplane:services"][2]["endpoints"].append({"provider": "mistral", "weight": 5})
        cfg["modelplane:providers"].append({"name": "mistral", "url": "https://api.mistral.ai/v1",
                                            "model": "mistral-small-24b", "apiKey": {"secret": "togetherApiKey"},
                                            "labels": {"modelplane.ai/residency": "eu"}})
    bad = stack_variant(tmp_path, "split", split)
    with pytest.raises(InputError) as exc:
        offline.run("split", bad)
    text = exc.value.render()
    assert "splits its share on cluster gke-euw4" in text and "gatewayRef" in text and "Traceback" not in text


# ---- R6: DNS health checks probe what a request uses ----------------------------------------------------

def test_health_checks_are_https_through_the_picker_and_decode_pods_only_for_pd(prod):
    checks = {r.name: r.inputs for r in prod.records if r.type == "aws:route53/healthCheck:HealthCheck"}
    for c in checks.values():
        # A P/D cluster's record names a CALCULATED check over two HTTPS ones (N4, test_single_failures).
        assert c["type"] == "CALCULATED" or (c["type"], c["port"], c["enableSni"]) == ("HTTPS", 443, True)
    health = routes(prod)
    support = health["gke-euw4/eu-support/httproute/support-health"]["spec"]
    assert support["parentRefs"][0]["sectionName"] == "https"
    assert support["rules"][0]["backendRefs"] == [pool("mistral-small-24b-pool", 1000)]
    reasoning = health["gke-usc1/chat/httproute/reasoning-health"]["spec"]["rules"][0]["backendRefs"]
    assert reasoning == [{"kind": "Service", "name": "deepseek-r1-decode", "port": 8000, "weight": 500}]
    decode = kind(prod, "Service")["gke-usc1/chat/service/deepseek-r1-decode"]["spec"]["selector"]
    assert decode == {"modelplane.ai/deployment": "deepseek-r1", "kserve.io/component": "workload",
                      "llm-d.ai/role": "decode"}


# ---- R8 and N10: KServe's managed route stays off the public listeners ------------------------------------

def test_kserve_managed_routes_attach_to_the_hop_gateway_whatever_the_tls(prod):
    """N10: KServe's managed route matches `/<ns>/<name>/v1/...` on any Host; on the hop Gateway
    (ClusterIP only) no client outside the cluster reaches it. Its ref is the same with and without
    TLS: Envoy Gateway v1.8.1 keeps a parent's status after a route stops naming it
    (internal/provider/kubernetes/status.go L661-676) and KServe v0.20.0 counts that stale parent as
    not ready (router_discovery.go L682-705), so a ref that moved with TLS left services NotReady."""
    for name, svc in kind(prod, "LLMInferenceService").items():
        assert svc["spec"]["router"]["gateway"]["refs"] == [
            {"name": "inference-hop", "namespace": "modelplane-gateway", "sectionName": "kserve"}], name
    from modelplane.render.addons import hop_gateway_objects   # the infra stacks render it
    hop = next(x for x in hop_gateway_objects() if x["kind"] == "Gateway")
    kserve = [x for x in hop["spec"]["listeners"] if x["name"] == "kserve"]
    # a Host of its own: a request the hop carries for a service (its client's Host, or AI Gateway's
    # Backend's) never reaches KServe's `/<ns>/<name>/v1/...` or model-header rules
    assert kserve == [{"name": "kserve", "protocol": "HTTP", "port": 80, "hostname": "kserve.modelplane.internal",
                       "allowedRoutes": {"namespaces": {"from": "All"}}}]
    service = next(x for x in hop_gateway_objects() if x["kind"] == "Service")
    assert service["spec"]["type"] == "ClusterIP"


# ---- R9, R10, R11: inputs ---------------------------------------------------------------------------------

def test_derived_route_names_that_collide_are_an_input_error_with_file_and_line(tmp_path):
    def edit(cfg):
        cfg["modelplane:services"].append({"name": "support-http", "namespace": "eu-support",
                                           "endpoints": [{"deployment": "mistral-small-24b"}]})
    path = stack_variant(tmp_path, "coll", edit)
    out = cli("plan", "coll", "--config-file", str(path))
    assert out.returncode != 0 and "Traceback" not in out.stderr + out.stdout
    text = out.stderr + out.stdout
    assert f"{path}:" in text and "modelplane:services[3].name" in text
    assert "would both create the HTTPRoute 'support-http'" in text


def test_reserved_example_domains_are_refused_as_acme_contacts():
    from modelplane.api.cluster import Acme
    from pydantic import ValidationError

    for email in ("platform@example.com", "ops@mail.example.org", "x@corp.test"):
        with pytest.raises(ValidationError, match="Let's Encrypt refuses the contact"):
            Acme(email=email)
    Acme(email="platform@example.com", server="https://acme.internal.corp/directory")   # a private CA may accept it
    Acme(email="ml-platform@acme-ml.com")


# ---- the pack and every example stack --------------------------------------------------------------------

def test_no_example_stack_renders_a_rule_the_gateway_refuses(prod, example, lab):
    seen = 0
    for run in (prod, example, lab, planned("dev"), planned("example-inplace")):
        for name, route in routes(run).items():
            seen += 1
            assert rule_problems(route) == [], name
    assert seen >= 8


@pytest.mark.parametrize("rule, words", [
    ({"backendRefs": [pool("a"), pool("b")]}, "references 2 InferencePools (a, b)"),
    ({"backendRefs": [pool("a", 95), {"group": "gateway.envoyproxy.io", "kind": "Backend", "name": "p", "weight": 5,
                                      "filters": [{"type": "URLRewrite", "urlRewrite": {"hostname": "p.example"}}]}]},
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
           "spec": {"rules": [{"backendRefs": [pool("a"), pool("b")]}]}}
    with Analyzer() as analyzer:
        analyzer.configure({})
        found = analyzer.analyze([Resource(HTTPROUTE, "urn:pulumi:x::y::" + HTTPROUTE + "::chat", "chat", bad)])
    assert [(v["policy"], v["level"]) for v in found] == [("route-rules", "mandatory")]


def test_envoy_gateway_fails_closed_when_the_ai_gateway_extension_fails():
    assert envoy_gateway_values()["config"]["envoyGateway"]["extensionManager"]["failOpen"] is False


def test_every_prod_host_reaches_gpu_pods_and_the_provider_share_reaches_the_provider(prod):
    shares = {}
    for host in HOSTS:
        t = trace(prod, host)
        assert t.broken == [], [h.broken for h in t.broken]
        shares[host] = t.to_json()["reaches"]
        for hop in t.hops:
            assert hop.path[0].startswith("Gateway modelplane-gateway/inference")
            assert hop.lands in ("gpu", "provider")
    assert shares[HOSTS[0]] == {"gpu": 950, "provider": 50, "broken": 0}
    assert shares[HOSTS[1]] == {"gpu": 1000, "provider": 0, "broken": 0}
    assert shares[HOSTS[2]] == {"gpu": 1000, "provider": 0, "broken": 0}


def test_every_host_of_every_example_stack_traces_to_a_gpu_or_a_provider(example, lab):
    for run in (example, lab, planned("dev"), planned("example-inplace")):
        for svc in run.result.spec.services:
            if svc.hostname:
                t = trace(run, svc.hostname)
                assert not t.broken and sum(h.share for h in t.hops) == 1000, (run.stack, svc.hostname)


def test_the_trace_names_the_first_broken_link(prod):
    run = copy.copy(prod)
    run.records = [r for r in prod.records if r.name != "eks-use1/chat/httproute/chat-hop"]
    t = trace(run, "chat.inference.example.com")
    # The health check takes the hop too (N3), so the 404 takes eks-use1 out of DNS once it is noticed.
    eks = [h for h in t.hops if h.cluster == "eks-use1"]
    assert eks[0].path == ["dropped from DNS, its health check fails: no hop Gateway rule matches "
                           f"{HOP_HEADER}: chat.llama-70b-pool (404)"]
    assert t.to_json()["reaches"] == {"gpu": 949, "provider": 51, "broken": 0} and t.detection == 150
    # A rule with two pools is named by the rule check, on every share of that cluster.
    old = copy.deepcopy(routes(prod)["eks-use1/chat/httproute/chat"])
    old["spec"]["rules"][0]["backendRefs"][:1] = [pool("llama-70b-0-inference-pool", 317),
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
    cmd = ["plan", "prod"]
    ok = cli(*cmd, "--trace", "chat.inference.example.com", "--json")
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    assert doc["trace"][0]["reaches"] == {"gpu": 950, "provider": 50, "broken": 0}
    bad = cli(*cmd, "--trace", "nope.example.com", "--out", str(tmp_path / "out"))
    assert bad.returncode == 2 and "nope.example.com is not the hostname" in bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "out").exists()
