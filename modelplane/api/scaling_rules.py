"""Deployment rules for how replicas grow and what they take over: InPlace ratio bindings and
adopted objects. Used by the loader (with file, field and fix) and re-checked by the policy pack."""
from __future__ import annotations

from ..errors import did_you_mean
from .deployment import ModelDeployment
from .findings import Finding, duplicates


def check_scaling(md: ModelDeployment, declared: bool = True) -> list[Finding]:
    """InPlace bindings: known roles, decode as the root, one binding per role, acyclic, every GPU
    role bound, no autoscaler on a bound role, and no contradiction with declared counts or bands.
    `declared`: the spec comes from the user's file, so it knows which counts were written (a spec
    re-read from outputs has every default filled in)."""
    from ..scheduler.bindings import ROOT, BindingError, depths, resolve

    sc = md.scaling
    if not md.in_place:
        return [Finding("scaling-bindings", ("scaling", "bindings"), "bindings apply only to mode: InPlace",
                        "set scaling.mode: InPlace, or remove the bindings")] if sc.bindings else []
    out, known = [], set(md.role_names())
    for i, b in enumerate(sc.bindings):
        for field in ("role", "per"):
            name = getattr(b, field)
            if name not in known:
                guess = did_you_mean(name, known)
                out.append(Finding("scaling-bindings", ("scaling", "bindings", i, field), f"binding names unknown role "
                                   f"{name!r}", f"did you mean {guess!r}?" if guess else f"use one of {sorted(known)}"))
        if b.role == ROOT:
            out.append(Finding("scaling-bindings", ("scaling", "bindings", i, "role"), "decode cannot be bound: its "
                               "workers.count is the size every other role follows", "bind the other roles to decode"))
        elif b.role == b.per:
            out.append(Finding("scaling-bindings", ("scaling", "bindings", i, "per"), f"role {b.role!r} is bound to "
                               "itself", "bind it to decode or to another role"))
    for i, name in duplicates([b.role for b in sc.bindings]):
        out.append(Finding("scaling-bindings", ("scaling", "bindings", i, "role"), f"role {name!r} is bound twice",
                           "keep one binding per role"))
    if out:
        return out
    bindings = sc.binding_map()
    try:
        depths(bindings)
    except BindingError as exc:
        return [Finding("scaling-bindings", ("scaling", "bindings"), str(exc),
                        "make every chain of bindings end at decode, without cycles")]
    if md.disaggregated and "prefill" not in bindings:
        out.append(Finding("scaling-bindings", ("scaling", "bindings"), "InPlace grows every GPU role with decode, "
                           "but prefill has no binding", "add {role: prefill, per: decode, ratio: R}"))
        return out
    counts = resolve(bindings, md.workers.count)
    for i, auto in enumerate(md.autoscaling):
        if auto.role == ROOT or auto.role in bindings:
            out.append(Finding("scaling-bindings", ("autoscaling", i, "role"), f"InPlace sizes role {auto.role!r} "
                               "through its bindings; an autoscaler would fight them",
                               "remove this autoscaler, or use mode: GroupReplication"))
    if declared and md.prefill and "count" in md.prefill.workers.model_fields_set \
            and md.prefill.workers.count != counts["prefill"]:
        out.append(Finding("scaling-bindings", ("prefill", "workers", "count"),
                           f"prefill.workers.count {md.prefill.workers.count} contradicts its binding "
                           f"({counts['prefill']} at {md.workers.count} decode workers)",
                           "leave prefill.workers.count out (the binding sizes it) or change the ratio"))
    for i, role in enumerate(md.roles):
        if declared and role.name in bindings and "replicas" in role.model_fields_set \
                and role.replicas != counts[role.name]:
            out.append(Finding("scaling-bindings", ("roles", i, "replicas"),
                               f"role {role.name!r} declares {role.replicas} replicas but its binding gives "
                               f"{counts[role.name]} at {md.workers.count} decode workers",
                               "leave replicas out (the binding sizes it) or change the ratio"))
    c = md.coordination
    if c is not None and md.prefill:
        total = counts[ROOT] + counts["prefill"]
        bands = {b.role: (b.min, b.max) for b in c.bands}
        for role in ("decode", "prefill"):
            share = 100 * counts[role] / total
            lo, hi = bands.get(role, (0, 100))
            if not lo <= share <= hi:
                out.append(Finding("scaling-bindings", ("coordination", "bands"),
                                   f"bindings and bands contradict: the bindings give {role} {counts[role]} of "
                                   f"{total} workers ({share:.0f}%), outside its band {lo}-{hi}%",
                                   "change the binding's ratio or widen the band"))
        if c.total_workers != total:
            out.append(Finding("scaling-bindings", ("coordination", "totalWorkers"),
                               f"totalWorkers {c.total_workers} contradicts the bindings ({counts[ROOT]} decode + "
                               f"{counts['prefill']} prefill = {total})",
                               f"set totalWorkers: {total}, or leave coordination out (the bindings size InPlace roles)"))
    return out


def adopt_kind(md: ModelDeployment, role: str) -> str:
    """What modelplane renders for a replica's `role`, so what an adopted object must be."""
    if md.backend == "kserve" and role in md.gpu_roles():
        return "LLMInferenceService"
    workers = md.gpu_roles().get(role, (None, None, None))[1]
    return "LeaderWorkerSet" if workers is not None and workers.topology.nodes_per_worker > 1 else "Deployment"


def check_adopt(md: ModelDeployment) -> list[Finding]:
    """Adopted objects: a replica index that exists, a role that exists, the kind modelplane renders
    for it, one object per replica and role."""
    out, known = [], md.role_names()
    for i, a in enumerate(md.adopt):
        if a.replica >= md.replicas:
            out.append(Finding("adopt", ("adopt", i, "replica"), f"replica {a.replica} does not exist "
                               f"(replicas: {md.replicas})", f"use 0..{md.replicas - 1}, or raise replicas"))
        if a.role not in known:
            out.append(Finding("adopt", ("adopt", i, "role"), f"unknown role {a.role!r}", f"use one of {known}"))
            continue
        if md.backend == "kserve" and a.role == "prefill":
            out.append(Finding("adopt", ("adopt", i, "role"), "on the kserve backend one LLMInferenceService runs "
                               "decode and prefill", "adopt it with role: decode"))
            continue
        want = adopt_kind(md, a.role)
        if a.kind != want:
            out.append(Finding("adopt", ("adopt", i, "kind"), f"modelplane runs role {a.role!r} of this deployment "
                               f"as kind {want}, not {a.kind}", f"adopt the {want}, or change backend or topology "
                               f"so the role runs as a {a.kind}"))
    for i, key in duplicates([(a.replica, a.role) for a in md.adopt]):
        out.append(Finding("adopt", ("adopt", i), f"replica {key[0]} role {key[1]!r} is adopted twice",
                           "adopt one object per replica and role"))
    clusters = {(a.replica, a.cluster) for a in md.adopt}
    for replica in sorted({r for r, _ in clusters}):
        where = sorted(c for r, c in clusters if r == replica)
        if len(where) > 1:
            out.append(Finding("adopt", ("adopt",), f"replica {replica} is adopted on {', '.join(where)}: all roles "
                               "of a replica run on one cluster", "adopt each replica's objects from one cluster"))
    return out
