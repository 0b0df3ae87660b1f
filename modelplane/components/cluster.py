"""InferenceCluster: cloud cluster + GPU pools from catalog recipes + substrate + inventory."""
from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from ..api import Catalog, InferenceCluster as ClusterSpec
from ..fleet import inventory_of
from . import eks, gke, substrate


class InferenceCluster(pulumi.ComponentResource):
    """Outputs: `inventory` (plain data, known at preview), `kubeconfig` (secret) and
    `gateway_address` (the inference Gateway's address, known once it is provisioned)."""

    def __init__(self, spec: ClusterSpec, catalog: Catalog, team_namespaces: list[str],
                 opts: pulumi.ResourceOptions | None = None, kubeconfig_secret: pulumi.Output | None = None):
        super().__init__("modelplane:index:InferenceCluster", spec.name, None, opts)
        self.spec = spec
        self.inventory = inventory_of(spec, catalog)
        system, extra = [], {}
        if spec.gke:
            self.kubeconfig, system = gke.build(spec, catalog, self)
        elif spec.eks:
            built = eks.build(spec, catalog, self)
            self.kubeconfig, system, extra = built.kubeconfig, built.system, built.addon_deps
        else:
            # Bring your own: pools are declared, not created; the kubeconfig is a secret config key.
            self.kubeconfig = pulumi.Output.secret(kubeconfig_secret)
        self.provider = k8s.Provider(f"{spec.name}-k8s", kubeconfig=self.kubeconfig, cluster_identifier=spec.name,
                                     opts=pulumi.ResourceOptions(parent=self))
        child = pulumi.ResourceOptions(parent=self, provider=self.provider)
        installed = substrate.install(spec, catalog, team_namespaces, child, system, extra)
        self.substrate = installed
        self.gateway_address = (installed.gateway.status.apply(_address) if installed.gateway is not None
                                else pulumi.Output.from_input(None))
        self.register_outputs({"inventory": self.inventory, "kubeconfig": self.kubeconfig,
                               "gatewayAddress": self.gateway_address})


def _address(status) -> str | None:
    addresses = (status or {}).get("addresses") or []
    return addresses[0].get("value") if addresses else None
