"""The change view (`plan --previous`): resource actions, replica changes with reasons, cost delta."""
import json
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from helpers import cli
from modelplane.analysis.changes import cost_delta, digests, replica_changes, resource_changes, spread_text
from modelplane.analysis.immutable import REPLACE_ON, forces_replacement

ROOT = Path(__file__).resolve().parents[1]


def res(type_, name, inputs, **extra):
    digest, fields = digests(inputs)
    return {"type": type_, "name": name, **extra, "digest": digest, "fieldDigests": fields}


POOL = "gcp:container/nodePool:NodePool"
DEPLOY = "kubernetes:apps/v1:Deployment"


def pool(machine="g2-standard-8", accel="nvidia-l4", spot=False, max_nodes=4):
    return {"name": "l4", "cluster": "c", "autoscaling": {"totalMaxNodeCount": max_nodes},
            "nodeConfig": {"machineType": machine, "spot": spot, "guestAccelerators": [{"type": accel, "count": 1}]}}


def deployment(app="x", image="vllm:1"):
    return {"metadata": {"name": "x", "namespace": "ml"},
            "spec": {"selector": {"matchLabels": {"app": app}},
                     "template": {"spec": {"containers": [{"name": "e", "image": image}]}}}}


def test_digests_name_fields_two_levels_deep_and_ignore_key_order():
    a, fields = digests(pool())
    b, _ = digests(dict(reversed(list(pool().items()))))
    assert a == b and len(a) == 16
    assert {"name", "cluster", "autoscaling.totalMaxNodeCount", "nodeConfig.machineType", "nodeConfig.spot",
            "nodeConfig.guestAccelerators"} == set(fields)
    assert digests(pool(max_nodes=5))[0] != a


def test_each_action_and_the_fields_that_force_replacement():
    before = [res(POOL, "a", pool()), res(POOL, "b", pool()), res(POOL, "c", pool()), res(DEPLOY, "d", deployment()),
              res(DEPLOY, "e", deployment()), res(DEPLOY, "gone", deployment())]
    after = [res(POOL, "a", pool(max_nodes=6)), res(POOL, "b", pool(accel="nvidia-h100-80gb", machine="a3-highgpu-8g")),
             res(POOL, "c", pool(machine="g2-standard-24")), res(DEPLOY, "d", deployment(app="y")),
             res(DEPLOY, "e", deployment(image="vllm:2")), res(DEPLOY, "new", deployment()),
             res(DEPLOY, "taken", deployment(), **{"import": "ml/taken"})]
    got = {c["name"]: c for c in resource_changes(before, after)}
    assert {n: c["action"] for n, c in got.items()} == {
        "a": "update", "b": "replace", "c": "update", "d": "replace", "e": "update", "gone": "delete",
        "new": "create", "taken": "import"}
    assert got["a"]["fields"] == ["autoscaling.totalMaxNodeCount"] and "forcedBy" not in got["a"]
    # a new accelerator replaces the pool; a machine type alone migrates nodes in place (an update)
    assert got["b"]["forcedBy"] == ["nodeConfig.guestAccelerators"]
    assert got["b"]["fields"] == ["nodeConfig.guestAccelerators", "nodeConfig.machineType"]
    assert got["c"]["fields"] == ["nodeConfig.machineType"]
    assert got["d"]["forcedBy"] == ["spec.selector"] and got["e"]["fields"] == ["spec.template"]
    assert resource_changes(before, before) == []


def test_a_change_under_the_resources_own_replace_on_changes_is_a_replace_shown_delete_first():
    """The engine replaces on a changed path under a resource's replaceOnChanges (pulumi/pulumi@v3.259.0
    pkg/resource/deploy/step_generator.go L3122-3176) and deletes first when the program asks."""
    rct, llmisvc = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate", "kubernetes:serving.kserve.io/v1alpha1:LLMInferenceService"
    opts = {"replaceOnChanges": ["spec"], "deleteBeforeReplace": True}
    before = [res(rct, "t", {"spec": {"spec": {"devices": 1}}}, **opts),
              res(llmisvc, "m-0", {"spec": {"parallelism": {"data": 2}}, "metadata": {"labels": {"a": 1}}}),
              res(llmisvc, "m-1", {"spec": {"parallelism": {"data": 2}}, "metadata": {"labels": {"a": 1}}})]
    after = [res(rct, "t", {"spec": {"spec": {"devices": 2}}}, **opts),
             res(llmisvc, "m-0", {"spec": {"parallelism": {"data": 3}}, "metadata": {"labels": {"a": 1}}}, **opts),
             res(llmisvc, "m-1", {"spec": {"parallelism": {"data": 2}}, "metadata": {"labels": {"a": 2}}}, **opts)]
    got = {c["name"]: c for c in resource_changes(before, after)}
    assert (got["t"]["action"], got["t"]["forcedBy"], got["t"]["deleteBeforeReplace"]) == ("replace", ["spec.spec"], True)
    assert (got["m-0"]["action"], got["m-0"]["forcedBy"]) == ("replace", ["spec.parallelism"])
    assert got["m-1"]["action"] == "update" and "deleteBeforeReplace" not in got["m-1"]   # labels only


def test_a_previous_plan_without_digests_leaves_resource_changes_unknown():
    old = [{"type": POOL, "name": "a"}]
    assert resource_changes(old, [res(POOL, "a", pool())]) is None
    assert resource_changes(None, [res(POOL, "a", pool())]) is None


def test_the_table_is_two_levels_deep_and_every_kubernetes_object_replaces_on_its_name():
    assert all(len(path.split(".")) <= 2 for paths in REPLACE_ON.values() for path in paths)
    assert forces_replacement("kubernetes:serving.kserve.io/v1alpha1:LLMInferenceService",
                              ["metadata.name", "spec.model"]) == ["metadata.name"]
    assert forces_replacement("aws:eks/nodeGroup:NodeGroup", ["launchTemplate.version", "capacityType"]) == ["capacityType"]
    assert forces_replacement("aws:iam/role:Role", ["assumeRolePolicy"]) == []


def placement(d, i, cluster="c1", pool="l4", workers=1):
    return {"deployment": d, "replica": i, "cluster": cluster,
            "roles": {"decode": {"pool": pool, "nodes": workers, "gpusPerNode": 1, "workers": workers}}}


def test_replica_changes_say_what_happened_and_why():
    before = {"placements": [placement("a", 0), placement("a", 1), placement("a", 2), placement("b", 0),
                             placement("c", 0), placement("c", 1), placement("e", 0)],
              "unplaced": [{"deployment": "c", "replica": 2, "reasons": []}]}
    after = {"placements": [placement("a", 0, cluster="c2"), placement("a", 1, workers=2), placement("c", 0),
                            placement("c", 1), placement("c", 2), placement("c", 3), placement("d", 0),
                            placement("e", 0)],
             "unplaced": [{"deployment": "a", "replica": 2,
                           "reasons": [{"reason": "capacity", "cluster": "c1", "pool": "l4", "detail": "0/4 free"}]}]}
    moves = {("a", 0): "cluster c1 no longer passes the filter", ("a", 2): "pool l4 has no room left for it"}
    got = {(r["deployment"], r["replica"]): r for r in replica_changes(before, after, {"a": 3, "c": 4, "d": 1, "e": 1}, moves)}
    assert set(got) == {("a", 0), ("a", 1), ("a", 2), ("b", 0), ("c", 2), ("c", 3), ("d", 0)}
    assert got["a", 0]["change"] == "moved" and got["a", 0]["reason"] == "cluster c1 no longer passes the filter"
    assert (got["a", 0]["from"], got["a", 0]["to"]) == ("c1 (decode l4)", "c2 (decode l4)")
    assert got["a", 1]["change"] == "resized" and got["a", 1]["reason"] == "decode 1 -> 2 workers"
    assert got["a", 2]["change"] == "removed" and "now unplaced (capacity: 0/4 free)" in got["a", 2]["reason"]
    assert (got["b", 0]["change"], got["b", 0]["reason"]) == ("removed", "deployment removed")
    assert (got["c", 2]["change"], got["c", 2]["reason"]) == ("added", "was unplaced, now fits")
    assert (got["c", 3]["change"], got["c", 3]["reason"]) == ("added", "scale-up 3 -> 4 replicas")
    assert (got["d", 0]["change"], got["d", 0]["reason"]) == ("added", "new deployment")
    down = replica_changes(before, {"placements": before["placements"][:2], "unplaced": []}, {"a": 2}, {})
    assert [r["reason"] for r in down if r["deployment"] == "a"] == ["scale-down 3 -> 2 replicas"]


def test_cost_delta_per_deployment_and_stack():
    def row(name, lo, hi):
        return {"deployment": name, "hourly": {"min": lo, "max": hi}, "monthly": {"min": lo * 730, "max": hi * 730}}
    before = {"deployments": [row("a", 1.0, 2.0), row("b", 5.0, 5.0)], "stack": row("-", 6.0, 7.0)}
    after = {"deployments": [row("a", 1.0, 2.0), row("c", 3.0, 4.0)], "stack": row("-", 4.0, 6.0)}
    got = cost_delta(before, after)
    assert [(d["deployment"], d["hourly"]) for d in got["deployments"]] == [
        ("b", {"min": -5.0, "max": -5.0}), ("c", {"min": 3.0, "max": 4.0})]
    assert got["stack"]["hourly"] == {"min": -2.0, "max": -1.0} and got["stack"]["monthly"] == {"min": -1460.0, "max": -730.0}


@pytest.fixture(scope="module")
def dev_plan(tmp_path_factory):
    path = tmp_path_factory.mktemp("prev") / "dev.json"
    result = cli("plan", "dev", "--json")
    assert result.returncode == 0, result.stderr
    path.write_text(result.stdout)
    return path


def test_an_unchanged_stack_reports_no_change(dev_plan):
    text = cli("plan", "dev", "--previous", str(dev_plan))
    assert "changes against dev.json: none (resources, replicas and cost as before)" in text.stdout


def test_a_changed_stack_reports_resources_replicas_and_cost(dev_plan, tmp_path):
    stack = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
    changed = stack.replace("replicas: 2", "replicas: 3").replace(
        "maxNodes: 4, zones: [us-central1-a]", "maxNodes: 4, zones: [us-central1-a], capacity: {type: spot}")
    assert changed != stack
    (tmp_path / "dev.yaml").write_text(changed)
    # The pool carries replicas, so it is protected: `up` refuses to replace it until it is unprotected.
    refused = cli("plan", "dev", "--config-file", str(tmp_path / "dev.yaml"), "--previous", str(dev_plan))
    assert refused.returncode == 1
    assert ("error: replace of protected gcp:container/nodePool:NodePool dev-gke-l4: `up` refuses it; list it in "
            "modelplane:unprotect in this change") in refused.stderr
    assert "PROTECTED: `up` refuses it" in refused.stdout
    (tmp_path / "dev.yaml").write_text(changed.replace("config:\n", "config:\n  modelplane:unprotect: [dev-gke/l4]\n", 1))
    result = cli("plan", "dev", "--config-file", str(tmp_path / "dev.yaml"), "--previous", str(dev_plan), "--json",
                 "--report", str(tmp_path / "r.html"))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    by = {(c["action"], c["name"]) for c in doc["changes"]}
    assert ("replace", "dev-gke-l4") in by     # on-demand to spot: a new node pool
    assert ("create", "dev-gke/ml-team/llminferenceservice/gpt-oss-20b-2") in by
    assert not any(c["action"] == "delete" for c in doc["changes"])
    l4 = next(c for c in doc["changes"] if c["name"] == "dev-gke-l4")
    assert l4["forcedBy"] == ["nodeConfig.reservationAffinity", "nodeConfig.spot"]   # Spot consumes no reservation
    assert l4["replicas"] == ["ml-team/gpt-oss-20b#0", "ml-team/gpt-oss-20b#1"]     # running on the old nodes
    assert l4["destructive"] and not l4.get("protected")
    # both replicas restart at once on the new pool's nodes: an outage, never silent
    assert doc["disruptions"] == [{"deployment": "ml-team/gpt-oss-20b", "servingBefore": 2, "servingDuring": 0,
                                   "replicas": 3, "cause": "#0, #1 restart at once: node pool dev-gke-l4 is replaced"}]
    outage = [v for v in doc["policy"]["violations"] if v["policy"] == "no-outage"]
    assert [(v["level"], v["resource"]) for v in outage] == [("advisory", "ml-team-gpt-oss-20b")]
    assert "serves 0/2 replicas while `up` applies this change" in outage[0]["message"]
    assert doc["replicaChanges"] == [{"change": "added", "deployment": "ml-team/gpt-oss-20b", "replica": 2,
                                      "to": "dev-gke", "reason": "scale-up 2 -> 3 replicas"}]
    before = json.loads(dev_plan.read_text())["cost"]
    stack_delta = doc["cost"]["stack"]["hourly"]["min"] - before["stack"]["hourly"]["min"]
    assert doc["costDelta"]["stack"]["hourly"]["min"] == pytest.approx(stack_delta, abs=1e-3)
    assert [d["deployment"] for d in doc["costDelta"]["deployments"]] == ["ml-team/gpt-oss-20b"]
    page = BeautifulSoup((tmp_path / "r.html").read_text(), "html.parser")
    rows = page.select("#resource-changes tr[data-action=replace]")
    assert len(rows) == 1 and "dev-gke-l4" in rows[0].text and "forces replacement" in rows[0].text
    assert "restarts ml-team/gpt-oss-20b#0, ml-team/gpt-oss-20b#1" in rows[0].text
    assert page.select_one("#replica-changes tr[data-change=added]")["data-deployment"] == "ml-team/gpt-oss-20b"
    assert page.select_one("#cost-delta tr[data-row=stack]") is not None
    assert "serving during change: 0/2 (outage)" in page.select_one("#disruptions li").text


def test_an_older_previous_plan_still_gives_replicas_and_cost(dev_plan, tmp_path):
    old = json.loads(dev_plan.read_text())
    for r in old["resources"]:
        del r["digest"], r["fieldDigests"]
    old["placements"] = old["placements"][:-1]        # one replica fewer than now
    del old["cost"]                                   # priced again at today's prices
    (tmp_path / "old.json").write_text(json.dumps(old))
    result = cli("plan", "dev", "--previous", str(tmp_path / "old.json"), "--json")
    doc = json.loads(result.stdout)
    assert doc["changes"] is None
    assert [(r["change"], r["deployment"]) for r in doc["replicaChanges"]] == [("added", "ml-team/llama-70b")]
    assert doc["costDelta"]["deployments"][0]["deployment"] == "ml-team/llama-70b"
    text = cli("plan", "dev", "--previous", str(tmp_path / "old.json")).stdout
    assert "resources unknown (old.json has no resource digests" in text
    assert "replica ml-team/llama-70b#0 added on dev-gke" in text


def test_a_change_that_gives_up_a_services_spread_says_so_with_the_cost_of_keeping_it(tmp_path):
    """The user trial's F1: prod's DeepSeek decode {tensor 8, data 2} -> {tensor 8, data 1} surges
    deepseek-r1#0 from eks-use1 to gke-usc1; chat/reasoning then runs on one cloud. The change view
    says which region and cloud it left, and that keeping it on the reserved (now idle) H200s costs less."""
    base = tmp_path / "prod.json"
    result = cli("plan", "prod", "--json")
    assert result.returncode == 0, result.stderr
    base.write_text(result.stdout)
    changed = tmp_path / "Pulumi.prod.yaml"
    old = "workers: {count: 1, topology: {tensor: 8, data: 2, dataLocal: 1}}"
    text = (ROOT / "stacks" / "Pulumi.prod.yaml").read_text()
    assert old in text
    changed.write_text(text.replace(old, "workers: {count: 1, topology: {tensor: 8, data: 1}}"))
    result = cli("plan", "prod", "--config-file", str(changed), "--previous", str(base), "--json")
    spread = json.loads(result.stdout)["spread"]
    assert [(s["service"], s["region"], s["cloud"], s["cloudLost"], s["replicas"], s["clusters"]) for s in spread] == \
        [("chat/reasoning", "us-east-1", "aws", True, ["chat/deepseek-r1#0"], ["eks-use1"])]
    row = spread[0]
    assert row["after"] == {"clouds": ["gcp"], "regions": ["us-central1"]}
    assert [p["pool"] for p in row["idlePaidThere"]] == ["eks-use1/h200"] and row["keepingSavesHourly"] > 0
    text = cli("plan", "prod", "--config-file", str(changed), "--previous", str(base)).stdout
    assert ("! spread chat/reasoning: no replica left in us-east-1 and on aws (clouds aws+gcp -> gcp, regions "
            "us-central1+us-east-1 -> us-central1): chat/deepseek-r1#0 left eks-use1; keeping it there would cost "
            f"${row['keepingSavesHourly']:,.0f}/h less") in text, text
    # the HTML report's change view says the same (advisory)
    report = tmp_path / "r.html"
    assert cli("plan", "prod", "--config-file", str(changed), "--previous", str(base), "--report",
               str(report)).returncode == 0
    item = BeautifulSoup(report.read_text(), "html.parser").select_one("#spread-lost li[data-service='chat/reasoning']")
    assert item["class"] == ["advisory"]
    assert " ".join(item.text.split()) == "chat/reasoning: " + spread_text(row)
    assert "chat/deepseek-r1#0 left eks-use1; keeping it there would cost $" in item.text
    # an unchanged stack gives up nothing
    unchanged = cli("plan", "prod", "--previous", str(base), "--json", "--report", str(report))
    assert json.loads(unchanged.stdout)["spread"] == []
    assert BeautifulSoup(report.read_text(), "html.parser").select_one("#spread-lost") is None
