"""Candidate configurations of a deployment sized from an SLO (pure).

For every class of the fleet the deployment may run on and that names an estimator system, the
profile of (model, system, workload) gives shapes with their estimated points. A shape is a
candidate when one of its points meets the SLO (TTFT and ITL at most the objective); the point
with the most requests per second per replica is taken, and the replica count is the traffic
over that rate, rounded up. Shapes the topology cannot express on the class (a tensor group
wider than a node) or that contradict
what the user pinned (workers, prefill) are left out with the reason. Per class the cheapest few
(by the capacity they take) are kept: the scheduler's choice grows with the candidates.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..api.deployment import ModelDeployment, Topology
from .profiles import Found, Parallel, Profiles, Shape

PER_CLASS = 4              # candidates kept per class, cheapest first
EPS = 1e-9


@dataclass(frozen=True)
class Role:
    workers: int
    topology: Topology


@dataclass(frozen=True)
class Candidate:
    cls: str
    system: str
    shape: Shape
    point: tuple[float, float, float]       # ttftMs, itlMs, requests/s of one replica
    replicas: int
    decode: Role
    prefill: Role | None
    found: Found

    @property
    def mode(self) -> str:
        return self.shape.mode

    @property
    def gpus(self) -> int:
        """GPUs of one replica."""
        return self.shape.gpus

    @property
    def rps(self) -> float:
        return self.replicas * self.point[2]

    def label(self) -> str:
        return f"{self.cls} {self.shape.label()} x{self.replicas}"


@dataclass
class Sizing:
    """What sizing found for one deployment: its candidates, and why classes or shapes were left out."""

    md: ModelDeployment
    candidates: list[Candidate] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)   # (class, system) with no profile

    @property
    def key(self) -> str:
        return self.md.key


def topology(p: Parallel, gpus_per_node: int) -> Topology | None:
    """The estimator's worker as modelplane's topology on a class with `gpus_per_node` GPUs: data
    ranks packed onto a node as far as the tensor group allows; None when it cannot be expressed."""
    if p.tp > gpus_per_node:
        return None
    local = max(d for d in range(1, p.dp + 1) if p.dp % d == 0 and p.tp * d <= gpus_per_node)
    # MoE experts sharded by expert parallelism (ep > 1) need the topology's expert axis (KServe
    # ParallelismSpec.expert); tensor-parallel experts (etp) need nothing more than tp x dp.
    expert = {"expert": True} if p.moe_ep > 1 else {}
    return Topology(tensor=p.tp, pipeline=p.pp, data=p.dp, data_local=local, **expert)


def best_point(shape: Shape, ttft: float, itl: float) -> tuple[float, float, float] | None:
    """The point meeting both objectives with the most requests/s (then the lowest TTFT, ITL)."""
    ok = [tuple(p) for p in shape.points if p[0] <= ttft + EPS and p[1] <= itl + EPS]
    return min(ok, key=lambda p: (-p[2], p[0], p[1])) if ok else None


def _pinned(md: ModelDeployment):
    """What the user still set: the decode topology and count, the prefill's, and whether P/D is required."""
    decode = md.workers if "workers" in md.model_fields_set else None
    prefill = md.prefill
    return decode, prefill


def _matches(want, role: Role) -> bool:
    if want is None:
        return True
    if "count" in want.model_fields_set and want.count != role.workers:
        return False
    if "topology" in want.model_fields_set:
        t, r = want.topology, role.topology
        return (t.tensor, t.pipeline, t.data) == (r.tensor, r.pipeline, r.data)
    return True


def units(c: Candidate, gpus_per_node: int) -> int:
    """GPUs of the class's nodes one replica takes, as the scheduler counts them (whole nodes for
    multi-node workers, slots of shared nodes for smaller ones: scheduler.model.need)."""
    from ..scheduler.model import need

    roles = [c.decode, *([c.prefill] if c.prefill else [])]
    return sum(need(r.workers * r.topology.nodes_per_worker, r.topology.gpus_per_node, r.topology.nodes_per_worker,
                    gpus_per_node) for r in roles)


def candidates_for(md: ModelDeployment, classes: dict[str, tuple[str, int]], profiles: Profiles) -> Sizing:
    """`classes`: class -> (estimator system, GPUs per node), the fleet's classes the deployment may use."""
    out = Sizing(md)
    slo, traffic = md.slo, md.traffic
    limits = slo.limits()
    want_decode, want_prefill = _pinned(md)
    for cls, (system, gpn) in sorted(classes.items()):
        found = profiles.find(md.model.uri, system, traffic.input_tokens, traffic.output_tokens)
        if found is None:
            out.missing.append((cls, system))
            continue
        mine, left_out = [], {}
        for shape in found.workload.shapes:
            if want_prefill is not None and shape.prefill is None:
                left_out.setdefault("aggregated while prefill is set", 0)
                left_out["aggregated while prefill is set"] += 1
                continue
            decode_t = topology(shape.decode, gpn)
            prefill_t = topology(shape.prefill, gpn) if shape.prefill else None
            if decode_t is None or (shape.prefill is not None and prefill_t is None):
                why = f"a tensor group wider than {gpn} GPUs per node"
                left_out[why] = left_out.get(why, 0) + 1
                continue
            decode = Role(shape.decode.workers, decode_t)
            prefill = Role(shape.prefill.workers, prefill_t) if shape.prefill else None
            if not _matches(want_decode, decode) or (want_prefill is not None and not _matches(want_prefill.workers, prefill)):
                left_out["not the pinned workers"] = left_out.get("not the pinned workers", 0) + 1
                continue
            point = best_point(shape, *limits)
            if point is None:
                left_out["misses the SLO"] = left_out.get("misses the SLO", 0) + 1
                continue
            replicas = max(1, math.ceil(traffic.requests_per_second / point[2] - EPS))
            if replicas > 1000:
                left_out["more than 1000 replicas"] = left_out.get("more than 1000 replicas", 0) + 1
                continue
            mine.append(Candidate(cls, system, shape, point, replicas, decode, prefill, found))
        mine.sort(key=lambda c: (c.replicas * units(c, gpn), c.replicas * c.gpus, c.replicas, c.mode, c.label()))
        out.candidates += mine[:PER_CLASS]
        if left_out:
            out.notes.append(f"{cls} ({system}): " + ", ".join(f"{n} shape{'s' if n != 1 else ''} {why}"
                                                               for why, n in sorted(left_out.items())))
        if not mine:
            out.notes.append(f"{cls} ({system}): no profiled shape meets TTFT <= {limits[0]:g} ms and "
                             f"ITL <= {limits[1]:g} ms (the objective less its margin)")
    return out
