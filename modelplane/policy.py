"""Policy rules: one definition used by `modelplane plan` and by the CrossGuard pack in policies/."""
from __future__ import annotations

from .api.cluster import GPU_TAINT, POOL_LABEL

RESOURCE_RULES = {}   # policy name -> check(resource_type, props) -> [messages]


def placement_complete(desired: dict[str, int], placed: dict[str, int], production: bool) -> list[dict]:
    """Every deployment fully placed: advisory by default, mandatory in production stacks."""
    level = "mandatory" if production else "advisory"
    return [{"policy": "placement-complete", "level": level,
             "message": f"{key}: {placed.get(key, 0)}/{want} replicas placed", "resource": key}
            for key, want in sorted(desired.items()) if placed.get(key, 0) < want]




def gpu_pool_tainted_and_labelled(resource_type: str, props: dict) -> list[str]:
    """A GPU node pool carries the GPU taint and the modelplane pool label."""
    if resource_type == "gcp:container/nodePool:NodePool":
        config = props.get("nodeConfig") or {}
        if not config.get("guestAccelerators"):
            return []
        taints, labels = config.get("taints") or [], config.get("labels") or {}
    elif resource_type == "aws:eks/nodeGroup:NodeGroup":
        if "NVIDIA" not in str(props.get("amiType", "")):
            return []
        taints, labels = props.get("taints") or [], props.get("labels") or {}
    else:
        return []
    out = []
    if not any(t.get("key") == GPU_TAINT["key"] and t.get("effect") == "NO_SCHEDULE" for t in taints):
        out.append(f"GPU pool lacks the taint {GPU_TAINT['key']}={GPU_TAINT['value']}:NoSchedule")
    if POOL_LABEL not in labels:
        out.append(f"GPU pool lacks the node label {POOL_LABEL}")
    return out


def kai_wired(resource_type: str, props: dict) -> list[str]:
    """Every GPU pod template of an LLMInferenceService uses KAI, a queue label and a pod group."""
    if not resource_type.endswith(":LLMInferenceService"):
        return []
    spec = props.get("spec") or {}
    out = []
    for name, workload in (("spec", spec), ("spec.prefill", spec.get("prefill"))):
        if not workload:
            continue
        if (workload.get("template") or {}).get("schedulerName") != "kai-scheduler":
            out.append(f"{name}.template does not use schedulerName kai-scheduler")
        if "kai.scheduler/queue" not in (workload.get("labels") or {}):
            out.append(f"{name}.labels lacks kai.scheduler/queue")
        if "pod-group-name" not in (workload.get("annotations") or {}):
            out.append(f"{name}.annotations lacks pod-group-name")
    return out


RESOURCE_RULES.update({"gpu-pool-taint-and-label": gpu_pool_tainted_and_labelled, "kai-wiring": kai_wired})


def evaluate(run) -> list[dict]:
    """Resource rules over every recorded resource, then the stack rules; sorted for stable output."""
    out = []
    for rec in sorted(run.records, key=lambda r: (r.type, r.name)):
        for name, check in RESOURCE_RULES.items():
            out += [{"policy": name, "level": "mandatory", "message": m, "resource": rec.name}
                    for m in check(rec.type, rec.inputs)]
    plan = run.result.plan
    placed = {key: plan.placed(key) for key in plan.desired}
    return out + placement_complete(plan.desired, placed, run.result.spec.production)
