"""The pod of one GPU role: engine container, GPU wiring (DRA or device plugin), pool pinning."""
from __future__ import annotations

from dataclasses import dataclass

from ..api.deployment import Engine, EnvVar
from .dra import CLAIM_NAME
from .names import GPU_RESOURCE, GPU_TOLERATION, KAI_SCHEDULER, POOL


@dataclass(frozen=True)
class GpuWiring:
    """How a role's pods get their GPUs on the target cluster."""

    gpus_per_node: int
    driver: str                  # gpu.nvidia.com | gpu.amd.com
    claim_template: str | None   # set when the cluster runs DRA


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


def shm_size(gpus_per_node: int) -> str:
    """/dev/shm for NCCL and the engine's workers: 4Gi per GPU on the node, at least 2Gi."""
    return f"{max(2, 4 * gpus_per_node)}Gi"


def engine_container(engine: Engine, gpu: GpuWiring, name: str, extra_args=()) -> dict:
    container = {"name": name, "image": engine.image}
    args = [*extra_args, *engine.args]
    if args:
        container["args"] = args
    env = env_list(engine.env)
    if env:
        container["env"] = env
    container["ports"] = [{"name": "http", "containerPort": engine.port, "protocol": "TCP"}]
    if gpu.claim_template:
        container["resources"] = {"claims": [{"name": CLAIM_NAME}]}
    else:
        resource = GPU_RESOURCE[gpu.driver]
        container["resources"] = {"limits": {resource: gpu.gpus_per_node}, "requests": {resource: gpu.gpus_per_node}}
    container["readinessProbe"] = {"httpGet": {"path": engine.health_path, "port": engine.port},
                                   "periodSeconds": 10, "failureThreshold": 3}
    container["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    return container


def pod_spec(container: dict, gpu: GpuWiring, pool: str, kai: bool) -> dict:
    spec = {}
    if kai:
        spec["schedulerName"] = KAI_SCHEDULER
    spec["containers"] = [container]
    spec["nodeSelector"] = {POOL: pool}
    spec["tolerations"] = [dict(GPU_TOLERATION)]
    if gpu.claim_template:
        spec["resourceClaims"] = [{"name": CLAIM_NAME, "resourceClaimTemplateName": gpu.claim_template}]
    spec["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": shm_size(gpu.gpus_per_node)}}]
    return spec
