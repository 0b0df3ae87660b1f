"""Names the program derives (Pulumi resource names, cloud names) that two inputs would share.

The components name a cluster's resources `<cluster>-<suffix>` and its pools `<cluster>-<pool>`,
and a deployment's component `<namespace>-<name>`; distinct inputs can derive the same string.
"""
from __future__ import annotations

from .rules import Finding

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
