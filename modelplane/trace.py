"""`plan --trace HOST`: one service hostname followed from DNS to the pods, over the objects the plan
rendered (pure: reads an offline run's records, never a cluster).

Each hop is a link; the first link that cannot be followed is named as broken. The hops are the
ones Envoy Gateway v1.8.1 + Envoy AI Gateway v1.0.0 and KServe v0.20 take (docs/routing.md):
weighted DNS -> the cluster's Gateway listener -> the service HTTPRoute's header-less `/v1/` rule
-> each weighted backendRef: an InferencePool (through the loopback hop and `<service>-pools`
when it shares the cluster with other targets), a native replica's Service, or a provider
Backend -> the LLMInferenceService / workload that owns it -> its GPU pool.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .api.cluster import POOL_LABEL as POOL_LABEL_KEY, tls_covers
from .render.addons import GATEWAY_NAME, GATEWAY_NAMESPACE, LOOPBACK_SERVICE, listeners
from .render.kserve import inference_pool
from .policy.resource import pod_templates
from .render.routing import POOL_HEADER, rule_problems



@dataclass
class Hop:
    cluster: str
    share: int                       # per mille of the host's requests
    path: list[str] = field(default_factory=list)
    lands: str = ""                  # gpu | provider | ""
    broken: str = ""                 # the first link that cannot be followed


@dataclass
class Trace:
    host: str
    service: str
    dns: list[dict]
    hops: list[Hop]

    @property
    def broken(self) -> list[Hop]:
        return [h for h in self.hops if h.broken]

    def to_json(self) -> dict:
        return {"host": self.host, "service": self.service, "dns": self.dns,
                "hops": [{"cluster": h.cluster, "share": h.share, "path": h.path, "lands": h.lands,
                          **({"broken": h.broken} if h.broken else {})} for h in self.hops],
                "reaches": {"gpu": sum(h.share for h in self.hops if h.lands == "gpu"),
                            "provider": sum(h.share for h in self.hops if h.lands == "provider"),
                            "broken": sum(h.share for h in self.hops if h.broken)}}


class TraceError(ValueError):
    """The host is not a service hostname of this stack."""


def _objects(run, cluster: str) -> dict[tuple[str, str, str], dict]:
    """(kind, namespace, name) -> object for every Kubernetes object rendered on one cluster."""
    out = {}
    for r in run.records:
        if r.type.startswith("kubernetes:") and r.name.startswith(f"{cluster}/") and isinstance(r.inputs, dict):
            meta = r.inputs.get("metadata") or {}
            out[(r.inputs.get("kind"), meta.get("namespace"), meta.get("name"))] = r.inputs
    return out


def _routes_for(objs: dict, host: str) -> list[dict]:
    return [o for (kind, _, _), o in sorted(objs.items(), key=lambda kv: tuple(map(str, kv[0])))
            if kind == "HTTPRoute" and host in ((o.get("spec") or {}).get("hostnames") or [host])]


def _on(routes: list[dict], listener: str) -> list[dict]:
    """The routes attached to one listener of the Gateway (no sectionName: every listener)."""
    return [r for r in routes if any(p.get("sectionName") in (None, listener) for p in r["spec"].get("parentRefs") or [])]


def _rule_for(routes: list[dict], header: str | None):
    """The `/v1/` rule a request takes: with the pool header when one is set, else a header-less one
    that forwards (a redirect rule has no backendRefs)."""
    for route in routes:
        for i, rule in enumerate(route["spec"].get("rules") or []):
            if not rule.get("backendRefs"):
                continue
            for match in rule.get("matches") or [{}]:
                headers = {h["name"]: h["value"] for h in match.get("headers") or []}
                if headers.get(POOL_HEADER) == header if header else not headers:
                    return route, i, rule
    return None, None, None


def _pods(objs: dict, kind: str, ns: str, name: str) -> tuple[str, str]:
    """(what serves, broken reason) for a workload object."""
    obj = objs.get((kind, ns, name))
    if obj is None:
        return "", f"{kind} {ns}/{name} is not rendered on this cluster"
    pools = sorted({pod.get("nodeSelector", {}).get(POOL_LABEL_KEY) for _, _, pod in pod_templates(obj)} - {None})
    if not pools:
        return "", f"{kind} {ns}/{name} pins no GPU pool ({POOL_LABEL_KEY})"
    return f"{kind} {ns}/{name} -> GPU pods on pool {', '.join(pools)}", ""


def _follow(objs: dict, routes: list[dict], ref: dict, route_ns: str, hop: Hop, depth: int = 0) -> None:
    kind, ns, name = ref.get("kind"), ref.get("namespace", route_ns), ref.get("name")
    if kind == "Service" and name == LOOPBACK_SERVICE:
        header = next((h["value"] for f in ref.get("filters") or [] for h in
                       (f.get("requestHeaderModifier") or {}).get("set") or [] if h["name"] == POOL_HEADER), None)
        hop.path.append(f"loopback through the cluster's Envoy (listener http) with {POOL_HEADER}: {header}")
        route, i, rule = _rule_for(_on(routes, "http"), header)
        if rule is None or depth:
            hop.broken = f"no route rule matches {POOL_HEADER}: {header}"
            return
        hop.path.append(f"HTTPRoute {route['metadata']['namespace']}/{route['metadata']['name']} rule {i}")
        _follow(objs, routes, rule["backendRefs"][0], route["metadata"]["namespace"], hop, depth + 1)
    elif kind == "InferencePool":
        owner = next((n for (k, n_ns, n) in objs if k == "LLMInferenceService" and n_ns == ns
                      and inference_pool(n) == name), None)
        svc = objs.get(("LLMInferenceService", ns, owner))
        hop.path.append(f"InferencePool {ns}/{name} (its endpoint picker picks the pod)")
        if svc is None or "scheduler" not in ((svc.get("spec") or {}).get("router") or {}):
            hop.broken = f"no LLMInferenceService with router.scheduler creates InferencePool {ns}/{name}"
            return
        what, hop.broken = _pods(objs, "LLMInferenceService", ns, owner)
        hop.path.append(what)
        hop.lands = "" if hop.broken else "gpu"
    elif kind == "Service":
        svc = objs.get(("Service", ns, name))
        if svc is None:
            hop.broken = f"Service {ns}/{name} is not rendered on this cluster"
            return
        selector = (svc.get("spec") or {}).get("selector") or {}
        hop.path.append(f"Service {ns}/{name}")
        for (k, wns, wname), obj in sorted(objs.items(), key=lambda kv: tuple(map(str, kv[0]))):
            if k in ("Deployment", "LeaderWorkerSet") and wns == ns and _selects(selector, obj):
                what, hop.broken = _pods(objs, k, wns, wname)
                hop.path.append(what)
                hop.lands = "" if hop.broken else "gpu"
                return
        hop.broken = f"Service {ns}/{name} selects no rendered workload"
    elif kind == "Backend":
        backend = objs.get(("Backend", ns, name))
        if backend is None:
            hop.broken = f"Backend {ns}/{name} is not rendered on this cluster"
            return
        fqdn = backend["spec"]["endpoints"][0]["fqdn"]
        hop.path.append(f"Backend {ns}/{name} -> https://{fqdn['hostname']}:{int(fqdn['port'])} (provider)")
        hop.lands = "provider"
    else:
        hop.broken = f"backendRef kind {kind} is not one modelplane routes to"


def _selects(selector: dict, workload: dict) -> bool:
    spec = workload.get("spec") or {}
    template = spec.get("template") or (spec.get("leaderWorkerTemplate") or {}).get("leaderTemplate") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items() if k != "leaderworkerset.sigs.k8s.io/worker-index")


def _listener(run, cluster: str, host: str) -> tuple[str, str, str]:
    """(what the client reaches, the listener name, broken reason)."""
    gateway = run.result.inventories[cluster].get("gateway")
    if not gateway:
        return "", "", "the cluster has no inference Gateway (substrate.gateway is off and no gatewayRef)"
    ref = f"Gateway {gateway['namespace']}/{gateway['name']}"
    if (gateway["name"], gateway["namespace"]) != (GATEWAY_NAME, GATEWAY_NAMESPACE):
        return f"{ref} (the cluster's own; listeners not checked)", "http", ""
    tls = gateway.get("tls")
    x = listeners(tls)[-1]
    if tls and not tls_covers(tls["hostnames"], host):
        return "", "", f"the HTTPS certificate of {ref} does not cover {host}"
    return f"{ref}, listener {x['name']} {x['protocol']}:{x['port']}", x["name"], ""


def trace(run, host: str) -> Trace:
    """Follow `host` through the plan `run`; raises TraceError for a host no service claims."""
    from .report import services

    entries = {s["hostname"]: s for s in services(run) if s["hostname"]}
    if host not in entries:
        known = ", ".join(sorted(entries)) or "none"
        raise TraceError(f"{host} is not the hostname of a service in stack {run.stack} (hostnames: {known})")
    entry = entries[host]
    svc_ns, svc_name = entry["service"].split("/", 1)
    out = Trace(host, entry["service"], entry["dns"], [])
    for cluster, units in sorted(entry["clusters"].items()):
        objs = _objects(run, cluster)
        routes = _routes_for(objs, host)
        base = Hop(cluster, 0)
        entered, listener, broken = _listener(run, cluster, host)
        base.path.append(entered or "no gateway")
        route, i, rule = _rule_for(_on([r for r in routes if r["metadata"]["namespace"] == svc_ns], listener), None)
        if broken or rule is None:
            base.broken = broken or f"no HTTPRoute rule for {host} /v1/ on this cluster"
            base.share = units
            out.hops.append(base)
            continue
        problems = rule_problems(route)
        base.path.append(f"HTTPRoute {svc_ns}/{route['metadata']['name']} rule {i} (PathPrefix /v1/)")
        refs = rule.get("backendRefs") or []
        for ref in refs:
            # backendRef weights are the service's units (per mille) on this cluster (scheduler/traffic.py).
            hop = Hop(cluster, ref.get("weight", units) if len(refs) > 1 else units, list(base.path))
            if problems:
                hop.broken = problems[0]
            else:
                _follow(objs, routes, ref, svc_ns, hop)
            out.hops.append(hop)
    return out


def render(t: Trace) -> list[str]:
    """The trace as lines for the terminal."""
    lines = [f"trace {t.host} (service {t.service})"]
    for d in t.dns:
        lines.append(f"  DNS {d['weight']}% -> {d.get('target', 'your own records')} -> {d['cluster']} ({d['gateway']})")
    for h in t.hops:
        end = f"BROKEN: {h.broken}" if h.broken else {"gpu": "reaches GPU pods", "provider": "reaches the provider"}[h.lands]
        lines.append(f"  {h.cluster} {h.share / 10:.1f}%: " + " -> ".join(h.path) + f"  [{end}]")
    j = t.to_json()["reaches"]
    lines.append(f"  reaches GPU pods {j['gpu'] / 10:.1f}%, providers {j['provider'] / 10:.1f}%, broken {j['broken'] / 10:.1f}%")
    return lines
