"""Native backend: per GPU role a LeaderWorkerSet (multi-node) or a Deployment, plus a Service.

A multi-node worker is one vLLM engine over a Ray cluster, as the LeaderWorkerSet vLLM example
does (kubernetes-sigs/lws docs/examples/vllm/GPU/lws.yaml @ v0.10.0): the leader starts the Ray
head and then the API server with --distributed-executor-backend ray; the other pods join the
head at $(LWS_LEADER_ADDRESS). Only the leader serves HTTP, so only it has a port and a probe,
and the Service selects it alone.
"""
from __future__ import annotations

import shlex

from ..api.deployment import Topology
from .names import await_ready, meta

CONTAINER = "engine"
RAY_SCRIPT = "/vllm-workspace/examples/online_serving/multi-node-serving.sh"   # in the vllm/vllm-openai image
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


def engine_args(uri: str, served_names: list[str], topology: Topology, port: int) -> list[str]:
    """vLLM flags the native backend sets itself; the user's args follow, in their order."""
    model = uri.split("://", 1)[1] if uri.startswith("hf://") else uri
    args = [f"--model={model}", "--served-model-name", *served_names, f"--port={port}",
            f"--tensor-parallel-size={topology.tensor * topology.data_local}"]
    if topology.pipeline > 1:
        args.append(f"--pipeline-parallel-size={topology.pipeline}")
    if topology.data > 1:
        args += [f"--data-parallel-size={topology.data}", f"--data-parallel-size-local={topology.data_local}"]
    return args


def ray_commands(args: list[str]) -> tuple[list[str], list[str]]:
    """(leader command, worker command) for a multi-node engine over Ray."""
    serve = " ".join(["exec", "vllm", "serve", *map(shlex.quote, args), "--distributed-executor-backend", "ray"])
    leader = ["/bin/sh", "-c", f"bash {RAY_SCRIPT} leader --ray_cluster_size=$(LWS_GROUP_SIZE); {serve}"]
    worker = ["/bin/sh", "-c", f"bash {RAY_SCRIPT} worker --ray_address=$(LWS_LEADER_ADDRESS)"]
    return leader, worker


def _template(lbls: dict, pod_labels: dict, pod_annotations: dict, pod: dict) -> dict:
    return {"metadata": {"labels": {**lbls, **pod_labels}, "annotations": dict(pod_annotations)}, "spec": pod}


def deployment(name: str, namespace: str, lbls: dict, selector: dict, workers: int, pod_labels: dict,
               pod_annotations: dict, pod: dict) -> dict:
    """Single-node workers. Rolling updates never surge: the plan booked exactly these GPUs."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(name, namespace, lbls, await_ready("Deployment")),
            "spec": {"replicas": workers, "selector": {"matchLabels": dict(selector)},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
                     "template": _template(lbls, pod_labels, pod_annotations, pod)}}


def leader_worker_set(name: str, namespace: str, lbls: dict, workers: int, nodes_per_worker: int,
                      pod_labels: dict, pod_annotations: dict, leader: dict, worker: dict) -> dict:
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": meta(name, namespace, lbls, await_ready("LeaderWorkerSet")),
            "spec": {"replicas": workers, "startupPolicy": "LeaderCreated",
                     "leaderWorkerTemplate": {
                         "size": nodes_per_worker, "restartPolicy": "RecreateGroupOnPodRestart",
                         "leaderTemplate": _template(lbls, pod_labels, pod_annotations, leader),
                         "workerTemplate": _template(lbls, pod_labels, pod_annotations, worker)}}}


def service(name: str, namespace: str, lbls: dict, selector: dict, port: int, leader_only: bool = False) -> dict:
    selector = {**selector, LWS_WORKER_INDEX: "0"} if leader_only else dict(selector)
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta(name, namespace, lbls),
            "spec": {"selector": selector,
                     "ports": [{"name": "http", "port": port, "targetPort": port, "protocol": "TCP"}]}}
