"""Names the program derives (Pulumi resource names, cloud names, Kubernetes objects) that two
inputs would share.

The components name a cluster's resources `<cluster>-<suffix>` and its pools `<cluster>-<pool>`,
and a deployment's component `<namespace>-<name>`; services and deployments derive Kubernetes
objects from their names (`<service>-http`, `<deployment>-pool`, ...). Distinct inputs can derive the
same string, and two objects of one kind and namespace cannot share a name.
"""
from __future__ import annotations

from .findings import Finding

# Resources every cluster gets, named `<cluster>-<suffix>` (render/gke.py, render/eks.py).
CLUSTER_SUFFIXES = ("system", "cluster", "node", "autoscaler", "efa", "cluster-policy", "pod-identity-agent")
# The system node pool's own cloud name on GKE and EKS.
SYSTEM_POOL = "system"


def check_names(clusters, deployments) -> list[Finding]:
    """Findings with paths from the stack's top: ('clusters', i, ...) or ('deployments', i, ...)."""
    out: list[Finding] = []
    owner: dict[str, str] = {}      # derived name -> who derives it, in words
    built = [(i, c) for i, c in enumerate(clusters) if not c.existing]   # an existing cluster's pools are not created
    for _, c in built:
        for suffix in CLUSTER_SUFFIXES:
            owner.setdefault(f"{c.name}-{suffix}", f"cluster {c.name}'s own resources")
    for i, c in built:
        for j, pool in enumerate(c.node_pools):
            path = ("clusters", i, "nodePools", j, "name")
            if pool.name == SYSTEM_POOL:
                out.append(Finding("names", path, f"pool name {SYSTEM_POOL!r} is the cluster's own system node pool",
                                   "give the GPU pool another name, e.g. 'gpu'"))
                continue
            name = f"{c.name}-{pool.name}"
            first = owner.setdefault(name, f"pool {pool.name!r} of cluster {c.name}")
            if first != f"pool {pool.name!r} of cluster {c.name}":
                out.append(Finding("names", path, f"pool {pool.name!r} of cluster {c.name} is named {name!r} in the "
                                   f"cloud, like {first}", "rename the pool (or the cluster)"))
    seen: dict[str, str] = {}
    for i, md in enumerate(deployments):
        name = f"{md.namespace}-{md.name}"
        first = seen.setdefault(name, md.key)
        if first != md.key:
            out.append(Finding("names", ("deployments", i, "name"), f"deployment {md.key} and {first} both become "
                               f"the component {name!r}", "rename one of them"))
    return out


# Kubernetes objects a service derives: (kind, namespace, name) templates (render/routing.py).
SERVICE_OBJECTS = (("HTTPRoute", "{svc}"), ("HTTPRoute", "{svc}-http"), ("HTTPRoute", "{svc}-hop"),
                   ("HTTPRoute", "{svc}-health"), ("BackendTrafficPolicy", "{svc}"))
# The hop's ReferenceGrant lives in Envoy Gateway's namespace, one per service (render/routing.py).
HOP_GRANT = ("ReferenceGrant", "envoy-gateway-system", "modelplane-hop-{ns}-{svc}")


def _deployment_objects(md) -> list[tuple[str, str | None, str]]:
    """The objects a deployment derives on every cluster it lands on, and per replica index."""
    ns, name = md.namespace, md.name
    out = []
    if md.backend == "kserve":
        out += [("InferencePool", ns, f"{name}-pool")]
        out += [(kind, ns, f"{name}-epp") for kind in ("Deployment", "Service")]
        if md.disaggregated or md.sized:     # a sized deployment may be chosen disaggregated
            out.append(("Service", ns, f"{name}-decode"))
        for i in range(md.replicas or 0):    # sized: its replica count is chosen by the plan
            # KServe's children of each replica's service (and the pool it deletes for a pool.ref service).
            llmisvc = f"{name}-{i}"
            out += [("LLMInferenceService", ns, llmisvc), ("InferencePool", ns, f"{llmisvc}-inference-pool"),
                    ("Service", ns, f"{llmisvc}-kserve-workload-svc"), ("Deployment", ns, f"{llmisvc}-kserve"),
                    ("Service", ns, f"{llmisvc}-health")]     # its DNS probe (render/picker.py replica_probe)
    else:
        out.append(("Service", ns, name))
        for i in range(md.replicas or 0):
            for role in md.role_names():
                out += [("Service", ns, f"{name}-{i}-{role}"), ("Workload", ns, f"{name}-{i}-{role}")]
    return out


def check_objects(deployments, services) -> list[Finding]:
    """Two inputs deriving the same Kubernetes object (kind, namespace, name): one would overwrite the
    other, or the plan would fail with two resources of one name."""
    out: list[Finding] = []
    owner: dict[tuple, str] = {}

    def claim(key, who, path, fix):
        first = owner.setdefault(key, who)
        if first != who:
            kind, ns, name = key
            where = f" in namespace {ns}" if ns else ""
            out.append(Finding("names", path, f"{who} and {first} would both create the {kind} {name!r}{where}", fix))

    for i, svc in enumerate(services):
        who = f"service {svc.namespace}/{svc.name}"
        for kind, template in SERVICE_OBJECTS:
            claim((kind, svc.namespace, template.format(svc=svc.name)), who, ("services", i, "name"),
                  "rename one of the services (a service also owns <name>-http, <name>-hop and <name>-health)")
        kind, ns, template = HOP_GRANT
        claim((kind, ns, template.format(ns=svc.namespace, svc=svc.name)), who, ("services", i, "name"),
              "rename one of the services")
    for i, md in enumerate(deployments):
        for key in _deployment_objects(md):
            claim(key, f"deployment {md.key}", ("deployments", i, "name"),
                  "rename one of them (a KServe deployment also owns <name>-pool, <name>-epp and <name>-decode)")
    return out
