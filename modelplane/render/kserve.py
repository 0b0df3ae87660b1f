"""KServe backend: one LLMInferenceService per replica (decode on top, prefill in spec.prefill).

API version serving.kserve.io/v1alpha1, as KServe v0.20 serves it (v0.16 introduced the CRD; the
presets below are v0.20's). The engine container is named `main`, the name the presets merge
into; they supply the image (llm-d, non-root), the command, ports and probes. What we pass:
- args, each shell-quoted: the presets run `eval "exec vllm serve ... $@"`, which would otherwise
  split JSON such as --kv-transfer-config into several broken flags;
- `worker` for multi-node roles, the same pod (KServe's data-parallel worker presets, and our
  pipeline-parallel one in presets.py, run the engine headless and give the worker no probes);
- the router: our Gateway (refs), KServe's managed HTTPRoute and its scheduler (InferencePool +
  endpoint picker), which the service routes point at.
"""
from __future__ import annotations

import shlex

from ..api.deployment import Topology

CONTAINER = "main"


def quote_args(args) -> list[str]:
    """Arguments that survive the presets' `eval` intact (each becomes exactly one word)."""
    return [shlex.quote(a) for a in args]


def inference_pool(llmisvc: str) -> str:
    """The InferencePool KServe creates for a service: ChildName(name, "-inference-pool"), which is the
    plain concatenation while it fits 63 characters (our names always do)."""
    name = f"{llmisvc}-inference-pool"
    if len(name) > 63:
        raise ValueError(f"{name} is longer than 63 characters")
    return name


def workload_service(llmisvc: str) -> str | None:
    """KServe's `ChildName(name, "-kserve-workload-svc")` (port 8000, what its catch-all rules use);
    None where the name would not fit 63 characters and KServe hashes it (knative ChildName)."""
    name = f"{llmisvc}-kserve-workload-svc"
    return name if len(name) <= 63 else None


def parallelism(t: Topology) -> dict:
    """Tensor is per node (KServe derives the LWS group size from data/dataLocal). `expert`: the
    data-parallel presets add --enable-expert-parallel (config-llm-*worker-data-parallel.yaml @ v0.20.0)."""
    out = {"tensor": t.tensor}
    if t.pipeline > 1:
        out["pipeline"] = t.pipeline
    if t.data > 1:
        out["data"] = t.data
        out["dataLocal"] = t.data_local
    if t.expert:
        out["expert"] = True
    return out


def multi_node(t: Topology) -> bool:
    """Whether the role gets a `worker` and so KServe's worker presets: every multi-node worker,
    and every data-parallel one, even on one node (LeaderWorkerSet size 1). KServe picks a preset by
    `worker` (config_merge.go L228-263 @ v0.20.0); its single-node presets pass only
    --tensor-parallel-size, so without `worker` data parallelism and `expert` would be dropped."""
    return t.nodes_per_worker > 1 or t.data > 1


def workload(workers: int, topology: Topology, pod: dict, pod_labels: dict, pod_annotations: dict) -> dict:
    out = {"replicas": workers, "parallelism": parallelism(topology),
           "labels": dict(pod_labels), "annotations": dict(pod_annotations), "template": pod}
    if multi_node(topology):
        out["worker"] = pod
    return out


def router(gateway: dict | None) -> dict:
    """Managed route and scheduler on the cluster's inference Gateway; without a Gateway, only the
    scheduler (the service is reachable inside the cluster through its InferencePool)."""
    if gateway is None:
        return {"scheduler": {}}
    return {"gateway": {"refs": [{"name": gateway["name"], "namespace": gateway["namespace"]}]},
            "route": {}, "scheduler": {}}


def llm_inference_service(metadata: dict, uri: str, served_name: str, decode: dict, prefill: dict | None,
                          gateway: dict | None) -> dict:
    spec = {"model": {"uri": uri, "name": served_name}, **decode}
    if prefill is not None:
        spec["prefill"] = prefill
    spec["router"] = router(gateway)
    return {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "LLMInferenceService",
            "metadata": metadata, "spec": spec}
