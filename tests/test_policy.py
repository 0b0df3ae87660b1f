"""Policy rules by direct calls, and the pack through its real gRPC analyzer interface."""
import json
from types import SimpleNamespace

import pytest

from modelplane.policy import POLICIES, Analyzer, PolicyConfigError, Resource, read_config, resolve
from modelplane.policy.resource import (gpu_pool_tainted_and_labelled, image_pinned, kai_wired, multi_node_placement,
                                        no_plain_secrets, node_pool_bounds, resource_names)
from modelplane.policy.stack import dra_claims, kai_gang, placement_co_located, topology_fits
from helpers import planned

GPU_POOL = {"nodeConfig": {"machineType": "a3-ultragpu-8g", "guestAccelerators": [{"type": "nvidia-h200-141gb", "count": 8}],
                           "taints": [], "labels": {}}, "autoscaling": {"minNodeCount": 3, "maxNodeCount": 1}}


@pytest.fixture(scope="module")
def analyzer():
    with Analyzer() as a:
        yield a


@pytest.fixture(scope="module")
def dev_resources():
    run = planned("dev")
    return [SimpleNamespace(resource_type=r.type, props=r.outputs if not r.custom else r.inputs, urn=r.urn, name=r.name)
            for r in run.records]


def test_node_pool_rules_on_a_bad_gke_pool():
    assert gpu_pool_tainted_and_labelled("gcp:container/nodePool:NodePool", GPU_POOL) == [
        "GPU pool lacks the taint nvidia.com/gpu=present:NoSchedule", "GPU pool lacks the node label modelplane.ai/pool"]
    assert node_pool_bounds("gcp:container/nodePool:NodePool", GPU_POOL) == ["autoscaling minimum 3 is greater than maximum 1"]
    assert "no COMPACT placement policy" in multi_node_placement("gcp:container/nodePool:NodePool", GPU_POOL)[0]
    assert multi_node_placement("aws:eks/nodeGroup:NodeGroup", {"instanceTypes": ["p5.48xlarge"]})
    assert gpu_pool_tainted_and_labelled("aws:eks/nodeGroup:NodeGroup", {"amiType": "AL2023_x86_64_STANDARD"}) == []


def test_pod_rules_cover_every_workload_kind():
    pod = {"containers": [{"name": "engine", "image": "vllm/vllm-openai", "resources": {"limits": {"nvidia.com/gpu": 8}},
                           "env": [{"name": "HF_TOKEN", "value": "hf_x"}]}]}
    lws = {"kind": "LeaderWorkerSet", "metadata": {"name": "x" * 70},
           "spec": {"leaderWorkerTemplate": {"workerTemplate": {"metadata": {}, "spec": pod}}}}
    t = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
    assert kai_wired(t, lws) == [
        "spec.leaderWorkerTemplate.workerTemplate does not use schedulerName kai-scheduler",
        "spec.leaderWorkerTemplate.workerTemplate lacks the label kai.scheduler/queue",
        "spec.leaderWorkerTemplate.workerTemplate lacks the annotation pod-group-name"]
    assert "not pinned (no tag, or :latest)" in image_pinned(t, lws)[0]
    assert "env HF_TOKEN has a plain value" in no_plain_secrets(t, lws)[0]
    assert "the limit is 63" in resource_names(t, lws)[0]
    digest = "vllm/vllm-openai@sha256:" + "a" * 64
    pod["containers"][0]["image"] = digest
    assert image_pinned(t, lws, {"requireDigest": True}) == []


def test_stack_rules_pass_on_the_dev_stack_and_catch_tampering(dev_resources):
    for rule in (topology_fits, placement_co_located, kai_gang, dra_claims):
        assert rule(dev_resources) == [], rule.__name__
    pg = next(r for r in dev_resources if r.props.get("kind") == "PodGroup" and "llama" in r.name)
    claim = next(r for r in dev_resources if r.props.get("kind") == "ResourceClaimTemplate" and "llama" in r.name)
    bad = [*dev_resources]
    bad[bad.index(pg)] = SimpleNamespace(**{**vars(pg), "props": {**pg.props, "spec": {**pg.props["spec"], "minMember": 1, "queue": "nope"}}})
    exactly = claim.props["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    req = {**claim.props["spec"]["spec"]["devices"]["requests"][0], "exactly": {**exactly, "count": 2, "deviceClassName": "gpu.amd.com"}}
    bad[bad.index(claim)] = SimpleNamespace(**{**vars(claim), "props": {**claim.props, "spec": {"spec": {"devices": {"requests": [req]}}}}})
    moved = next(r for r in dev_resources if r.props.get("kind") == "LLMInferenceService" and "llama" in r.name)
    bad.append(SimpleNamespace(**{**vars(moved), "name": "other/" + moved.name.split("/", 1)[1], "urn": moved.urn + "x"}))
    msgs = [m for m, _ in kai_gang(bad)]
    assert any("minMember 1, but the replica has 3 pods" in m for m in msgs)
    assert any("queue 'nope' does not exist on cluster dev-gke" in m for m in msgs)
    msgs = [m for m, _ in dra_claims(bad)]
    assert any("count 2, but the worker uses" in m for m in msgs) and any("'gpu.amd.com' does not exist" in m for m in msgs)
    assert "objects on clusters dev-gke, other" in placement_co_located(bad)[0][0]


def test_pack_describes_every_policy_over_grpc(analyzer):
    info = analyzer.info()
    assert info.name == "modelplane" and info.supportsConfig
    got = {p.name: p for p in info.policies}
    assert set(got) == set(POLICIES) and len(got) >= 16
    assert got["placement-complete"].enforcementLevel == 0 and got["roles"].enforcementLevel == 1


def test_bad_resources_are_refused_through_grpc_and_config_levels_apply(analyzer):
    pool = Resource("gcp:container/nodePool:NodePool", "urn:pulumi:s::modelplane::gcp:container/nodePool:NodePool::p",
                    "p", GPU_POOL)
    analyzer.configure({})
    found = {(v["policy"], v["level"], v["resource"]) for v in analyzer.analyze([pool])}
    assert {("gpu-pool-taint-and-label", "mandatory", "p"), ("node-pool-bounds", "mandatory", "p"),
            ("multi-node-placement", "mandatory", "p")} <= found
    analyzer.configure({"all": "advisory", "node-pool-bounds": "disabled"})
    found = {(v["policy"], v["level"]) for v in analyzer.analyze([pool])}
    assert ("gpu-pool-taint-and-label", "advisory") in found and not any(p == "node-pool-bounds" for p, _ in found)


def test_policy_config_files(tmp_path):
    assert resolve({"all": "advisory", "gpu-budget": {"maxGpus": 8}})["gpu-budget"] == ("advisory", {"maxGpus": 8})
    assert resolve({})["placement-complete"][0] == "advisory" and resolve({})["roles"][0] == "mandatory"
    for bad, words in (({"gpu-budgt": "mandatory"}, "not a policy of this pack"), ({"roles": "fatal"}, "not one of")):
        path = tmp_path / "c.json"
        path.write_text(json.dumps(bad))
        with pytest.raises(PolicyConfigError, match=words):
            read_config(path)
    from modelplane.policy import CONFIG_DIR
    assert read_config(CONFIG_DIR / "production.json")["placement-complete"]["enforcementLevel"] == "mandatory"
    assert read_config(CONFIG_DIR / "dev.json")["placement-complete"]["enforcementLevel"] == "advisory"


def _imperative(fix: str) -> bool:
    """A fix says what to change: a sentence of its own, not a restatement of the verdict."""
    return len(fix.split()) >= 4 and not fix.endswith(".") and fix[0].islower()


def test_every_policy_has_a_fix_for_each_of_its_cases():
    for name, p in POLICIES.items():
        assert _imperative(p.fix), (name, p.fix)
        for words, fix in p.fixes:
            assert words and _imperative(fix) and fix != p.fix, (name, words)
            assert p.fix_for(f"x {words} y") == fix
        assert p.fix_for("a message no case names") == p.fix


def test_every_recorded_verdict_gets_a_fix():
    """Every verdict of every example stack and policy fixture (tests/golden/verdicts.json), as the
    CLI, the comment and SARIF report it (with_fixes), carries a fix; a verdict that knows its own
    case's fix keeps it."""
    from pathlib import Path

    from modelplane.policy import with_fixes
    from modelplane.policy.stack import LOST_FIX, LOST_WORDS

    golden = json.loads((Path(__file__).parent / "golden" / "verdicts.json").read_text())
    verdicts = [v for found in golden.values() for v in found]
    assert len({v["policy"] for v in verdicts}) >= 10
    for v in with_fixes(verdicts):
        assert v["fix"] == POLICIES[v["policy"]].fix_for(v["message"]) and _imperative(v["fix"]), v
    own = {"policy": "no-outage", "level": "mandatory", "message": "m", "fix": "add a pool first, then change it"}
    assert with_fixes([own])[0]["fix"] == own["fix"]
    lost = {"policy": "no-outage", "level": "mandatory", "message": f"ml/m serves 0/2 replicas: {LOST_WORDS} (#0 lost: x)"}
    assert with_fixes([lost])[0]["fix"] == LOST_FIX
