"""Plain, immutable scheduler inputs and outputs (no pydantic, no Pulumi)."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

# Stable rejection reasons (tests, JSON and policies rely on these strings).
CLUSTER_SELECTOR = "clusterSelector"
NODE_SELECTOR = "nodeSelector"
SHAPE = "shape"
CAPACITY = "capacity"
CO_LOCATION = "coLocation"
QUEUE = "queue"
FABRIC = "fabric"        # a multi-node worker on a pool without a multi-node fabric
MEMORY = "memory"        # the weights do not fit the GPUs of one model copy
DISK = "disk"            # a node's ephemeral storage cannot hold the weights
DOMAIN = "nvlinkDomain"  # a multi-node worker larger than the pool's NVLink domain
NO_CLUSTER = "noCluster"
SIZED = "sizing"         # a sized deployment's candidate runs on another class
SLO = "slo"              # no configuration on any class meets the deployment's SLO
SPOT = "spot"            # a spot pool, and the deployment is kept off spot (ModelDeployment.spot_refusal)

# Fabrics that carry a multi-node worker's collectives at GPU speed (GPUDirect of some kind),
# and the RDMA ones among them (KV-cache transfer between prefill and decode).
MULTI_NODE_FABRICS = frozenset({"gpudirect-tcpx", "gpudirect-tcpxo", "roce", "efa", "infiniband"})
RDMA_FABRICS = frozenset({"roce", "efa", "infiniband"})


def gpu_slot(gpus: int, per_node: int) -> int:
    """The GPUs of a node one worker of `gpus` GPUs takes when workers share nodes: the smallest
    power-of-two divisor of `per_node` that holds it, else the whole node. Slot sizes divide one
    another, so any set of slots whose sum fits a pool's GPUs also fits its nodes (largest first,
    first fit) — as KAI's bin-packing or the kube-scheduler would place the pods."""
    size = 1
    while size < gpus and per_node % (size * 2) == 0:
        size *= 2
    return size if size >= gpus else per_node


@functools.lru_cache(maxsize=4096)     # called per role and pool in every Score and model: pure, few distinct inputs
def need(nodes: int, gpus_per_node: int, nodes_per_worker: int, per_node: int) -> int:
    """GPUs of a pool (nodes of `per_node` GPUs) that `nodes` node slices of `gpus_per_node` GPUs
    take: a multi-node worker takes whole nodes; a worker within a node takes its slot and shares
    the node with others of the same pool."""
    if nodes_per_worker > 1:
        return nodes * per_node
    return nodes * gpu_slot(gpus_per_node, per_node)


def domain_nodes(capabilities: Mapping) -> int:
    """Nodes of the NVLink domain a class's capabilities (as the inventory carries them) declare;
    0 where NVLink ends at the node."""
    return int(((capabilities.get("interconnect") or {}).get("nvlinkDomain") or {}).get("nodes", 0))


PLUGIN_KEY = "plugin:"   # refused_fabrics keys naming an NCCL net plugin (Pool.net_plugin), not a fabric


@dataclass(frozen=True)
class Pool:
    name: str
    class_name: str
    gpus_per_node: int
    max_nodes: int
    capabilities: Mapping = field(default_factory=dict, compare=False)
    fabric: str = "tcp"          # the effective fabric: what pods on this pool really get
    memory_mib: int = 0          # usable memory per GPU as the driver reports it (0: unknown)
    disk_gib: int | None = None  # ephemeral storage per node (None: unknown)
    domain_nodes: int = 0        # nodes of one NVLink domain the pool stays in (0: NVLink ends at the node)
    hourly: float | None = field(default=None, compare=False)   # $ per node-hour (None: unpriced); sizing's cost
    # How the nodes are bought (on-demand, spot, reservation, capacity-block, flex-start) and the
    # nodes already paid for whether used or not (minNodes, as docs/cost.md counts idle nodes):
    # Score fills those before buying more, selectors read `pool.capacity`, Filter keeps refusing spot.
    capacity: str = field(default="on-demand", compare=False)
    paid_nodes: int = field(default=0, compare=False)
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)
    net_plugin: str = field(default="", compare=False)   # the NCCL net plugin pods are pinned to (efa, gib; "": none)

    @property
    def paid_gpus(self) -> int:
        return min(self.paid_nodes, self.max_nodes) * self.gpus_per_node


@dataclass(frozen=True)
class Cluster:
    name: str
    pools: tuple[Pool, ...]
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)
    queues: tuple[str, ...] | None = None   # None: the cluster does not run KAI queues we know of
    region: str = field(default="", compare=False)
    cloud: str = field(default="", compare=False)


@dataclass(frozen=True)
class Role:
    """One GPU role of a replica: `workers` workers of `nodes_per_worker` nodes each."""

    name: str
    cel: str
    workers: int
    nodes_per_worker: int
    gpus_per_node: int
    weights_gib: float = 0.0     # model weights (0: unknown, memory and disk are not checked)
    copy_gpus: int = 0           # GPUs that hold one copy of the weights (tensor x pipeline)
    expert_gib: float = 0.0      # of weights_gib, a mixture of experts' routed experts (0: a dense model)
    expert_gpus: int = 0         # GPUs the routed experts are sharded over (tensor x pipeline x data)
    expert: bool = False         # expert parallelism: all-to-all between every rank of a worker
    # Multi-node fabrics this role's engine cannot use, and why (e.g. an image that cannot load the
    # GPUDirect-TCPXO plugin), by fabric or by PLUGIN_KEY + a pool's net_plugin: Filter refuses its
    # multi-node workers there.
    refused_fabrics: Mapping[str, str] = field(default_factory=dict, compare=False)
    topology: tuple = ()         # topology_of(the worker topology); (): not known
    attention_heads: int = 0     # the model's attention heads (0: unknown, not checked)
    kv_token_bytes: float = field(default=0.0, compare=False)  # KV cache one token takes on one GPU of a worker (0: unknown)
    classes: frozenset[str] | None = None   # a sizing candidate: only pools of these classes

    @property
    def nodes(self) -> int:
        """Node slices: one per worker per node it spans (whole nodes only for multi-node workers)."""
        return self.workers * self.nodes_per_worker

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    def need(self, pool: "Pool") -> int:
        """GPUs of `pool` this role takes (its capacity unit; see `need`)."""
        return need(self.workers * self.nodes_per_worker, self.gpus_per_node, self.nodes_per_worker, pool.gpus_per_node)


@dataclass(frozen=True)
class Demand:
    """A deployment as the scheduler sees it."""

    key: str                      # "namespace/name"
    replicas: int
    roles: tuple[Role, ...]       # decode (or unified) first, then prefill
    match_labels: Mapping[str, str] = field(default_factory=dict, compare=False)
    queue: str | None = None
    priority: int = 1             # higher tiers are served first under scarcity (0 low, 1 standard, 2 critical)
    # Smaller ratio-preserving shapes, largest first: workers per role (aligned with `roles`) a
    # replica may be placed at when its full shape fits nowhere (autoscaling envelopes, InPlace steps).
    steps: tuple[tuple[int, ...], ...] = ()
    # Replicas that already run on a cluster (adopted objects): replica -> cluster. Without a
    # previous placement they are bound there first, like retained replicas.
    pinned: Mapping[int, str] = field(default_factory=dict, compare=False)
    # Why its replicas stay off spot pools ("": they may use them); ModelDeployment.spot_refusal.
    spot: str = ""
    # clusterSelector.cel: CEL over the cluster (cel.cluster_place), beside match_labels.
    cluster_cel: str = field(default="", compare=False)

    def shaped(self, workers: tuple[int, ...]) -> "Demand":
        """This demand with each role's worker count replaced."""
        from dataclasses import replace
        return replace(self, roles=tuple(replace(r, workers=w) for r, w in zip(self.roles, workers)), steps=())

    @property
    def shapes(self) -> tuple[tuple[int, ...], ...]:
        """The full shape first, then the steps."""
        return (tuple(r.workers for r in self.roles), *self.steps)


TOPOLOGY_AXES = ("tensor", "pipeline", "data", "dataLocal")


def topology_of(t) -> tuple:
    """A worker topology as the scheduler records it: the four axes, then 1 when experts are
    sharded (expert parallelism) — a change of any of them is a new shape."""
    return (t.tensor, t.pipeline, t.data, t.data_local) + ((1,) if t.expert else ())


def topology_json(topo: tuple) -> dict:
    return {**dict(zip(TOPOLOGY_AXES, topo)), **({"expert": True} if topo[4:] == (1,) else {})}


@dataclass(frozen=True)
class Options:
    """A deployment sized from an SLO: each candidate is a Demand with the deployment's key (one
    class, shape and replica count that meet its objective); the scheduler places exactly one, the
    cheapest that fits (docs/sizing.md)."""

    key: str
    candidates: tuple[Demand, ...]

    @property
    def priority(self) -> int:
        return self.candidates[0].priority


@dataclass(frozen=True)
class RolePlacement:
    pool: str
    nodes: int              # node slices: workers x nodes per worker
    gpus_per_node: int      # GPUs each worker takes on each of its nodes
    workers: int
    topology: tuple = ()          # the worker topology it was created with (topology_of)

    @property
    def nodes_per_worker(self) -> int:
        return self.nodes // self.workers if self.workers else 0

    def to_json(self) -> dict:
        out = {"pool": self.pool, "nodes": self.nodes, "gpusPerNode": self.gpus_per_node, "workers": self.workers}
        if self.topology:
            out["topology"] = topology_json(self.topology)
        return out

    @classmethod
    def from_json(cls, doc: dict) -> "RolePlacement":
        topo = doc.get("topology")
        return cls(doc["pool"], int(doc["nodes"]), int(doc["gpusPerNode"]), int(doc["workers"]),
                   tuple(int(topo[a]) for a in TOPOLOGY_AXES) + ((1,) if topo.get("expert") else ()) if topo else ())

    def need(self, per_node: int) -> int:
        """GPUs of its pool (nodes of `per_node` GPUs) this role takes."""
        return need(self.nodes, self.gpus_per_node, self.nodes // max(self.workers, 1), per_node)


@dataclass(frozen=True)
class Placement:
    """Where one replica runs. `slot` names its objects (`<name>-<i>`, or `<name>-<i>-b` in slot 1):
    a replica surged beside its old self on the same cluster takes the other slot, so both exist
    until the old one is deleted at the end of the `up`."""

    deployment: str
    replica: int
    cluster: str
    roles: Mapping[str, RolePlacement]
    slot: int = 0

    def to_json(self) -> dict:
        out = {"deployment": self.deployment, "replica": self.replica, "cluster": self.cluster,
               "roles": {name: r.to_json() for name, r in self.roles.items()}}
        if self.slot:
            out["slot"] = self.slot
        return out

    @classmethod
    def from_json(cls, doc: dict) -> "Placement":
        roles = {name: RolePlacement.from_json(r) for name, r in doc["roles"].items()}
        return cls(doc["deployment"], int(doc["replica"]), doc["cluster"], MappingProxyType(roles),
                   int(doc.get("slot", 0)))


@dataclass(frozen=True)
class Rejection:
    cluster: str
    pool: str | None
    reason: str
    detail: str
    role: str | None = None

    def to_json(self) -> dict:
        return {"cluster": self.cluster, "pool": self.pool, "reason": self.reason, "detail": self.detail}


@dataclass(frozen=True)
class Unplaced:
    deployment: str
    replica: int
    reasons: tuple[Rejection, ...]

    def to_json(self) -> dict:
        return {"deployment": self.deployment, "replica": self.replica,
                "reasons": [r.to_json() for r in self.reasons]}


@dataclass(frozen=True)
class Move:
    """A previous replica that was not retained where it was, and why."""

    deployment: str
    replica: int
    cluster: str
    why: str


@dataclass(frozen=True)
class Transition:
    """What `up` does to a replica that ran before and runs differently now (plan.transitions).

    `how`: "surge" (the new one is created beside the old and awaited Ready; the old is deleted at
    the end of `up`), "roll" (no room beside it: replaced in place, old deleted first, one replica
    at a time in `step` order), "kept" (no room to surge or roll: it keeps running at its recorded
    shape), "moved" (re-placed because its cluster or pool no longer qualifies; the old is deleted
    at the end of `up`), "lost" (its cluster or pool is gone, and it with it), "removed" (not
    placed again: deleted at the end of `up`)."""

    deployment: str
    replica: int
    how: str
    before: str                  # cluster it ran on
    after: str | None            # cluster it runs on now (None: not placed)
    why: str
    step: int = 0                # rolls: position in the one-at-a-time order (1-based)


@dataclass
class Plan:
    placements: list[Placement]
    unplaced: list[Unplaced]
    moves: list[Move]
    desired: dict[str, int]
    free: dict[tuple[str, str], int]          # free GPUs per (cluster, pool) after binding
    rejections: Mapping[str, list[Rejection]]  # per deployment: static Filter verdicts (built lazily)
    phase: str = "fast path"                   # which fill the plan used (fast path or exact)
    changed: list = field(default_factory=list)  # (deployment, replica, fast-path cluster or None, exact cluster)
    progress: list = field(default_factory=list)  # per deployment: target and placed workers, where it is stuck
    transitions: list = field(default_factory=list)  # Transition per previous replica that changes
    held: dict = field(default_factory=dict)  # nodes per (cluster, pool) old replicas hold until the end of `up`
    chosen: dict = field(default_factory=dict)   # sized deployment -> index of the candidate placed (or targeted)
    gpus_per_node: dict = field(default_factory=dict)   # per (cluster, pool): GPUs of one node

    def placed(self, key: str) -> int:
        return sum(1 for p in self.placements if p.deployment == key)
