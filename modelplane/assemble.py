"""One scheduling run turned into resources: clusters, the fleet's inventory, the schedule, the
deployments, services and DNS. Shared by the config-driven program (program.py) and the `Fleet`
component (sdk.py), so both build the same resources from the same spec.

Plain, known data decides which resources exist: the spec, the catalog, inventories of other
stacks and the previous placements are passed in already awaited.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pulumi
import pulumi_kubernetes as k8s

from .api import Catalog, StackSpec
from .api.loader import NAMESPACE
from .api.rules import served_model
from .components import InferenceCluster, ModelDeployment, ModelNamespace, ModelService, ServiceDns, Target
from .errors import InputError, Problem
from .fleet import INVENTORY_VERSION, cluster_from_inventory, demand_from
from .render import RenderError
from .render.routing import grants
from .scheduler import DemandError, Placement, Plan, schedule
from .services import certificate_problems, dns_problems, plan_routes, served_names


@dataclass
class Result:
    """What one run decided; the offline engine reads it after the program finishes."""

    spec: StackSpec
    inventories: dict[str, dict]
    plan: Plan
    previous: list[Placement] = field(default_factory=list)
    routes: dict = field(default_factory=dict)        # service key -> scheduler.traffic.Routes
    catalog: Catalog | None = None


@dataclass
class Remote:
    """Clusters another stack built: its StackReference and its exported inventory (awaited)."""

    stack: str
    ref: pulumi.StackReference
    inventory: list[dict]


@dataclass
class Built:
    result: Result
    outputs: dict


RUNS: list[Result] = []     # every run of this process, newest last (the offline engine reads it)


def _check_remote(remote: list[Remote], where: str, key: str, local=()) -> None:
    owner = {name: "this stack" for name in local}
    for r in remote:
        for inv in r.inventory or []:
            first = owner.setdefault(inv.get("name"), f"stack {r.stack!r}")
            if first != f"stack {r.stack!r}":
                raise InputError([Problem(where, key, f"cluster {inv.get('name')!r} is exported by stack {r.stack!r} "
                                          f"and also declared by {first}", "keep each cluster in one stack: remove "
                                          "it from modelplane:clusters or from the infra stack")])
    for r in remote:
        if not r.inventory:
            raise InputError([Problem(where, key, f"stack {r.stack!r} exports no inventory",
                                      f"run `modelplane up {r.stack}` first, or remove it from {key}")])
        stale = [inv.get("name", "?") for inv in r.inventory if inv.get("version") != INVENTORY_VERSION]
        if stale:
            raise InputError([Problem(where, key,
                                      f"stack {r.stack!r} exports inventory of an older format for {', '.join(stale)} "
                                      f"(this modelplane reads version {INVENTORY_VERSION})",
                                      f"run `modelplane up {r.stack}` with this version to refresh its inventory")])


def assemble(spec: StackSpec, catalog: Catalog, where: str, remote: list[Remote], previous: list[Placement],
             secret: Callable[[str], pulumi.Output], exclude: tuple[str, ...] = (),
             parent: pulumi.Resource | None = None, fleet_key: str = f"{NAMESPACE}:fleet") -> Built:
    """`where`: the config's file (or component) for error messages; `secret`: a secret config key
    by name (existing clusters' kubeconfigs); `parent`: the component the resources belong to
    (None: the stack, as the config-driven program does); `fleet_key`: where the infra stacks are named."""
    _check_remote(remote, where, fleet_key, [c.name for c in spec.clusters])
    top = pulumi.ResourceOptions(parent=parent) if parent is not None else None
    namespaces = sorted({d.namespace for d in spec.deployments} | {q.namespace for c in spec.clusters for q in c.queues}
                        | {s.namespace for s in spec.services})
    targets, inventories, kubeconfigs, gateways, addresses = {}, {}, {}, {}, {}
    for c in sorted(spec.clusters, key=lambda c: c.name):
        comp = InferenceCluster(c, catalog, namespaces, top,
                                kubeconfig_secret=secret(c.existing.kubeconfig_secret) if c.existing else None)
        targets[c.name] = Target(comp.inventory, comp.provider, comp.substrate)
        inventories[c.name] = comp.inventory
        kubeconfigs[c.name] = comp.kubeconfig
        gateways[c.name] = comp.gateway_address
        addresses[c.name] = (comp.gateway_address, (comp.inventory.get("gateway") or {}).get("addressType"))
    for r in remote:
        for inv in r.inventory:
            kubeconfig = r.ref.require_output("kubeconfigs").apply(lambda k, n=inv["name"]: k[n])
            provider = k8s.Provider(f"{inv['name']}-k8s", kubeconfig=kubeconfig, cluster_identifier=inv["name"],
                                    opts=top)
            targets[inv["name"]] = Target(inv, provider)
            inventories[inv["name"]] = inv
            address = r.ref.get_output("gateways").apply(lambda g, n=inv["name"]: (g or {}).get(n))
            addresses[inv["name"]] = (address, (inv.get("gateway") or {}).get("addressType"))
    try:
        plan = schedule([demand_from(d, catalog) for d in spec.deployments],
                        [cluster_from_inventory(inv) for name, inv in inventories.items() if name not in exclude],
                        previous, exact="always" if spec.repack else "auto")
    except DemandError as exc:
        index = next(i for i, d in enumerate(spec.deployments) if d.key == exc.deployment)
        at = "nodeSelector.cel" if exc.role == "decode" else f"{exc.role}.nodeSelector.cel"
        raise InputError([Problem(where, f"{NAMESPACE}:deployments[{index}].{at}",
                                  str(exc).split(": ", 1)[1], "write a boolean CEL expression over gpu, interconnect "
                                  "and network, e.g. gpu.memoryGiB >= 80 && \"fp8\" in gpu.features")])
    by_key = {d.key: d for d in spec.deployments}
    routes = plan_routes(spec, plan.placements, inventories)
    problems = dns_problems(spec, routes, inventories)
    if problems:
        raise InputError([Problem(where, f"{NAMESPACE}:dns", p,
                                  "use a route53 zone, or leave dns out and point your own records at the gateways")
                          for p in problems])
    problems = certificate_problems(spec, routes, inventories)
    if problems:
        raise InputError([Problem(where, f"{NAMESPACE}:services", p,
                                  "add the hostname (or a wildcard for its domain) to that cluster's tls.hostnames")
                          for p in problems])
    homes = model_namespaces(spec, plan, targets, grants(routes, {s.key: s for s in spec.services}, by_key), top)
    names = served_names(spec)
    progress = {row["deployment"]: row for row in plan.progress}
    try:
        for key, md in sorted(by_key.items()):
            mine = [p for p in plan.placements if p.deployment == key]
            ModelDeployment(md, mine, targets, top, weights_gib=catalog.weights_gib(md), served_names=names[key],
                            namespaces={c: homes[(c, md.namespace)] for c in {p.cluster for p in mine}},
                            progress=progress[key],
                            previous={p.replica: p for p in previous if p.deployment == key})
    except RenderError as exc:
        raise InputError([Problem(where, f"{NAMESPACE}:clusters", str(exc),
                                  "declare the queue on the cluster or set the deployment's queue")])
    providers = {p.name: p for p in spec.providers}
    for svc in sorted(spec.services, key=lambda s: s.key):
        ModelService(svc, routes[svc.key], by_key, providers, targets, served_model(svc, providers), top, spec.dns)
    if spec.dns is not None:
        named = [(svc, routes[svc.key]) for svc in sorted(spec.services, key=lambda s: s.key) if svc.hostname]
        ServiceDns(spec.dns, named, addresses, by_key, top)
    local = [inventories[c.name] for c in sorted(spec.clusters, key=lambda c: c.name)]
    outputs = {
        "inventory": local,
        "kubeconfigs": pulumi.Output.secret(pulumi.Output.all(**kubeconfigs)) if kubeconfigs else {},
        "gateways": pulumi.Output.all(**gateways) if gateways else {},
        "placements": [p.to_json() for p in plan.placements],
        "unplaced": [u.to_json() for u in plan.unplaced],
    }
    result = Result(spec, inventories, plan, previous, routes, catalog)
    RUNS.append(result)
    return Built(result, outputs)


def model_namespaces(spec: StackSpec, plan: Plan, targets: dict, route_grants: dict, opts=None) -> dict:
    """One ModelNamespace per (cluster, team namespace) that hosts a placed replica, with the
    ReferenceGrants services in other namespaces need to route to it."""
    tokens = {d.namespace: d.model.token_secret for d in spec.deployments if d.model.token_secret}
    spots = sorted({(p.cluster, p.deployment.split("/", 1)[0]) for p in plan.placements})
    return {(c, ns): ModelNamespace(c, ns, tokens.get(ns), targets[c],
                                    [g for g in route_grants.get(c, []) if g["metadata"]["namespace"] == ns], opts)
            for c, ns in spots}
