"""Native backend: per GPU role a LeaderWorkerSet (multi-node) or a Deployment, plus a Service.

A multi-node worker is one vLLM engine. With pipeline parallelism it runs over a Ray cluster, as
the LeaderWorkerSet vLLM example does (kubernetes-sigs/lws docs/examples/vllm/GPU/lws.yaml @
v0.10.0): the leader starts the Ray head and then the API server with
--distributed-executor-backend ray; the other pods join the head at $(LWS_LEADER_ADDRESS). A
data-parallel worker (data ranks spread over nodes, as wide expert parallelism is) runs vLLM's own
multi-node data-parallel form instead (vllm-project/vllm docs/serving/data_parallel_deployment.md,
added by vllm-project/vllm#20768 before v0.10.0, and expert_parallel_deployment.md): every node
runs `vllm serve` with the same --data-parallel-size, its --data-parallel-size-local and the
leader's --data-parallel-address/--data-parallel-rpc-port; the other nodes add --headless and
--data-parallel-start-rank (the data ranks of the nodes before them). Only the leader serves
HTTP, so only it has a port and a probe, and the Service selects it alone.
"""
from __future__ import annotations

import shlex

from ..api.deployment import Topology
from .names import AWAIT_SECONDS, await_ready, meta

CONTAINER = "engine"
RAY_SCRIPT = "/vllm-workspace/examples/online_serving/multi-node-serving.sh"   # in the vllm/vllm-openai image
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


DP_RPC_PORT = 5555     # the port KServe's data-parallel presets use (dataRPCPort's default)


def engine_args(uri: str, served_names: list[str], topology: Topology, port: int) -> list[str]:
    """vLLM flags the native backend sets itself, from the topology (the same sizes KServe's
    presets pass); the user's args follow, in their order (api/parallelism.py refuses ones that
    contradict these)."""
    model = uri.split("://", 1)[1] if uri.startswith("hf://") else uri
    args = [f"--model={model}", "--served-model-name", *served_names, f"--port={port}",
            f"--tensor-parallel-size={topology.tensor}"]
    if topology.pipeline > 1:
        args.append(f"--pipeline-parallel-size={topology.pipeline}")
    if topology.data > 1:
        args += [f"--data-parallel-size={topology.data}", f"--data-parallel-size-local={topology.data_local}"]
    if topology.expert:
        args.append("--enable-expert-parallel")
    return args


def uses_ray(topology: Topology) -> bool:
    """A multi-node worker spans nodes through Ray only with pipeline parallelism; data-parallel
    workers use vLLM's own multi-node data-parallel launch."""
    return topology.pipeline > 1


def ray_commands(args: list[str]) -> tuple[list[str], list[str]]:
    """(leader command, worker command) for a multi-node engine over Ray."""
    serve = " ".join(["exec", "vllm", "serve", *map(shlex.quote, args), "--distributed-executor-backend", "ray"])
    leader = ["/bin/sh", "-c", f"bash {RAY_SCRIPT} leader --ray_cluster_size=$(LWS_GROUP_SIZE); {serve}"]
    worker = ["/bin/sh", "-c", f"bash {RAY_SCRIPT} worker --ray_address=$(LWS_LEADER_ADDRESS)"]
    return leader, worker


def data_parallel_commands(args: list[str], data_local: int) -> tuple[list[str], list[str]]:
    """(leader command, worker command) of a multi-node data-parallel engine. The leader's address
    is resolved to an IP first, since the engine's ZMQ sockets bind to an address, not a name (as
    KServe's data-parallel presets do); LWS numbers the pods through LWS_WORKER_INDEX (0: leader)."""
    resolve = ('for i in $(seq 30); do DP_ADDRESS=$(getent hosts "${LWS_LEADER_ADDRESS}" | cut -d" " -f1); '
               '[ -n "${DP_ADDRESS}" ] && break; sleep 1; done; DP_ADDRESS="${DP_ADDRESS:-${LWS_LEADER_ADDRESS}}"; ')
    serve = " ".join(["exec", "vllm", "serve", *map(shlex.quote, args),
                      '--data-parallel-address "${DP_ADDRESS}"', f"--data-parallel-rpc-port {DP_RPC_PORT}"])
    leader = ["/bin/sh", "-c", resolve + serve]
    worker = ["/bin/sh", "-c", resolve + serve + " --headless --data-parallel-start-rank "
              f"$(( ${{LWS_WORKER_INDEX}} * {data_local} ))"]
    return leader, worker


def _template(lbls: dict, pod_labels: dict, pod_annotations: dict, pod: dict) -> dict:
    return {"metadata": {"labels": {**lbls, **pod_labels}, "annotations": dict(pod_annotations)}, "spec": pod}


def deployment(name: str, namespace: str, lbls: dict, selector: dict, workers: int, pod_labels: dict,
               pod_annotations: dict, pod: dict, await_seconds: int = AWAIT_SECONDS) -> dict:
    """Single-node workers. Rolling updates never surge: the plan booked exactly these GPUs."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(name, namespace, lbls, await_ready("Deployment", await_seconds)),
            "spec": {"replicas": workers, "selector": {"matchLabels": dict(selector)},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
                     "template": _template(lbls, pod_labels, pod_annotations, pod)}}


def leader_worker_set(name: str, namespace: str, lbls: dict, workers: int, nodes_per_worker: int,
                      pod_labels: dict, pod_annotations: dict, leader: dict, worker: dict,
                      await_seconds: int = AWAIT_SECONDS) -> dict:
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": meta(name, namespace, lbls, await_ready("LeaderWorkerSet", await_seconds)),
            "spec": {"replicas": workers, "startupPolicy": "LeaderCreated",
                     "leaderWorkerTemplate": {
                         "size": nodes_per_worker, "restartPolicy": "RecreateGroupOnPodRestart",
                         "leaderTemplate": _template(lbls, pod_labels, pod_annotations, leader),
                         "workerTemplate": _template(lbls, pod_labels, pod_annotations, worker)}}}


def shared_service(deployment: str) -> str:
    """The Service over the serving pods of every replica of a deployment on one cluster: what its
    services route to, so a lost replica's pods leave the endpoints and the rest carry its share."""
    return deployment


def service(name: str, namespace: str, lbls: dict, selector: dict, port: int, leader_only: bool = False) -> dict:
    selector = {**selector, LWS_WORKER_INDEX: "0"} if leader_only else dict(selector)
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta(name, namespace, lbls),
            "spec": {"selector": selector,
                     "ports": [{"name": "http", "port": port, "targetPort": port, "protocol": "TCP"}]}}
