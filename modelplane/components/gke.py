"""GKE: a regional cluster, a system pool, and one GPU node pool per InferenceCluster pool.

Each input follows a documented recipe (docs/cloud-recipes.md has the sources):
- DRA pools: GKE's driver installation disabled, GKE's device plugin switched off by node label,
  the driver from Google's COS installer DaemonSet (substrate), the autoscaler hint label.
- Flex-start pools: flex-start VMs scaled by the ordinary cluster autoscaler (no queued
  provisioning, which would only hand out nodes to ProvisioningRequests), auto-repair off.
- A3 Ultra / A4: GKE managed DRANET (accelerator network profile `auto`) for the RDMA NICs.
- A3 High / A3 Mega (GPUDirect-TCPX / TCPXO): one VPC, subnet and internal firewall rule per GPU
  NIC, multi-networking on the cluster, the VPCs as the pool's additional node networks.
- Local SSDs as ephemeral storage where the machine carries them (the model download goes there).
"""
from __future__ import annotations

import math

import pulumi
import pulumi_gcp as gcp

from ..api import Catalog, InferenceCluster
from ..api.cluster import GPU_PRESENT_LABEL, GPU_TAINT, POOL_LABEL
from ..api.fabric import GKE_DRANET_LABEL, fabric_wiring
from ..api.rules import compact_placement
from ..render import gpudirect as gd
from .kubeconfig import TAINT_EFFECT, exec_kubeconfig

# GKE's own GPU device plugin stays off on nodes with this label (set-up-dra guide).
GKE_NO_DEVICE_PLUGIN_LABEL = "gke-no-default-nvidia-gpu-device-plugin"
# Lets GKE's cluster autoscaler scale pools for pods that claim GPUs through DRA.
GKE_DRA_AUTOSCALER_LABEL = "cloud.google.com/gke-nvidia-gpu-dra-driver"


def uses_dra(c: InferenceCluster) -> bool:
    """GPUs are claimed through the NVIDIA DRA driver on this cluster (not GKE's device plugin)."""
    return c.dra and c.substrate.dra_driver.enabled


def wiring_of(c: InferenceCluster, catalog: Catalog, pool):
    return fabric_wiring(catalog.classes[pool.class_], "gke", catalog.gpudirect, c.gke.version)


def gpu_nics(c: InferenceCluster, catalog: Catalog) -> int:
    """GPU VPCs the cluster needs: the most GPUDirect NICs any of its pools attaches (0: none)."""
    return max((w.recipe.nics for p in c.node_pools if (w := wiring_of(c, catalog, p)).recipe), default=0)


def gpu_network_args(c: InferenceCluster, i: int) -> dict:
    """Plain arguments of GPU NIC `i`'s VPC, subnet and firewall rule (Cluster Toolkit
    modules/network/multivpc: custom subnets, MTU 8244, all internal TCP/UDP/ICMP allowed)."""
    g, vpc, cidr = c.gke, gd.vpc_name(c.name, i), gd.subnet_range(i)
    return {
        "network": {"name": vpc, "project": g.project, "auto_create_subnetworks": False, "mtu": gd.GPU_NETWORK_MTU},
        "subnetwork": {"name": gd.subnet_name(c.name, i), "project": g.project, "region": g.region,
                       "ip_cidr_range": cidr},
        "firewall": {"name": f"{vpc}-allow-internal", "project": g.project, "direction": "INGRESS",
                     "source_ranges": [cidr], "allows": [{"protocol": "tcp", "ports": ["0-65535"]},
                                                         {"protocol": "udp", "ports": ["0-65535"]},
                                                         {"protocol": "icmp"}]},
    }


def node_pool_args(c: InferenceCluster, catalog: Catalog, pool) -> dict:
    """Plain NodePool arguments for one pool (pure: tested without a cloud)."""
    cls = catalog.classes[pool.class_]
    gke = cls.provisioning.gke
    cap = pool.capacity
    dra = uses_dra(c)
    labels = {POOL_LABEL: pool.name, GPU_PRESENT_LABEL: "true"}
    if dra:
        labels |= {GKE_NO_DEVICE_PLUGIN_LABEL: "true", GKE_DRA_AUTOSCALER_LABEL: "true"}
    wiring = wiring_of(c, catalog, pool)
    if wiring.via == "gke-dranet":
        labels[GKE_DRANET_LABEL] = "true"
    labels |= pool.labels
    taints = [{"key": GPU_TAINT["key"], "value": GPU_TAINT["value"], "effect": TAINT_EFFECT[GPU_TAINT["effect"]]}]
    taints += [{"key": t.key, "value": t.value, "effect": TAINT_EFFECT[t.effect]} for t in pool.taints]
    driver = "INSTALLATION_DISABLED" if dra else gke.gpu_driver
    node_config = {
        "machine_type": gke.machine_type,
        "disk_size_gb": gke.disk_size_gb,
        "disk_type": gke.disk_type,
        "image_type": gke.image_type,
        "guest_accelerators": [{"type": gke.accelerator.type, "count": gke.accelerator.count,
                                "gpu_driver_installation_config": {"gpu_driver_version": driver}}],
        "labels": labels,
        "taints": taints,
        "workload_metadata_config": {"mode": "GKE_METADATA"},
        "oauth_scopes": ["https://www.googleapis.com/auth/cloud-platform"],
        "gvnic": {"enabled": True},
    }
    if gke.local_ssd_count:
        node_config["ephemeral_storage_local_ssd_config"] = {"local_ssd_count": gke.local_ssd_count}
    if cap.type == "spot":
        node_config["spot"] = True
    if cap.type == "flex-start":
        node_config["flex_start"] = True
        node_config["reservation_affinity"] = {"consume_reservation_type": "NO_RESERVATION"}
    if cap.type == "reservation":
        node_config["reservation_affinity"] = {"consume_reservation_type": "SPECIFIC_RESERVATION",
                                               "key": "compute.googleapis.com/reservation-name",
                                               "values": [cap.reservation]}
    # Bounds for the whole pool, not per zone: the scheduler counts maxNodes across the pool's zones.
    autoscaling = {"total_min_node_count": pool.min_nodes, "total_max_node_count": pool.max_nodes,
                   "location_policy": "ANY" if cap.type in ("spot", "flex-start") else "BALANCED"}
    args = {
        "name": pool.name, "location": c.gke.region, "project": c.gke.project, "node_locations": list(pool.zones),
        "autoscaling": autoscaling,
        # Flex-start VMs are not repaired in place (Cluster Toolkit gke-node-pool sets the same).
        "management": {"auto_repair": cap.type != "flex-start", "auto_upgrade": True},
        "node_config": node_config,
    }
    if pool.min_nodes:
        args["initial_node_count"] = math.ceil(pool.min_nodes / max(len(pool.zones), 1))   # per zone
    if wiring.via == "gke-dranet":
        args["network_config"] = {"accelerator_network_profile": "auto"}
    if wiring.recipe:     # the GPU NICs, one per GPU VPC (Cluster Toolkit gke-node-pool main.tf)
        args["network_config"] = {"additional_node_network_configs": [
            {"network": gd.vpc_name(c.name, i), "subnetwork": gd.subnet_name(c.name, i)}
            for i in range(wiring.recipe.nics)]}
    if compact_placement(gke, cap.type):
        args["placement_policy"] = {"type": "COMPACT"}
    return args


def cluster_args(c: InferenceCluster, multi_networking: bool = False) -> dict:
    """Plain Cluster arguments: the pinned control-plane version and Dataplane V2 (which managed
    DRANET and multi-networking need and which can only be chosen when the cluster is created);
    multi-networking when a pool attaches GPUDirect NICs."""
    g = c.gke
    extra = {"enable_multi_networking": True} if multi_networking else {}
    return {**extra,
        "name": c.name, "project": g.project, "location": g.region, "min_master_version": g.version,
        "release_channel": {"channel": g.release_channel}, "network": g.network, "subnetwork": g.subnetwork,
        "datapath_provider": "ADVANCED_DATAPATH",
        "workload_identity_config": {"workload_pool": f"{g.project}.svc.id.goog"},
        "remove_default_node_pool": True, "initial_node_count": 1, "deletion_protection": g.deletion_protection,
    }


def kubeconfig(name, endpoint, ca) -> pulumi.Output:
    return exec_kubeconfig(name, pulumi.Output.concat("https://", endpoint), ca, "gke-gcloud-auth-plugin",
                           provide_cluster_info=True)


def build(c: InferenceCluster, catalog: Catalog, parent: pulumi.Resource) -> tuple[pulumi.Output, list]:
    """Create the cloud resources; return the kubeconfig (secret) and what in-cluster installs wait for."""
    opts = pulumi.ResourceOptions(parent=parent)
    g = c.gke
    nics = gpu_nics(c, catalog)
    cluster = gcp.container.Cluster(c.name, **cluster_args(c, nics > 0), opts=opts)
    subnets = []
    for i in range(nics):
        net_args = gpu_network_args(c, i)
        vpc = gcp.compute.Network(net_args["network"]["name"], **net_args["network"], opts=opts)
        subnets.append(gcp.compute.Subnetwork(net_args["subnetwork"]["name"], network=vpc.id,
                                              **net_args["subnetwork"], opts=opts))
        gcp.compute.Firewall(net_args["firewall"]["name"], network=vpc.id, **net_args["firewall"], opts=opts)
    pool_opts = pulumi.ResourceOptions(parent=parent, depends_on=[cluster, *subnets])
    system = gcp.container.NodePool(
        f"{c.name}-system", name="system", cluster=cluster.name, location=g.region, project=g.project,
        autoscaling={"total_min_node_count": 1, "total_max_node_count": 3, "location_policy": "BALANCED"},
        initial_node_count=1,
        node_config={"machine_type": g.system_machine_type, "disk_size_gb": 100,
                     "workload_metadata_config": {"mode": "GKE_METADATA"},
                     "oauth_scopes": ["https://www.googleapis.com/auth/cloud-platform"]}, opts=pool_opts)
    for pool in sorted(c.node_pools, key=lambda p: p.name):
        gcp.container.NodePool(f"{c.name}-{pool.name}", cluster=cluster.name,
                               **node_pool_args(c, catalog, pool), opts=pool_opts)
    return kubeconfig(cluster.name, cluster.endpoint, cluster.master_auth.cluster_ca_certificate), [system]
