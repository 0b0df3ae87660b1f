"""GKE: a regional cluster, a system pool, and one GPU node pool per InferenceCluster pool, as
resource nodes (pure: engine input names, tested without a cloud).

Each input follows a documented recipe (docs/cloud-recipes.md has the sources):
- DRA pools: GKE's driver installation disabled, GKE's device plugin switched off by node label,
  the driver from Google's COS installer DaemonSet (substrate), the autoscaler hint label.
- Flex-start pools: flex-start VMs scaled by the ordinary cluster autoscaler (no queued
  provisioning, which would only hand out nodes to ProvisioningRequests), auto-repair off.
- A3 Ultra / A4: GKE managed DRANET (accelerator network profile `auto`) for the RDMA NICs.
- A3 High / A3 Mega (GPUDirect-TCPX / TCPXO): one VPC, subnet and internal firewall rule per GPU
  NIC, multi-networking on the cluster, the VPCs as the pool's additional node networks.
- Local SSDs as ephemeral storage where the machine carries them (the model download goes there).
- A4X (GB200 NVL72): a HIGH_THROUGHPUT workload policy with the class's accelerator topology
  (1x72) as the pool's COMPACT placement policy, which keeps its VMs in one NVLink domain
  (Cluster Toolkit examples/gke-a4x/gke-a4x.yaml, modules/compute/resource-policy).
"""
from __future__ import annotations

import math

from ..api import Catalog, InferenceCluster
from ..api.cluster import GPU_PRESENT_LABEL, GPU_TAINT, POOL_LABEL
from ..api.fabric import GKE_DRANET_LABEL, fabric_wiring
from ..api.rules import compact_placement
from . import gpudirect as gd
from .addons import CERT_MANAGER_SERVICE_ACCOUNT
from .graph import Apply, Graph, Node, Ref, Secret
from .kubeconfig import TAINT_EFFECT, gke_kubeconfig

# GKE's own GPU device plugin stays off on nodes with this label (set-up-dra guide).
GKE_NO_DEVICE_PLUGIN_LABEL = "gke-no-default-nvidia-gpu-device-plugin"
# Lets GKE's cluster autoscaler scale pools for pods that claim GPUs through DRA.
GKE_DRA_AUTOSCALER_LABEL = "cloud.google.com/gke-nvidia-gpu-dra-driver"


def uses_dra(c: InferenceCluster) -> bool:
    """GPUs are claimed through the NVIDIA DRA driver on this cluster (not GKE's device plugin)."""
    return c.dra and c.substrate.dra_driver.enabled


def wiring_of(c: InferenceCluster, catalog: Catalog, pool):
    return fabric_wiring(catalog.classes[pool.class_], "gke", catalog.gpudirect, c.gke.version,
                         plugins=catalog.net_plugins)


def gpu_nics(c: InferenceCluster, catalog: Catalog) -> int:
    """GPU VPCs the cluster needs: the most GPUDirect NICs any of its pools attaches (0: none)."""
    return max((w.recipe.nics for p in c.node_pools if (w := wiring_of(c, catalog, p)).recipe), default=0)


def gpu_network_args(c: InferenceCluster, i: int) -> dict:
    """Inputs of GPU NIC `i`'s VPC, subnet and firewall rule (Cluster Toolkit
    modules/network/multivpc: custom subnets, MTU 8244, all internal TCP/UDP/ICMP allowed)."""
    g, vpc, cidr = c.gke, gd.vpc_name(c.name, i), gd.subnet_range(i)
    return {
        "network": {"name": vpc, "project": g.project, "autoCreateSubnetworks": False, "mtu": gd.GPU_NETWORK_MTU},
        "subnetwork": {"name": gd.subnet_name(c.name, i), "project": g.project, "region": g.region,
                       "ipCidrRange": cidr},
        "firewall": {"name": f"{vpc}-allow-internal", "project": g.project, "direction": "INGRESS",
                     "sourceRanges": [cidr], "allows": [{"protocol": "tcp", "ports": ["0-65535"]},
                                                        {"protocol": "udp", "ports": ["0-65535"]},
                                                        {"protocol": "icmp"}]},
    }


def node_pool_args(c: InferenceCluster, catalog: Catalog, pool) -> dict:
    """NodePool inputs for one pool."""
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
        "machineType": gke.machine_type,
        "diskSizeGb": gke.disk_size_gb,
        "diskType": gke.disk_type,
        "imageType": gke.image_type,
        "guestAccelerators": [{"type": gke.accelerator.type, "count": gke.accelerator.count,
                               "gpuDriverInstallationConfig": {"gpuDriverVersion": driver}}],
        "labels": labels,
        "taints": taints,
        "workloadMetadataConfig": {"mode": "GKE_METADATA"},
        "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"],
        "gvnic": {"enabled": True},
    }
    if gke.local_ssd_count:
        node_config["ephemeralStorageLocalSsdConfig"] = {"localSsdCount": gke.local_ssd_count}
    if cap.type == "spot":   # Spot VMs consume no reservation (Cluster Toolkit@1047080 gke-node-pool/main.tf L435-437)
        node_config["spot"] = True
        node_config["reservationAffinity"] = {"consumeReservationType": "NO_RESERVATION"}
    if cap.type == "flex-start":
        node_config["flexStart"] = True
        node_config["reservationAffinity"] = {"consumeReservationType": "NO_RESERVATION"}
    if cap.type == "reservation":
        node_config["reservationAffinity"] = {"consumeReservationType": "SPECIFIC_RESERVATION",
                                              "key": "compute.googleapis.com/reservation-name",
                                              "values": [cap.reservation]}
    # Bounds for the whole pool, not per zone: the scheduler counts maxNodes across the pool's zones.
    autoscaling = {"totalMinNodeCount": pool.min_nodes, "totalMaxNodeCount": pool.max_nodes,
                   "locationPolicy": "ANY" if cap.type in ("spot", "flex-start") else "BALANCED"}
    args = {
        "name": pool.name, "location": c.gke.region, "project": c.gke.project, "nodeLocations": list(pool.zones),
        "autoscaling": autoscaling,
        # Flex-start VMs are not repaired in place (Cluster Toolkit gke-node-pool sets the same).
        "management": {"autoRepair": cap.type != "flex-start", "autoUpgrade": True},
        "nodeConfig": node_config,
    }
    if pool.min_nodes:
        args["initialNodeCount"] = math.ceil(pool.min_nodes / max(len(pool.zones), 1))   # per zone
    if wiring.via == "gke-dranet":
        args["networkConfig"] = {"acceleratorNetworkProfile": "auto"}
    if wiring.recipe:     # the GPU NICs, one per GPU VPC (Cluster Toolkit gke-node-pool main.tf)
        args["networkConfig"] = {"additionalNodeNetworkConfigs": [
            {"network": gd.vpc_name(c.name, i), "subnetwork": gd.subnet_name(c.name, i)}
            for i in range(wiring.recipe.nics)]}
    if compact_placement(gke, cap.type):
        args["placementPolicy"] = {"type": "COMPACT"}
    return args


def workload_policy_args(c: InferenceCluster, pool, topology: str) -> dict:
    """The A4X pool's workload policy (Compute Engine resource policy, regional)."""
    return {"name": f"{c.name}-{pool.name}-nvl", "project": c.gke.project, "region": c.gke.region,
            "workloadPolicy": {"type": "HIGH_THROUGHPUT", "acceleratorTopology": topology}}


def cluster_args(c: InferenceCluster, multi_networking: bool = False) -> dict:
    """Cluster inputs: the pinned control-plane version and Dataplane V2 (which managed DRANET
    and multi-networking need and which can only be chosen when the cluster is created);
    multi-networking when a pool attaches GPUDirect NICs."""
    g = c.gke
    extra = {"enableMultiNetworking": True} if multi_networking else {}
    return {**extra,
        "name": c.name, "project": g.project, "location": g.region, "minMasterVersion": g.version,
        "releaseChannel": {"channel": g.release_channel}, "network": g.network, "subnetwork": g.subnetwork,
        "datapathProvider": "ADVANCED_DATAPATH",
        "workloadIdentityConfig": {"workloadPool": f"{g.project}.svc.id.goog"},
        "removeDefaultNodePool": True, "initialNodeCount": 1, "deletionProtection": g.deletion_protection,
    }


def system_pool_args(c: InferenceCluster) -> dict:
    g = c.gke
    return {"name": "system", "location": g.region, "project": g.project,
            "autoscaling": {"totalMinNodeCount": 1, "totalMaxNodeCount": 3, "locationPolicy": "BALANCED"},
            "initialNodeCount": 1,
            "nodeConfig": {"machineType": g.system_machine_type, "diskSizeGb": 100,
                           "workloadMetadataConfig": {"mode": "GKE_METADATA"},
                           "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"]}}


CLUSTER, POOL = "gcp:container/cluster:Cluster", "gcp:container/nodePool:NodePool"
RESOURCE_POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
NETWORK, SUBNET, FIREWALL = "gcp:compute/network:Network", "gcp:compute/subnetwork:Subnetwork", \
    "gcp:compute/firewall:Firewall"


def build(c: InferenceCluster, catalog: Catalog, graph: Graph, parent: str):
    """Add the cloud resources under `parent`; return the kubeconfig (a secret expression) and
    the keys of what in-cluster installs wait for."""
    nics = gpu_nics(c, catalog)
    cluster = graph.add(Node(CLUSTER, c.name, cluster_args(c, nics > 0), parent))
    subnets = []
    for i in range(nics):
        net = gpu_network_args(c, i)
        vpc = graph.add(Node(NETWORK, net["network"]["name"], net["network"], parent))
        subnets.append(graph.add(Node(SUBNET, net["subnetwork"]["name"],
                                      {**net["subnetwork"], "network": Ref(vpc, "id")}, parent)))
        graph.add(Node(FIREWALL, net["firewall"]["name"], {**net["firewall"], "network": Ref(vpc, "id")}, parent))
    after = (cluster, *subnets)
    name = Ref(cluster, "name")
    system = graph.add(Node(POOL, f"{c.name}-system", {**system_pool_args(c), "cluster": name}, parent,
                            depends_on=after))
    for pool in sorted(c.node_pools, key=lambda p: p.name):
        args = {**node_pool_args(c, catalog, pool), "cluster": name}
        topology = catalog.classes[pool.class_].provisioning.gke.accelerator_topology
        if topology:
            policy = workload_policy_args(c, pool, topology)
            key = graph.add(Node(RESOURCE_POLICY, policy["name"], policy, parent))
            args["placementPolicy"] = {"type": "COMPACT", "policyName": Ref(key, "name")}
        graph.add(Node(POOL, f"{c.name}-{pool.name}", args, parent, depends_on=after))
    kubeconfig = Secret(Apply(gke_kubeconfig, (name, Ref(cluster, "endpoint"),
                                               Ref(cluster, "masterAuth.clusterCaCertificate"))))
    return kubeconfig, [system], _dns01_identity(c, graph, parent)


def dns01_account(c: InferenceCluster) -> tuple[str, str] | None:
    """(account id, email) of the Google service account cert-manager acts as for Cloud DNS DNS-01,
    or None. Account ids are 6-30 characters."""
    dns01 = c.tls.acme.dns01 if c.tls and c.tls.acme else None
    if not (c.gke and dns01 and dns01.cloud_dns):
        return None
    account = f"{c.name[:24].rstrip('-')}-dns01"
    return account, f"{account}@{c.gke.project}.iam.gserviceaccount.com"


def _dns01_identity(c: InferenceCluster, graph: Graph, parent: str) -> dict[str, list]:
    """GKE Workload Identity for cert-manager's Cloud DNS solver (cert-manager docs, "Google
    CloudDNS", Workload Identity): a Google service account allowed to edit DNS in the managed
    zone alone, which cert-manager's Kubernetes ServiceAccount may impersonate (its chart annotates
    the ServiceAccount with the account's email, see render/addons.py)."""
    found = dns01_account(c)
    if found is None:
        return {}
    account_id, email = found
    project = c.gke.project
    account = graph.add(Node("gcp:serviceaccount/account:Account", f"{c.name}-dns01", {
        "accountId": account_id, "project": project, "displayName": f"cert-manager DNS-01 on {c.name}"}, parent))
    # On the managed zone, not the project (review N9): pulumi-gcp `gcp.dns.DnsManagedZoneIamMember`
    # (managedZone, project, role, member). Cloud DNS IAM has no record-name condition, so the account
    # can still edit any record of that zone, but no other zone of the project.
    zone = c.tls.acme.dns01.cloud_dns
    dns = graph.add(Node("gcp:dns/dnsManagedZoneIamMember:DnsManagedZoneIamMember", f"{c.name}-dns01-dns", {
        "project": zone.project, "managedZone": zone.managed_zone, "role": "roles/dns.admin",
        "member": f"serviceAccount:{email}"}, parent, depends_on=(account,)))
    ns, ksa = CERT_MANAGER_SERVICE_ACCOUNT
    bind = graph.add(Node("gcp:serviceaccount/iAMMember:IAMMember", f"{c.name}-dns01-workload-identity", {
        "serviceAccountId": Ref(account, "name"), "role": "roles/iam.workloadIdentityUser",
        "member": f"serviceAccount:{project}.svc.id.goog[{ns}/{ksa}]"}, parent))
    return {"cert-manager": [dns, bind]}
