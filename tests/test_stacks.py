"""Every example stack plans clean offline, and every object it renders passes the upstream schemas."""

import pytest
import yaml

from modelplane.engine import offline
from modelplane.output import report
from modelplane.api.loader import stack_names
from modelplane.policy import evaluate
from helpers import planned

STACKS = stack_names()


def test_the_examples_are_all_there():
    assert {"dev", "lab", "prod", "infra-gke-us-central1", "infra-eks-us-east-1", "infra-gke-europe-west4"} <= set(STACKS)


@pytest.mark.parametrize("stack", STACKS)
def test_example_stack_plans_clean_and_renders_valid_manifests(stack, tmp_path, schema_catalog):
    run = planned(stack)
    mandatory = [v for v in evaluate(run) if v["level"] == "mandatory"]
    assert run.result.plan.unplaced == [] and mandatory == []
    report.write_out(run, tmp_path)
    for path in sorted(tmp_path.rglob("*.yaml")):
        status, line = schema_catalog.report(yaml.safe_load(path.read_text()))
        assert status == "ok", f"{path.relative_to(tmp_path)}: {line}"


def test_prod_spans_both_clouds_and_keeps_eu_data_in_europe():
    run = planned("prod")
    invs = run.result.inventories
    placed = [(p.deployment, invs[p.cluster]) for p in run.result.plan.placements]
    assert {inv["cloud"] for _, inv in placed} == {"gcp", "aws"}
    assert {inv["region"] for d, inv in placed if d == "eu-support/mistral-small-24b"} == {"europe-west4"}
    assert all(inv["labels"]["modelplane.ai/residency"] == "us" for d, inv in placed if d.startswith("chat/"))
    providers = {r.name for r in run.records if r.type == "pulumi:providers:kubernetes"}
    assert providers == {"gke-usc1-k8s", "eks-use1-k8s", "gke-euw4-k8s"}


def _apps(tmp_path, fleet):
    path = tmp_path / "Pulumi.apps.yaml"
    path.write_text(yaml.safe_dump({"config": {"modelplane:fleet": fleet, "modelplane:deployments": []}}))
    return path


def test_fleet_naming_a_missing_stack_is_an_input_error_with_a_suggestion(tmp_path):
    from modelplane.errors import InputError
    with pytest.raises(InputError) as err:
        offline.run("apps", _apps(tmp_path, ["infra-gke-us-centrl1"]))
    (p,) = err.value.problems
    assert p.path == "config.modelplane:fleet[0]" and "infra-gke-us-centrl1" in p.message
    assert p.fix == "did you mean 'infra-gke-us-central1'?"


@pytest.mark.parametrize("outputs,words", [
    ({}, "exports no inventory"),
    ({"inventory": [{"version": 0, "name": "old"}], "kubeconfigs": {}}, "older format for old"),
])
def test_stale_or_missing_references_name_the_stack(tmp_path, monkeypatch, outputs, words):
    from modelplane.errors import InputError
    monkeypatch.setattr(offline, "fleet_references", lambda spec, catalog, path: {"infra-gke-us-central1": outputs})
    with pytest.raises(InputError) as err:
        offline.run("apps", _apps(tmp_path, ["infra-gke-us-central1"]))
    assert "infra-gke-us-central1" in err.value.render() and words in err.value.render()
