"""Turn a resource graph (render/graph.py) into Pulumi resources: the only place the program
meets the SDK. Each node becomes its typed class (so the provider's own secrets, defaults and
version pinning apply), a ComponentResource, or a pulumi-kubernetes object; expressions become
Outputs of the resources they read.
"""
from __future__ import annotations

from importlib import import_module

import pulumi
import pulumi_kubernetes as k8s

from ..render.drain import DRAIN_TYPE
from ..render.graph import Apply, Graph, Node, Ref, Secret, StackOutput
from ..render.names import SecretValue
from .k8s import register, secret_value, snake

# type token -> (module, class) of its typed Python class (imported on first use)
_CLASSES = {
    "gcp:container/cluster:Cluster": ("pulumi_gcp.container", "Cluster"),
    "gcp:container/nodePool:NodePool": ("pulumi_gcp.container", "NodePool"),
    "gcp:compute/network:Network": ("pulumi_gcp.compute", "Network"),
    "gcp:compute/subnetwork:Subnetwork": ("pulumi_gcp.compute", "Subnetwork"),
    "gcp:compute/firewall:Firewall": ("pulumi_gcp.compute", "Firewall"),
    "gcp:compute/resourcePolicy:ResourcePolicy": ("pulumi_gcp.compute", "ResourcePolicy"),
    "gcp:compute/healthCheck:HealthCheck": ("pulumi_gcp.compute", "HealthCheck"),
    "gcp:dns/recordSet:RecordSet": ("pulumi_gcp.dns", "RecordSet"),
    "gcp:serviceaccount/account:Account": ("pulumi_gcp.serviceaccount", "Account"),
    "gcp:serviceaccount/iAMMember:IAMMember": ("pulumi_gcp.serviceaccount", "IAMMember"),
    "gcp:projects/iAMMember:IAMMember": ("pulumi_gcp.projects", "IAMMember"),
    "gcp:dns/dnsManagedZoneIamMember:DnsManagedZoneIamMember": ("pulumi_gcp.dns", "DnsManagedZoneIamMember"),
    "pulumi:providers:gcp": ("pulumi_gcp", "Provider"),
    "aws:iam/role:Role": ("pulumi_aws.iam", "Role"),
    "aws:iam/rolePolicy:RolePolicy": ("pulumi_aws.iam", "RolePolicy"),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ("pulumi_aws.iam", "RolePolicyAttachment"),
    "aws:eks/cluster:Cluster": ("pulumi_aws.eks", "Cluster"),
    "aws:eks/nodeGroup:NodeGroup": ("pulumi_aws.eks", "NodeGroup"),
    "aws:eks/addon:Addon": ("pulumi_aws.eks", "Addon"),
    "aws:eks/accessEntry:AccessEntry": ("pulumi_aws.eks", "AccessEntry"),
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": ("pulumi_aws.eks", "AccessPolicyAssociation"),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": ("pulumi_aws.eks", "PodIdentityAssociation"),
    "aws:ec2/launchTemplate:LaunchTemplate": ("pulumi_aws.ec2", "LaunchTemplate"),
    "aws:ec2/placementGroup:PlacementGroup": ("pulumi_aws.ec2", "PlacementGroup"),
    "aws:ec2/securityGroup:SecurityGroup": ("pulumi_aws.ec2", "SecurityGroup"),
    "aws:route53/record:Record": ("pulumi_aws.route53", "Record"),
    "aws:route53/healthCheck:HealthCheck": ("pulumi_aws.route53", "HealthCheck"),
    "pulumi:providers:aws": ("pulumi_aws", "Provider"),
    "pulumi:providers:kubernetes": ("pulumi_kubernetes", "Provider"),
    "kubernetes:helm.sh/v3:Release": ("pulumi_kubernetes.helm.v3", "Release"),
    "kubernetes:yaml/v2:ConfigFile": ("pulumi_kubernetes.yaml.v2", "ConfigFile"),
    "kubernetes:core/v1:EndpointsPatch": ("pulumi_kubernetes.core.v1", "EndpointsPatch"),
    "kubernetes:apps/v1:DeploymentPatch": ("pulumi_kubernetes.apps.v1", "DeploymentPatch"),
}

def _class(type_: str):
    module, name = _CLASSES[type_]
    return getattr(import_module(module), name)


class Materializer:
    """Creates the graph's nodes in order. `made`: resources that already exist (the StackReferences
    the program read before planning), by node key; `secret`: a secret config key -> Output."""

    def __init__(self, graph: Graph, made: dict | None = None, parent: pulumi.Resource | None = None,
                 secret=None):
        self.graph, self.made, self.root, self.secret = graph, dict(made or {}), parent, secret or secret_value

    def value(self, v):
        """An input with its expressions as Outputs."""
        if isinstance(v, Ref):
            return self._ref(v)
        if isinstance(v, Secret):
            return pulumi.Output.secret(self.value(v.value))
        if isinstance(v, SecretValue):
            return self.secret(v.config_key)
        if isinstance(v, Apply):
            return pulumi.Output.all(*[self.value(a) for a in v.args]).apply(lambda args, fn=v.fn: fn(*args))
        if isinstance(v, StackOutput):
            ref = self.made[v.node]
            out = ref.require_output(v.name) if v.required else ref.get_output(v.name)
            return out if v.item is None else out.apply(lambda o, item=v.item: (o or {}).get(item))
        if isinstance(v, dict):
            return {k: self.value(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [self.value(x) for x in v]
        return v

    def _ref(self, ref: Ref):
        res = self.made[ref.node]
        parts = ref.path.split(".")
        out = getattr(res, snake(parts[0]))
        for part in parts[1:]:
            out = getattr(out, snake(part))
        return out

    def options(self, node: Node) -> pulumi.ResourceOptions:
        parent = self.made[node.parent] if node.parent else self.root
        return pulumi.ResourceOptions(
            parent=parent, provider=self.made[node.provider] if node.provider else None,
            depends_on=[self.made[k] for k in node.depends_on] or None,
            ignore_changes=list(node.ignore_changes) or None, import_=node.import_id or None,
            protect=node.protect, delete_before_replace=node.delete_before_replace or None,
            replace_on_changes=list(node.replace_on_changes) or None,
            retain_on_delete=node.retain_on_delete or None)

    def create(self, node: Node) -> pulumi.Resource:
        opts = self.options(node)
        if not node.custom and not node.remote:
            return pulumi.ComponentResource(node.type, node.name, None, opts)
        if node.type == DRAIN_TYPE:
            # a dynamic resource as pulumi.dynamic.Resource registers one, its `__provider` already
            # in the inputs (render/drain.py), so both plan engines record the same text
            return pulumi.CustomResource(node.type, node.name, self.value(node.inputs), opts)
        if node.type.startswith("kubernetes:") and node.type not in _CLASSES:
            if node.type == f"kubernetes:{node.inputs['apiVersion']}:{node.inputs['kind']}Patch":
                # a custom kind's Patch: its class registers exactly this type token
                return k8s.apiextensions.CustomResourcePatch(
                    node.name, api_version=node.inputs["apiVersion"], kind=node.inputs["kind"],
                    metadata=self.value(node.inputs["metadata"]), spec=self.value(node.inputs.get("spec")), opts=opts)
            return register(node.name, self.value(node.inputs), opts)
        kwargs = {snake(k): self.value(v) for k, v in node.inputs.items()}
        return _class(node.type)(node.name, **kwargs, opts=opts)

    def run(self) -> dict:
        components = []
        for node in self.graph:
            if node.key in self.made:
                continue
            self.made[node.key] = self.create(node)
            if not node.custom and not node.remote:
                components.append(node)
        # Outputs last: they read resources created after their component (a Gateway's address).
        for node in components:
            self.made[node.key].register_outputs(self.value(node.outputs or {}))
        return self.made


def materialize(graph: Graph, made: dict | None = None, parent=None, secret=None) -> Materializer:
    m = Materializer(graph, made, parent, secret)
    m.run()
    return m
