"""InferenceCluster: cloud cluster + GPU pools from catalog recipes + substrate + inventory."""
from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from ..api import Catalog, InferenceCluster as ClusterSpec
from ..fleet import inventory_of
from . import eks, gke, substrate


class InferenceCluster(pulumi.ComponentResource):
    """Outputs: `inventory` (plain data, known at preview) and `kubeconfig` (secret)."""

    def __init__(self, spec: ClusterSpec, catalog: Catalog, team_namespaces: list[str],
                 opts: pulumi.ResourceOptions | None = None, kubeconfig_secret: pulumi.Output | None = None):
        super().__init__("modelplane:index:InferenceCluster", spec.name, None, opts)
        self.spec = spec
        self.inventory = inventory_of(spec, catalog)
        if spec.gke:
            self.kubeconfig = gke.build(spec, catalog, self)
        elif spec.eks:
            self.kubeconfig = eks.build(spec, catalog, self)
        else:
            # Bring your own: pools are declared, not created; the kubeconfig is a secret config key.
            self.kubeconfig = pulumi.Output.secret(kubeconfig_secret)
        self.provider = k8s.Provider(f"{spec.name}-k8s", kubeconfig=self.kubeconfig, cluster_identifier=spec.name,
                                     opts=pulumi.ResourceOptions(parent=self))
        child = pulumi.ResourceOptions(parent=self, provider=self.provider)
        self.substrate = substrate.install(spec, catalog.substrate, team_namespaces, child)
        self.register_outputs({"inventory": self.inventory, "kubeconfig": self.kubeconfig})
