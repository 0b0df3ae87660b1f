"""The pod of one GPU role: engine container, GPU and NIC wiring, storage, pool pinning."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..api.deployment import EnvVar
from ..api.fabric import EFA_RESOURCE
from . import gpudirect as gd
from .dra import CHANNEL_CLAIM_NAME, CLAIM_NAME, NIC_CLAIM_NAME
from .names import GPU_RESOURCE, HF_TOKEN_KEY, HF_TOKEN_SECRET, KAI_SCHEDULER, MODEL_SERVICE_ACCOUNT, POOL, \
    gpu_toleration

# Wired engines register pinned host memory with the NIC or the GPUDirect plugin: IPC_LOCK lifts the
# memlock limit (container-engine-accelerators@98c85a6e gpudirect-tcpx/nccl-test-latest.yaml; NVIDIA/aicr
# docs/user/fabric-attached-training.md: "Without IPC_LOCK, NCCL may fail to register pinned buffers").
WIRED_CAPABILITIES = ("IPC_LOCK",)

# Host resources a GPU worker asks for, per GPU on the node (the engine's tokenizer, scheduler and
# weight loading run on the CPU); requests only, so the pod is Burstable, never BestEffort.
CPU_PER_GPU = 2
MEMORY_GI_PER_GPU = 8
# GKE taints Arm nodes (A4X's Grace hosts) so that only pods tolerating it land there; llm-d's
# A4X manifests carry this toleration (guides/wide-ep-lws/manifests/modelserver/gke-a4x).
ARM64_TOLERATION = {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}


@dataclass(frozen=True)
class GpuWiring:
    """How a role's pods get their GPUs and NICs on the target cluster."""

    gpus_per_node: int
    driver: str                        # gpu.nvidia.com | gpu.amd.com
    claim_template: str | None         # GPUs through DRA (else the device plugin's resource)
    nic_claim_template: str | None = None   # RDMA NICs through DRA (GKE managed DRANET)
    efa: int = 0                       # EFA interfaces through the EFA device plugin
    gpudirect: dict | None = None      # GKE TCPX/TCPXO: the pool's fabric.gpudirect (kind, nics, daemonImage, ncclEnv)
    channel_claim_template: str | None = None   # an IMEX channel of the role's ComputeDomain (multi-node NVLink)
    arm64: bool = False                # the pool's hosts are Arm (Grace)
    net_plugin: dict | None = None     # a multi-node worker's NCCL net plugin to pin (the pool's fabric.netPlugin)

    @property
    def wired(self) -> bool:
        """The pods carry a node-to-node fabric (GPUDirect, RDMA NIC claims or EFA interfaces)."""
        return bool(self.gpudirect or self.nic_claim_template or self.efa)


def env_list(env: list[EnvVar]) -> list[dict]:
    out = []
    for var in env:
        item = {"name": var.name}
        if var.value_from is not None:
            src = var.value_from
            if src.secret_key_ref:
                item["valueFrom"] = {"secretKeyRef": {"name": src.secret_key_ref.name, "key": src.secret_key_ref.key}}
            else:
                item["valueFrom"] = {"configMapKeyRef": {"name": src.config_map_key_ref.name,
                                                         "key": src.config_map_key_ref.key}}
        else:
            item["value"] = var.value or ""
        out.append(item)
    return out


def token_env() -> dict:
    return {"name": HF_TOKEN_KEY, "valueFrom": {"secretKeyRef": {"name": HF_TOKEN_SECRET, "key": HF_TOKEN_KEY}}}


def shm_size(gpus_per_node: int) -> str:
    """/dev/shm for NCCL and the engine's workers: 4Gi per GPU on the node, at least 2Gi."""
    return f"{max(2, 4 * gpus_per_node)}Gi"


def resources(gpu: GpuWiring, weights_gib: float) -> dict:
    """GPU claims (or device-plugin limits), EFA interfaces, and host requests, including room on the
    node's ephemeral storage for the downloaded weights."""
    requests = {"cpu": str(CPU_PER_GPU * gpu.gpus_per_node), "memory": f"{MEMORY_GI_PER_GPU * gpu.gpus_per_node}Gi"}
    if weights_gib:
        requests["ephemeral-storage"] = f"{math.ceil(weights_gib * 1.1)}Gi"
    limits = {}
    if gpu.claim_template is None:
        resource = GPU_RESOURCE[gpu.driver]
        limits[resource] = requests[resource] = gpu.gpus_per_node
    if gpu.efa:
        limits[EFA_RESOURCE] = requests[EFA_RESOURCE] = gpu.efa
    out = {}
    claims = [c for c, t in ((CLAIM_NAME, gpu.claim_template), (NIC_CLAIM_NAME, gpu.nic_claim_template),
                             (CHANNEL_CLAIM_NAME, gpu.channel_claim_template)) if t]
    if claims:
        out["claims"] = [{"name": c} for c in claims]
    if limits:
        out["limits"] = limits
    out["requests"] = requests
    return out


def container(name: str, image: str | None, gpu: GpuWiring, weights_gib: float, *, args=(), command=(),
              env=(), port: int | None = None, health_path: str = "/health",
              capabilities: tuple[str, ...] = WIRED_CAPABILITIES) -> dict:
    """The engine container. Without `port` it has neither ports nor probes (KServe's presets own
    them, and multi-node workers never serve HTTP). `capabilities`: what a wired engine adds (the
    list replaces the one a KServe preset adds, so KServe passes the presets' whole list)."""
    out = {"name": name}
    if image:
        out["image"] = image
    if command:
        out["command"] = list(command)
    if args:
        out["args"] = list(args)
    if gpu.gpudirect:
        env = gd.engine_env(gpu.gpudirect, env)
    elif gpu.net_plugin:   # NCCL_NET pinned: an image without the plugin stops instead of using TCP
        env = gd.engine_env(plugin_env(gpu.net_plugin), env, lib_dir=None)
    if env:
        out["env"] = list(env)
    if port is not None:
        out["ports"] = [{"name": "http", "containerPort": port, "protocol": "TCP"}]
    if gpu.wired:
        out["securityContext"] = {"capabilities": {"add": list(capabilities)}}
    out["resources"] = resources(gpu, weights_gib)
    if port is not None:
        out["readinessProbe"] = {"httpGet": {"path": health_path, "port": port}, "periodSeconds": 10,
                                 "failureThreshold": 3}
    out["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    if gpu.gpudirect:
        out["volumeMounts"] += gd.engine_mounts(gpu.gpudirect["kind"])
    out["volumeMounts"] += [{"name": name, "mountPath": mount} for name, _, mount in plugin_paths(gpu)]
    return out


def plugin_env(plugin: dict) -> dict:
    """NCCL_NET and the settings a net plugin asks for; its env script through BASH_ENV, which every
    non-interactive bash sources first (KServe v0.20.0's presets run `/bin/bash -c`:
    config/llmisvcconfig/config-llm-worker-data-parallel.yaml L16-18, L298-300; llm-d's GKE wide-EP
    manifests set BASH_ENV to gIB's script). Native commands run /bin/sh and source it themselves."""
    env = dict(sorted((plugin.get("ncclEnv") or {}).items()))   # by name: the engines pass dicts in any order
    if plugin.get("envScript"):
        env["BASH_ENV"] = plugin["envScript"]
    return {"ncclNet": plugin["ncclNet"], "ncclEnv": env}


def plugin_paths(gpu: GpuWiring) -> list[tuple[str, str, str]]:
    """(volume name, node path, mount path) of each directory the pinned net plugin needs."""
    paths = sorted(((gpu.net_plugin or {}).get("hostPaths") or {}).items())
    return [(f"net-plugin-{i}", host, mount) for i, (host, mount) in enumerate(paths)]


def sourcing(command: list[str], gpu: GpuWiring) -> list[str]:
    """A `/bin/sh -c` command that first sources the pinned net plugin's env script, if it has one.
    A missing script is skipped, not fatal: without its node files the pinned NCCL_NET fails anyway."""
    script = (gpu.net_plugin or {}).get("envScript")
    if not script or len(command) < 3:
        return list(command)
    return [command[0], command[1], f"if [ -r {script} ]; then . {script}; fi; {command[2]}", *command[3:]]


def pod_spec(main: dict, gpu: GpuWiring, pool: str, kai: bool) -> dict:
    spec = {}
    if kai:
        spec["schedulerName"] = KAI_SCHEDULER
    spec["serviceAccountName"] = MODEL_SERVICE_ACCOUNT
    if gpu.gpudirect:
        spec["initContainers"] = [gd.daemon(gpu.gpudirect["kind"], gpu.gpudirect["daemonImage"])]
    spec["containers"] = [main]
    spec["nodeSelector"] = {POOL: pool}
    spec["tolerations"] = [gpu_toleration(gpu.driver), *([ARM64_TOLERATION] if gpu.arm64 else [])]
    claims = [{"name": CLAIM_NAME, "resourceClaimTemplateName": gpu.claim_template}] if gpu.claim_template else []
    if gpu.nic_claim_template:
        claims.append({"name": NIC_CLAIM_NAME, "resourceClaimTemplateName": gpu.nic_claim_template})
    if gpu.channel_claim_template:
        claims.append({"name": CHANNEL_CLAIM_NAME, "resourceClaimTemplateName": gpu.channel_claim_template})
    if claims:
        spec["resourceClaims"] = claims
    spec["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": shm_size(gpu.gpus_per_node)}}]
    if gpu.gpudirect:
        spec["volumes"] += gd.volumes(gpu.gpudirect["kind"])
    spec["volumes"] += [{"name": name, "hostPath": {"path": host}} for name, host, _ in plugin_paths(gpu)]
    return spec


def pod_annotations(gpu: GpuWiring) -> dict:
    """Annotations the wiring needs on the pod (GPUDirect: the networks and the daemon's devices)."""
    if not gpu.gpudirect:
        return {}
    return gd.annotations(gpu.gpudirect["kind"], gpu.gpudirect["nics"])
