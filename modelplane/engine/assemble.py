"""One scheduling run turned into a resource graph: clusters, the fleet's inventory, the schedule,
the deployments, services and DNS (pure). Shared by the config-driven program (program.py), the
`Fleet` component (sdk.py) and the direct engine (direct.py), so all build the same resources
from the same spec; the Pulumi engines turn the graph into resources (components/materialize.py).

Plain, known data decides which resources exist: the spec, the catalog, inventories of other
stacks and the previous placements are passed in already awaited.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import partial

from ..api import Catalog, StackSpec
from ..api.cluster import proves_by_http01
from ..api.loader import NAMESPACE
from ..api.rules import served_model
from ..errors import InputError, Problem
from .fleet import INVENTORY_VERSION, cluster_from_inventory, demand_from
from ..render import RenderError, rollout
from ..render.picker import picker_rbac, runs_picker
from ..render.graph import Apply, Graph, Secret
from ..render.names import NameTooLong
from ..render.routing import grants
from ..render.stack import (inference_cluster, model_deployment, model_namespace, model_service, remote_cluster,
                           service_dns, split_records)
from ..scheduler import DemandError, Placement, Plan, schedule
from ..scheduler.cel import CLUSTER_CEL_FIX
from ..scheduler.filter import KV_FLOOR_TOKENS, kv_headroom
from ..scheduler.surge import serving
from ..analysis.services import (certificate_problems, dns_problems, hop_problems, plan_routes, served_names,
                       shared_host_problems, shared_hostnames)
from ..sizing import resolve as sizing


@dataclass
class Result:
    """What one run decided; the offline engine reads it after the program finishes."""

    spec: StackSpec
    inventories: dict[str, dict]
    plan: Plan
    previous: list[Placement] = field(default_factory=list)
    routes: dict = field(default_factory=dict)        # service key -> scheduler.traffic.Routes
    catalog: Catalog | None = None
    sizing: dict = field(default_factory=dict)        # sized deployment -> (sizing.Sizing, chosen Candidate or None)
    models: dict = field(default_factory=dict)        # deployment -> {"facts": model facts and sources, "kvCache": rows}
    # service key -> its Route 53 records split per replica (render/stack.py split_records)
    splits: dict = field(default_factory=dict)


@dataclass
class Remote:
    """Clusters another stack built: the key of its StackReference node and its exported
    inventory (awaited)."""

    stack: str
    ref: str
    inventory: list[dict]


@dataclass
class Built:
    result: Result
    graph: Graph
    outputs: dict           # the stack's outputs (expressions over the graph)


RUNS: list[Result] = []     # every run of this process, newest last (the offline engine reads it)


def _check_remote(remote: list[Remote], where: str, key: str, local=(), locate=None) -> None:
    """Each infra stack's inventory is there, current, and names no cluster twice; a problem names
    the fleet entry, or for a cluster declared twice the second declaration (this file's
    modelplane:clusters entry, or the cluster's entry in the infra stack's file); `locate`: the
    line of a config path in the stack file, when there is one."""
    owner = {name: "this stack" for name in local}
    key_prefix = key[:-len("fleet")] if key.endswith("fleet") else ""     # `modelplane:` as the file writes it

    def entry(r):
        i = next(i for i, x in enumerate(remote) if x is r)
        return f"{key}[{i}]", None if locate is None else locate((key, i))
    for r in remote:
        for inv in r.inventory or []:
            first = owner.setdefault(inv.get("name"), f"stack {r.stack!r}")
            if first != f"stack {r.stack!r}":
                path, line = entry(r)
                file, name = where, inv.get("name")
                if first == "this stack":   # declared again here: point at this file's entry
                    k = list(local).index(name)
                    own = f"{key_prefix}clusters"
                    path, line = f"{own}[{k}].name", None if locate is None else locate((own, k, "name"))
                else:                       # exported again: point at the entry in that infra stack's file
                    second = _declaration(r.stack, name, where)
                    if second is not None:
                        file, path, line = second
                raise InputError([Problem(file, path, f"cluster {inv.get('name')!r} is exported by stack {r.stack!r} "
                                          f"and also declared by {first}", "keep each cluster in one stack: remove "
                                          "it from modelplane:clusters or from the infra stack", line)])
    for r in remote:
        path, line = entry(r)
        if not r.inventory:
            raise InputError([Problem(where, path, f"stack {r.stack!r} exports no inventory",
                                      f"run `modelplane up {r.stack}` first, or remove it from {key}", line)])
        stale = [inv.get("name", "?") for inv in r.inventory if inv.get("version") != INVENTORY_VERSION]
        if stale:
            raise InputError([Problem(where, path,
                                      f"stack {r.stack!r} exports inventory of an older format for {', '.join(stale)} "
                                      f"(this modelplane reads version {INVENTORY_VERSION})",
                                      f"run `modelplane up {r.stack}` with this version to refresh its inventory",
                                      line)])


def _declaration(stack: str, cluster, where: str):
    """The entry declaring `cluster` in infra stack `stack`'s file (found beside `where`, the stack
    file, or in the project's stacks), or None (a program's Fleet, a file not found)."""
    from pathlib import Path

    from ..api.project import current
    from .references import cluster_declaration

    try:
        folder = Path(where) if Path(where).is_absolute() else current().root / where
        return cluster_declaration(stack, cluster, folder.parent)
    except (InputError, OSError):
        return None


def _named(names: tuple, *values) -> dict:
    return dict(zip(names, values, strict=True))


def _mapping(values: dict):
    """An expression for a dict whose values are expressions (Output.all(**values))."""
    return Apply(partial(_named, tuple(values)), tuple(values.values()))


def assemble(spec: StackSpec, catalog: Catalog, where: str, remote: list[Remote], previous: list,
             exclude: tuple[str, ...] = (), fleet_key: str = f"{NAMESPACE}:fleet", locate=None) -> Built:
    """`where`: the config's file (or component) for error messages; `fleet_key`: where the infra
    stacks are named; `locate`: the line of a config path in that file, if it is one. Top-level
    nodes have no parent: the stack's, or the Fleet's when materialized."""
    _check_remote(remote, where, fleet_key, [c.name for c in spec.clusters], locate)
    graph = Graph()
    namespaces = sorted({d.namespace for d in spec.deployments} | {q.namespace for c in spec.clusters for q in c.queues}
                        | {s.namespace for s in spec.services})
    targets, inventories, kubeconfigs, gateways, addresses = {}, {}, {}, {}, {}
    for c in sorted(spec.clusters, key=lambda c: c.name):
        made = inference_cluster(graph, c, catalog, namespaces)
        targets[c.name] = made
        inventories[c.name] = made.inventory
        kubeconfigs[c.name] = made.kubeconfig
        gateways[c.name] = made.gateway_address
        addresses[c.name] = (made.gateway_address, (made.inventory.get("gateway") or {}).get("addressType"))
    for r in remote:
        for inv in r.inventory:
            made = remote_cluster(graph, inv, r.ref)
            targets[inv["name"]] = made
            inventories[inv["name"]] = inv
            addresses[inv["name"]] = (made.gateway_address, (inv.get("gateway") or {}).get("addressType"))
    in_fleet = {name: inv for name, inv in inventories.items() if name not in exclude}
    sizings = sizing.size_all(spec, catalog, in_fleet, where)      # --without CLUSTER re-sizes without it
    try:
        plan = schedule([demand_from(d, catalog) for d in spec.deployments if not d.sized],
                        [cluster_from_inventory(inv) for inv in in_fleet.values()],
                        previous, exact="always" if spec.repack else "auto", options=sizing.options_of(sizings, catalog))
    except DemandError as exc:
        index = next(i for i, d in enumerate(spec.deployments) if d.key == exc.deployment)
        at = ("clusterSelector.cel" if exc.role is None else "nodeSelector.cel" if exc.role == "decode"
              else f"{exc.role}.nodeSelector.cel")
        fix = (CLUSTER_CEL_FIX if exc.role is None else "write a boolean CEL expression over gpu, interconnect "
               "and network, e.g. gpu.memoryGiB >= 80 && \"fp8\" in gpu.features")
        raise InputError([Problem(where, f"{NAMESPACE}:deployments[{index}].{at}", str(exc).split(": ", 1)[1], fix)])
    spec, sized = sizing.apply(spec, sizings, plan)      # sized deployments as the chosen configuration
    models = {}
    pools = {(c.name, p.name): p for c in map(cluster_from_inventory, in_fleet.values()) for p in c.pools}
    by_key = {d.key: d.with_slots(plan.placements) for d in spec.deployments}
    routes = plan_routes(spec, plan.placements, inventories)
    # The routes' own checks, in order; the first that finds problems stops the plan with its fix.
    for check, field, fix in (
            (dns_problems, "dns", "use a route53 zone, or leave dns out and point your own records at the gateways"),
            (certificate_problems, "services", "add the hostname (or a wildcard for its domain) to that cluster's "
                                               "tls.hostnames"),
            (hop_problems, "services", "send that cluster one target of the service (a clusterSelector, or drop the "
                                       "provider endpoint), or let modelplane run its Gateway (substrate.gateway on, "
                                       "no gatewayRef)"),
            (shared_host_problems, "services", "route every service of the hostname on the same clusters (a provider "
                                               "endpoint or a clusterSelector), or give each service its own hostname")):
        problems = check(spec, routes, inventories)
        if problems:
            raise InputError([Problem(where, f"{NAMESPACE}:{field}", p, fix) for p in problems])
    homes = model_namespaces(graph, spec, plan, targets, grants(routes, {s.key: s for s in spec.services}, by_key))
    names = served_names(spec)
    progress = {row["deployment"]: row for row in plan.progress}
    changes = serving_changes(plan, previous)
    shared = shared_hostnames(spec.services)
    # The replicas a DNS record of their own checks (review N11), each probed by a Service of its own.
    splits = {svc.key: split_records(spec.dns, svc, routes[svc.key], svc.hostname in shared) for svc in spec.services}
    probed: dict[str, set] = {}
    for split in splits.values():
        for cluster, parts in split.items():
            for key, index in parts:
                probed.setdefault(key, set()).add((cluster, index))
    try:
        for key, md in sorted(by_key.items()):
            mine = [p for p in plan.placements if p.deployment == key]
            component = model_deployment(graph, md, mine, targets, catalog.weights_gib(md), names[key],
                                         {c: homes[(c, md.namespace)] for c in {p.cluster for p in mine}},
                                         progress[key], {p.replica: p for p in previous if p.deployment == key},
                                         probed.get(key))
            # What the `no-outage` policy reads: how many replicas serve while `up` applies this plan.
            graph.nodes[component].outputs["change"] = changes[key]
            # What the `model-known` policy reads: the model facts the Filter's rules had (0: unknown).
            graph.nodes[component].outputs["attentionHeads"] = catalog.attention_heads(md)
            # The facts the plan's rules used and where each came from (stack, config.json, catalog),
            # and what the `kv-headroom` policy reads: KV cache GiB per GPU of every placed role.
            models[key] = {"facts": {k: {"value": v, "source": src} for k, (v, src)
                                     in sorted(catalog.model_facts(md).items())},
                           "kvCache": kv_rows(md, catalog, mine, pools)}
            graph.nodes[component].outputs["modelFacts"] = models[key]["facts"]
            graph.nodes[component].outputs["kvCache"] = models[key]["kvCache"]
            if key in sized:      # what the `slo` policy reads: objective, traffic, prediction, what is served
                graph.nodes[component].outputs["sizing"] = sizing.gate_row(*sized[key], len(mine))
    except RenderError as exc:
        raise InputError([Problem(where, f"{NAMESPACE}:clusters", str(exc),
                                  "declare the queue on the cluster or set the deployment's queue")])
    try:
        _services_and_order(graph, spec, routes, splits, by_key, targets, addresses, inventories, shared, plan,
                            previous)
    except NameTooLong as exc:      # a name derived from the user's passes a limit downstream
        index = next((i for i, d in enumerate(spec.deployments) if d.key == exc.deployment), None)
        message, _, fix = str(exc).partition("; fix: ")
        raise InputError([Problem(where, f"{NAMESPACE}:deployments" + (f"[{index}].name" if index is not None else ""),
                                  message, fix)])
    local = [inventories[c.name] for c in sorted(spec.clusters, key=lambda c: c.name)]
    outputs = {
        "inventory": local,
        "kubeconfigs": Secret(_mapping(kubeconfigs)) if kubeconfigs else {},
        "gateways": _mapping(gateways) if gateways else {},
        "placements": [p.to_json() for p in plan.placements],
        "unplaced": [u.to_json() for u in plan.unplaced],
    }
    result = Result(spec, inventories, plan, previous, routes, catalog, sized, models, splits)
    RUNS.append(result)
    return Built(result, graph, outputs)


def _services_and_order(graph: Graph, spec: StackSpec, routes, splits, by_key, targets, addresses, inventories,
                        shared, plan: Plan, previous: list) -> None:
    """The services' routes and DNS records, then the options that order an `up`."""
    providers = {p.name: p for p in spec.providers}
    for svc in sorted(spec.services, key=lambda s: s.key):
        model_service(graph, svc, routes[svc.key], by_key, providers, targets, served_model(svc, providers),
                      spec.dns, svc.hostname in shared, splits[svc.key])
    if spec.dns is not None:
        named = [(svc, routes[svc.key]) for svc in sorted(spec.services, key=lambda s: s.key) if svc.hostname]
        service_dns(graph, spec.dns, named, addresses, by_key,
                    {c: bool((inv.get("gateway") or {}).get("tls")) for c, inv in inventories.items()}, splits)
    # Names a cluster's certificate proves over HTTP-01: their records cannot wait for workloads
    http01 = frozenset((svc.hostname, c) for svc in spec.services if svc.hostname for c in routes[svc.key].dns
                       if proves_by_http01(svc.hostname, (inventories.get(c) or {}).get("gateway")))
    if spec.per_replica_pools:
        rollout.keep_own_pools(graph)
    order_up(graph, spec, plan, previous, http01)


def kv_rows(md, catalog: Catalog, placements: list, pools: dict) -> list[dict]:
    """Per placed replica and GPU role: KV cache GiB per GPU and the floor one request needs: the
    role's engine --max-model-len (what vLLM itself checks at start), else the deployment's traffic
    input + output tokens, else KV_FLOOR_TOKENS."""
    roles = {r.name: r for r in demand_from(md, catalog).roles}
    stated = md.traffic.input_tokens + md.traffic.output_tokens if md.traffic else KV_FLOOR_TOKENS
    tokens = {name: max_model_len(engine.args) or stated for name, (_, _, engine) in md.gpu_roles().items()}
    out = []
    for p in sorted(placements, key=lambda p: p.replica):
        for name, rp in sorted(p.roles.items()):
            pool = pools.get((p.cluster, rp.pool))
            row = kv_headroom(roles[name], pool, tokens[name]) if pool is not None and name in roles else None
            if row is not None:
                out.append({"replica": p.replica, "role": name, "cluster": p.cluster, "pool": rp.pool, **row})
    return out


def max_model_len(args) -> int | None:
    """vLLM's --max-model-len from engine args (`--max-model-len=N` or `--max-model-len N`)."""
    for i, arg in enumerate(args):
        value = arg.split("=", 1)[1] if arg.startswith("--max-model-len=") else (
            args[i + 1] if arg == "--max-model-len" and i + 1 < len(args) else None)
        if value is not None and value.isdigit():
            return int(value)
    return None


def serving_changes(plan: Plan, previous: list) -> dict[str, dict]:
    """Per deployment: replicas serving before, during and after `up` applies this plan, and why."""
    before, placed = Counter(p.deployment for p in previous), Counter(p.deployment for p in plan.placements)
    return {key: serving(before[key], placed[key], want, [t for t in plan.transitions if t.deployment == key])
            for key, want in sorted(plan.desired.items())}


def order_up(graph: Graph, spec: StackSpec, plan: Plan, previous: list, http01: frozenset = frozenset()) -> None:
    """Resource options that order an `up` (render/rollout.py; docs/changes.md): workloads wait for
    the InferencePool and picker they name; traffic waits for the workloads it reaches (a record
    of an HTTP-01 name only for its Gateway); replicas that ran before change one at a time, each awaited Ready;
    rolls replace in place, old first, in their step order; clusters and GPU pools are protected
    in production stacks, and pools anywhere while they carry replicas."""
    services = {s.key: {"hostname": s.hostname, "deployments": [e.key(s.namespace) for e in s.endpoints if e.deployment]}
                for s in spec.services}
    rollout.await_children(graph)
    index = rollout.Index(graph)              # one scan of the graph for every pass below
    named = rollout.index_by_name(graph, index)
    rollout.await_pools(graph, named, index)
    rollout.await_references(graph, named, index)
    drain = spec.dns.ttl if spec.dns is not None and spec.dns.drain else None
    rollout.await_traffic(graph, services, http01, drain, index)
    was = {(p.deployment, p.replica): p for p in previous}
    chains: dict[str, list] = {}
    for p in plan.placements:
        old = was.get((p.deployment, p.replica))
        if old is not None and (old.cluster, old.slot) == (p.cluster, p.slot):
            chains.setdefault(p.deployment, []).append((p.cluster, p.deployment, p.replica))
    rolls = [(t.after, t.deployment, t.replica) for t in sorted(plan.transitions, key=lambda t: t.step) if t.how == "roll"]
    rollout.one_at_a_time(graph, [*chains.values(), rolls], index)
    rollout.immutable_specs(graph, index)
    rollout.replace_in_place(graph, rolls)
    carrying = {(p.cluster, rp.pool) for p in plan.placements for rp in p.roles.values()}
    lifted = set(spec.unprotect)
    wanted = {}
    for c in spec.clusters:
        for release in rollout.WORKLOAD_CRD_RELEASES:    # destroy must not take every workload with it
            wanted[f"{c.name}-{release}"] = spec.production and c.name not in lifted
        if c.existing:
            continue
        wanted[c.name] = spec.production and c.name not in lifted
        for pool in c.node_pools:
            keep = spec.production or (c.name, pool.name) in carrying
            wanted[f"{c.name}-{pool.name}"] = keep and not {c.name, f"{c.name}/{pool.name}"} & lifted
    rollout.protect(graph, wanted, index)


def model_namespaces(graph: Graph, spec: StackSpec, plan: Plan, targets: dict, route_grants: dict) -> dict:
    """One ModelNamespace per (cluster, team namespace) that hosts a placed replica, with the
    ReferenceGrants services in other namespaces need to route to it."""
    tokens = {d.namespace: d.model.token_secret for d in spec.deployments if d.model.token_secret}
    spots = sorted({(p.cluster, p.deployment.split("/", 1)[0]) for p in plan.placements})
    # Where KServe deployments get a shared endpoint picker (a cluster with a Gateway), the namespace
    # holds the account they run as (render/picker.py).
    backends = {d.key: d.backend for d in spec.deployments}
    pickers = {(p.cluster, p.deployment.split("/", 1)[0]) for p in plan.placements
               if runs_picker(backends[p.deployment], targets[p.cluster].inventory.get("gateway"))}
    return {(c, ns): model_namespace(graph, c, ns, tokens.get(ns), targets[c],
                                     [*(picker_rbac(ns) if (c, ns) in pickers else []),
                                      *[g for g in route_grants.get(c, []) if g["metadata"]["namespace"] == ns]])
            for c, ns in spots}
