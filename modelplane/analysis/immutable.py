"""Input fields whose change replaces a resource instead of updating it, per resource type we render.

`pulumi preview` learns this from each provider's schema (`replaceOnChanges`, Terraform's
`ForceNew`). The GCP and AWS provider schemas are not available offline, so this is a small
table kept by hand, each entry with the source it was read from. Paths are Pulumi input names
(camelCase) joined by dots, at most two levels deep (the depth of a plan's field digests).
A type not listed here replaces only on the fields every resource of its provider replaces on.

Sources:
- TF-GOOGLE: terraform-provider-google, google/services/container/resource_container_node_pool.go
  (`ForceNew: true` on name, project, cluster, location, placement_policy, queued_provisioning,
  max_pods_per_node, initial_node_count) and node_config.go (`ForceNew: true` in the node_config
  schema; `machine_type`, `disk_type` and `disk_size_gb` are not ForceNew: GKE migrates the nodes in
  place, an update). A cluster's name, location and project identify it (its ID is built from them).
- TF-AWS: terraform-provider-aws, internal/service/eks/node_group.go (`ForceNew: true`). The
  instance type of our EKS pools lives in their launch template, which takes a new version in place.
- PULUMI-K8S: pulumi-kubernetes, provider/pkg/provider/diff.go (`forceNewProperties`): every object
  replaces on `metadata.name` and `metadata.namespace`; a Deployment on `spec.selector` (immutable
  in Kubernetes); a Secret on `type`, `data` and `stringData`; a Service on `spec.clusterIP`; a
  ResourceQuota on `spec.scopes`.
- HELM: a Helm release is identified by its name and namespace.
"""
from __future__ import annotations

_K8S_ALL = ("metadata.name", "metadata.namespace")

REPLACE_ON: dict[str, tuple[str, ...]] = {
    "gcp:container/nodePool:NodePool": (
        "name", "namePrefix", "cluster", "location", "project", "placementPolicy", "queuedProvisioning",
        "maxPodsPerNode", "initialNodeCount", "nodeConfig.guestAccelerators", "nodeConfig.spot", "nodeConfig.preemptible",
        "nodeConfig.reservationAffinity", "nodeConfig.ephemeralStorageLocalSsdConfig",
        "nodeConfig.localNvmeSsdBlockConfig", "nodeConfig.localSsdCount", "nodeConfig.gvnic",
        "nodeConfig.oauthScopes", "nodeConfig.serviceAccount", "nodeConfig.metadata",
        "nodeConfig.minCpuPlatform", "nodeConfig.shieldedInstanceConfig", "nodeConfig.bootDiskKmsKey",
        "nodeConfig.nodeGroup", "nodeConfig.secondaryBootDisks", "nodeConfig.confidentialNodes",
        "nodeConfig.advancedMachineFeatures", "nodeConfig.soleTenantConfig",
        "nodeConfig.hostMaintenancePolicy", "nodeConfig.enableConfidentialStorage"),
    "gcp:container/cluster:Cluster": ("name", "location", "project"),
    "aws:eks/nodeGroup:NodeGroup": (
        "amiType", "capacityType", "clusterName", "diskSize", "instanceTypes", "nodeGroupName",
        "nodeGroupNamePrefix", "nodeRoleArn", "remoteAccess", "subnetIds", "launchTemplate.id",
        "launchTemplate.name"),
    "kubernetes:apps/v1:Deployment": _K8S_ALL + ("spec.selector",),
    "kubernetes:core/v1:Secret": _K8S_ALL + ("type", "data", "stringData"),
    "kubernetes:core/v1:Service": _K8S_ALL + ("spec.clusterIP",),
    "kubernetes:core/v1:ResourceQuota": _K8S_ALL + ("spec.scopes",),
    "kubernetes:helm.sh/v3:Release": ("name", "namespace"),
}

SOURCES = {
    "gcp": "terraform-provider-google (ForceNew in the resource schema)",
    "aws": "terraform-provider-aws (ForceNew in the resource schema)",
    "kubernetes": "pulumi-kubernetes provider/pkg/provider/diff.go (forceNewProperties)",
}


def replace_on(type_token: str) -> tuple[str, ...]:
    """The input paths whose change replaces a resource of this type."""
    if type_token in REPLACE_ON:
        return REPLACE_ON[type_token]
    if type_token.startswith("kubernetes:") and not type_token.startswith("kubernetes:helm.sh/"):
        return _K8S_ALL
    return ()


def forces_replacement(type_token: str, changed: list[str]) -> list[str]:
    """The changed paths (from `changed`) that replace the resource: a listed path, a field
    inside one, or a coarser field that contains one."""
    fixed = replace_on(type_token)
    return [p for p in changed
            if any(p == f or p.startswith(f + ".") or f.startswith(p + ".") for f in fixed)]
