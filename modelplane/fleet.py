"""The fleet inventory: what a cluster exports and what the scheduler and renderers read.

One JSON-able format for clusters of this stack and clusters read from infra stacks through
StackReferences, so both paths schedule and render identically.
"""
from __future__ import annotations

from .api import Catalog, InferenceCluster, ModelDeployment
from .scheduler import Cluster, Demand, Pool, Role, allocate

INVENTORY_VERSION = 1
DRA_DRIVERS = ("gpu.nvidia.com",)   # the substrate's draDriver chart (catalog/substrate.yaml)


def inventory_of(cluster: InferenceCluster, catalog: Catalog) -> dict:
    pools = []
    for pool in sorted(cluster.node_pools, key=lambda p: p.name):
        cls = catalog.classes[pool.class_]
        pools.append({
            "name": pool.name, "class": cls.name, "minNodes": pool.min_nodes, "maxNodes": pool.max_nodes,
            "gpusPerNode": cls.capabilities.gpu.count, "zones": list(pool.zones),
            "capacityType": pool.capacity.type,
            "capabilities": cls.capabilities.model_dump(by_alias=True, exclude_none=True),
            "device": cls.device.model_dump(by_alias=True),
        })
    # Device classes that exist on the cluster: those of DRA drivers modelplane installs. Other
    # devices (e.g. AMD GPUs) are claimed through their device plugin until a driver is added.
    installed = set(DRA_DRIVERS) if cluster.substrate.dra_driver else set()
    installed |= set(cluster.existing.device_classes) if cluster.existing else set()
    installed = installed if cluster.dra else set()
    drivers = sorted({p["device"]["driver"] for p in pools} & installed)
    return {
        "version": INVENTORY_VERSION, "name": cluster.name, "cloud": cluster.cloud, "region": cluster.region,
        "source": cluster.source, "labels": dict(sorted(cluster.labels.items())),
        "dra": {"enabled": cluster.dra, "deviceClasses": drivers},
        "kai": {"enabled": cluster.substrate.kai, "queues": cluster.queue_names(),
                "priorityClass": "modelplane-inference"},
        "keda": {"enabled": cluster.substrate.keda},
        "pools": pools,
    }


def cluster_from_inventory(inv: dict) -> Cluster:
    pools = tuple(Pool(p["name"], p["class"], int(p["gpusPerNode"]), int(p["maxNodes"]), p["capabilities"],
                       p["capabilities"]["network"]["fabric"]) for p in inv["pools"])
    queues = tuple(inv["kai"]["queues"]) if inv["kai"]["enabled"] else None
    return Cluster(inv["name"], pools, dict(inv["labels"]), queues)


def role_workers(md: ModelDeployment) -> dict[str, int]:
    """Workers per GPU role: the declared counts, or the ratio bands' split of totalWorkers."""
    declared = {name: w.count for name, (_, w, _) in md.gpu_roles().items()}
    for auto in md.autoscaling:     # room for the most workers KEDA may start
        if auto.role in declared:
            declared[auto.role] = max(declared[auto.role], auto.max_replicas)
    if md.coordination is None:
        return declared
    bands = {b.role: (b.min, b.max) for b in md.coordination.bands}
    return allocate(md.coordination.total_workers, declared, bands)


def demand_from(md: ModelDeployment) -> Demand:
    counts = role_workers(md)
    roles = tuple(Role(name, sel.cel, counts[name], w.topology.nodes_per_worker, w.topology.gpus_per_node)
                  for name, (sel, w, _) in md.gpu_roles().items())
    return Demand(md.key, md.replicas, roles, dict(md.cluster_selector.match_labels), md.queue_name)
