"""Plain, immutable scheduler inputs and outputs (no pydantic, no Pulumi)."""
from __future__ import annotations

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

# Fabrics that carry a multi-node worker's collectives at GPU speed (GPUDirect of some kind),
# and the RDMA ones among them (KV-cache transfer between prefill and decode).
MULTI_NODE_FABRICS = frozenset({"gpudirect-tcpx", "gpudirect-tcpxo", "roce", "efa", "infiniband"})
RDMA_FABRICS = frozenset({"roce", "efa", "infiniband"})


def domain_nodes(capabilities: Mapping) -> int:
    """Nodes of the NVLink domain a class's capabilities (as the inventory carries them) declare;
    0 where NVLink ends at the node."""
    return int(((capabilities.get("interconnect") or {}).get("nvlinkDomain") or {}).get("nodes", 0))


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


@dataclass(frozen=True)
class Cluster:
    name: str
    pools: tuple[Pool, ...]
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)
    queues: tuple[str, ...] | None = None   # None: the cluster does not run KAI queues we know of


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
    # GPUDirect-TCPXO plugin): Filter refuses its multi-node workers there.
    refused_fabrics: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def nodes(self) -> int:
        return self.workers * self.nodes_per_worker


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

    def shaped(self, workers: tuple[int, ...]) -> "Demand":
        """This demand with each role's worker count replaced."""
        from dataclasses import replace
        return replace(self, roles=tuple(replace(r, workers=w) for r, w in zip(self.roles, workers)), steps=())

    @property
    def shapes(self) -> tuple[tuple[int, ...], ...]:
        """The full shape first, then the steps."""
        return (tuple(r.workers for r in self.roles), *self.steps)


@dataclass(frozen=True)
class RolePlacement:
    pool: str
    nodes: int
    gpus_per_node: int
    workers: int


@dataclass(frozen=True)
class Placement:
    deployment: str
    replica: int
    cluster: str
    roles: Mapping[str, RolePlacement]

    def to_json(self) -> dict:
        return {"deployment": self.deployment, "replica": self.replica, "cluster": self.cluster,
                "roles": {name: {"pool": r.pool, "nodes": r.nodes, "gpusPerNode": r.gpus_per_node,
                                 "workers": r.workers} for name, r in self.roles.items()}}

    @classmethod
    def from_json(cls, doc: dict) -> "Placement":
        roles = {name: RolePlacement(r["pool"], int(r["nodes"]), int(r["gpusPerNode"]), int(r["workers"]))
                 for name, r in doc["roles"].items()}
        return cls(doc["deployment"], int(doc["replica"]), doc["cluster"], MappingProxyType(roles))


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


@dataclass
class Plan:
    placements: list[Placement]
    unplaced: list[Unplaced]
    moves: list[Move]
    desired: dict[str, int]
    free: dict[tuple[str, str], int]          # free nodes per (cluster, pool) after binding
    rejections: Mapping[str, list[Rejection]]  # per deployment: static Filter verdicts (built lazily)
    phase: str = "fast path"                   # which fill the plan used (fast path or exact)
    changed: list = field(default_factory=list)  # (deployment, replica, fast-path cluster or None, exact cluster)
    progress: list = field(default_factory=list)  # per deployment: target and placed workers, where it is stuck

    def placed(self, key: str) -> int:
        return sum(1 for p in self.placements if p.deployment == key)
