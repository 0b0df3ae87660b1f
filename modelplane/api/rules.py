"""Validation rules shared by the loader, the program and the policy pack.

Each rule returns `Finding`s: a path relative to the object checked, a message and a fix.
"""
from __future__ import annotations

from ..errors import did_you_mean
from .catalog import InferenceClass
from .cluster import DRA_MIN_VERSION, InferenceCluster, minor_version
from .deployment import GPU_ROLES, ModelDeployment
from .findings import Finding, dependency_cycle, duplicates
from .parallelism import check_engine_args
from .scaling_rules import check_adopt, check_scaling


def compact_placement(gke, capacity_type: str) -> bool:
    """COMPACT placement applies to on-demand and Spot pools of compact classes: a reservation
    (or its reservation block) already fixes where the nodes are, and flex-start obtains them
    through the Dynamic Workload Scheduler."""
    return gke.placement == "compact" and capacity_type in ("on-demand", "spot")


def check_roles(md: ModelDeployment) -> list[Finding]:
    """Role names unique, dependsOn resolvable and acyclic, one autoscaler per role."""
    out = []
    names = md.role_names()
    for i, name in duplicates(names):
        index = i - len(GPU_ROLES if md.disaggregated else GPU_ROLES[:1])
        out.append(Finding("roles", ("roles", index, "name"), f"role name {name!r} is used twice",
                           "give every role its own name ('decode' and 'prefill' are taken by the GPU roles)"))
    known = set(names)
    for i, role in enumerate(md.roles):
        for j, dep in enumerate(role.depends_on):
            if dep not in known:
                guess = did_you_mean(dep, known)
                out.append(Finding("roles", ("roles", i, "dependsOn", j),
                                   f"role {role.name!r} depends on unknown role {dep!r}",
                                   f"did you mean {guess!r}?" if guess else f"use one of {sorted(known)}"))
    cycle = dependency_cycle({r.name: list(r.depends_on) for r in md.roles})
    if cycle:
        out.append(Finding("roles", ("roles",), f"dependsOn forms a cycle: {' -> '.join(cycle)}",
                           "remove one of the dependencies so roles can start in order"))
    out += [_endpoint_picker(md, i, role) for i, role in enumerate(md.roles) if image_repo(role.image) in ENDPOINT_PICKERS]
    seen: dict[str, int] = {}
    for i, auto in enumerate(md.autoscaling):
        if auto.role not in known:
            guess = did_you_mean(auto.role, known)
            out.append(Finding("roles", ("autoscaling", i, "role"),
                               f"autoscaler targets unknown role {auto.role!r}",
                               f"did you mean {guess!r}?" if guess else f"use one of {sorted(known)}"))
        elif auto.role in seen:
            out.append(Finding("roles", ("autoscaling", i, "role"),
                               f"role {auto.role!r} already has an autoscaler (autoscaling[{seen[auto.role]}])",
                               "keep one autoscaler per role; two would fight over its replica count"))
        seen.setdefault(auto.role, i)
        if auto.role in md.gpu_roles():
            out += _gpu_autoscaling(md, auto, i)
        elif auto.role in known:
            out += _keda_trigger(auto, i)
    return out


# Images of the Gateway API Inference Extension endpoint picker: llm-d's scheduler, its 2026 name
# (KServe v0.20.0's scheduler preset runs ghcr.io/llm-d/llm-d-router-endpoint-picker, llm-d/llm-d#1819)
# and GAIE's reference picker. It is an Envoy ext-proc gRPC server bound to one InferencePool: it exits at start without
# --pool-name (gateway-api-inference-extension v1.0.0 cmd/epp/runner/runner.go L467-469, the
# version llm-d-inference-scheduler v0.3.0 builds on) and needs an InferencePool, RBAC to watch
# it and a Gateway that calls it, none of which an extra role has.
ENDPOINT_PICKERS = ("ghcr.io/llm-d/llm-d-inference-scheduler", "ghcr.io/llm-d/llm-d-router-endpoint-picker",
                    "registry.k8s.io/gateway-api-inference-extension/epp")


def image_repo(image: str) -> str:
    """`image` without its tag or digest."""
    name = image.split("@")[0]
    head, _, tail = name.rpartition("/")
    return f"{head}/{tail.split(':')[0]}" if head else tail.split(":")[0]


def _endpoint_picker(md: ModelDeployment, i: int, role) -> Finding:
    where = ("KServe already runs one for every LLMInferenceService (router.scheduler): drop this role"
             if md.backend == "kserve" else
             "the native backend has no InferencePool for it to serve: drop this role (routing targets the "
             "replica's decode Service)")
    return Finding("roles", ("roles", i, "image"),
                   f"role {role.name!r} runs the endpoint picker {role.image}, an Envoy ext-proc server that needs "
                   "--pool-name, an InferencePool and a Gateway calling it; as an extra role it exits at start",
                   where)


def kserve_autoscaling(md: ModelDeployment, auto, i: int) -> Finding | None:
    """A GPU role on the kserve backend cannot autoscale: KServe v0.20 accepts only the Workload
    Variant Autoscaler in spec.scaling, and treats its missing CRD as a hard failure that stops
    reconciling the whole LLMInferenceService (pkg/controller/v1alpha2/llmisvc/scaling.go L54-55 @ v0.20.0);
    its KEDA actuator also needs prometheus.url in inferenceservice-config (L339-340). The
    substrate installs neither WVA nor Prometheus."""
    if md.backend != "kserve" or auto.role not in md.gpu_roles():
        return None
    return Finding("autoscaling-target", ("autoscaling", i, "role"),
                   f"GPU role {auto.role!r} on the kserve backend would autoscale through the LLMInferenceService's "
                   "spec.scaling, which KServe v0.20 hands to its Workload Variant Autoscaler; the substrate installs "
                   "no WVA, and without its CRD KServe stops reconciling the service",
                   "use backend: native (a KEDA ScaledObject on your Prometheus query), or drop this autoscaler "
                   "and size the role with workers.count")


# YAML key of each KEDA trigger field, in the order they are reported.
KEDA_TRIGGER = {"server_address": "serverAddress", "query": "query", "threshold": "threshold"}


def _keda_trigger(auto, i: int) -> list[Finding]:
    """The Prometheus trigger is the user's: the substrate runs no Prometheus KEDA could default to."""
    return [Finding("autoscaling-target", ("autoscaling", i, key),
                    f"role {auto.role!r} scales with a KEDA Prometheus trigger, which needs {key}",
                    "set serverAddress (the URL of your Prometheus, e.g. http://prometheus.monitoring:9090; "
                    "modelplane installs none), query (a PromQL expression) and threshold (the value per "
                    "replica, as a string)")
            for attr, key in KEDA_TRIGGER.items() if getattr(auto, attr) is None]


def _gpu_autoscaling(md: ModelDeployment, auto, i: int) -> list[Finding]:
    """A native GPU role's workers scale through a ScaledObject; the gang holds."""
    refused = kserve_autoscaling(md, auto, i)
    out = [refused] if refused else _keda_trigger(auto, i)
    if auto.min_replicas < 1:
        out.append(Finding("autoscaling-target", ("autoscaling", i, "minReplicas"),
                           f"GPU role {auto.role!r} cannot scale to zero: its KAI gang needs at least one pod",
                           "set minReplicas: 1 or more (extra roles may scale to zero)"))
    if md.coordination is not None:
        out.append(Finding("autoscaling-target", ("autoscaling", i, "role"),
                           f"role {auto.role!r} has its worker count fixed by coordination bands",
                           "drop coordination, or autoscale an extra role instead"))
    return out


def check_bands(md: ModelDeployment) -> list[Finding]:
    """Ratio bands: 0 <= min <= max <= 100, names exist and are unique, sum(min) <= 100 <= sum(max)."""
    c = md.coordination
    if c is None:
        return []
    out = []
    gpu_roles = list(md.gpu_roles())
    if not md.disaggregated:
        out.append(Finding("ratio-bands", ("coordination",), "coordination needs a disaggregated deployment",
                           "add a prefill block or remove coordination"))
    for i, band in enumerate(c.bands):
        if band.role not in gpu_roles:
            out.append(Finding("ratio-bands", ("coordination", "bands", i, "role"),
                               f"band names unknown GPU role {band.role!r}", f"use one of {gpu_roles}"))
        if band.min > band.max:
            out.append(Finding("ratio-bands", ("coordination", "bands", i),
                               f"band min ({band.min}) is greater than max ({band.max})", "swap or correct them"))
    for i, name in duplicates([b.role for b in c.bands]):
        out.append(Finding("ratio-bands", ("coordination", "bands", i, "role"),
                           f"role {name!r} has two bands", "keep one band per role"))
    if sum(b.min for b in c.bands) > 100:
        out.append(Finding("ratio-bands", ("coordination", "bands"), "the bands' minimums add up to more than 100%",
                           "lower the minimums so they sum to at most 100"))
    if sum(b.max for b in c.bands) < 100:
        out.append(Finding("ratio-bands", ("coordination", "bands"), "the bands' maximums add up to less than 100%",
                           "raise the maximums so they sum to at least 100"))
    if md.disaggregated and c.total_workers < len(gpu_roles):
        out.append(Finding("ratio-bands", ("coordination", "totalWorkers"),
                           f"totalWorkers ({c.total_workers}) cannot give every role a worker",
                           f"use at least {len(gpu_roles)}"))
    return out


# Images that run as root: KServe's presets set runAsNonRoot, so the kubelet refuses them
# (kserve/kserve#5666: the upstream vLLM image has no USER).
ROOT_IMAGES = ("vllm/vllm-openai", "docker.io/vllm/vllm-openai")


def check_engines(md: ModelDeployment) -> list[Finding]:
    """What each backend can run: KServe's presets (non-root image; pipeline parallelism through our
    presets, render/presets.py, with data 1), the native backend's own launch (an image)."""
    out = []
    for role, (_, workers, engine) in md.gpu_roles().items():
        at = () if role == "decode" else ("prefill",)
        if md.backend == "native" and engine.image is None:
            out.append(Finding("engine", (*at, "engine", "image"), f"role {role!r} has no engine image",
                               "set engine.image (the native backend runs it as given), e.g. vllm/vllm-openai:v0.10.2"))
        if md.backend != "kserve":
            continue
        if engine.image and engine.image.split("@")[0].rsplit(":", 1)[0] in ROOT_IMAGES:
            out.append(Finding("kserve-image", (*at, "engine", "image"),
                               f"{engine.image} runs as root, and KServe's LLMInferenceServiceConfig presets set "
                               "runAsNonRoot: the kubelet would refuse to start it",
                               "leave engine.image out to run the preset's image (ghcr.io/llm-d/llm-d-cuda), or use "
                               "backend: native"))
        t = workers.topology
        if t.pipeline > 1 and t.data > 1:
            out.append(Finding("kserve-multi-node", (*at, "workers", "topology", "pipeline"),
                               f"role {role!r} asks for pipeline parallelism {t.pipeline} with data {t.data}; KServe "
                               "refuses an LLMInferenceService with both (llm_inference_service_validation.go "
                               "L283-289 @ v0.20.0), and picks its data-parallel preset whenever data is set",
                               "use backend: native (LeaderWorkerSet with a Ray cluster), drop data (pipeline x "
                               "tensor per node), or spread over nodes with data/dataLocal instead of pipeline"))
    return out


def native_prefill_idle(md: ModelDeployment) -> Finding | None:
    """A disaggregated deployment on the native backend: its prefill pods get no requests. The
    Service the routes target selects decode pods, and a prefill runs only when a P/D-aware router
    (llm-d's endpoint picker setting x-prefiller-host-port for the routing sidecar, or a vLLM P/D
    proxy) sends it the prompt first; modelplane runs neither for native replicas (docs/routing.md)."""
    if md.backend != "native" or not md.disaggregated:
        return None
    return Finding("native-prefill-idle", ("prefill",),
                   "on the native backend nothing sends requests to prefill: the routes target the decode Service "
                   "and no P/D-aware router runs in front of it, so the prefill GPUs stay idle and decode "
                   "computes every prompt itself",
                   "use backend: kserve (KServe runs the endpoint picker and the routing sidecar that send each "
                   "prompt to prefill first), or drop the prefill block")


def check_deployment(md: ModelDeployment) -> list[Finding]:
    return (check_roles(md) + check_bands(md) + check_engines(md) + check_engine_args(md) + check_scaling(md)
            + check_adopt(md))


def check_cluster(cluster: InferenceCluster, classes: dict[str, InferenceClass]) -> list[Finding]:
    """Pools name known classes with provisioning for the cluster's cloud; names unique; zones given."""
    out = []
    for i, name in duplicates([p.name for p in cluster.node_pools]):
        out.append(Finding("pool-names", ("nodePools", i, "name"), f"pool name {name!r} is used twice",
                           "give every pool of a cluster its own name"))
    for i, name in duplicates([q.namespace for q in cluster.queues]):
        out.append(Finding("queues", ("queues", i, "namespace"), f"queue for {name!r} is declared twice",
                           "declare one queue per namespace"))
    out += _version_findings(cluster)
    for i, pool in enumerate(cluster.node_pools):
        cls = classes.get(pool.class_)
        if cls is None:
            guess = did_you_mean(pool.class_, classes)
            out.append(Finding("pool-class", ("nodePools", i, "class"),
                               f"pool {pool.name!r} names unknown class {pool.class_!r}",
                               f"did you mean {guess!r}?" if guess else "add the class to catalog/ or pick one with `modelplane classes`"))
            continue
        if cluster.source in ("gke", "eks") and cluster.source not in cls.clouds():
            usable = sorted(n for n, c in classes.items() if cluster.source in c.clouds()
                            and c.capabilities.gpu.product == cls.capabilities.gpu.product)
            out.append(Finding("pool-class", ("nodePools", i, "class"),
                               f"class {cls.name!r} has no provisioning.{cluster.source} block, so cluster "
                               f"{cluster.name!r} cannot create pool {pool.name!r} from it",
                               f"use a {cluster.source.upper()} class" + (f" such as {usable[0]!r}" if usable else "")
                               + " or declare the cluster as existing"))
        if cluster.source == "gke" and not pool.zones:
            out.append(Finding("pool-zones", ("nodePools", i, "zones"),
                               f"pool {pool.name!r} has no zones; GKE GPUs exist only in some zones of a region",
                               f"list the zones of {cluster.region} that offer this GPU, e.g. [{cluster.region}-a]"))
        out += _placement_findings(cluster, pool, i, cls)
        out += _capacity_findings(cluster, pool, i, cls)
        out += _domain_findings(cluster, pool, i, cls)
        if pool.capacity.type == "capacity-block" and cluster.source != "eks":
            out.append(Finding("pool-capacity", ("nodePools", i, "capacity", "type"),
                               "capacity blocks are an EC2 feature", "use reservation, spot or flex-start on GKE"))
        if pool.capacity.type == "flex-start" and cluster.source != "gke":
            out.append(Finding("pool-capacity", ("nodePools", i, "capacity", "type"),
                               "flex-start is a GKE feature", "use spot or capacity-block on EKS"))
    return out


def _version_findings(cluster: InferenceCluster) -> list[Finding]:
    """DRA (resource.k8s.io/v1) needs Kubernetes 1.34 or later on the control plane."""
    if not cluster.dra:
        return []
    where = (cluster.source, "version")
    if cluster.version is None:
        return [Finding("cluster-version", where, f"cluster {cluster.name!r} uses DRA but does not say which "
                        "Kubernetes version it runs", "set existing.version to the cluster's version (1.34 or later), "
                        "or set dra: false to use the device plugin")]
    if minor_version(cluster.version) < DRA_MIN_VERSION:
        want = ".".join(map(str, DRA_MIN_VERSION))
        return [Finding("cluster-version", where, f"cluster {cluster.name!r} runs Kubernetes {cluster.version}; "
                        f"DRA (resource.k8s.io/v1) needs {want} or later",
                        f"set {cluster.source}.version to \"{want}\" or later, or set dra: false to use the device plugin")]
    return []


def _capacity_findings(cluster: InferenceCluster, pool, i: int, cls: InferenceClass) -> list[Finding]:
    """The pool's capacity type must be one the cloud sells the machine under; EKS DRA pools must keep a
    node up so the cluster autoscaler can copy its devices when it scales out."""
    prov = cls.provisioning and getattr(cls.provisioning, cluster.source, None) if cluster.source in ("gke", "eks") else None
    out = []
    if prov is not None and pool.capacity.type not in prov.capacity_types:
        machine = getattr(prov, "machine_type", None) or prov.instance_type
        out.append(Finding("pool-capacity", ("nodePools", i, "capacity", "type"),
                           f"{machine} (class {cls.name}) is not sold as {pool.capacity.type} capacity",
                           f"use one of {', '.join(prov.capacity_types)} (e.g. capacity: {{type: reservation, "
                           f"reservation: <name>}})"))
    if cluster.source == "eks" and cluster.dra and cluster.substrate.dra_driver:
        if prov is not None and prov.ami_type.startswith("BOTTLEROCKET"):
            # EKS lists Bottlerocket as supported by the NVIDIA DRA driver; modelplane does not render
            # it: its node setup (instance-store RAID0, the driver root the DRA driver is given) is
            # AL2023's nodeadm, and Bottlerocket's NVIDIA variants start their built-in device plugin
            # (bottlerocket.dev settings.kubelet-device-plugins has no switch for it).
            out.append(Finding("pool-class", ("nodePools", i, "class"),
                               f"{prov.ami_type} is not rendered by modelplane with DRA: the node setup it renders "
                               "(nodeadm user data, driver root /) is AL2023's, and Bottlerocket's NVIDIA variants "
                               "run their built-in NVIDIA device plugin beside the DRA driver",
                               "use an AL2023_*_NVIDIA AMI class, or set dra: false on this cluster"))
        if pool.min_nodes < 1:
            out.append(Finding("pool-scale-from-zero", ("nodePools", i, "minNodes"),
                               f"pool {pool.name!r} starts at 0 nodes, but on EKS the cluster autoscaler can only add "
                               "DRA GPU nodes by copying the devices of a running node of the group",
                               "set minNodes: 1 or more, or set dra: false on this cluster (the device plugin "
                               "scales from zero)"))
    return out


# The NVIDIA DRA driver's IMEX channel class (render/dra.py names the same fact for the renderers).
CHANNEL_DEVICE_CLASS = "compute-domain-default-channel.nvidia.com"


def _domain_findings(cluster: InferenceCluster, pool, i: int, cls: InferenceClass) -> list[Finding]:
    """A pool of a multi-node NVLink class is one NVLink domain, so that a multi-node worker placed
    on it never leaves the domain: GKE keeps the VMs of a pool with the 1x72 workload policy in one
    NVL72 domain, and an EKS node group draws on one UltraServer's Capacity Block. Its workers claim
    IMEX channels of a DRA ComputeDomain, which needs the NVIDIA DRA driver's ComputeDomain part."""
    domain = cls.capabilities.interconnect.nvlink_domain
    if domain is None:
        return []
    out = []
    if pool.max_nodes > domain.nodes:
        out.append(Finding("pool-domain", ("nodePools", i, "maxNodes"),
                           f"pool {pool.name!r} may grow to {pool.max_nodes} nodes, but one NVLink domain of {cls.name} "
                           f"holds {domain.nodes} ({domain.gpus} GPUs), and a pool is kept inside one domain",
                           f"set maxNodes to {domain.nodes} or fewer, and add one pool per further NVLink domain"))
    provided = cluster.substrate.dra_driver.enabled or (cluster.existing is not None
                                                       and CHANNEL_DEVICE_CLASS in cluster.existing.device_classes)
    if not (cluster.dra and provided):
        out.append(Finding("pool-domain", ("nodePools", i, "class"),
                           f"{cls.name} shares GPU memory across the nodes of an NVLink domain only through the IMEX "
                           "channels of DRA ComputeDomains (NVIDIA DRA driver), which this cluster does not run",
                           "set dra: true with the substrate's draDriver (modelplane turns its ComputeDomain part on), "
                           f"or list {CHANNEL_DEVICE_CLASS} in existing.deviceClasses if your own driver provides it"))
    return out


def capacity_block_gap(cls: InferenceClass, region: str, prices) -> str | None:
    """Why a Capacity Block pool of `cls` in `region` may not find a block to buy, or None. Evidence
    that EC2 sells it there: the region in the class's capacityBlocks (a documented list, with its
    source and date), or a capacity-block price for it (`modelplane prices refresh` records the
    offerings DescribeCapacityBlockOfferings returns). EC2 adds instance types and Regions faster
    than a static list follows (p6-b200 is sold mainly as blocks), so this is a warning, never a
    refusal (the advisory policy `capacity-block-region`)."""
    prov = cls.provisioning.eks if cls.provisioning else None
    if prov is None or (cls.name, region, "capacity-block") in prices:
        return None
    blocks = prov.capacity_blocks
    if blocks is not None and region in blocks.regions:
        return None
    check = f"check with `{offering_query(prov, region)}` or `modelplane prices refresh`"
    if blocks is None:
        return f"no list of Regions selling {prov.instance_type} as Capacity Blocks is known; {check}"
    return (f"EC2 lists {prov.instance_type} Capacity Blocks in {', '.join(blocks.regions)} ({blocks.source}, read "
            f"{blocks.as_of}), not in {region}; {check}")


def offering_query(prov, region: str, nodes: int = 1) -> str:
    """The AWS CLI call that lists Capacity Block offerings for this instance type: per UltraServer
    where EC2 sells it only so (P6e-GB200), else per instance (EC2 API DescribeCapacityBlockOfferings)."""
    servers = prov.capacity_blocks.ultra_servers if prov.capacity_blocks else None
    if servers is None:
        what = f"--instance-type {prov.instance_type} --instance-count {nodes}"
    else:
        what = f"--ultraserver-type {ultraserver_for(servers, nodes).type} --ultraserver-count 1"
    return f"aws ec2 describe-capacity-block-offerings {what} --capacity-duration-hours 24 --region {region}"


def ultraserver_for(servers, nodes: int):
    """The smallest UltraServer type that holds `nodes` instances (the largest if none does)."""
    by_size = sorted(servers.types, key=lambda t: t.nodes)
    return next((t for t in by_size if t.nodes >= nodes), by_size[-1])


def ultraserver_fit(cls: InferenceClass, max_nodes: int, region: str) -> str | None:
    """Why a Capacity Block pool of an UltraServer-only instance type is sized oddly, or None. A block
    is bought per UltraServer, so a pool of any other size either cannot reach its maxNodes or leaves
    paid nodes idle (cloud review G12). Advisory: a pool may rightly draw on part of a block."""
    prov = cls.provisioning.eks if cls.provisioning else None
    servers = prov.capacity_blocks.ultra_servers if prov and prov.capacity_blocks else None
    if servers is None or max_nodes in {t.nodes for t in servers.types}:
        return None
    sizes = ", ".join(f"{t.type} holds {t.nodes}" for t in sorted(servers.types, key=lambda t: t.nodes))
    fit = ultraserver_for(servers, max_nodes)
    fate = (f"a {fit.type} block leaves {fit.nodes - max_nodes} paid nodes idle" if fit.nodes > max_nodes
            else f"no one block holds it ({fit.type} is the largest)")
    return (f"{prov.instance_type} is sold only per UltraServer ({sizes} nodes; {servers.source}), and this pool may "
            f"grow to {max_nodes}: {fate}; size maxNodes to {' or '.join(str(t.nodes) for t in servers.types)} and "
            f"look for a block with `{offering_query(prov, region, max_nodes)}`")


def _placement_findings(cluster: InferenceCluster, pool, i: int, cls: InferenceClass) -> list[Finding]:
    """Where a pool's nodes may go: GKE zones inside the region (one zone for compact placement),
    EKS subnets (one Availability Zone's subnets for a Capacity Block)."""
    out = []
    if cluster.source == "gke":
        for j, zone in enumerate(pool.zones):
            if not zone.startswith(f"{cluster.region}-"):
                out.append(Finding("pool-zones", ("nodePools", i, "zones", j),
                                   f"zone {zone!r} of pool {pool.name!r} is not in region {cluster.region}",
                                   f"use zones of {cluster.region}, e.g. {cluster.region}-a"))
        gke = cls.provisioning.gke if cls and cls.provisioning else None
        if len(pool.zones) > 1 and pool.capacity.type == "reservation":
            out.append(Finding("pool-zones", ("nodePools", i, "zones"),
                               f"pool {pool.name!r} draws on reservation {pool.capacity.reservation}, which lives in "
                               f"one zone, but lists {len(pool.zones)} zones",
                               "list the reservation's zone only"))
        elif gke and compact_placement(gke, pool.capacity.type) and len(pool.zones) > 1:
            out.append(Finding("pool-zones", ("nodePools", i, "zones"),
                               f"pool {pool.name!r} uses class {cls.name!r} with compact placement, which keeps "
                               f"nodes in one zone, but lists {len(pool.zones)} zones",
                               "list exactly one zone, or split the pool into one pool per zone"))
        if pool.subnet_ids:
            out.append(Finding("pool-subnets", ("nodePools", i, "subnetIds"),
                               "subnetIds is for EKS pools", "on GKE, choose node locations with zones"))
    if cluster.source == "eks":
        if pool.zones:
            out.append(Finding("pool-zones", ("nodePools", i, "zones"),
                               "EKS node groups are placed by subnet, not by zone",
                               "replace zones with subnetIds (subnets of the wanted Availability Zones)"))
        if pool.capacity.type == "capacity-block" and not pool.subnet_ids:
            out.append(Finding("pool-subnets", ("nodePools", i, "subnetIds"),
                               f"pool {pool.name!r} uses Capacity Block {pool.capacity.reservation}, which lives in "
                               "one Availability Zone", "set subnetIds to the subnet(s) of the reservation's zone"))
    return out


RESIDENCY_LABEL = "modelplane.ai/residency"


def served_model(svc, providers: dict) -> str:
    """The model name clients send to a service (see ModelService.model)."""
    if svc.model:
        return svc.model
    models = sorted({providers[e.provider].model for e in svc.endpoints
                     if e.provider in providers and providers[e.provider].model})
    return models[0] if models else svc.name


def check_services(services, deployments: dict, providers: dict, dns=None) -> list[Finding]:
    """Endpoints resolve, requests can pass through unchanged, services sharing a hostname answer
    to different model names, hostnames lie inside the DNS zone, and a service with a residency routes only to endpoints allowed for it. Paths start
    at the stack key (services / providers)."""
    out = []
    hosts: dict[str, list[int]] = {}
    for i, svc in enumerate(services):
        model = served_model(svc, providers)
        residency = svc.labels.get(RESIDENCY_LABEL)
        for j, ep in enumerate(svc.endpoints):
            at = ("services", i, "endpoints", j)
            key = ep.key(svc.namespace)
            if ep.deployment is not None and key not in deployments:
                guess = did_you_mean(key, deployments)
                out.append(Finding("service-endpoints", (*at, "deployment"), f"endpoint names unknown deployment {key!r}",
                                   f"did you mean {guess!r}?" if guess else "name a deployment of this stack"))
                continue
            if ep.provider is not None and key not in providers:
                guess = did_you_mean(key, providers)
                out.append(Finding("service-endpoints", (*at, "provider"), f"endpoint names unknown provider {key!r}",
                                   f"did you mean {guess!r}?" if guess else "add it under modelplane:providers"))
                continue
            target = deployments[key] if ep.deployment is not None else providers[key]
            if ep.provider is not None and target.model and target.model != model:
                out.append(Finding("service-model", (*at, "provider"),
                                   f"requests reach provider {key!r} unchanged, so it must serve the model clients send "
                                   f"({model!r}), but it serves {target.model!r}",
                                   f"set services[{i}].model: {target.model} (the deployments answer to it as an alias), "
                                   "or route this provider from a service of its own"))
            theirs = target.labels.get(RESIDENCY_LABEL)
            if residency and theirs != residency:
                out.append(Finding("service-residency", at,
                                   f"service {svc.key} is labelled {RESIDENCY_LABEL}={residency}, but "
                                   f"{ep.deployment and 'deployment' or 'provider'} {key!r} is "
                                   f"{theirs and f'labelled {theirs}' or 'not labelled'}",
                                   f"route only to endpoints labelled {RESIDENCY_LABEL}: {residency}"))
        out += _fallback_findings(i, svc, providers)
        if svc.hostname:
            # Services may share a hostname: Envoy AI Gateway routes each request by its body's model
            # (render/routing.py model_route); two services answering to one model there cannot be told apart.
            for k in hosts.get(svc.hostname, []):
                if served_model(services[k], providers) == model:
                    out.append(Finding("service-hostnames", ("services", i, "hostname"),
                                       f"hostname {svc.hostname} is already served by services[{k}] with the same model "
                                       f"name {model!r}: requests on a shared hostname are routed by their model name",
                                       "give this service its own hostname, or set a different services[].model"))
            if dns is not None and dns.kind == "cloudDns" and hosts.get(svc.hostname):
                out.append(Finding("service-hostnames", ("services", i, "hostname"),
                                   f"hostname {svc.hostname} is shared with services{hosts[svc.hostname]}, but a Cloud "
                                   "DNS record set takes one health check, which cannot cover every service on it",
                                   "give each service its own hostname, or use route53 (a calculated health check "
                                   "covers them all)"))
            hosts.setdefault(svc.hostname, []).append(i)
            if dns is not None and not (svc.hostname == dns.zone.domain or svc.hostname.endswith("." + dns.zone.domain)):
                out.append(Finding("service-hostnames", ("services", i, "hostname"),
                                   f"hostname {svc.hostname} is outside the DNS zone {dns.zone.domain}",
                                   f"use a name under {dns.zone.domain}, or leave dns out and point your own DNS at "
                                   "the gateway addresses the plan prints"))
    return out


def _fallback_findings(i: int, svc, providers: dict) -> list[Finding]:
    """A fallback provider backs up the service's replicas: one per service, beside a deployment,
    with a key Envoy AI Gateway v1.0.0 can send: it reads a BackendSecurityPolicy's Secret key
    `apiKey` (internal/controller/ai_gateway_route.go L45) and sends it only as `Authorization:
    Bearer <key>` (internal/backendauth/api_key.go L29-31)."""
    out = []
    fallbacks = [j for j, ep in enumerate(svc.endpoints) if ep.fallback]
    if len(fallbacks) > 1:
        out.append(Finding("service-endpoints", ("services", i, "endpoints", fallbacks[1], "fallback"),
                           f"service {svc.key} has {len(fallbacks)} fallback providers; one takes over when no replica can",
                           "keep fallback: true on one provider endpoint"))
    if fallbacks and not any(ep.deployment is not None for ep in svc.endpoints):
        out.append(Finding("service-endpoints", ("services", i, "endpoints", fallbacks[0], "fallback"),
                           f"service {svc.key} has a fallback provider but no deployment to fall back from",
                           "give the provider a weight instead (a provider-only service), or add a deployment endpoint"))
    for j in fallbacks:
        provider = providers.get(svc.endpoints[j].provider)
        key = provider.api_key if provider is not None else None
        if key is not None and (key.secret is None or key.header != "Authorization" or key.scheme != "Bearer"):
            out.append(Finding("service-endpoints", ("services", i, "endpoints", j, "fallback"),
                               f"fallback provider {svc.endpoints[j].provider!r} is reached through Envoy AI Gateway, "
                               "which sends a key only as 'Authorization: Bearer <key>' from a Secret it reads by key "
                               "apiKey; this provider's apiKey uses " + ("a secretKeyRef (a full header value)"
                                                                         if key.secret is None else
                                                                         f"header {key.header!r}, scheme {key.scheme!r}"),
                               "give the provider apiKey: {secret: <config key>} with the default header and scheme"))
    return out
