"""KEDA: one ScaledObject per autoscaled role of a replica (Prometheus trigger)."""
from __future__ import annotations

from ..api.deployment import Autoscaling
from .names import meta


def scaled_object(name: str, namespace: str, lbls: dict, target: dict, auto: Autoscaling,
                  reserved: int | None = None) -> dict:
    """`target`: the workload's apiVersion, kind and name (it must have a scale subresource);
    `reserved`: caps maxReplicaCount at the workers the plan reserved nodes for."""
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": meta(name, namespace, lbls),
        "spec": {
            "scaleTargetRef": {"apiVersion": target["apiVersion"], "kind": target["kind"], "name": target["name"]},
            "minReplicaCount": auto.min_replicas,
            "maxReplicaCount": min(auto.max_replicas, reserved) if reserved else auto.max_replicas,
            "triggers": [{"type": "prometheus", "metadata": {
                "serverAddress": auto.server_address, "query": auto.query, "threshold": auto.threshold}}],
        },
    }


def target_of(workload: dict) -> dict:
    return {"apiVersion": workload["apiVersion"], "kind": workload["kind"], "name": workload["metadata"]["name"]}
