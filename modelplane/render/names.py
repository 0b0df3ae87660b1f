"""Labels, names and the pool/taint conventions shared by every renderer."""
from __future__ import annotations

from ..api.cluster import GPU_TAINT, POOL_LABEL

DEPLOYMENT = "modelplane.ai/deployment"
REPLICA = "modelplane.ai/replica"
ROLE = "modelplane.ai/role"
POOL = POOL_LABEL
MANAGED_BY = {"app.kubernetes.io/managed-by": "modelplane"}

KAI_SCHEDULER = "kai-scheduler"
KAI_QUEUE_LABEL = "kai.scheduler/queue"
KAI_SUBGROUP_LABEL = "kai.scheduler/subgroup-name"
KAI_POD_GROUP_ANNOTATION = "pod-group-name"
ROOT_QUEUE = "modelplane-root"
PRIORITY_CLASS = "modelplane-inference"

GPU_TOLERATION = {"key": GPU_TAINT["key"], "operator": "Exists", "effect": GPU_TAINT["effect"]}
GPU_RESOURCE = {"gpu.nvidia.com": "nvidia.com/gpu", "gpu.amd.com": "amd.com/gpu"}


def replica_name(deployment: str, replica: int) -> str:
    return f"{deployment}-{replica}"


def labels(deployment: str, replica: int | None = None, role: str | None = None, pool: str | None = None) -> dict:
    out = {**MANAGED_BY, DEPLOYMENT: deployment}
    if replica is not None:
        out[REPLICA] = str(replica)
    if role is not None:
        out[ROLE] = role
    if pool is not None:
        out[POOL] = pool
    return out


def meta(name: str, namespace: str | None, lbls: dict, annotations: dict | None = None) -> dict:
    out = {"name": name}
    if namespace:
        out["namespace"] = namespace
    out["labels"] = dict(lbls)
    if annotations:
        out["annotations"] = dict(annotations)
    return out
