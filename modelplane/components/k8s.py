"""Register one Kubernetes object node as the matching pulumi-kubernetes resource."""
from __future__ import annotations

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


_TYPED = {
    ("v1", "Namespace"): lambda n, o, opts: k8s.core.v1.Namespace(n, metadata=o["metadata"], opts=opts),
    ("v1", "Service"): lambda n, o, opts: k8s.core.v1.Service(n, metadata=o["metadata"], spec=o["spec"], opts=opts),
    ("v1", "ServiceAccount"): lambda n, o, opts: k8s.core.v1.ServiceAccount(n, metadata=o["metadata"],
                                                                            secrets=o.get("secrets"), opts=opts),
    ("v1", "Secret"): lambda n, o, opts: k8s.core.v1.Secret(n, metadata=o["metadata"], type=o.get("type"),
                                                            string_data=o.get("stringData"), opts=opts),
    ("v1", "ResourceQuota"): lambda n, o, opts: k8s.core.v1.ResourceQuota(n, metadata=o["metadata"],
                                                                          spec=o["spec"], opts=opts),
    ("apps/v1", "Deployment"): lambda n, o, opts: k8s.apps.v1.Deployment(n, metadata=o["metadata"],
                                                                         spec=o["spec"], opts=opts),
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): lambda n, o, opts: k8s.resource.v1.ResourceClaimTemplate(
        n, metadata=o["metadata"], spec=o["spec"], opts=opts),
    ("scheduling.k8s.io/v1", "PriorityClass"): lambda n, o, opts: k8s.scheduling.v1.PriorityClass(
        n, metadata=o["metadata"], value=o["value"], preemption_policy=o.get("preemptionPolicy"),
        global_default=o.get("globalDefault"), description=o.get("description"), opts=opts),
    ("gateway.networking.k8s.io/v1", "Gateway"): lambda n, o, opts: CustomObject(n, o, opts),
}


def secret_value(key: str) -> pulumi.Output:
    """The stack's secret config key `key` (namespace modelplane)."""
    return pulumi.Config("modelplane").require_secret(key)


def register(name: str, obj: dict, opts: pulumi.ResourceOptions) -> pulumi.Resource:
    """Typed resources for core kinds; CustomResource for CRDs (they carry only metadata and spec)."""
    typed = _TYPED.get((obj["apiVersion"], obj["kind"]))
    if typed is not None:
        return typed(name, obj, opts)
    return k8s.apiextensions.CustomResource(name, api_version=obj["apiVersion"], kind=obj["kind"],
                                            metadata=obj["metadata"], spec=obj.get("spec"), opts=opts)
