"""The fleet inventory: what a cluster exports and what the scheduler and renderers read.

One JSON-able format for clusters of this stack and clusters read from infra stacks through
StackReferences, so both paths schedule and render identically.
"""
from __future__ import annotations

from ..api import Catalog, InferenceCluster, ModelDeployment
from ..api.deployment import PRIORITY_CLASSES
from ..api.fabric import all2all_backend, all2all_refusal, engine_facts, fabric_wiring, image_refusal, plugin_facts
from ..api.rules import capacity_block_gap, ultraserver_fit
from ..analysis.cost import pool_price
from ..scheduler.bindings import resolve
from ..render.addons import ENVOY_NAMESPACE, GATEWAY_NAME, GATEWAY_NAMESPACE, HOP_GATEWAY, HOP_SERVICE
from ..render.presets import IMAGE as KSERVE_PRESET_IMAGE
from ..render.dra import CHANNEL_DEVICE_CLASS
from ..scheduler import Cluster, Demand, Pool, Role, allocate
from ..scheduler.model import PLUGIN_KEY, domain_nodes, topology_of

INVENTORY_VERSION = 3
DRA_DRIVERS = ("gpu.nvidia.com",)   # the substrate's draDriver chart (catalog/substrate.yaml)


def inventory_of(cluster: InferenceCluster, catalog: Catalog) -> dict:
    pools = []
    for pool in sorted(cluster.node_pools, key=lambda p: p.name):
        cls = catalog.classes[pool.class_]
        prov = getattr(cls.provisioning, cluster.source, None) if cls.provisioning else None
        pools.append({
            "name": pool.name, "class": cls.name, "minNodes": pool.min_nodes, "maxNodes": pool.max_nodes,
            "gpusPerNode": cls.capabilities.gpu.count, "zones": list(pool.zones),
            "capacityType": pool.capacity.type, "labels": dict(sorted(pool.labels.items())),
            "price": pool_price(catalog.prices, cls.name, cluster.region, pool.capacity.type, pool.capacity.hourly),
            "capabilities": cls.capabilities.model_dump(by_alias=True, exclude_none=True),
            "device": cls.device.model_dump(by_alias=True),
            "fabric": fabric_wiring(cls, cluster.source, catalog.gpudirect, cluster.version,
                                    len(pool.subnet_ids or cluster.eks.subnet_ids) if cluster.eks else 1,
                                    catalog.net_plugins).to_json(),
            # Ephemeral storage of one node (local SSD / instance store / boot disk); unknown for
            # clusters modelplane does not build.
            **({"diskGiB": prov.node_disk_gib()} if prov is not None else {}),
        })
        if cluster.source == "eks" and pool.capacity.type == "capacity-block":
            notes = [n for n in (capacity_block_gap(cls, cluster.region, catalog.prices),
                                 ultraserver_fit(cls, pool.max_nodes, cluster.region)) if n]
            if notes:
                pools[-1]["capacityBlockNote"] = "; ".join(notes)
    # Device classes that exist on the cluster: those of DRA drivers modelplane installs. Other
    # devices (e.g. AMD GPUs) are claimed through their device plugin until a driver is added.
    # The driver's ComputeDomain part is on where a pool is one NVLink domain (render/addons.py).
    installed = {*DRA_DRIVERS, CHANNEL_DEVICE_CLASS} if cluster.substrate.dra_driver else set()
    installed |= set(cluster.existing.device_classes) if cluster.existing else set()
    installed = installed if cluster.dra else set()
    drivers = {p["device"]["driver"] for p in pools} & installed
    if any(domain_nodes(p["capabilities"]) for p in pools):
        drivers |= {CHANNEL_DEVICE_CLASS} & installed
    drivers |= {p["fabric"]["nicDeviceClass"] for p in pools if p["fabric"].get("nicDeviceClass")}
    return {
        "version": INVENTORY_VERSION, "name": cluster.name, "cloud": cluster.cloud, "region": cluster.region,
        "source": cluster.source, "kubernetesVersion": cluster.version, "labels": dict(sorted(cluster.labels.items())),
        "dra": {"enabled": cluster.dra, "deviceClasses": sorted(drivers)},
        "gateway": gateway_of(cluster),
        "kai": {"enabled": cluster.substrate.kai.enabled, "queues": cluster.queue_names(),
                "quotas": {q.namespace: q.gpu_quota for q in sorted(cluster.queues, key=lambda q: q.namespace)},
                "priorityClass": PRIORITY_CLASSES["standard"][0]},
        "keda": {"enabled": cluster.substrate.keda.enabled},
        # modelplane's KServe substrate, which carries the pipeline-parallel preset (render/presets.py)
        # and the endpoint-picker image its shared pools run (render/picker.py)
        "kserve": {"enabled": cluster.substrate.kserve.enabled,
                   "endpointPicker": cluster.substrate.endpoint_picker.reference()},
        "pools": pools,
    }


def gateway_of(cluster: InferenceCluster) -> dict | None:
    """The inference Gateway routes attach to: the one the substrate installs, or the cluster's own."""
    if cluster.gateway_ref is not None:
        return cluster.gateway_ref.model_dump(by_alias=True)
    if not cluster.substrate.gateway:
        return None
    # Envoy's LoadBalancer Service gets an IP on GKE and a load balancer hostname on EKS.
    kind = "Hostname" if cluster.source == "eks" else "IPAddress"
    # `hop`: the in-cluster hop Gateway a shared cluster's split goes through (render/addons.py).
    out = {"name": GATEWAY_NAME, "namespace": GATEWAY_NAMESPACE, "addressType": kind,
           "hop": {"name": HOP_GATEWAY, "service": f"{ENVOY_NAMESPACE}/{HOP_SERVICE}"}}
    if cluster.tls is not None:
        # Who signs the certificate: modelplane's ACME issuer and how it solves challenges, or an
        # issuer the cluster must already have (apps stacks check issuance from these facts).
        tls = cluster.tls
        out["tls"] = {"hostnames": list(tls.hostnames),
                      **({"acme": tls.acme.solver} if tls.acme else {}),
                      **({"issuerRef": tls.issuer_ref.model_dump(by_alias=True)} if tls.issuer_ref else {})}
    return out


def cluster_from_inventory(inv: dict) -> Cluster:
    pools = tuple(Pool(p["name"], p["class"], int(p["gpusPerNode"]), int(p["maxNodes"]), p["capabilities"],
                       p["fabric"]["effective"], int(p["device"]["memoryMiB"]),
                       int(p["diskGiB"]) if p.get("diskGiB") is not None else None,
                       domain_nodes(p["capabilities"]), (p.get("price") or {}).get("hourly"),
                       p.get("capacityType", "on-demand"), int(p.get("minNodes", 0)), dict(p.get("labels") or {}),
                       (p["fabric"].get("netPlugin") or {}).get("name", ""))
                  for p in inv["pools"])
    queues = tuple(inv["kai"]["queues"]) if inv["kai"]["enabled"] else None
    return Cluster(inv["name"], pools, dict(inv["labels"]), queues, inv.get("region", ""), inv.get("cloud", ""))


def role_workers(md: ModelDeployment) -> dict[str, int]:
    """Workers per GPU role: the declared counts, or the ratio bands' split of totalWorkers."""
    if md.in_place:
        counts = bound_counts(md, md.workers.count)
        return {name: counts[name] for name in md.gpu_roles()}
    declared = {name: w.count for name, (_, w, _) in md.gpu_roles().items()}
    for auto in md.autoscaling:     # room for the most workers KEDA may start
        if auto.role in declared:
            declared[auto.role] = max(declared[auto.role], auto.max_replicas)
    if md.coordination is None:
        return declared
    bands = {b.role: (b.min, b.max) for b in md.coordination.bands}
    return allocate(md.coordination.total_workers, declared, bands)


def minimum_workers(md: ModelDeployment) -> dict[str, int]:
    """Workers per GPU role that run at minimum: autoscaled roles at minReplicas, others as placed."""
    counts = role_workers(md)
    for auto in md.autoscaling:
        if auto.role in counts:
            counts[auto.role] = min(counts[auto.role], auto.min_replicas)
    return counts


def demand_from(md: ModelDeployment, catalog: Catalog | None = None) -> Demand:
    """The deployment as the scheduler sees it; with a catalog, roles carry the model's weights
    so Filter can check GPU memory and node storage."""
    counts = role_workers(md)
    weights = catalog.weights_gib(md) if catalog is not None else (md.model.size_gib or 0.0)
    experts = catalog.expert_gib(md) if catalog is not None else 0.0
    heads = catalog.attention_heads(md) if catalog is not None else (md.model.attention_heads or 0)
    roles = tuple(Role(name, sel.cel, counts[name], t.nodes_per_worker, t.gpus_per_node, weights,
                       t.tensor * t.pipeline, refused_fabrics=refused_fabrics(md, engine, catalog),
                       expert_gib=experts, expert_gpus=t.gpus_per_worker, expert=t.expert, topology=topology_of(t),
                       attention_heads=heads,
                       kv_token_bytes=catalog.kv_token_bytes(md, t.tensor, t.pipeline) if catalog is not None else 0.0)
                  for name, (sel, w, engine) in md.gpu_roles().items() for t in (w.topology,))
    return Demand(md.key, md.replicas, roles, dict(md.cluster_selector.match_labels), md.queue_name, md.tier,
                  shape_steps(md, counts), {a.replica: a.cluster for a in md.adopt}, md.spot_refusal,
                  md.cluster_selector.cel or "")


def refused_fabrics(md: ModelDeployment, engine, catalog: Catalog | None) -> dict[str, str]:
    """Fabrics a multi-node worker of this role cannot use, and why: GPUDirect ones whose NCCL plugin
    its engine image cannot load, and those whose net plugin (catalog/netplugins.yaml) its image does
    not carry or whose all-to-all backend it asks for cannot run there."""
    if catalog is None:
        return {}
    image = engine.image if engine.image or md.backend != "kserve" else None
    default = KSERVE_PRESET_IMAGE if md.backend == "kserve" else None
    out = {}
    for kind, recipe in sorted(catalog.gpudirect.items()):
        why = image_refusal(engine_facts(recipe), image, default)
        if why:
            out[f"gpudirect-{kind}"] = why
    backend = all2all_backend(engine)
    for name, plugin in sorted(catalog.net_plugins.items()):
        facts = plugin_facts(plugin)
        why = all2all_refusal(facts, backend) or image_refusal(facts, image, default)
        if why:   # keyed apart from fabric names: only pools wired with the plugin refuse (scheduler/filter.py)
            out[f"{PLUGIN_KEY}{name}"] = why
    return out


def bound_counts(md: ModelDeployment, decode: int) -> dict[str, int]:
    """InPlace: every role's count (GPU workers, extra-role replicas) at `decode` decode workers."""
    return resolve(md.scaling.binding_map(), decode)


def shape_steps(md: ModelDeployment, counts: dict[str, int]) -> tuple[tuple[int, ...], ...]:
    """Smaller shapes a replica may be placed at when its full shape fits nowhere, largest first.
    InPlace: the bindings' counts at one decode worker fewer per step, down to one (ratio-preserving:
    never prefill without decode, never a role below its binding). Autoscaled GPU roles: each gives
    up one worker per step, down to its minReplicas (the autoscaling envelope shrinks; the plan and
    `capacity-envelope` say so)."""
    names = list(md.gpu_roles())
    if md.in_place:
        sizes = (bound_counts(md, k) for k in range(md.workers.count - 1, 0, -1))
        steps = [tuple(counts[r] for r in names) for counts in sizes]
        return tuple(dict.fromkeys(steps))
    lows = {a.role: min(a.min_replicas, counts[a.role]) for a in md.autoscaling if a.role in counts}
    depth = max((counts[r] - lo for r, lo in lows.items()), default=0)
    return tuple(tuple(max(lows[r], counts[r] - t) if r in lows else counts[r] for r in names)
                 for t in range(1, depth + 1))


def envelope(md: ModelDeployment, placements: list[dict]) -> dict | None:
    """The autoscaling envelope of a deployment with autoscaled GPU roles: GPUs at minimum and at
    the maximum the plan reserved, against what its spec asks for; None without GPU autoscaling."""
    roles = md.gpu_roles()
    if not any(a.role in roles for a in md.autoscaling):
        return None
    per_worker = {name: w.topology.gpus_per_worker for name, (_, w, _) in roles.items()}
    counts, lows = role_workers(md), minimum_workers(md)
    placed_max = placed_min = 0
    short = []
    for p in placements:
        for name, rp in p["roles"].items():
            placed_max += int(rp["workers"]) * per_worker[name]
            placed_min += min(int(rp["workers"]), lows[name]) * per_worker[name]
            if int(rp["workers"]) < counts[name]:
                short.append({"replica": int(p["replica"]), "role": name, "reserved": int(rp["workers"]),
                              "maxReplicas": counts[name], "cluster": p["cluster"], "pool": rp["pool"]})
    return {"deployment": md.key,
            "gpus": {"min": placed_min, "max": placed_max},
            "target": {"min": md.replicas * sum(lows[r] * per_worker[r] for r in roles),
                       "max": md.replicas * sum(counts[r] * per_worker[r] for r in roles)},
            "pools": sorted({f"{p['cluster']}/{rp['pool']}" for p in placements for rp in p["roles"].values()}),
            "short": short}


def idle_prefill(md: ModelDeployment, placements: list[dict]) -> list[dict]:
    """Placed prefill capacity no request reaches (rule native-prefill-idle), one row per replica."""
    from ..api.rules import native_prefill_idle

    finding = native_prefill_idle(md)
    if finding is None:
        return []
    return [{"deployment": md.key, "replica": int(p["replica"]), "cluster": p["cluster"],
             "pool": p["roles"]["prefill"]["pool"],
             "gpus": int(p["roles"]["prefill"]["nodes"]) * int(p["roles"]["prefill"]["gpusPerNode"]),
             "reason": finding.message, "fix": finding.fix}
            for p in sorted(placements, key=lambda p: int(p["replica"])) if "prefill" in p["roles"]]
