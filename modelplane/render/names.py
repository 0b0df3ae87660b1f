"""Labels, names and the pool/taint conventions shared by every renderer."""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..api.cluster import GPU_TAINT, POOL_LABEL

class NameTooLong(ValueError):
    """A name modelplane derives from the user's names passes a limit of the system it goes to."""

    def __init__(self, deployment: str, message: str):
        self.deployment = deployment
        super().__init__(message)


DEPLOYMENT = "modelplane.ai/deployment"
REPLICA = "modelplane.ai/replica"
ROLE = "modelplane.ai/role"
POOL = POOL_LABEL
MANAGED_BY = {"app.kubernetes.io/managed-by": "modelplane"}

KAI_SCHEDULER = "kai-scheduler"
KAI_QUEUE_LABEL = "kai.scheduler/queue"
KAI_SUBGROUP_LABEL = "kai.scheduler/subgroup-name"
KAI_POD_GROUP_ANNOTATION = "pod-group-name"
# KAI's pod-grouper leaves pods with this annotation to the PodGroup we render (KAI v0.17.0
# pkg/common/constants SkipPodGrouperAnnotation); without it KAI regroups them by owner.
KAI_SKIP_PODGROUPER = "kai.scheduler/skip-podgrouper"
ROOT_QUEUE = "modelplane-root"

GPU_TOLERATION = {"key": GPU_TAINT["key"], "operator": "Exists", "effect": GPU_TAINT["effect"]}
GPU_RESOURCE = {"gpu.nvidia.com": "nvidia.com/gpu", "gpu.amd.com": "amd.com/gpu"}
# `up` awaits every workload until it serves (pulumi-kubernetes v4.32.0 provider/pkg/metadata/
# overrides.go ReadyCondition: `condition=` waits for a .status.conditions entry like `kubectl wait`,
# and await/condition/kubectl.go only accepts it once status.observedGeneration has caught up with
# metadata.generation, so an update is awaited too, not the status before it):
# - LLMInferenceService: `Ready`, KServe's LivingConditionSet over WorkloadsReady and RouterReady
#   (kserve v0.20.0 pkg/apis/serving/v1alpha2/llm_inference_service_lifecycle.go);
# - LeaderWorkerSet: `Available`, set once every group is ready and updated (lws v0.10.0
#   api/leaderworkerset/v1/leaderworkerset_types.go, pkg/controllers/leaderworkerset_controller.go);
# - Deployment: `Available` and the `Progressing` condition's reason `NewReplicaSetAvailable` (the
#   rollout is complete), the two conditions pulumi-kubernetes' own Deployment await checks
#   (provider/pkg/await/deployment.go); `Available` alone is true at once for one replica with
#   maxUnavailable 1.
# Weights take long to load, so the await gets an hour by default (`pulumi.com/timeoutSeconds`, the
# same overrides.go; the provider's default is 10 minutes) before `up` fails; a deployment's
# `awaitSeconds` sets its own.
WAIT_FOR = {
    "LLMInferenceService": "condition=Ready",
    "LeaderWorkerSet": "condition=Available",
    "Deployment": json.dumps(["condition=Available",
                              'jsonpath={.status.conditions[?(@.type=="Progressing")].reason}=NewReplicaSetAvailable']),
}
AWAIT_SECONDS = 3600
TIMEOUT = "pulumi.com/timeoutSeconds"
WORKLOAD_KINDS = tuple(WAIT_FOR)


def await_ready(kind: str, seconds: int = AWAIT_SECONDS) -> dict:
    """The annotations that make `up` wait until a workload of this kind serves (a deployment's
    `awaitSeconds` for its replicas)."""
    return {"pulumi.com/waitFor": WAIT_FOR[kind], TIMEOUT: str(seconds)}

# Per team namespace on every cluster a model lands on: the ServiceAccount its model pods run as,
# and the Secret holding the Hugging Face token (KServe's storage initializer reads secrets
# linked to the pod's ServiceAccount that carry the key HF_TOKEN: pkg/credentials/hf @ v0.20.0).
MODEL_SERVICE_ACCOUNT = "modelplane-models"
HF_TOKEN_SECRET = "modelplane-hf-token"
HF_TOKEN_KEY = "HF_TOKEN"


@dataclass(frozen=True)
class SecretValue:
    """A value the components fill in from a secret stack config key (never rendered in clear)."""

    config_key: str
    prefix: str = ""


def gpu_toleration(driver: str) -> dict:
    """Tolerate the GPU taint of the device's vendor (nvidia.com/gpu or amd.com/gpu)."""
    return {**GPU_TOLERATION, "key": GPU_RESOURCE.get(driver, GPU_TAINT["key"])}


def replica_name(deployment: str, replica: int, slot: int = 0) -> str:
    """`<name>-<i>`; in slot 1 (a replica surged beside its old self) `<name>-<i>-b`."""
    return f"{deployment}-{replica}" + ("-b" if slot else "")


def workload_name(md, replica: int, cluster: str, role: str | None = None) -> str:
    """The name of a replica's workload: its LLMInferenceService (role None) or a role's
    Deployment/LeaderWorkerSet; an adopted object keeps the name it already has (in slot 0)."""
    slot = md.slot(replica, cluster)
    adopted = {} if slot else md.adopted(replica, cluster)
    adopted = adopted.get(role or "decode")
    base = replica_name(md.name, replica, slot)
    if role is None:
        return adopted.name if adopted and adopted.kind == "LLMInferenceService" else base
    return adopted.name if adopted and adopted.kind != "LLMInferenceService" else f"{base}-{role}"


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
