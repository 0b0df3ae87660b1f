"""Filter: which pools of which clusters may hold each GPU role of a deployment, and why not.

The hot path (`eligible`) decides each (role, class) pair once and keeps no per-pool records;
the reasons for every rejected candidate (`rejections`) are rebuilt from the same verdicts only
when someone asks (an unplaced replica, `--explain`), so a fleet of thousands of pools costs a
dictionary lookup per pool and deployment. Deployments that agree in every field Filter reads
(`signature`) share one decision: the eligible pools and the rejections are made once for them.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, is_dataclass

from .cel import CelError, Matcher, cluster_place, place, uses_place
from .model import (CLUSTER_SELECTOR, CO_LOCATION, DISK, DOMAIN, FABRIC, MEMORY, MULTI_NODE_FABRICS, NODE_SELECTOR,
                    PLUGIN_KEY,
                    QUEUE, RDMA_FABRICS, SHAPE, SIZED, SPOT, Demand, Rejection)

# A model loads only if its weights take at most this share of the GPUs' usable memory (vLLM's
# default --gpu-memory-utilization is 0.9, and the KV cache needs the rest of that share).
WEIGHTS_MEMORY_SHARE = 0.9
# The KV headroom floor when a deployment states no `traffic`: one request of this many tokens
# (input + output). vLLM refuses to start when the KV cache cannot hold one request of its
# max_model_len (vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory); with `traffic`
# the floor is one request of its input + output tokens.
KV_FLOOR_TOKENS = 8192
# Every pod downloads the weights into its node's ephemeral storage; keep this much room spare.
DISK_HEADROOM = 1.1


class DemandError(ValueError):
    """Bad deployment input found while scheduling (e.g. a nodeSelector that does not compile)."""

    def __init__(self, deployment: str, role: str | None, message: str):
        """`role` None: the deployment's clusterSelector.cel."""
        self.deployment, self.role = deployment, role
        super().__init__(f"{deployment} ({role or 'clusters'}): {'clusterSelector' if role is None else 'nodeSelector'}"
                         f".cel {message}")


def order(r: Rejection):
    return (r.cluster, r.pool or "", r.role or "", r.reason, r.detail)


class Verdicts:
    """nodeSelector verdicts of one deployment's roles, per class, evaluated on first use."""

    def __init__(self, d: Demand, matcher: Matcher):
        self.d, self.matcher = d, matcher
        self.cache: dict[str, dict] = {r.name: {} for r in d.roles}
        self.fits: dict[tuple, tuple[str, str] | None] = {}
        # roles whose selector reads pool.* or cluster.*: decided per (cluster, pool), not per class
        self.placed = {r.name for r in d.roles if uses_place(r.cel)}

    def fit(self, role, pool) -> tuple[str, str] | None:
        # every Pool field fit_problem reads
        key = (role.name, pool.class_name, pool.gpus_per_node, pool.fabric, pool.memory_mib, pool.disk_gib,
               pool.domain_nodes, pool.net_plugin)
        if key not in self.fits:
            self.fits[key] = fit_problem(role, pool)
        return self.fits[key]

    def context(self, role, pool, cluster) -> dict | None:
        return place(pool, cluster) if role.name in self.placed and cluster is not None else None

    def ok(self, role, pool, cluster=None) -> bool:
        seen = self.cache[role.name]
        at = (cluster.name, pool.name) if role.name in self.placed and cluster is not None else pool.class_name
        hit = seen.get(at)
        if hit is None:
            try:
                hit = seen[at] = self.matcher.matches(role.cel, pool.class_name, pool.capabilities,
                                                      self.context(role, pool, cluster))
            except CelError as exc:
                raise DemandError(self.d.key, role.name, str(exc)) from None
        return hit


def fit_problem(role, pool) -> tuple[str, str] | None:
    """Why one worker of `role` cannot run on a node of `pool` (sizing, shape, NVLink domain, fabric,
    memory, disk), or None."""
    if role.classes is not None and pool.class_name not in role.classes:
        return SIZED, f"{role.name}: sized for {', '.join(sorted(role.classes))}"
    if pool.gpus_per_node < role.gpus_per_node:
        return SHAPE, (f"{role.name} needs {role.gpus_per_node} GPUs per node, {pool.class_name} has "
                       f"{pool.gpus_per_node}")
    problem = heads_problem(role)
    if problem:
        return SHAPE, problem
    problem = domain_problem(role, pool)
    if problem:
        return DOMAIN, problem
    if role.nodes_per_worker > 1 and pool.fabric not in MULTI_NODE_FABRICS:
        return FABRIC, (f"{role.name} spans {role.nodes_per_worker} nodes per worker; pods on this pool talk "
                        f"over {pool.fabric}")
    refused = role.refused_fabrics.get(pool.fabric) or (
        role.refused_fabrics.get(PLUGIN_KEY + pool.net_plugin) if pool.net_plugin else None)
    if role.nodes_per_worker > 1 and refused:
        return FABRIC, f"{role.name} spans {role.nodes_per_worker} nodes per worker, but its {refused}"
    problem = all_to_all_problem(role, pool)
    if problem:
        return FABRIC, problem
    problem = memory_problem(role, pool)
    if problem:
        return MEMORY, problem
    if role.weights_gib and pool.disk_gib is not None and role.weights_gib * DISK_HEADROOM > pool.disk_gib:
        return DISK, (f"{role.name}: {role.weights_gib:.0f} GiB of weights need "
                      f"{role.weights_gib * DISK_HEADROOM:.0f} GiB of node storage, {pool.class_name} has {pool.disk_gib}")
    return None


def heads_problem(role) -> str | None:
    """vLLM refuses to start unless tensor parallelism divides the attention heads
    (vllm-project/vllm vllm/config/model.py, ModelConfig.verify_with_parallel_config: "Total number
    of attention heads ... must be divisible by tensor parallel size"; line not pinned here)."""
    tensor = role.topology[0] if role.topology else 0
    if role.attention_heads and tensor and role.attention_heads % tensor:
        return (f"{role.name}: tensor {tensor} does not divide the model's {role.attention_heads} attention heads; "
                f"vLLM refuses to start (use a tensor size that divides {role.attention_heads})")
    return None


def domain_problem(role, pool) -> str | None:
    """A multi-node worker on a pool that is one NVLink domain stays inside it."""
    if pool.domain_nodes and role.nodes_per_worker > pool.domain_nodes:
        return (f"{role.name} spans {role.nodes_per_worker} nodes per worker; one NVLink domain of "
                f"{pool.class_name} holds {pool.domain_nodes} nodes, and a worker stays inside one")
    return None


def all_to_all_problem(role, pool) -> str | None:
    """A mixture of experts whose data-parallel ranks span nodes moves tokens between nodes on every
    MoE layer, with or without `expert`: without it vLLM's expert layers form one tensor-parallel
    group of DP x TP ranks (vllm-project/vllm docs/serving/data_parallel_deployment.md @ 01e4fce0);
    with it the ranks exchange tokens all-to-all. An NVLink domain carries that itself; otherwise
    it needs RDMA: llm-d's wide-EP guide requires InfiniBand or RoCE (llm-d/llm-d
    guides/wide-ep-lws/README.md @ 00b06e46, "Hardware Requirements"), GPUDirect-TCPX(O) and TCP
    have no documented all-to-all backend (cloud review G4: refused for performance, not function).

    EFA counts as RDMA here only with vLLM's default all-to-all (NCCL collectives over the aws-ofi-nccl
    plugin the engine is pinned to): DeepEP backends and images without the plugin are refused on EFA
    by the role's refused_fabrics (catalog/netplugins.yaml; engine/fleet.py refused_fabrics)."""
    tensor, _, data = (role.topology + (1, 1, 1))[:3] if role.topology else (1, 1, 1)
    moe = role.expert or (role.expert_gib > 0 and data > 1)
    if not moe or role.nodes_per_worker <= 1 or pool.domain_nodes:
        return None
    what = (f"expert parallelism over {role.nodes_per_worker} nodes per worker exchanges tokens all-to-all between "
            f"nodes" if role.expert else
            f"a mixture of experts with data parallelism over {role.nodes_per_worker} nodes per worker runs its "
            f"expert layers as one DP x TP group across nodes")
    if pool.fabric not in RDMA_FABRICS:
        return (f"{role.name}: {what} on every MoE layer, which needs RDMA (InfiniBand, RoCE) or one NVLink "
                f"domain; pods on this pool talk over {pool.fabric}")
    return None


def weights_per_gpu(role) -> float:
    """GiB of weights one GPU of a worker holds (see memory_problem)."""
    if role.expert_gib and role.expert_gpus:
        return (role.weights_gib - role.expert_gib) / role.copy_gpus + role.expert_gib / role.expert_gpus
    return role.weights_gib / role.copy_gpus


def kv_cache_gib(role, pool) -> float | None:
    """GiB per GPU left for the KV cache: vLLM's --gpu-memory-utilization share (0.9) of the GPU's
    memory less the weights it holds (vllm/v1/worker/gpu_worker.py determine_available_memory; the
    activations and CUDA graphs vLLM also takes from it are not modelled, so this is an upper
    bound). None when the weights or the GPU memory are unknown."""
    if not (role.weights_gib and pool.memory_mib and role.copy_gpus):
        return None
    return WEIGHTS_MEMORY_SHARE * pool.memory_mib / 1024 - weights_per_gpu(role)


def memory_problem(role, pool) -> str | None:
    """The weights one GPU of a worker holds against WEIGHTS_MEMORY_SHARE of its memory. A dense
    model: every data-parallel rank holds a whole copy, split over tensor x pipeline GPUs. A mixture
    of experts (vLLM's data-parallel deployment docs): attention and the other non-expert layers
    are replicated per data rank and split over tensor x pipeline; the routed experts are sharded
    over every GPU of the worker (tensor x pipeline x data), with or without expert parallelism."""
    if not (role.weights_gib and pool.memory_mib and role.copy_gpus):
        return None
    gpu = pool.memory_mib / 1024
    usable = WEIGHTS_MEMORY_SHARE * gpu
    if role.expert_gib and role.expert_gpus:
        rest = role.weights_gib - role.expert_gib
        per_gpu = rest / role.copy_gpus + role.expert_gib / role.expert_gpus
        if per_gpu <= usable:
            return None
        return (f"{role.name}: {rest:.0f} GiB of non-expert weights / {role.copy_gpus} + {role.expert_gib:.0f} GiB of "
                f"experts / {role.expert_gpus} = {per_gpu:.1f} GiB per GPU exceed {WEIGHTS_MEMORY_SHARE:.0%} of "
                f"{gpu:.0f} GiB ({pool.class_name})")
    if role.weights_gib <= WEIGHTS_MEMORY_SHARE * role.copy_gpus * gpu:
        return None
    return (f"{role.name}: {role.weights_gib:.0f} GiB of weights exceed {WEIGHTS_MEMORY_SHARE:.0%} of {role.copy_gpus} x "
            f"{gpu:.0f} GiB ({pool.class_name}): each data-parallel rank holds the whole model, "
            f"{role.weights_gib / role.copy_gpus:.1f} GiB per GPU")


def spot_problem(d: Demand, pool) -> str | None:
    """A spot pool for a deployment kept off spot (critical, SLO-sized, or allowSpot: false).
    Compute Engine may preempt a Spot VM at any time, giving GKE's pods about 30 s to stop
    (docs.cloud.google.com/kubernetes-engine/docs/concepts/spot-vms, "Termination and graceful
    shutdown of Spot VMs"); a serving replica with an objective must not count on such a node."""
    if d.spot and pool.capacity == "spot":
        return (f"{pool.name} is spot capacity and {d.key} stays off spot ({d.spot}); set allowSpot: true on the "
                f"deployment to allow it, or give it a reserved or on-demand pool")
    return None


def selector_problem(match_labels, cel: str, cluster: dict, matcher: Matcher) -> str | None:
    """Why a clusterSelector (matchLabels, then cel) refuses a cluster (`cluster`: cel.cluster_place),
    or None. One rule for deployments (Filter), sizing's candidate classes and services' entries."""
    labels = cluster["labels"]
    missing = {k: v for k, v in sorted(match_labels.items()) if labels.get(k) != v}
    if missing:
        want = ", ".join(f"{k}={v}" for k, v in missing.items())
        have = ", ".join(f"{k}={labels[k]}" for k in missing if k in labels)
        return f"needs {want}" + (f"; has {have}" if have else "")
    if not cel.strip():
        return None
    try:
        if matcher.selects(cel, cluster):
            return None
    except CelError as exc:    # e.g. a label this cluster lacks: it is not selected, and the reason says why
        return f"cel {exc}; guard what a cluster may lack (\"team\" in cluster.labels && ...)"
    return f"cel: {matcher.why_cluster(cel, cluster)}"


def _cluster_problem(d: Demand, c, matcher: Matcher) -> Rejection | None:
    # the hot path (no cel): matchLabels read the cluster's labels as they are, nothing is copied
    where = cluster_place(c.name, c.labels, c.region, c.cloud) if d.cluster_cel else {"labels": c.labels}
    why = selector_problem(d.match_labels, d.cluster_cel, where, matcher)
    if why:
        return Rejection(c.name, None, CLUSTER_SELECTOR, why)
    if d.queue and c.queues is not None and d.queue not in c.queues:
        return Rejection(c.name, None, QUEUE, f"no KAI queue {d.queue!r} (queues: {', '.join(c.queues) or 'none'})")
    return None


# Demand fields Filter does not read; every other field (and every field of its roles) is in its
# `signature`, so a field added later counts until it is named here
UNREAD = frozenset({"key", "replicas", "priority", "steps", "pinned"})
_PLAIN = (str, int, float, bool, type(None), frozenset)
_NAMES: dict[type, tuple[str, ...]] = {}       # a dataclass's field names, read once per type


def _frozen(value):
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, Mapping):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if is_dataclass(value):
        names = _NAMES.get(type(value)) or _NAMES.setdefault(type(value), tuple(f.name for f in fields(value)))
        return tuple(_frozen(getattr(value, n)) for n in names)
    if isinstance(value, (tuple, list)):
        return tuple(_frozen(v) for v in value)
    return value


def signature(d: Demand) -> tuple:
    """What Filter reads of a deployment: deployments with equal signatures have the same eligible
    pools and the same rejections (but a spot refusal's text, which names the deployment)."""
    return tuple(_frozen(getattr(d, f.name)) for f in fields(d) if f.name not in UNREAD)


def eligible(d: Demand, clusters, verdicts: Verdicts) -> dict:
    """{cluster: {role: [pools]}} for clusters where every GPU role has at least one pool."""
    out = {}
    for c in clusters:
        if _cluster_problem(d, c, verdicts.matcher):
            continue
        per_role = {}
        for role in d.roles:
            seen, fits, placed = verdicts.cache[role.name], [], role.name in verdicts.placed
            for p in c.pools:
                ok = None if placed else seen.get(p.class_name)
                if (ok if ok is not None else verdicts.ok(role, p, c)) and verdicts.fit(role, p) is None \
                        and not (d.spot and p.capacity == "spot"):
                    fits.append(p)
            if not fits:
                break
            per_role[role.name] = fits
        else:
            out[c.name] = per_role
    return out


def rejections(d: Demand, clusters, verdicts: Verdicts) -> list[Rejection]:
    """Every static Filter rejection of `d`, sorted; recomputed from the cached verdicts."""
    out = []
    for c in clusters:
        problem = _cluster_problem(d, c, verdicts.matcher)
        if problem:
            out.append(problem)
            continue
        empty = []
        for role in d.roles:
            fits = 0
            for p in c.pools:
                if not verdicts.ok(role, p, c):
                    why = verdicts.matcher.why(role.cel, p.class_name, p.capabilities, verdicts.context(role, p, c))
                    out.append(Rejection(c.name, p.name, NODE_SELECTOR,
                                         f"{role.name}: false for class {p.class_name}: {why}", role.name))
                    continue
                problem = verdicts.fit(role, p)
                spot = spot_problem(d, p)
                if problem:
                    out.append(Rejection(c.name, p.name, problem[0], problem[1], role.name))
                elif spot:
                    out.append(Rejection(c.name, p.name, SPOT, f"{role.name}: {spot}", role.name))
                else:
                    fits += 1
            if not fits:
                empty.append(role.name)
        if empty and len(empty) < len(d.roles):
            out.append(Rejection(c.name, None, CO_LOCATION, f"no pool fits {', '.join(empty)}; all roles "
                                 "of a replica share one cluster"))
    return sorted(out, key=order)


class Alike:
    """What one plan's deployments that filter alike share: each Demand's `signature`, made once,
    and the rejections per `alike` key."""

    def __init__(self):
        self._signatures: dict[int, tuple] = {}     # id(demand) -> (demand, its signature): kept alive
        self.rejections: dict[tuple, tuple] = {}

    def signature(self, d: Demand) -> tuple:
        hit = self._signatures.get(id(d))
        if hit is None:
            hit = self._signatures[id(d)] = (d, signature(d))
        return hit[1]

    def key(self, d: Demand) -> tuple:
        """Deployments with equal keys have the same rejections: equal signatures, and the same
        deployment where a spot refusal names it."""
        return self.signature(d), d.key if d.spot else None


class LazyRejections(Mapping):
    """deployment key -> its Filter rejections, built on first access and then kept; once per
    `Alike.key`, in `alike` when given (the instances of one plan pass the same one)."""

    def __init__(self, demands, clusters, verdicts, alike: Alike | None = None):
        self._demands = {d.key: d for d in demands}
        self._clusters, self._verdicts, self._done = clusters, verdicts, {}
        self._alike = Alike() if alike is None else alike

    def __getitem__(self, key):
        if key not in self._done:
            d = self._demands[key]
            shared, at = self._alike.rejections, self._alike.key(d)
            if at not in shared:
                shared[at] = tuple(rejections(d, self._clusters, self._verdicts[key]))
            self._done[key] = list(shared[at])
        return self._done[key]

    def __iter__(self):
        return iter(self._demands)

    def __len__(self):
        return len(self._demands)


def kv_headroom(role, pool, tokens: int) -> dict | None:
    """A placed role's KV cache per GPU against the floor (one request of `tokens` tokens); None
    when the weights or GPU memory are unknown. `floorGiB` is absent when the model's KV facts are."""
    free = kv_cache_gib(role, pool)
    if free is None:
        return None
    out = {"kvCacheGiB": round(free, 1), "floorTokens": tokens}
    if role.kv_token_bytes:
        out["floorGiB"] = round(tokens * role.kv_token_bytes / 1024**3, 2)
    return out
