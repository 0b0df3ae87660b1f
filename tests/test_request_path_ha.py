"""Issue 45: a request path where each single failure costs only its capacity. Each finding of the
2026-11-26 runtime review this branch fixes (N5, N7, F4 of the user trial) has a test here against
the rendered objects, citing the upstream line it follows."""
from pathlib import Path

import pytest
import yaml

from modelplane.engine import offline
from modelplane.errors import InputError
from modelplane.policy import evaluate
from modelplane.render.addons import envoy_proxy
from modelplane.output.report import document, write_out

from test_request_path import kind, stack_variant, with_infra  # noqa: F401 (the fixture)

ROOT = Path(__file__).resolve().parents[1]
DIGEST = "sha256:" + "ab" * 32


@pytest.fixture(scope="module")
def eks_infra():
    return offline.run("infra-eks-us-east-1", ROOT / "stacks" / "Pulumi.infra-eks-us-east-1.yaml")


# ---- N5: the endpoint picker is highly available, the Envoy fleets keep one pod through a drain ----

def test_every_picker_runs_two_replicas_with_leader_election_a_budget_and_a_prestop_drain(prod):
    pickers = kind(prod, "Deployment")
    pickers = {n: d for n, d in pickers.items() if n.endswith("-epp")}
    assert len(pickers) >= 4
    budgets = kind(prod, "PodDisruptionBudget")
    for name, dep in pickers.items():
        spec = dep["spec"]
        # kserve@v0.20.0 pkg/controller/v1alpha2/llmisvc/scheduler.go L407-414: more than one replica
        # runs with --ha-enable-leader-election; L367-374 keeps Recreate (a rolling update could never
        # take the old leader down: only the leader is ready, llm-d-router@v0.9.0
        # cmd/epp/runner/health.go L71-89).
        assert spec["replicas"] == 2 and spec["strategy"] == {"type": "Recreate"}
        pod = spec["template"]["spec"]
        epp = pod["containers"][0]
        assert "--ha-enable-leader-election" in epp["args"]
        # Liveness stays on the "liveness" service, which a standby passes (health.go L80-85): with
        # readiness on it the standby would restart forever.
        assert epp["livenessProbe"]["grpc"]["service"] == "liveness"
        assert epp["readinessProbe"]["grpc"]["service"] == "readiness"
        # KServe's preset drains for 15 s before SIGTERM (config-llm-scheduler.yaml L30-35).
        assert epp["lifecycle"] == {"preStop": {"exec": {"command": ["/bin/sleep", "15"]}}}
        assert pod["topologySpreadConstraints"][0]["topologyKey"] == "kubernetes.io/hostname"
        pdb = budgets[name.replace("/deployment/", "/poddisruptionbudget/")]
        assert pdb["spec"]["minAvailable"] == 1 and pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
        assert pdb["spec"]["selector"] == spec["selector"]


def test_the_pickers_rbac_grants_the_leases_leader_election_takes():
    # llm-d-router@v0.9.0 pkg/epp/server/controller_manager.go L109-115: a "leases" lock in the pool's namespace.
    from modelplane.render.picker import RULES
    assert {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
            "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]} in RULES


def test_every_envoy_fleet_has_a_disruption_budget(eks_infra):
    # envoyproxy/gateway@v1.8.1 api/v1alpha1/envoyproxy_types.go L542-544 (envoyPDB), shared_types.go L475-500.
    proxies = kind(eks_infra, "EnvoyProxy")
    assert len(proxies) == 2    # the inference Gateway's and the hop Gateway's
    assert proxies and all(p["spec"]["provider"]["kubernetes"]["envoyPDB"] == {"minAvailable": 1}
                           for p in proxies.values())
    assert envoy_proxy("x", "ClusterIP")["spec"]["provider"]["kubernetes"]["envoyDeployment"]["replicas"] == 2


# ---- N7: --out keeps the P/D pool and its v1alpha2 twin apart -------------------------------------

def test_out_writes_the_pd_pool_and_its_twin_to_two_files_and_counts_what_it_wrote(prod, tmp_path):
    count = write_out(prod, tmp_path)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert count == len(files)
    chat = tmp_path / "eks-use1" / "chat"
    v1 = yaml.safe_load((chat / "inferencepool.inference.networking.k8s.io-deepseek-r1-pool.yaml").read_text())
    twin = yaml.safe_load((chat / "inferencepool.inference.networking.x-k8s.io-deepseek-r1-pool.yaml").read_text())
    assert v1["apiVersion"] == "inference.networking.k8s.io/v1"
    assert twin["apiVersion"] == "inference.networking.x-k8s.io/v1alpha2"
    # A name only one group uses keeps the short file name.
    assert (chat / "inferencepool-llama-70b-pool.yaml").exists()


def test_json_keeps_a_dependency_that_shares_the_resources_name(eks_infra):
    doc = document(eks_infra, [])
    deps = {(r["type"], r["name"]): r.get("dependsOn", []) for r in doc["resources"]}
    release = [(t, n) for t, n in deps if t.endswith(":Release") and n == "eks-use1-cert-manager"]
    assert release and "eks-use1-cert-manager" in deps[release[0]]


# ---- F4: the picker image from the substrate overrides ------------------------------------------

def _picker(edit):
    def apply(cfg):
        cfg["modelplane:clusters"][0].setdefault("substrate", {})["endpointPicker"] = edit
    return apply


@pytest.mark.parametrize("setting, image", [
    ({"digest": DIGEST}, f"ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0@{DIGEST}"),
    ({"registry": "mirror.acme.io/ghcr", "digest": DIGEST},
     f"mirror.acme.io/ghcr/llm-d/llm-d-router-endpoint-picker:v0.9.0@{DIGEST}"),
    ({"image": "registry.acme.io/epp:v0.9.0-acme"}, "registry.acme.io/epp:v0.9.0-acme"),
])
def test_the_picker_image_follows_the_clusters_substrate_and_satisfies_a_digest_policy(with_infra, setting, image):
    stack_variant(with_infra, "infra-gke-europe-west4", _picker(setting), "infra-gke-europe-west4")
    run = offline.run("prod", with_infra / "Pulumi.prod.yaml")
    dep = kind(run, "Deployment")["gke-euw4/eu-support/deployment/mistral-small-24b-epp"]
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == image
    if "digest" in setting:
        strict = {"all": "advisory", "image-pinned": {"level": "mandatory", "requireDigest": True}}
        found = [v for v in evaluate(run, strict) if v["policy"] == "image-pinned"]
        assert not [v for v in found if "gke-euw4" in str(v) and "-epp" in str(v)], found
        assert [v for v in found if "-epp" in str(v)]   # the other clusters' pickers still float


@pytest.mark.parametrize("setting, message", [
    ({"digest": "sha256:abc"}, "is not sha256:<64 lowercase hex digits>"),
    ({"registry": "https://mirror.acme.io/"}, "is not a registry host"),
    ({"image": "a/b:1", "registry": "mirror.acme.io"}, "set image or registry, not both"),
])
def test_a_bad_picker_override_names_the_field_and_the_fix(with_infra, setting, message):
    stack_variant(with_infra, "infra-gke-europe-west4", _picker(setting), "infra-gke-europe-west4")
    with pytest.raises(InputError) as err:
        offline.run("infra-gke-europe-west4", with_infra / "Pulumi.infra-gke-europe-west4.yaml")
    text = str(err.value)
    assert message in text and "endpointPicker" in text and "fix:" in text
