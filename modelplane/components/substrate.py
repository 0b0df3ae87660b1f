"""In-cluster substrate: register the addon plan (render/addons.py) in dependency order.

Every operator is a `helm.v3.Release` named after the addon (so `helm ls` shows cert-manager,
kserve-llmisvc-resources, ...): their charts ship CRDs, webhook certificates and hooks that only a
real Helm release runs, and `create_namespace` gives each chart its namespace. Upstream manifest
files (Gateway API CRDs, Google's COS driver installer) are `yaml.v2.ConfigFile`s; our own objects
go through the same `register` as every other rendered dict.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from ..api import InferenceCluster
from ..api.substrate import overrides, toggles
from ..render import namespace, priority_classes, queues
from ..render.addons import SYSTEM, Addon, ClusterFacts, addons
from .k8s import register


def chart_ref(spec: dict) -> tuple[str, dict | None]:
    """(chart, repository_opts): an OCI chart is addressed by its full reference, others by repo."""
    if spec["repository"].startswith("oci://"):
        return f"{spec['repository']}/{spec['chart']}", None
    return spec["chart"], {"repo": spec["repository"]}


@dataclass
class Installed:
    """What the substrate registered, and the inference Gateway.

    `ready` holds only the sinks of the install order (addons no other addon waits for) plus the
    cluster-wide objects; the engine orders creation transitively, so waiting for the sinks is
    waiting for everything, with a third of the dependency edges (each edge costs the SDK an
    await per resource). `namespaced` adds a team namespace's own Namespace and Queue."""

    ready: list = field(default_factory=list)
    namespaced: dict = field(default_factory=dict)
    gateway: pulumi.Resource | None = None

    def ready_in(self, namespace: str) -> list:
        return [*self.ready, *self.namespaced.get(namespace, [])]


def facts_of(c: InferenceCluster, catalog) -> ClusterFacts:
    efa = c.source == "eks" and any(catalog.classes[p.class_].provisioning.eks.efa_interfaces for p in c.node_pools)
    root = c.existing.nvidia_driver_root if c.existing else "/"
    latest = gpudirect = nics = None
    if c.source == "gke":
        from .gke import gpu_nics, wiring_of
        gkes = [catalog.classes[p.class_].provisioning.gke for p in c.node_pools]
        latest = any(g.gpu_driver == "LATEST" for g in gkes)
        recipes = [w.recipe for p in c.node_pools if (w := wiring_of(c, catalog, p)).recipe]
        gpudirect = tuple(sorted({r.installer for r in recipes}))
        nics = gpu_nics(c, catalog)
    tls = c.tls.model_dump(by_alias=True, exclude_none=True) if c.tls else None
    return ClusterFacts(c.name, c.source, c.region, c.dra and c.substrate.dra_driver.enabled, toggles(c.substrate),
                        efa, root, latest_driver=bool(latest), gpudirect_installers=gpudirect or (),
                        gpu_nics=nics or 0, tls=tls, overrides=overrides(c.substrate))


def _register(c: InferenceCluster, addon: Addon, versions: dict, opts: pulumi.ResourceOptions) -> list:
    name = f"{c.name}-{addon.name}"
    if addon.kind == "release":
        spec = versions[addon.key]
        chart, repo = chart_ref(spec)
        return [k8s.helm.v3.Release(name, name=addon.name, chart=chart, version=addon.version,
                                    repository_opts=repo, namespace=spec["namespace"], create_namespace=True,
                                    atomic=True, cleanup_on_fail=True, skip_crds=addon.skip_crds or None,
                                    timeout=900, values=addon.values, opts=opts)]
    if addon.kind == "manifests":
        return [k8s.yaml.v2.ConfigFile(name, file=versions[addon.key]["manifests"], opts=opts)]
    if addon.kind == "gate":
        obj = addon.objects[0]
        metadata = {**obj["metadata"], "annotations": {"pulumi.com/waitFor": addon.wait_for}}
        return [k8s.core.v1.EndpointsPatch(name, metadata=metadata, opts=opts)]
    return [register(c.name, obj, opts) for obj in addon.objects]


def install(c: InferenceCluster, catalog, team_namespaces: list[str], opts: pulumi.ResourceOptions,
            system: list, extra_deps: dict | None = None) -> Installed:
    """Install the cluster's addons in order, then team namespaces, the PriorityClass and KAI queues."""
    versions = catalog.substrate
    done: dict[str, list] = {SYSTEM: list(system)}
    out = Installed()
    plan = addons(facts_of(c, catalog), versions)
    for addon in plan:
        deps = [r for dep in addon.after for r in done.get(dep, [])] + list((extra_deps or {}).get(addon.name, []))
        created = _register(c, addon, versions, pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            depends_on=deps)))
        done[addon.name] = created
        if addon.name == "gateway":
            out.gateway = next(r for r, o in zip(created, addon.objects, strict=True) if o["kind"] == "Gateway")
    awaited = {dep for addon in plan for dep in addon.after}
    out.ready += [r for addon in plan if addon.name not in awaited for r in done[addon.name]]
    after = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
        depends_on=done.get("kai-scheduler", []) + list(system)))
    for ns in sorted(set(team_namespaces)):
        out.namespaced.setdefault(ns, []).append(register(c.name, namespace(ns), after))
    if c.substrate.kai:
        out.ready += [register(c.name, pc, after) for pc in priority_classes()]
        for q in queues([q.model_dump(by_alias=True) for q in c.queues]):
            own = q["metadata"]["name"]
            if own in out.namespaced:
                out.namespaced[own].append(register(c.name, q, after))
            else:      # the root queue
                out.ready.append(register(c.name, q, after))
    return out
