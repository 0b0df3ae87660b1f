"""Register one Kubernetes object node as the matching pulumi-kubernetes resource."""
from __future__ import annotations

import re

import pulumi
import pulumi_kubernetes as k8s


class CustomObject(pulumi.CustomResource):
    """A custom resource whose live `status` is an output (apiextensions.CustomResource exposes
    only metadata and spec); used for the Gateway, whose address the DNS records point at."""

    status: pulumi.Output[dict]

    def __init__(self, name: str, obj: dict, opts: pulumi.ResourceOptions):
        props = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": obj["metadata"],
                 "spec": obj.get("spec"), "status": None}
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(version=k8s._utilities.get_version()))
        super().__init__(f"kubernetes:{obj['apiVersion']}:{obj['kind']}", name, props, opts)


# The typed pulumi-kubernetes class of each core kind (render/stack.py decides which fields each
# sends); any other kind is an apiextensions CustomResource, the Gateway a CustomObject.
_TYPED = {
    ("v1", "Namespace"): k8s.core.v1.Namespace, ("v1", "Service"): k8s.core.v1.Service,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount, ("v1", "Secret"): k8s.core.v1.Secret,
    ("v1", "ResourceQuota"): k8s.core.v1.ResourceQuota, ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): k8s.resource.v1.ResourceClaimTemplate,
    ("scheduling.k8s.io/v1", "PriorityClass"): k8s.scheduling.v1.PriorityClass,
    ("rbac.authorization.k8s.io/v1", "Role"): k8s.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
}

_UPPER = re.compile(r"([A-Z])")


def snake(name: str) -> str:
    """An engine (camelCase) input name as the Python SDK's keyword argument."""
    return _UPPER.sub(r"_\1", name).lower()


def secret_value(key: str) -> pulumi.Output:
    """The stack's secret config key `key` (namespace modelplane)."""
    return pulumi.Config("modelplane").require_secret(key)


def register(name: str, obj: dict, opts: pulumi.ResourceOptions) -> pulumi.Resource:
    """Typed resources for core kinds; CustomResource for CRDs (they carry only metadata and spec)."""
    key = (obj["apiVersion"], obj["kind"])
    if key == ("gateway.networking.k8s.io/v1", "Gateway"):
        return CustomObject(name, obj, opts)
    typed = _TYPED.get(key)
    if typed is not None:
        return typed(name, **{snake(k): v for k, v in obj.items() if k not in ("apiVersion", "kind")}, opts=opts)
    return k8s.apiextensions.CustomResource(name, api_version=obj["apiVersion"], kind=obj["kind"],
                                            metadata=obj["metadata"], spec=obj.get("spec"), opts=opts)
