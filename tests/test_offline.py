"""The offline engine and `modelplane plan`: real program under Pulumi mocks, JSON contract, manifests."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import cli, planned
from modelplane.output import report

ROOT = Path(__file__).resolve().parents[1]
MODELPLANE = [sys.executable, "-m", "modelplane"]


def spawn(*args, env=None):
    """`modelplane ARGS` in a process of its own (another hash seed, a bare PATH)."""
    return subprocess.run([*MODELPLANE, *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def dev_run():
    return planned("dev")


def test_dev_plan_records_parents_and_providers(dev_run):
    comp = next(r for r in dev_run.records if r.type == "modelplane:index:InferenceCluster")
    gke = next(r for r in dev_run.records if r.type == "gcp:container/cluster:Cluster")
    assert gke.parent == comp.urn
    pools = [r for r in dev_run.records if r.type == "gcp:container/nodePool:NodePool"]
    assert {p.name for p in pools} == {"dev-gke-system", "dev-gke-l4", "dev-gke-h100"} and all(p.parent == comp.urn for p in pools)
    provider = next(r for r in dev_run.records if r.type == "pulumi:providers:kubernetes")
    k8s = [r for r in dev_run.records if r.type.startswith("kubernetes:")]
    assert k8s and all(r.provider.startswith(provider.urn) for r in k8s)
    md = {r.name: r.urn for r in dev_run.records if r.type == "modelplane:index:ModelDeployment"}
    llmis = [r for r in k8s if r.type.endswith("LLMInferenceService")]
    assert {r.parent for r in llmis} == set(md.values())
    h100 = next(p for p in pools if p.name == "dev-gke-h100").inputs
    acc = h100["nodeConfig"]["guestAccelerators"][0]
    assert (h100["nodeConfig"]["machineType"], acc["type"], int(acc["count"])) == ("a3-highgpu-8g", "nvidia-h100-80gb", 8)
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"} in h100["nodeConfig"]["taints"]
    assert h100["nodeConfig"]["labels"]["modelplane.ai/pool"] == "h100" and h100["placementPolicy"]["type"] == "COMPACT"
    assert h100["nodeConfig"]["spot"] is True


def test_json_contract_and_determinism():
    a = cli("plan", "dev", "--json")
    b = spawn("plan", "dev", "--json", env={"PYTHONHASHSEED": "4242"})
    assert a.returncode == 0, a.stderr
    assert a.stdout == b.stdout
    doc = json.loads(a.stdout)
    assert list(doc) == ["apiVersion", "kind", "stack", "placements", "unplaced", "models", "fill", "progress",
                         "envelope", "idlePrefill", "scaleOrder", "transitions", "upOrder", "disruptions", "services",
                         "modelNames", "cost", "sizing", "clusters", "resources", "policy"]
    assert doc["fill"] == {"phase": "fast path", "changed": []}
    assert doc["cost"]["currency"] == "USD" and doc["cost"]["stack"]["gpus"]["max"] == sum(
        r["nodes"] * r["gpusPerNode"] for p in doc["placements"] for r in p["roles"].values()) + doc["cost"]["idle"]["gpus"]["max"]
    assert doc["stack"] == "dev" and doc["unplaced"] == [] and doc["policy"] == {"violations": []}
    p = doc["placements"][-1]
    assert p["deployment"] == "ml-team/llama-70b" and set(p["roles"]) == {"decode", "prefill"}
    assert set(p["roles"]["prefill"]) == {"pool", "nodes", "gpusPerNode", "workers", "topology"}
    assert p["roles"]["prefill"]["topology"] == {"tensor": 4, "pipeline": 1, "data": 1, "dataLocal": 1}
    assert all(set(r) <= {"type", "name", "cluster", "digest", "fieldDigests", "protect", "dependsOn", "deployment",
                          "replica", "deleteBeforeReplace", "replaceOnChanges", "retainOnDelete"} for r in doc["resources"])


def test_previous_plan_round_trips_to_identical_manifests(tmp_path):
    first = cli("plan", "dev", "--json", "--out", str(tmp_path / "a"))
    (tmp_path / "prev.json").write_text(first.stdout)
    second = cli("plan", "dev", "--json", "--previous", str(tmp_path / "prev.json"), "--out", str(tmp_path / "b"))
    again = json.loads(second.stdout)
    assert (again.pop("changes"), again.pop("replicaChanges"), again.pop("costDelta")["deployments"],
            again.pop("trafficDelta"), again.pop("spread")) == ([], [], [], [], [])
    before = json.loads(first.stdout)
    # Replicas that already run change one at a time on a later `up`: each waits for the one before it.
    chained = {r["name"]: set(r.get("dependsOn", [])) - set(b.get("dependsOn", []))
               for r, b in zip(again["resources"], before["resources"])}
    # (#43: a replica's service and its rollout await wait for the previous replica's rollout await.)
    first_replica = {"dev-gke/ml-team/llminferenceservice/gpt-oss-20b-0", "dev-gke/ml-team/deployment/gpt-oss-20b-0-kserve"}
    assert {n: d for n, d in chained.items() if d} == {
        "dev-gke/ml-team/llminferenceservice/gpt-oss-20b-1": first_replica,
        "dev-gke/ml-team/deployment/gpt-oss-20b-1-kserve": first_replica}
    for doc in (again, before):
        for r in doc["resources"]:
            r.pop("dependsOn", None)
    assert again == before
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert files_a == files_b
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files_a)


def test_every_rendered_object_passes_upstream_schemas(tmp_path, schema_catalog):
    result = cli("plan", "dev", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    manifests = [p for p in tmp_path.rglob("*.yaml")]
    kinds = set()
    for path in manifests:
        obj = yaml.safe_load(path.read_text())
        status, line = schema_catalog.report(obj)
        assert status == "ok", f"{path}: {line}"
        kinds.add(obj["kind"])
    assert {"LLMInferenceService", "PodGroup", "ResourceClaimTemplate", "Queue", "PriorityClass", "Namespace"} <= kinds
    cloud = sorted(p.name for p in (tmp_path / "cloud").iterdir())
    assert "gcp.container.NodePool--dev-gke-h100.pulumi" in cloud
    checked = cli("validate", str(tmp_path))
    assert checked.returncode == 0, checked.stdout
    assert len(checked.stdout.splitlines()) == len(manifests)


def test_scale_down_removes_only_the_highest_replicas_objects(tmp_path):
    cli("plan", "dev", "--out", str(tmp_path / "a"))
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    doc["config"]["modelplane:deployments"][0]["replicas"] = 1
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(doc))
    cli("plan", "dev", "--config-file", str(tmp_path / "Pulumi.dev.yaml"), "--out", str(tmp_path / "b"))
    a = {p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.yaml")}
    b = {p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*.yaml")}
    assert b < a and all("gpt-oss-20b-1" in str(p) for p in a - b)


@pytest.mark.parametrize("edit,needle", [
    (lambda c: c["modelplane:deployments"][0].update(replcas=c["modelplane:deployments"][0].pop("replicas")),
     "did you mean 'replicas'?"),
    (lambda c: c["modelplane:deployments"][0].update(replicas=-2), "must be at least 0"),
    (lambda c: c["modelplane:clusters"][0]["nodePools"][0].update({"class": "gke-l4-1x"}), "unknown class"),
    (lambda c: c["modelplane:clusters"][0]["nodePools"][0].update(maxNodes="many"), "whole number"),
    (lambda c: c["modelplane:deployments"][0]["nodeSelector"].update(cel="gpu.memoryGiB >="), "does not parse"),
    (lambda c: c["modelplane:deployments"][0]["nodeSelector"].update(cel="gpu.memoryGiB + 1"), "not true or false"),
])
def test_bad_input_exits_2_without_traceback(tmp_path, edit, needle):
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    edit(doc["config"])
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    result = cli("plan", "dev", "--config-file", str(path))
    assert result.returncode == 2
    assert needle in result.stderr and str(path) in result.stderr or "Pulumi.dev.yaml" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout and result.stdout == ""


def test_explain_and_what_if():
    explained = cli("plan", "dev", "--explain", "llama-70b")
    assert explained.returncode == 0
    assert "nodeSelector" in explained.stdout and "bound [0]" in explained.stdout
    # the clause that failed, with the class's value
    assert 'decode: false for class gke-l4-1x-g2: gpu.product == "H100" is false (gpu.product = "L4")' in \
        " ".join(explained.stdout.split()), explained.stdout
    lost = cli("plan", "dev", "--without", "dev-gke")
    assert "lost   ml-team/llama-70b#0 (was on dev-gke)" in lost.stdout
    assert "placement-complete" in lost.stdout and lost.returncode == 0      # advisory outside production
    # a what-if, an explanation and a trace print their answer, not the whole plan before it
    traced = cli("plan", "prod", "--trace", "chat.inference.example.com")
    for answer in (explained, lost, traced):
        assert "placements (" not in answer.stdout and "cost (" not in answer.stdout, answer.stdout
    assert traced.stdout.startswith("trace chat.inference.example.com")
    assert explained.stdout.startswith("Filter / Score for ml-team/llama-70b")


def test_preview_without_pulumi_binary_says_so_in_one_line():
    import shutil
    if shutil.which("pulumi"):
        pytest.skip("a pulumi binary is installed; this checks the missing-CLI path")
    for args in (("preview", "dev"), ("up", "--env", "prod")):
        result = spawn(*args, env={"PULUMI_CONFIG_PASSPHRASE": "x", "PATH": os.path.dirname(sys.executable)})
        assert result.returncode == 3       # modelplane cannot finish: no pulumi binary (README "Exit status")
        assert result.stderr.count("\n") == 1 and "pulumi` CLI is not installed" in result.stderr
        assert "modelplane plan" in result.stderr and result.stdout == ""


def test_report_document_is_pure_data(dev_run):
    doc = report.document(dev_run, [])
    json.dumps(doc)
    assert any(r.get("cluster") == "dev-gke" for r in doc["resources"])
