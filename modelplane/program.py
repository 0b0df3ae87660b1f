"""The Pulumi program: stack config -> validated spec -> fleet -> schedule -> components.

Everything that decides which resources exist uses plain, known data (config, catalog, the
StackReference values awaited as plain data), so preview and update place identically.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s
from pulumi.runtime import config as runtime_config

from .api import Catalog, StackSpec, load_catalog, parse_stack_config, stack_file
from .api.loader import Source, read_yaml
from .api.rules import served_model
from .components import InferenceCluster, ModelDeployment, ModelNamespace, ModelService, ServiceDns, Target
from .render.routing import grants
from .services import dns_problems, plan_routes, served_names
from .errors import InputError, Problem
from .fleet import INVENTORY_VERSION, cluster_from_inventory, demand_from
from .render import RenderError
from .scheduler import DemandError, Placement, Plan, schedule

PROJECT = "modelplane"


@dataclass
class Result:
    """What one run decided; the offline engine reads it after the program finishes."""

    spec: StackSpec
    inventories: dict[str, dict]
    plan: Plan
    previous: list[Placement] = field(default_factory=list)
    routes: dict = field(default_factory=dict)        # service key -> scheduler.traffic.Routes


LAST: list[Result] = []


def config_values() -> dict:
    """The stack's config as a plain mapping; secret values are replaced by a {secure} marker."""
    values = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    secret = set(runtime_config.get_config_secret_keys_env()) | set(runtime_config._SECRET_KEYS.get())
    out = {}
    for key, value in sorted(values.items()):
        if key in secret:
            out[key] = {"secure": "<secret>"}
            continue
        if isinstance(value, str) and value[:1] in "[{tf":
            try:
                value = json.loads(value)
            except ValueError:
                pass
        out[key] = value
    return out


def load_spec(stack: str, catalog: Catalog, source=None) -> StackSpec:
    """Validate the config the engine gave us; the stack file (if present) only supplies line numbers."""
    path = source or stack_file(stack)
    src = read_yaml(path) if path.exists() else Source(f"stacks/Pulumi.{stack}.yaml", None)
    return parse_stack_config(config_values(), src, catalog)


async def _reference(name: str, output: str):
    ref = pulumi.StackReference(f"{pulumi.get_organization()}/{PROJECT}/{name}")
    details = await ref.get_output_details(output)
    return ref, (details.value if details.value is not None else details.secret_value)


async def run(source=None, exclude: tuple[str, ...] = ()) -> dict:
    """`source`: the stack file for error lines; `exclude`: clusters to plan without (what-if)."""
    stack = pulumi.get_stack()
    catalog = load_catalog()
    spec = load_spec(stack, catalog, source)
    namespaces = sorted({d.namespace for d in spec.deployments} | {q.namespace for c in spec.clusters for q in c.queues}
                        | {s.namespace for s in spec.services})
    targets, inventories, kubeconfigs, gateways, addresses = {}, {}, {}, {}, {}
    cfg = pulumi.Config(PROJECT)
    for c in sorted(spec.clusters, key=lambda c: c.name):
        secret = cfg.require_secret(c.existing.kubeconfig_secret) if c.existing else None
        comp = InferenceCluster(c, catalog, namespaces, kubeconfig_secret=secret)
        targets[c.name] = Target(comp.inventory, comp.provider, comp.substrate)
        inventories[c.name] = comp.inventory
        kubeconfigs[c.name] = comp.kubeconfig
        gateways[c.name] = comp.gateway_address
        addresses[c.name] = (comp.gateway_address, (comp.inventory.get("gateway") or {}).get("addressType"))
    for infra in spec.fleet:
        ref, remote = await _reference(infra, "inventory")
        if not remote:
            raise InputError([Problem(f"stacks/Pulumi.{stack}.yaml", f"{PROJECT}:fleet",
                                      f"stack {infra!r} exports no inventory",
                                      f"run `modelplane up {infra}` first, or remove it from {PROJECT}:fleet")])
        stale = [inv.get("name", "?") for inv in remote if inv.get("version") != INVENTORY_VERSION]
        if stale:
            raise InputError([Problem(f"stacks/Pulumi.{stack}.yaml", f"{PROJECT}:fleet",
                                      f"stack {infra!r} exports inventory of an older format for {', '.join(stale)} "
                                      f"(this modelplane reads version {INVENTORY_VERSION})",
                                      f"run `modelplane up {infra}` with this version to refresh its inventory")])
        for inv in remote:
            kubeconfig = ref.require_output("kubeconfigs").apply(lambda k, n=inv["name"]: k[n])
            provider = k8s.Provider(f"{inv['name']}-k8s", kubeconfig=kubeconfig, cluster_identifier=inv["name"])
            targets[inv["name"]] = Target(inv, provider)
            inventories[inv["name"]] = inv
            address = ref.get_output("gateways").apply(lambda g, n=inv["name"]: (g or {}).get(n))
            addresses[inv["name"]] = (address, (inv.get("gateway") or {}).get("addressType"))
    _, prev_doc = await _reference(stack, "placements")
    # modelplane:repack trades stickiness for packing: the previous placements are not retained.
    previous = [] if spec.repack else [Placement.from_json(p) for p in (prev_doc or [])]
    try:
        plan = schedule([demand_from(d, catalog) for d in spec.deployments],
                        [cluster_from_inventory(inv) for name, inv in inventories.items() if name not in exclude],
                        previous, exact="always" if spec.repack else "auto")
    except DemandError as exc:
        index = next(i for i, d in enumerate(spec.deployments) if d.key == exc.deployment)
        where = "nodeSelector.cel" if exc.role == "decode" else f"{exc.role}.nodeSelector.cel"
        raise InputError([Problem(f"stacks/Pulumi.{stack}.yaml", f"{PROJECT}:deployments[{index}].{where}",
                                  str(exc).split(": ", 1)[1], "write a boolean CEL expression over gpu, interconnect "
                                  "and network, e.g. gpu.memoryGiB >= 80 && \"fp8\" in gpu.features")])
    by_key = {d.key: d for d in spec.deployments}
    routes = plan_routes(spec, plan.placements, inventories)
    problems = dns_problems(spec, routes, inventories)
    if problems:
        raise InputError([Problem(f"stacks/Pulumi.{stack}.yaml", f"{PROJECT}:dns", p,
                                  "use a route53 zone, or leave dns out and point your own records at the gateways")
                          for p in problems])
    namespaces = model_namespaces(spec, plan, targets, grants(routes, {s.key: s for s in spec.services}, by_key))
    names = served_names(spec)
    progress = {row["deployment"]: row for row in plan.progress}
    try:
        for key, md in sorted(by_key.items()):
            mine = [p for p in plan.placements if p.deployment == key]
            ModelDeployment(md, mine, targets, weights_gib=catalog.weights_gib(md), served_names=names[key],
                            namespaces={c: namespaces[(c, md.namespace)] for c in {p.cluster for p in mine}},
                            progress=progress[key],
                            previous={p.replica: p for p in previous if p.deployment == key})
    except RenderError as exc:
        raise InputError([Problem(f"stacks/Pulumi.{stack}.yaml", f"{PROJECT}:clusters", str(exc),
                                  "declare the queue on the cluster or set the deployment's queue")])
    providers = {p.name: p for p in spec.providers}
    for svc in sorted(spec.services, key=lambda s: s.key):
        ModelService(svc, routes[svc.key], by_key, providers, targets, served_model(svc, providers))
    if spec.dns is not None:
        named = [(svc, routes[svc.key]) for svc in sorted(spec.services, key=lambda s: s.key) if svc.hostname]
        ServiceDns(spec.dns, named, addresses)
    LAST.append(Result(spec, inventories, plan, previous, routes))
    local = [inventories[c.name] for c in sorted(spec.clusters, key=lambda c: c.name)]
    return {
        "inventory": local,
        "kubeconfigs": pulumi.Output.secret(pulumi.Output.all(**kubeconfigs)) if kubeconfigs else {},
        "gateways": pulumi.Output.all(**gateways) if gateways else {},
        "placements": [p.to_json() for p in plan.placements],
        "unplaced": [u.to_json() for u in plan.unplaced],
    }


def model_namespaces(spec: StackSpec, plan: Plan, targets: dict, route_grants: dict) -> dict:
    """One ModelNamespace per (cluster, team namespace) that hosts a placed replica, with the
    ReferenceGrants services in other namespaces need to route to it."""
    tokens = {d.namespace: d.model.token_secret for d in spec.deployments if d.model.token_secret}
    spots = sorted({(p.cluster, p.deployment.split("/", 1)[0]) for p in plan.placements})
    return {(c, ns): ModelNamespace(c, ns, tokens.get(ns), targets[c],
                                    [g for g in route_grants.get(c, []) if g["metadata"]["namespace"] == ns])
            for c, ns in spots}


def main() -> None:
    """Entry point used by __main__.py under the Pulumi CLI."""
    async def program():
        try:
            return await run()
        except InputError as exc:
            raise pulumi.RunError(exc.render()) from None
    pulumi.run(program)
