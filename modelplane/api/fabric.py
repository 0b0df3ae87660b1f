"""Which node-to-node fabric a pool's pods really get, and what wires it.

A class declares the fabric its hardware has (`capabilities.network.fabric`). Pods only use it
when the pool and the pods are wired for it; otherwise they talk over the primary NIC (TCP).
The scheduler scores the *effective* fabric, the renderers add the wiring, and the
`fabric-wired` policy checks that every multi-node or disaggregated replica got it.

- GKE A3 Ultra / A4 (GPUDirect RDMA over RoCE): GKE managed DRANET. The cluster runs Dataplane
  V2, the node pool sets `network_config.accelerator_network_profile: auto` (GKE creates the RDMA
  VPC and subnets) and the label `cloud.google.com/gke-networking-dra-driver=true`; pods claim
  the RDMA NICs through DRA (device class `mrdma.google.com`, allocation mode All). Recipe:
  Cluster Toolkit `modules/compute/gke-node-pool` (main.tf, resource-claim-template.yaml.tftpl),
  docs.cloud.google.com/kubernetes-engine/docs/how-to/allocate-network-resources-dra.
- GKE A3 High / A3 Mega (GPUDirect-TCPX / TCPXO): not wired. They need extra VPCs, the NCCL
  plugin installer, the NRI device injector and a tcpx(o) daemon sidecar in every pod; modelplane
  does not build those, so these pools count as TCP and multi-node workers are not placed there.
- EKS with EFA: the launch template attaches the EFA interfaces, the EFA device plugin
  (aws/eks-charts aws-efa-k8s-device-plugin) advertises them as `vpc.amazonaws.com/efa`, and pods
  request all of a node's interfaces (docs.aws.amazon.com/eks/latest/userguide/device-management-efa.html).
- Existing clusters: the owner built the fabric the class declares.
"""
from __future__ import annotations

from dataclasses import dataclass

from .catalog import MULTI_NODE_FABRICS, InferenceClass

GKE_DRANET_LABEL = "cloud.google.com/gke-networking-dra-driver"
RDMA_DEVICE_CLASS = "mrdma.google.com"
EFA_RESOURCE = "vpc.amazonaws.com/efa"


@dataclass(frozen=True)
class FabricWiring:
    declared: str                 # what the hardware has
    effective: str                # what pods get
    via: str                      # gke-dranet | efa-device-plugin | cluster-owner | none
    note: str = ""                # why a declared fabric is not wired
    nic_device_class: str | None = None   # DRA device class pods claim the NICs from
    efa_interfaces: int = 0       # EFA devices a pod takes (all of the node's)

    @property
    def wired(self) -> bool:
        return self.declared == self.effective

    def to_json(self) -> dict:
        out = {"declared": self.declared, "effective": self.effective, "via": self.via}
        if self.note:
            out["note"] = self.note
        if self.nic_device_class:
            out["nicDeviceClass"] = self.nic_device_class
        if self.efa_interfaces:
            out["efaInterfaces"] = self.efa_interfaces
        return out


def fabric_wiring(cls: InferenceClass, source: str) -> FabricWiring:
    """The wiring a pool of `cls` gets on a `gke`, `eks` or `existing` cluster."""
    declared = cls.capabilities.network.fabric
    if declared not in MULTI_NODE_FABRICS:
        return FabricWiring(declared, declared, "none")
    if source == "existing":
        return FabricWiring(declared, declared, "cluster-owner")
    if source == "gke":
        gke = cls.provisioning.gke
        if gke.gpudirect == "rdma":
            return FabricWiring(declared, declared, "gke-dranet", nic_device_class=RDMA_DEVICE_CLASS)
        return FabricWiring(declared, "tcp", "none",
                            note=f"GPUDirect-{gke.gpudirect.upper()} needs the NCCL plugin installer, the NRI device "
                                 "injector and a daemon sidecar per pod, which modelplane does not install")
    eks = cls.provisioning.eks
    if declared == "efa" and eks.efa_interfaces:
        return FabricWiring(declared, declared, "efa-device-plugin", efa_interfaces=eks.efa_interfaces)
    return FabricWiring(declared, "tcp", "none", note="the class attaches no EFA interfaces")
