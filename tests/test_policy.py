"""Policy rules: verdicts on good and bad resources, and the plan gate."""
from modelplane.policy import gpu_pool_tainted_and_labelled, kai_wired, placement_complete


def test_gpu_pool_without_taint_or_label_is_refused():
    props = {"nodeConfig": {"guestAccelerators": [{"type": "nvidia-l4", "count": 1}], "taints": [], "labels": {}}}
    msgs = gpu_pool_tainted_and_labelled("gcp:container/nodePool:NodePool", props)
    assert len(msgs) == 2 and "taint" in msgs[0] and "modelplane.ai/pool" in msgs[1]
    props["nodeConfig"]["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    props["nodeConfig"]["labels"] = {"modelplane.ai/pool": "l4"}
    assert gpu_pool_tainted_and_labelled("gcp:container/nodePool:NodePool", props) == []
    assert gpu_pool_tainted_and_labelled("aws:eks/nodeGroup:NodeGroup", {"amiType": "AL2023_x86_64_STANDARD"}) == []


def test_kai_wiring_checks_both_roles():
    spec = {"template": {"schedulerName": "kai-scheduler"}, "labels": {"kai.scheduler/queue": "ml"},
            "annotations": {"pod-group-name": "x-0"}, "prefill": {"template": {}}}
    msgs = kai_wired("kubernetes:serving.kserve.io/v1alpha1:LLMInferenceService", {"spec": spec})
    assert msgs == ["spec.prefill.template does not use schedulerName kai-scheduler",
                    "spec.prefill.labels lacks kai.scheduler/queue", "spec.prefill.annotations lacks pod-group-name"]


def test_placement_complete_is_mandatory_in_production():
    assert placement_complete({"a/b": 2}, {"a/b": 1}, False)[0]["level"] == "advisory"
    assert placement_complete({"a/b": 2}, {"a/b": 1}, True)[0]["level"] == "mandatory"
    assert placement_complete({"a/b": 2}, {"a/b": 2}, True) == []
