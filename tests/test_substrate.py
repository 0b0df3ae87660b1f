"""Substrate overrides: each switch takes {enabled, version, values}; versions and values render into
the Helm releases, bad ones are refused before anything runs."""
from pathlib import Path
import pytest
import yaml

from modelplane.engine import offline
from modelplane.api import load_catalog, parse_stack_config
from modelplane.api.cluster import Substrate
from modelplane.api.loader import Source
from modelplane.api.substrate import CHARTS, deep_merge, overrides, toggles, values_validator
from modelplane.errors import InputError
from modelplane.render.addons import ClusterFacts, addons

ROOT = Path(__file__).resolve().parents[1]

VERSIONS = load_catalog().substrate


def plan_of(substrate: dict, source: str = "gke") -> dict:
    """Release name -> Addon for one cluster with these switches (the pure addon plan)."""
    sub = Substrate.model_validate(substrate)
    facts = ClusterFacts("c", source, "us-central1", sub.dra_driver.enabled, toggles(sub), overrides=overrides(sub))
    return {a.name: a for a in addons(facts, VERSIONS) if a.kind == "release"}


def test_true_false_and_mappings_mean_the_same():
    assert Substrate.model_validate({"kserve": True}) == Substrate.model_validate({"kserve": {}}) == Substrate()
    off = Substrate.model_validate({"kserve": False})
    assert off == Substrate.model_validate({"kserve": {"enabled": False}}) and not off.kserve
    assert "kserve-llmisvc-resources" not in plan_of({"kserve": False})


def test_without_overrides_every_release_is_at_its_pin():
    plan = plan_of({})
    assert plan["kserve-llmisvc-resources"].version == VERSIONS["kserve"]["version"] == "v0.20.0"
    assert plan["cert-manager"].version == VERSIONS["certManager"]["version"]
    assert plan["cert-manager"].values == {"crds": {"enabled": True}}


def test_a_version_applies_to_every_chart_of_its_switch_and_nothing_else():
    plan = plan_of({"kserve": {"version": "v0.20.1"}, "gateway": {"version": "v1.8.2"}})
    assert {n for n, a in plan.items() if a.version == "v0.20.1"} == \
        {"kserve-llmisvc-crd", "kserve-llmisvc-resources", "kserve-runtime-configs"}
    assert {n for n, a in plan.items() if a.version == "v1.8.2"} == {"envoy-gateway-crds", "envoy-gateway"}
    assert plan["ai-gateway"].version == VERSIONS["aiGateway"]["version"]        # pinned to Envoy Gateway's pair


def test_values_deep_merge_over_ours_and_win():
    theirs = {"kserve": {"llmisvc": {"controller": {"image": "registry.example/kserve", "tag": "v0.20.0"}}},
              "commonLabels": {"team": "ml"}}
    values = plan_of({"kserve": {"values": theirs}})["kserve-llmisvc-resources"].values
    assert values == {"kserve": {"llmisvc": {"createGIECRDs": True, "controller": theirs["kserve"]["llmisvc"]["controller"]}},
                      "commonLabels": {"team": "ml"}}
    # yours win, lists are replaced whole (as Helm merges a values file)
    env = plan_of({"gateway": {"values": {"config": {"envoyGateway": {"provider": {"type": "Custom"}}}}}})
    assert env["envoy-gateway"].values["config"]["envoyGateway"]["provider"] == {"type": "Custom"}
    assert env["envoy-gateway"].values["config"]["envoyGateway"]["extensionApis"]["enableBackend"] is True
    assert deep_merge({"a": [1, 2], "b": {"c": 1}}, {"a": [3], "b": {"d": 2}}) == {"a": [3], "b": {"c": 1, "d": 2}}


def test_every_switch_names_catalog_entries():
    # endpointPicker is a setting of KServe's picker image, not an install switch
    assert set(CHARTS) == set(Substrate.model_json_schema(by_alias=True)["properties"]) - {"endpointPicker"}
    assert all(key in VERSIONS for keys in CHARTS.values() for key in keys)


def test_our_own_values_pass_the_charts_values_schemas():
    plan = plan_of({})
    for key, entry in sorted(VERSIONS.items()):
        if entry.get("valuesSchema"):
            release = next(a for a in plan.values() if a.key == key)
            assert list(values_validator(entry["valuesSchema"]).iter_errors(release.values)) == [], key


def problems(substrate: dict) -> list[tuple[str, str, str]]:
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    doc["config"]["modelplane:clusters"][0]["substrate"] = substrate
    with pytest.raises(InputError) as err:
        parse_stack_config(doc["config"], Source("stacks/Pulumi.dev.yaml", None), load_catalog())
    return [(p.path, p.message, p.fix) for p in err.value.problems]


@pytest.mark.parametrize("substrate,path,words,fix", [
    ({"kserve": {"version": "v0.19.1"}}, "modelplane:clusters[0].substrate.kserve.version",
     "kserve v0.19.1 is older than v0.20.0: modelplane renders LLMInferenceServices", "use v0.20.0 or newer"),
    ({"kserve": {"version": "v0.20.0-rc1"}}, "modelplane:clusters[0].substrate.kserve.version",
     "older than v0.20.0", "v0.20.0 or newer"),
    ({"keda": {"version": "~2.20"}}, "modelplane:clusters[0].substrate.keda.version",
     "'~2.20' is not an exact chart version", "e.g. '2.20.2'"),
    ({"certManager": {"values": {"crds": {"enabld": True}}}}, "modelplane:clusters[0].substrate.certManager.values.crds",
     "not accepted by cert-manager v1.21.1's values.schema.json: Additional properties are not allowed ('enabld'",
     "schemas/helm/cert-manager/values.schema.json"),
    ({"kserve": {"values": {"kserve": {"llmisvc": {"createGIECRDs": "yes"}}}}},
     "modelplane:clusters[0].substrate.kserve.values.kserve.llmisvc.createGIECRDs", "'yes' is not of type 'boolean'",
     "kserve-llmisvc-resources"),
    ({"kserve": {"versoin": "v0.20.0"}}, "modelplane:clusters[0].substrate.kserve.versoin", "unknown field",
     "did you mean 'version'?"),
    ({"lws": 3}, "modelplane:clusters[0].substrate.lws", "expected true, false or a mapping", "write true, false"),
])
def test_bad_overrides_are_refused_with_the_reason(substrate, path, words, fix):
    [(where, message, hint)] = problems(substrate)
    assert where == path and words in message and fix in hint


def test_values_are_left_to_helm_at_a_version_whose_schema_we_do_not_carry():
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    doc["config"]["modelplane:clusters"][0]["substrate"] = {"certManager": {"version": "v1.22.0",
                                                                            "values": {"newKnob": True}}}
    spec = parse_stack_config(doc["config"], Source("stacks/Pulumi.dev.yaml", None), load_catalog())
    assert spec.clusters[0].substrate.cert_manager.version == "v1.22.0"


def test_overrides_reach_the_helm_releases_of_a_plan(tmp_path):
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    doc["config"]["modelplane:clusters"][0]["substrate"] = {
        "kserve": {"version": "v0.20.1", "values": {"kserve": {"llmisvc": {"controller": {"image": "r.example/c"}}}}},
        "keda": False}
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(doc))
    run = offline.run("dev", path)
    releases = {r.inputs["name"]: r.inputs for r in run.records if r.type == "kubernetes:helm.sh/v3:Release"}
    assert "keda" not in releases
    assert releases["kserve-llmisvc-crd"]["version"] == releases["kserve-llmisvc-resources"]["version"] == "v0.20.1"
    assert releases["kserve-llmisvc-resources"]["values"]["kserve"]["llmisvc"] == {
        "createGIECRDs": True, "controller": {"image": "r.example/c"}}


def test_a_preinstalled_component_is_wired_but_not_installed(tmp_path):
    """`preinstalled: true`: the cluster's owners run it (the e2e clusters, a platform team's own KAI):
    no chart, manifest or install gate of it, while workloads keep its wiring (KAI scheduler name and
    queue, DRA claim templates) and objects that are ours (the Gateway, queues) are still created."""
    from modelplane.api.substrate import preinstalled
    sub = Substrate.model_validate({"kai": {"preinstalled": True}, "kserve": {"preinstalled": True},
                                    "gateway": {"preinstalled": True}, "draDriver": {"preinstalled": True}})
    assert preinstalled(sub) == {"kai", "kserve", "gateway", "draDriver"}
    facts = ClusterFacts("c", "existing", "ams1", True, toggles(sub), preinstalled=preinstalled(sub))
    names = {a.name: a.kind for a in addons(facts, VERSIONS)}
    assert not {"kai-scheduler", "kserve-llmisvc-crd", "kserve-llmisvc-resources", "kserve-webhook-ready",
                "kserve-runtime-configs", "envoy-gateway", "envoy-gateway-crds", "ai-gateway", "ai-gateway-crds",
                "gateway-api-crds", "dra-driver-nvidia-gpu"} & set(names)
    assert names["gateway"] == "objects" and names["kserve-pipeline-preset"] == "objects"
    assert "cert-manager" in names and "lws" in names      # not marked: still installed
    # Disabled stays what it was: not installed and not wired.
    assert not preinstalled(Substrate.model_validate({"kai": {"enabled": False, "preinstalled": True}}))

    stack = yaml.safe_load((ROOT / "tests" / "e2e" / "stacks" / "Pulumi.infra-e2e.yaml").read_text())
    stack["config"]["modelplane:deployments"] = [{
        "name": "m", "namespace": "ml", "model": {"uri": "hf://Qwen/Qwen3-8B"}, "replicas": 1, "backend": "native",
        "workers": {"count": 1, "topology": {"tensor": 1}}, "engine": {"image": "vllm/vllm-openai:v0.10.2"}}]
    for key in ("e2eAKubeconfig", "e2eBKubeconfig"):
        stack["config"][f"modelplane:{key}"] = {"secure": "v1:ZmFrZS1ub25jZQ==:b2ZmbGluZS1leGFtcGxlLW9ubHk="}
    path = tmp_path / "Pulumi.e2e-one.yaml"
    path.write_text(yaml.safe_dump(stack))
    run = offline.run("e2e-one", path)
    kinds = {r.type for r in run.records}
    assert "kubernetes:helm.sh/v3:Release" not in kinds
    pods = [r.inputs["spec"]["template"] for r in run.records if r.type == "kubernetes:apps/v1:Deployment"]
    assert pods and all(t["spec"]["schedulerName"] == "kai-scheduler" and t["metadata"]["labels"]["kai.scheduler/queue"]
                        == "ml" and t["spec"]["resourceClaims"] for t in pods)
    assert "kubernetes:scheduling.run.ai/v2:Queue" in kinds
