"""Register one rendered Kubernetes dict as the matching pulumi-kubernetes resource."""
from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s


def logical_name(cluster: str, obj: dict) -> str:
    m = obj["metadata"]
    ns = m.get("namespace") or "_"
    return f"{cluster}/{ns}/{obj['kind'].lower()}/{m['name']}"


def register(cluster: str, obj: dict, opts: pulumi.ResourceOptions) -> pulumi.Resource:
    """Typed resources for core kinds; CustomResource for CRDs (they carry only metadata and spec)."""
    name, key = logical_name(cluster, obj), (obj["apiVersion"], obj["kind"])
    meta, spec = obj["metadata"], obj.get("spec")
    if key == ("v1", "Namespace"):
        return k8s.core.v1.Namespace(name, metadata=meta, opts=opts)
    if key == ("v1", "Service"):
        return k8s.core.v1.Service(name, metadata=meta, spec=spec, opts=opts)
    if key == ("apps/v1", "Deployment"):
        return k8s.apps.v1.Deployment(name, metadata=meta, spec=spec, opts=opts)
    if key == ("resource.k8s.io/v1", "ResourceClaimTemplate"):
        return k8s.resource.v1.ResourceClaimTemplate(name, metadata=meta, spec=spec, opts=opts)
    if key == ("scheduling.k8s.io/v1", "PriorityClass"):
        return k8s.scheduling.v1.PriorityClass(name, metadata=meta, value=obj["value"],
                                               preemption_policy=obj.get("preemptionPolicy"),
                                               global_default=obj.get("globalDefault"),
                                               description=obj.get("description"), opts=opts)
    return k8s.apiextensions.CustomResource(name, api_version=obj["apiVersion"], kind=obj["kind"],
                                            metadata=meta, spec=spec, opts=opts)
