"""Cluster-level objects modelplane renders itself: namespaces, KAI queues, the PriorityClass."""
from __future__ import annotations

from .names import (HF_TOKEN_KEY, HF_TOKEN_SECRET, MANAGED_BY, MODEL_SERVICE_ACCOUNT, ROOT_QUEUE,
                    SecretValue, meta)

from ..api.deployment import PRIORITY_CLASSES


def namespace(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(name, None, MANAGED_BY)}


def priority_classes() -> list[dict]:
    """One PriorityClass per deployment priority tier (all non-preemptible under KAI)."""
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
             "metadata": meta(name, None, MANAGED_BY), "value": value,
             "preemptionPolicy": "PreemptLowerPriority", "globalDefault": False,
             "description": f"modelplane inference replicas, priority {tier} (non-preemptible under KAI)"}
            for tier, (name, value) in sorted(PRIORITY_CLASSES.items(), key=lambda kv: kv[1][1])]


def _resources(quota: int, limit: int, weight: int) -> dict:
    unbounded = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    return {"cpu": dict(unbounded), "memory": dict(unbounded),
            "gpu": {"quota": quota, "limit": limit, "overQuotaWeight": weight}}


def queues(inv_queues: list[dict]) -> list[dict]:
    """A root queue and one leaf queue per team namespace (GPU quota from config)."""
    total = sum(q["gpuQuota"] for q in inv_queues if q["gpuQuota"] >= 0)
    unbounded = any(q["gpuQuota"] < 0 for q in inv_queues)
    root = {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": meta(ROOT_QUEUE, None, MANAGED_BY),
            "spec": {"displayName": "modelplane", "resources": _resources(-1 if unbounded else total, -1, 1)}}
    leaves = [{"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": meta(q["namespace"], None, MANAGED_BY),
               "spec": {"parentQueue": ROOT_QUEUE,
                        "resources": _resources(q["gpuQuota"], q["gpuLimit"], q["overQuotaWeight"])}}
              for q in sorted(inv_queues, key=lambda q: q["namespace"])]
    return [root, *leaves]


def model_identity(namespace: str, token_key: str | None) -> list[dict]:
    """The ServiceAccount model pods run as in a team namespace and, when the namespace's models
    need a Hugging Face token, the Secret linked to it (KServe's storage initializer reads the
    HF_TOKEN key of secrets listed on the pod's ServiceAccount)."""
    sa = {"apiVersion": "v1", "kind": "ServiceAccount",
          "metadata": meta(MODEL_SERVICE_ACCOUNT, namespace, MANAGED_BY)}
    if token_key is None:
        return [sa]
    sa["secrets"] = [{"name": HF_TOKEN_SECRET}]
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": meta(HF_TOKEN_SECRET, namespace, MANAGED_BY),
              "type": "Opaque", "stringData": {HF_TOKEN_KEY: SecretValue(token_key)}}
    return [secret, sa]
