"""GKE: a regional cluster, a system pool, and one GPU node pool per InferenceCluster pool."""
from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from ..api import Catalog, InferenceCluster
from ..api.cluster import GPU_TAINT, POOL_LABEL
from .kubeconfig import TAINT_EFFECT, exec_kubeconfig

# With this label GKE leaves GPUs to the NVIDIA DRA driver instead of its device plugin.
GKE_DRA_LABEL = "cloud.google.com/gke-nvidia-gpu-dra-driver"


def node_pool_args(c: InferenceCluster, catalog: Catalog, pool) -> dict:
    """Plain NodePool arguments for one pool (pure: tested without a cloud)."""
    cls = catalog.classes[pool.class_]
    gke = cls.provisioning.gke
    cap = pool.capacity
    labels = {POOL_LABEL: pool.name, **pool.labels}
    if c.dra:
        labels[GKE_DRA_LABEL] = "true"
    taints = [{"key": GPU_TAINT["key"], "value": GPU_TAINT["value"], "effect": TAINT_EFFECT[GPU_TAINT["effect"]]}]
    taints += [{"key": t.key, "value": t.value, "effect": TAINT_EFFECT[t.effect]} for t in pool.taints]
    node_config = {
        "machine_type": gke.machine_type,
        "disk_size_gb": gke.disk_size_gb,
        "disk_type": gke.disk_type,
        "image_type": gke.image_type,
        "guest_accelerators": [{"type": gke.accelerator.type, "count": gke.accelerator.count,
                                "gpu_driver_installation_config": {"gpu_driver_version": gke.gpu_driver}}],
        "labels": labels,
        "taints": taints,
        "workload_metadata_config": {"mode": "GKE_METADATA"},
        "oauth_scopes": ["https://www.googleapis.com/auth/cloud-platform"],
        "gvnic": {"enabled": gke.gpudirect != "none"},
    }
    if cap.type == "spot":
        node_config["spot"] = True
    if cap.type == "flex-start":
        node_config["flex_start"] = True
        node_config["reservation_affinity"] = {"consume_reservation_type": "NO_RESERVATION"}
    if cap.type == "reservation":
        node_config["reservation_affinity"] = {"consume_reservation_type": "SPECIFIC_RESERVATION",
                                               "key": "compute.googleapis.com/reservation-name",
                                               "values": [cap.reservation]}
    args = {
        "name": pool.name, "location": c.gke.region, "project": c.gke.project, "node_locations": list(pool.zones),
        "initial_node_count": pool.min_nodes,
        "autoscaling": {"min_node_count": pool.min_nodes, "max_node_count": pool.max_nodes,
                        "location_policy": "ANY" if cap.type in ("spot", "flex-start") else "BALANCED"},
        "management": {"auto_repair": True, "auto_upgrade": True},
        "node_config": node_config,
    }
    if cap.type == "flex-start":
        args["queued_provisioning"] = {"enabled": True}
    elif gke.placement == "compact":
        args["placement_policy"] = {"type": "COMPACT"}
    return args


def kubeconfig(name, endpoint, ca) -> pulumi.Output:
    return exec_kubeconfig(name, pulumi.Output.concat("https://", endpoint), ca, "gke-gcloud-auth-plugin",
                           provide_cluster_info=True)


def build(c: InferenceCluster, catalog: Catalog, parent: pulumi.Resource) -> pulumi.Output:
    """Create the cloud resources; return the kubeconfig (secret)."""
    opts = pulumi.ResourceOptions(parent=parent)
    g = c.gke
    cluster = gcp.container.Cluster(
        c.name, name=c.name, project=g.project, location=g.region, min_master_version=g.version,
        release_channel={"channel": g.release_channel}, network=g.network, subnetwork=g.subnetwork,
        workload_identity_config={"workload_pool": f"{g.project}.svc.id.goog"},
        remove_default_node_pool=True, initial_node_count=1, deletion_protection=True, opts=opts)
    pool_opts = pulumi.ResourceOptions(parent=parent, depends_on=[cluster])
    gcp.container.NodePool(
        f"{c.name}-system", name="system", cluster=cluster.name, location=g.region, project=g.project,
        autoscaling={"min_node_count": 1, "max_node_count": 3},
        node_config={"machine_type": g.system_machine_type, "disk_size_gb": 100,
                     "workload_metadata_config": {"mode": "GKE_METADATA"},
                     "oauth_scopes": ["https://www.googleapis.com/auth/cloud-platform"]}, opts=pool_opts)
    for pool in sorted(c.node_pools, key=lambda p: p.name):
        gcp.container.NodePool(f"{c.name}-{pool.name}", cluster=cluster.name,
                               **node_pool_args(c, catalog, pool), opts=pool_opts)
    return kubeconfig(cluster.name, cluster.endpoint, cluster.master_auth.cluster_ca_certificate)
