"""The public API: Fleet from your own program (Python, and any language through the package)."""
import json
import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from modelplane.engine import offline
from modelplane.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _k8s(run):
    return {(r.type, r.name): r.inputs for r in run.records if r.type.startswith("kubernetes:")}


def test_the_python_example_builds_prod_with_identical_placements_and_objects(prod):
    run = offline.run_program(ROOT / "examples" / "prod-fleet", "prod")
    assert [p.to_json() for p in run.result.plan.placements] == [p.to_json() for p in prod.result.plan.placements]
    assert _k8s(run) == _k8s(prod)      # the same Kubernetes objects, field for field
    fleet = [r for r in run.records if r.type == "modelplane:index:Fleet"]
    assert len(fleet) == 1 and all(r.parent for r in run.records if r.type == "modelplane:index:ModelDeployment")


def test_modelplane_plan_plans_a_program():
    result = CliRunner().invoke(main, ["plan", "prod", "--program", str(ROOT / "examples" / "prod-fleet")])
    assert result.exit_code == 0, result.output
    assert "ok chat/llama-70b: 3/3 replicas placed" in result.output and "1 modelplane:index:Fleet" in result.output


def _program(tmp_path, body: str, config: dict | None = None) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: mine\nruntime: python\n")
    (tmp_path / "__main__.py").write_text(textwrap.dedent(body))
    if config:
        (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump({"config": config}))
    return tmp_path


ONE_POOL = '''
    import pulumi
    from modelplane import Fleet, FleetArgs
    lab = {"name": "lab", "existing": {"kubeconfigSecret": "kc", "version": "1.34"},
           "nodePools": [{"name": "h", "class": "h100-8x", "maxNodes": 2}], "queues": [{"namespace": "ml"}]}
    def model(name):
        return {"name": name, "namespace": "ml", "model": {"uri": "hf://Qwen/Qwen3-32B"}, "replicas": 1,
                "workers": {"count": 2, "topology": {"tensor": 8}}}
    fleet = Fleet("f", FleetArgs(clusters=[lab], deployments=[model("a"), model("b")], secrets={"kc": "apiVersion: v1"}))
    pulumi.export("placements", fleet.placements)
'''


def test_two_deployments_in_one_program_share_one_scheduling_run_and_never_over_commit(tmp_path):
    run = offline.run_program(_program(tmp_path, ONE_POOL), "dev")
    plan = run.result.plan
    assert [p.deployment for p in plan.placements] == ["ml/a"] and [u.deployment for u in plan.unplaced] == ["ml/b"]
    assert plan.free[("lab", "h")] == 0


def test_placements_stay_sticky_through_the_previous_output(tmp_path):
    program = _program(tmp_path, ONE_POOL.replace('model("a"), model("b")', 'model("b"), model("a")'))
    before = [{"deployment": "ml/b", "replica": 0, "cluster": "lab",
               "roles": {"decode": {"pool": "h", "nodes": 2, "gpusPerNode": 8, "workers": 2}}}]
    plan = offline.run_program(program, "dev", before).result.plan
    assert [p.deployment for p in plan.placements] == ["ml/b"]     # retained, though ml/a sorts first


def test_bad_fleet_args_are_input_errors_naming_the_fleet(tmp_path):
    from modelplane.errors import InputError

    with pytest.raises(InputError) as err:
        offline.run_program(_program(tmp_path, ONE_POOL.replace('"maxNodes": 2', '"maxNodes": -1')), "dev")
    assert "Fleet f: modelplane:clusters[0].nodePools[0].maxNodes" in err.value.render()


def test_a_user_catalog_adds_classes_overrides_built_ins_and_refuses_its_own_duplicates(tmp_path):
    from modelplane.api import load_catalog
    from modelplane.errors import InputError

    byo = yaml.safe_load((ROOT / "catalog" / "byo.yaml").read_text())["classes"]
    mine = dict(byo[0], name="l4-1x-lab")
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump({"classes": [mine]}))
    assert "l4-1x-lab" in load_catalog(extra=tmp_path).classes
    # a class of the package's name replaces the package's, and the catalog says so
    bigger = dict(byo[0], capabilities={**byo[0]["capabilities"], "gpu": {**byo[0]["capabilities"]["gpu"], "count": 2}})
    (tmp_path / "over.yaml").write_text(yaml.safe_dump({"classes": [bigger]}))
    catalog = load_catalog(extra=tmp_path)
    assert catalog.classes[byo[0]["name"]].capabilities.gpu.count == 2
    assert catalog.overrides == [{"kind": "class", "name": byo[0]["name"], "file": str(tmp_path / "over.yaml")}]
    # the same name twice in the user's own files is an error naming both
    (tmp_path / "dup.yaml").write_text(yaml.safe_dump({"classes": [mine]}))
    with pytest.raises(InputError) as err:
        load_catalog(extra=tmp_path)
    assert f"class 'l4-1x-lab' is already defined in {tmp_path / 'dup.yaml'}" in err.value.render()
    with pytest.raises(InputError, match="no such file or directory"):
        load_catalog(extra=tmp_path / "missing")


def test_modelplane_catalog_dir_in_a_stack_file(tmp_path):
    byo = yaml.safe_load((ROOT / "catalog" / "byo.yaml").read_text())["classes"]
    (tmp_path / "classes.yaml").write_text(yaml.safe_dump({"classes": [dict(byo[1], name="h100-8x-lab")]}))
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.lab.yaml").read_text())
    doc["config"]["modelplane:catalogDir"] = str(tmp_path / "classes.yaml")
    doc["config"]["modelplane:clusters"][0]["nodePools"][0]["class"] = "h100-8x-lab"
    path = tmp_path / "Pulumi.lab.yaml"
    path.write_text(yaml.safe_dump(doc))
    run = offline.run("lab", path)
    assert run.result.inventories[doc["config"]["modelplane:clusters"][0]["name"]]["pools"][0]["class"] == "h100-8x-lab"


# --- the multi-language package: the schema the SDK's analyzer infers, and the YAML example ---

def test_the_package_schema_types_and_documents_every_input_and_output(schema):
    assert (ROOT / "provider" / "PulumiPlugin.yaml").read_text().count("runtime: python") == 1
    fleet = schema["resources"]["modelplane:index:Fleet"]
    assert fleet["isComponent"] and fleet["description"].startswith("One scheduling run")
    inputs = fleet["inputProperties"]
    assert set(inputs) == {"clusters", "deployments", "services", "providers", "dns", "stacks", "production",
                           "repack", "unprotect", "catalogDir", "secrets", "previous"}
    assert inputs["production"]["type"] == "boolean" and inputs["catalogDir"]["type"] == "string"
    assert inputs["stacks"]["items"]["type"] == "string" and inputs["secrets"]["additionalProperties"]["type"] == "string"
    assert inputs["deployments"]["type"] == "array"
    assert all(p.get("description") for p in inputs.values())
    outputs = fleet["properties"]
    assert set(outputs) == {"inventory", "kubeconfigs", "gateways", "placements", "unplaced", "endpoints"}
    assert all(p.get("description") for p in outputs.values())
    # The 3.272 analyzer has no way to mark a property secret in the inferred schema; the value is
    # secret at runtime (checked below), which is what the engine and state honour.
    assert "secret" not in outputs["kubeconfigs"]


def test_the_yaml_example_uses_only_what_the_schema_declares_and_plans(schema, tmp_path):
    doc = yaml.safe_load((ROOT / "examples" / "yaml-fleet" / "Pulumi.yaml").read_text())
    resource = doc["resources"]["fleet"]
    fleet = schema["resources"][resource["type"]]
    assert set(resource["properties"]) <= set(fleet["inputProperties"])
    assert {o.split(".")[1].rstrip("}") for o in doc["outputs"].values()} <= set(fleet["properties"])
    args = {("catalog_dir" if k == "catalogDir" else k): v for k, v in resource["properties"].items()}
    args["secrets"] = {"labKubeconfig": "apiVersion: v1"}           # ${labKubeconfig} from config
    body = f'''
        from modelplane import Fleet
        Fleet("fleet", {args!r})
    '''
    (tmp_path / "prog").mkdir()
    run = offline.run_program(_program(tmp_path / "prog", body), "dev")
    placed = sorted((p.deployment, p.cluster) for p in run.result.plan.placements)
    assert placed == [("ml/qwen3-32b", "lab"), ("ml/qwen3-8b", "lab"), ("ml/qwen3-8b", "lab")]
    fleet = next(r for r in run.records if r.type == "modelplane:index:Fleet")
    # a secret output travels as the engine's secret envelope (its signature key)
    assert fleet.outputs["kubeconfigs"]["4dabf18193072939515e22adb298388d"] == "1b47061264138c4ac30d75fd1eb44270"


def test_the_two_cluster_example_builds_both_clusters_under_the_fleet_and_places_both_models():
    run = offline.run_program(ROOT / "examples" / "two-clusters", "dev")
    where = sorted((p.deployment, p.cluster, p.roles["decode"].pool) for p in run.result.plan.placements)
    # the 48 GiB selector sends qwen3-32b to the L40S pool and fills it; qwen3-8b takes the L4 nodes
    assert where == [("ml/qwen3-32b", "eks-use1", "l40s")] * 2 + [("ml/qwen3-8b", "gke-usc1", "l4")] * 4
    fleet = next(r for r in run.records if r.type == "modelplane:index:Fleet")
    clusters = [r for r in run.records if r.type == "modelplane:index:InferenceCluster"]
    assert sorted(r.name for r in clusters) == ["eks-use1", "gke-usc1"] and {r.parent for r in clusters} == {fleet.urn}
    assert {r.type for r in run.records} >= {"gcp:container/cluster:Cluster", "aws:eks/cluster:Cluster"}


def test_an_infra_stack_without_inventory_is_an_input_error_naming_the_argument(tmp_path):
    from modelplane.errors import InputError

    body = '''
        from modelplane import Fleet, FleetArgs
        Fleet("f", FleetArgs(stacks=["infra-nowhere"], deployments=[]))
    '''
    with pytest.raises(InputError) as err:
        offline.run_program(_program(tmp_path, body), "dev")
    assert "Fleet f: stacks[0]: stack 'infra-nowhere' exports no inventory" in err.value.render()


def test_the_yaml_example_is_planned_with_program_and_the_typescript_one_says_why_not(tmp_path):
    """`plan --program` runs a YAML program's Fleet resources through the component provider
    (config references resolved offline; a secret stands in); a TypeScript program is refused by name."""
    result = CliRunner().invoke(main, ["plan", "lab", "--program", str(ROOT / "examples" / "yaml-fleet"), "--json"])
    assert result.exit_code == 0, result.output
    placed = sorted((p["deployment"], p["cluster"]) for p in json.loads(result.stdout)["placements"])
    assert placed == [("ml/qwen3-32b", "lab"), ("ml/qwen3-8b", "lab"), ("ml/qwen3-8b", "lab")]
    ts = CliRunner().invoke(main, ["plan", "dev", "--program", str(ROOT / "examples" / "ts-fleet")])
    assert ts.exit_code == 2 and "not a Python or YAML Pulumi program" in ts.output
    doc = yaml.safe_load((ROOT / "examples" / "yaml-fleet" / "Pulumi.yaml").read_text())
    doc["resources"]["fleet"]["properties"]["secrets"]["labKubeconfig"] = "${cluster.kubeconfig}"
    (tmp_path / "Pulumi.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    bad = CliRunner().invoke(main, ["plan", "lab", "--program", str(tmp_path)])
    assert bad.exit_code == 2 and "resources.fleet.properties.secrets.labKubeconfig" in bad.output, bad.output
