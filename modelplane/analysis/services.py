"""From a stack's services and a plan to where each service's traffic goes (pure).

The program, the offline plan and the policy pack all read traffic from here, so the weights an
HTTPRoute carries, the DNS records and the plan's routing table are one computation.
"""
from __future__ import annotations

from ..api import StackSpec
from ..api.cluster import https_problems, tls_covers
from ..api.rules import served_model
from ..scheduler.cel import Matcher, cluster_place
from ..scheduler.filter import selector_problem
from ..scheduler.traffic import Routes, Target, route


def gateway_clusters(inventories: dict) -> list[str]:
    return sorted(name for name, inv in inventories.items() if inv.get("gateway"))


def plan_routes(spec: StackSpec, placements, inventories: dict) -> dict[str, Routes]:
    """service key -> Routes over the placed replicas (only clusters with a Gateway carry traffic)."""
    entries = set(gateway_clusters(inventories))
    matcher = Matcher()
    replicas: dict[str, list[tuple[str, int]]] = {}
    for p in placements:
        if p.cluster in entries:
            replicas.setdefault(p.deployment, []).append((p.cluster, p.replica))
    out = {}
    for svc in sorted(spec.services, key=lambda s: s.key):
        targets = [Target("provider" if e.provider else "deployment", e.key(svc.namespace), e.weight, bool(e.fallback))
                   for e in svc.endpoints]
        sel = svc.cluster_selector
        entry = [c for c in sorted(entries)
                 if not selector_problem(sel.match_labels, sel.cel or "", cluster_place(
                     c, inventories[c].get("labels", {}), inventories[c].get("region", ""),
                     inventories[c].get("cloud", "")), matcher)]
        routes = route(targets, replicas, entry)
        # A standby must be able to answer the hostname: its HTTPS certificate covers it.
        routes.standby = [c for c in routes.standby if _covers((inventories[c].get("gateway") or {}).get("tls"),
                                                                svc.hostname)]
        out[svc.key] = routes
    return out


def _covers(tls: dict | None, hostname: str | None) -> bool:
    return not tls or not hostname or tls_covers(tls.get("hostnames") or [], hostname)


def served_names(spec: StackSpec) -> dict[str, list[str]]:
    """deployment key -> the model names its engine answers to: its own first, then the names
    clients of the services that route to it send."""
    providers = {p.name: p for p in spec.providers}
    aliases: dict[str, set[str]] = {}
    for svc in spec.services:
        model = served_model(svc, providers)
        for e in svc.endpoints:
            if e.deployment is not None:
                aliases.setdefault(e.key(svc.namespace), set()).add(model)
    return {d.key: [d.served_name, *sorted(aliases.get(d.key, set()) - {d.served_name})] for d in spec.deployments}


def dns_problems(spec: StackSpec, routes: dict[str, Routes], inventories: dict) -> list[str]:
    """Cloud DNS weighted round robin takes addresses: a cluster whose Gateway has a load balancer
    hostname (EKS) cannot be one of its targets."""
    if spec.dns is None or spec.dns.kind != "cloudDns":
        return []
    out = []
    for svc in spec.services:
        for cluster in routes[svc.key].dns if svc.hostname else {}:
            if inventories[cluster]["gateway"]["addressType"] != "IPAddress":
                out.append(f"service {svc.key} sends traffic to cluster {cluster}, whose Gateway has a load balancer "
                           "hostname; Cloud DNS weighted records take IP addresses")
    return out


def certificate_problems(spec: StackSpec, routes: dict[str, Routes], inventories: dict) -> list[str]:
    """A service hostname routed to a cluster whose HTTPS certificate does not cover it: its clients
    would get a certificate error there."""
    out = []
    for svc in spec.services:
        gateways = {c: inventories[c].get("gateway") for c in routes[svc.key].clusters
                    if (inventories[c].get("gateway") or {}).get("tls")}
        out += https_problems(svc.key, svc.hostname, gateways)
    return out


def hop_problems(spec: StackSpec, routes: dict[str, Routes], inventories: dict) -> list[str]:
    """A cluster's share split between targets that each need a rule of their own (an InferencePool,
    a provider whose base path is not /v1) on a cluster without modelplane's hop Gateway (it serves
    through a gatewayRef): nothing there could carry the split."""
    from ..render.routing import cluster_targets, hop_problem

    deployments = {d.key: d for d in spec.deployments}
    providers = {p.name: p for p in spec.providers}
    out = []
    for svc in spec.services:
        for cluster, targets in sorted(cluster_targets(svc, routes[svc.key], deployments, providers).items()):
            problem = hop_problem(svc.key, cluster, inventories[cluster].get("gateway") or {}, targets)
            if problem:
                out.append(problem)
        fallback = routes[svc.key].fallback
        for cluster in sorted([*routes[svc.key].clusters, *routes[svc.key].standby]) if fallback else []:
            gateway = inventories[cluster].get("gateway") or {}
            if not gateway.get("hop"):
                out.append(f"service {svc.key} falls back to provider {fallback} through Envoy AI Gateway's priorities "
                           f"and modelplane's hop Gateway, but cluster {cluster} serves through its own Gateway "
                           f"{gateway.get('namespace')}/{gateway.get('name')} (gatewayRef), which has none")
    return out


def shared_hostnames(services) -> dict[str, list]:
    """hostname -> its services (by key), for hostnames two or more services share: their requests
    are routed by model name (render/routing.py model_objects)."""
    by_host: dict[str, list] = {}
    for svc in sorted(services, key=lambda s: s.key):
        if svc.hostname:
            by_host.setdefault(svc.hostname, []).append(svc)
    return {h: svcs for h, svcs in sorted(by_host.items()) if len(svcs) > 1}


def shared_host_problems(spec: StackSpec, routes: dict[str, Routes], inventories: dict) -> list[str]:
    """Services sharing a hostname share its DNS records, so every cluster those records name must
    route every model of the hostname (a request for a model its cluster does not carry would get
    404), and each such cluster needs modelplane's hop Gateway (the model route reaches the service's
    split through it)."""
    out = []
    for host, svcs in shared_hostnames(spec.services).items():
        clusters = {s.key: sorted(routes[s.key].dns) for s in svcs}
        # A fallback's standby clusters route its model too (to the provider alone).
        every = {c for cs in clusters.values() for c in cs}
        if any(not every <= set(cs) | set(routes[k].standby) for k, cs in clusters.items()):
            out.append(f"services {', '.join(clusters)} share hostname {host} but are carried on different clusters ("
                       + "; ".join(f"{k}: {', '.join(c) or 'none'}" for k, c in clusters.items())
                       + "): DNS sends every model's requests to every one of them")
        for cluster in sorted({c for cs in clusters.values() for c in cs}):
            gateway = inventories[cluster].get("gateway") or {}
            if not gateway.get("hop"):
                out.append(f"hostname {host} is shared by several services, routed by model name through the hop "
                           f"Gateway, but cluster {cluster} serves through its own Gateway (gatewayRef), which has none")
    return out
