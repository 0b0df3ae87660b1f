"""KServe backend: one LLMInferenceService per replica (decode on top, prefill in spec.prefill).

API version: serving.kserve.io/v1alpha1. Every KServe release from v0.15 to v0.20 serves it
(v0.20 also serves v1alpha2 and stores that), so one manifest works across the whole fleet.
The engine container is named `main`, the name KServe's LLM presets merge into.
"""
from __future__ import annotations

from ..api.deployment import Topology

CONTAINER = "main"


def parallelism(t: Topology) -> dict:
    """Tensor is per node (KServe derives the LWS group size from pipeline or data/dataLocal)."""
    out = {"tensor": t.tensor}
    if t.pipeline > 1:
        out["pipeline"] = t.pipeline
    if t.data > 1:
        out["data"] = t.data
        out["dataLocal"] = t.data_local
    return out


def workload(workers: int, topology: Topology, pod: dict, pod_labels: dict, pod_annotations: dict) -> dict:
    out = {"replicas": workers, "parallelism": parallelism(topology),
           "labels": dict(pod_labels), "annotations": dict(pod_annotations), "template": pod}
    if topology.nodes_per_worker > 1:
        out["worker"] = pod
    return out


def llm_inference_service(metadata: dict, uri: str, served_name: str, decode: dict, prefill: dict | None) -> dict:
    spec = {"model": {"uri": uri, "name": served_name}, **decode}
    if prefill is not None:
        spec["prefill"] = prefill
    spec["router"] = {"gateway": {}, "route": {}, "scheduler": {}}
    return {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "LLMInferenceService",
            "metadata": metadata, "spec": spec}
