"""Native backend: per GPU role a LeaderWorkerSet (multi-node) or a Deployment, plus a Service."""
from __future__ import annotations

from ..api.deployment import Topology
from .names import meta

CONTAINER = "engine"


def engine_args(uri: str, served_name: str, topology: Topology, port: int) -> list[str]:
    """vLLM flags the native backend sets itself; the user's args follow, in their order."""
    model = uri.split("://", 1)[1] if uri.startswith("hf://") else uri
    args = [f"--model={model}", f"--served-model-name={served_name}", f"--port={port}",
            f"--tensor-parallel-size={topology.tensor * topology.data_local}"]
    if topology.pipeline > 1:
        args.append(f"--pipeline-parallel-size={topology.pipeline}")
    if topology.data > 1:
        args += [f"--data-parallel-size={topology.data}", f"--data-parallel-size-local={topology.data_local}"]
    return args


def workload(name: str, namespace: str, lbls: dict, selector: dict, workers: int, nodes_per_worker: int,
             pod_labels: dict, pod_annotations: dict, pod: dict) -> dict:
    template = {"metadata": {"labels": {**lbls, **pod_labels}, "annotations": dict(pod_annotations)}, "spec": pod}
    if nodes_per_worker > 1:
        return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                "metadata": meta(name, namespace, lbls),
                "spec": {"replicas": workers, "startupPolicy": "LeaderCreated",
                         "leaderWorkerTemplate": {"size": nodes_per_worker, "restartPolicy": "RecreateGroupOnPodRestart",
                                                  "workerTemplate": template}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(name, namespace, lbls),
            "spec": {"replicas": workers, "selector": {"matchLabels": dict(selector)}, "template": template}}


def service(name: str, namespace: str, lbls: dict, selector: dict, port: int) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta(name, namespace, lbls),
            "spec": {"selector": dict(selector),
                     "ports": [{"name": "http", "port": port, "targetPort": port, "protocol": "TCP"}]}}
