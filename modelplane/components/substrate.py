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
from ..render import namespace, priority_class, queues
from ..render.addons import SYSTEM, Addon, ClusterFacts, addons
from .k8s import register


def chart_ref(spec: dict) -> tuple[str, dict | None]:
    """(chart, repository_opts): an OCI chart is addressed by its full reference, others by repo."""
    if spec["repository"].startswith("oci://"):
        return f"{spec['repository']}/{spec['chart']}", None
    return spec["chart"], {"repo": spec["repository"]}


@dataclass
class Installed:
    """What the substrate registered: everything workloads wait for, and the inference Gateway."""

    ready: list = field(default_factory=list)
    gateway: pulumi.Resource | None = None


def facts_of(c: InferenceCluster, catalog) -> ClusterFacts:
    efa = c.source == "eks" and any(catalog.classes[p.class_].provisioning.eks.efa_interfaces for p in c.node_pools)
    toggles = c.substrate.model_dump(by_alias=True)
    root = c.existing.nvidia_driver_root if c.existing else "/"
    return ClusterFacts(c.name, c.source, c.region, c.dra and c.substrate.dra_driver, toggles, efa, root)


def _register(c: InferenceCluster, addon: Addon, versions: dict, opts: pulumi.ResourceOptions) -> list:
    name = f"{c.name}-{addon.name}"
    if addon.kind == "release":
        spec = versions[addon.key]
        chart, repo = chart_ref(spec)
        return [k8s.helm.v3.Release(name, name=addon.name, chart=chart, version=str(spec["version"]),
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
    for addon in addons(facts_of(c, catalog), versions):
        deps = [r for dep in addon.after for r in done.get(dep, [])] + list((extra_deps or {}).get(addon.name, []))
        created = _register(c, addon, versions, pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            depends_on=deps)))
        done[addon.name] = created
        out.ready += created
        if addon.name == "gateway":
            out.gateway = next(r for r, o in zip(created, addon.objects) if o["kind"] == "Gateway")
    after = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
        depends_on=done.get("kai-scheduler", []) + list(system)))
    objs = [namespace(ns) for ns in sorted(set(team_namespaces))]
    if c.substrate.kai:
        objs.append(priority_class())
        objs += queues([q.model_dump(by_alias=True) for q in c.queues])
    out.ready += [register(c.name, obj, after) for obj in objs]
    return out
