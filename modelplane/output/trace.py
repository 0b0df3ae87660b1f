"""`plan --trace HOST [--down NAME]`: one service hostname followed from DNS to the pods, over the
objects the plan rendered (pure: reads an offline run's records, never a cluster).

Each link is one the upstream components really take (docs/routing.md): weighted DNS, which drops a
record whose health check fails (Route 53 answers with every record again when all of them fail);
the cluster's Gateway listener, which exists on HTTPS only once its certificate issues (Envoy
Gateway v1.8.1 drops a listener whose Secret is missing, internal/gatewayapi/listener.go L319-323);
the service route's rule and its weighted backendRefs; the hop Gateway and its header rule; an
InferencePool, whose endpoint picker answers only with ready pods (none: 503), a native Service
(only ready pods are endpoints), or a provider Backend, which must get its own Host. `down` names
replicas (`namespace/deployment#index`) or clusters that are gone: their pods are not ready, their
health checks fail. The first link that cannot be followed is named as broken. Where a cluster's
record is one per replica (Route 53, review N11), each record also needs its replica's own probe,
and with `down` the trace gives each serving replica's part of the host against its plan's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from ..api.cluster import POOL_LABEL as POOL_LABEL_KEY, external_issuer, issuance_problems, tls_covers
from ..policy.resource import pod_templates
from ..render.addons import ENVOY_NAMESPACE, GATEWAY_NAMESPACE, HOP_GATEWAY, HOP_SERVICE, is_own_gateway, listeners
from ..render.kserve import pool_ref
from ..render.picker import WORKLOAD
from ..render.names import DEPLOYMENT, REPLICA
from ..render.routing import (ENTRY_HEADER, HEALTH_PREFIX, HOP_HEADER, MODEL_HEADER, health_path, picker_path,
                              replica_path, rule_problems)
from ..render.stack import check_host, detection_window, record_id

ROUTE53_CHECK = "aws:route53/healthCheck:HealthCheck"
CLOUD_DNS_CHECK = "gcp:compute/healthCheck:HealthCheck"


@dataclass
class Hop:
    cluster: str
    share: int                       # per mille of the host's requests
    path: list[str] = field(default_factory=list)
    lands: str = ""                  # gpu | provider | ""
    broken: str = ""                 # the first link that cannot be followed
    degraded: str = ""               # served, but less well (P/D decode-only)
    weight: Fraction = Fraction(0)   # its part of the cluster's requests (before rounding)
    replicas: list[str] = field(default_factory=list)   # the replicas whose pods serve it


@dataclass
class Trace:
    host: str
    service: str
    dns: list[dict]
    hops: list[Hop]
    down: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    detection: int = 0      # seconds until DNS stops sending clients to a failing cluster (0: none)
    load: list[dict] = field(default_factory=list)   # with --down: each serving replica's share, and its plan's

    @property
    def broken(self) -> list[Hop]:
        return [h for h in self.hops if h.broken and h.share]

    def to_json(self) -> dict:
        out = {"host": self.host, "service": self.service, "dns": self.dns,
               "hops": [{"cluster": h.cluster, "share": h.share, "path": h.path, "lands": h.lands,
                         **({"broken": h.broken} if h.broken else {}),
                         **({"degraded": h.degraded} if h.degraded else {})} for h in self.hops],
               "reaches": {"gpu": sum(h.share for h in self.hops if h.lands == "gpu"),
                           "provider": sum(h.share for h in self.hops if h.lands == "provider"),
                           "broken": sum(h.share for h in self.hops if h.broken)}}
        degraded = sum(h.share for h in self.hops if h.degraded and h.lands)
        if degraded:
            out["reaches"]["degraded"] = degraded     # part of `gpu`
        if self.down:
            out["down"] = list(self.down)
        if self.notes:
            out["notes"] = list(self.notes)
        if self.detection:
            out["detectionSeconds"] = self.detection
        if self.load:
            out["load"] = list(self.load)
        return out


class TraceError(ValueError):
    """The host is not a service hostname of this stack, or --down names nothing it has."""


def _objects(run, cluster: str) -> dict[tuple[str, str, str], dict]:
    """(kind, namespace, name) -> object for every Kubernetes object rendered on one cluster
    (InferencePools of both API groups keyed by kind and group)."""
    out = {}
    for r in run.records:
        if r.type.startswith("kubernetes:") and r.name.startswith(f"{cluster}/") and isinstance(r.inputs, dict):
            meta = r.inputs.get("metadata") or {}
            kind = r.inputs.get("kind")
            if kind == "InferencePool" and not str(r.inputs.get("apiVersion", "")).startswith("inference.networking.k8s.io/"):
                kind = "InferencePool.v1alpha2"
            out[(kind, meta.get("namespace"), meta.get("name"))] = r.inputs
    return out


def _sorted(objs: dict):
    return sorted(objs.items(), key=lambda kv: tuple(map(str, kv[0])))


def _on(route: dict, gateway: tuple[str, str], listener: str | None) -> bool:
    """Whether a route attaches to this Gateway's listener (no sectionName: every listener)."""
    return any((p.get("namespace"), p.get("name")) == gateway and p.get("sectionName") in (None, listener)
               for p in route["spec"].get("parentRefs") or [])


def _rule(objs: dict, host: str, gateway: tuple[str, str], listener: str | None, path: str,
          sent: dict | None = None):
    """(route, index, rule) of the rule a request `path` to `host` with headers `sent` takes on a
    Gateway listener: the longest matching path wins, then header matches (as Envoy Gateway sorts
    them, sort.go). An AIGatewayRoute's rules match every path (its HTTPRoute's root prefix)."""
    best, rank = (None, None, None), None
    sent = sent or {}
    for (kind, _, _), route in _sorted(objs):
        if kind not in ("HTTPRoute", "AIGatewayRoute") or not _on(route, gateway, listener):
            continue
        if host not in (route["spec"].get("hostnames") or [host]):
            continue
        for i, rule in enumerate(route["spec"].get("rules") or []):
            for match in rule.get("matches") or [{"path": {"type": "PathPrefix", "value": "/"}}]:
                p = match.get("path") or {"type": "PathPrefix", "value": "/"}
                ok = path == p["value"] if p["type"] == "Exact" else path.startswith(p["value"])
                headers = {h["name"]: h["value"] for h in match.get("headers") or []}
                if not ok or any(sent.get(k) != v for k, v in headers.items()):
                    continue
                r = (p["type"] == "Exact", len(p["value"]), len(headers))
                if rank is None or r > rank:
                    best, rank = (route, i, rule), r
    return best


DOWN_FORMS = ("a cluster, a replica (namespace/deployment#index), a P/D role of one "
              "(namespace/deployment#index/prefill or /decode), a provider, an endpoint picker "
              "([cluster/]namespace/deployment-epp), a hop Gateway (cluster/hop) or a certificate "
              "(cluster/certificate)")


class World:
    """What is gone in a what-if: clusters, replicas as (namespace/deployment, index), providers (by
    host), endpoint pickers as (cluster or None, namespace, name), hop Gateways and certificates (by
    cluster)."""

    def __init__(self, run, down: list[str]):
        self.names = list(down)
        placed = {(p.deployment, p.replica) for p in run.result.plan.placements}
        clusters = set(run.result.inventories)
        providers = {p.name: p.host for p in run.result.spec.providers}
        pickers = {f"{d.key}-epp" for d in run.result.spec.deployments if d.backend == "kserve"}
        self.clusters: set[str] = set()
        self.replicas: set[tuple[str, int]] = set()
        self.roles: set[tuple[str, int, str]] = set()     # (namespace/deployment, index, role)
        pd = {d.key for d in run.result.spec.deployments if d.backend == "kserve" and d.disaggregated}
        self.provider_hosts: set[str] = set()
        self.pickers: set[tuple[str | None, str]] = set()
        self.hops: set[str] = set()
        self.certificates: set[str] = set()
        for name in down:
            head, _, tail = name.partition("/")
            if name in providers and name not in clusters:
                self.provider_hosts.add(providers[name])
            elif head in clusters and tail in ("hop", "certificate"):
                (self.hops if tail == "hop" else self.certificates).add(head)
            elif name in pickers or (head in clusters and tail in pickers):
                self.pickers.add((None, name) if name in pickers else (head, tail))
            elif "#" in name and name.rpartition("/")[2] in ("prefill", "decode"):
                replica, _, role = name.rpartition("/")
                key, _, idx = replica.rpartition("#")
                if key not in pd:
                    raise TraceError(f"--down {name}: a role is a --down name only of a KServe P/D deployment "
                                     f"(these: {', '.join(sorted(pd)) or 'none'})")
                if not idx.isdigit() or (key, int(idx)) not in placed:
                    known = ", ".join(f"{d}#{i}" for d, i in sorted(placed) if d == key)
                    raise TraceError(f"--down {name}: no placed replica {replica} (replicas: {known})")
                self.roles.add((key, int(idx), role))
            elif "#" in name:
                key, _, idx = name.rpartition("#")
                if not idx.isdigit() or (key, int(idx)) not in placed:
                    known = ", ".join(f"{d}#{i}" for d, i in sorted(placed)) or "none"
                    raise TraceError(f"--down {name}: no placed replica of that name (replicas: {known})")
                self.replicas.add((key, int(idx)))
            elif name in clusters:
                self.clusters.add(name)
            else:
                raise TraceError(f"--down {name}: not {DOWN_FORMS} of this stack (clusters: "
                                 f"{', '.join(sorted(clusters))}; providers: {', '.join(sorted(providers)) or 'none'}; "
                                 f"pickers: {', '.join(sorted(pickers)) or 'none'})")

    def picker_down(self, cluster: str, namespace: str, name: str) -> bool:
        return (None, f"{namespace}/{name}") in self.pickers or (cluster, f"{namespace}/{name}") in self.pickers

    def replica_down(self, namespace: str, labels: dict) -> bool:
        idx = labels.get(REPLICA)
        return idx is not None and (f"{namespace}/{labels.get(DEPLOYMENT)}", int(idx)) in self.replicas

    def roles_up(self, namespace: str, obj: dict) -> set[str]:
        """The GPU roles of one replica's LLMInferenceService (or workload) whose pods still serve."""
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if self.replica_down(namespace, labels):
            return set()
        roles = {"decode", "prefill"} if "prefill" in (obj.get("spec") or {}) else {"decode"}
        idx = labels.get(REPLICA)
        key = f"{namespace}/{labels.get(DEPLOYMENT)}"
        return {r for r in roles if idx is None or (key, int(idx), r) not in self.roles}


def _pins(obj: dict) -> list[str]:
    return sorted({pod.get("nodeSelector", {}).get(POOL_LABEL_KEY) for _, _, pod in pod_templates(obj)} - {None})


class Cluster:
    """One cluster's objects and how a request to `host` fares there in the `world`."""

    def __init__(self, run, name: str, host: str, world: World):
        self.run, self.name, self.host, self.world = run, name, host, world
        self.objs = _objects(run, name)
        self.gateway = run.result.inventories[name].get("gateway")

    def listener(self, gateways: dict) -> tuple[str, str | None, str]:
        """(what the client reaches, the listener name, broken reason). `gateways`: every cluster that
        carries the host -> its gateway (a certificate's issuance depends on all of them)."""
        gw = self.gateway
        if self.name in self.world.clusters:
            return "", None, f"cluster {self.name} is down"
        if not gw:
            return "", None, "the cluster has no inference Gateway (substrate.gateway is off and no gatewayRef)"
        ref = f"Gateway {gw['namespace']}/{gw['name']}"
        if not is_own_gateway(gw):
            return f"{ref} (the cluster's own; listeners not checked)", None, ""
        tls = gw.get("tls")
        x = listeners(tls)[-1]
        if tls and self.name in self.world.certificates:
            # Envoy Gateway v1.8.1 drops an HTTPS listener whose Secret is missing (listener.go L319-323).
            return "", None, f"the certificate of {ref} is not issued: it has no HTTPS listener"
        if tls and not tls_covers(tls["hostnames"], self.host):
            return "", None, f"the HTTPS certificate of {ref} does not cover {self.host}"
        if tls:
            blocked = issuance_problems(self.host, gateways).get(self.name)
            if blocked:
                return "", None, f"{blocked}; without it {ref} has no HTTPS listener"
        issuer = external_issuer(gw)
        note = f" (certificate from {issuer}, which no modelplane stack creates: assumed to exist)" if issuer else ""
        return f"{ref}, listener {x['name']} {x['protocol']}:{x['port']}{note}", x["name"], ""

    def follow(self, route_ns: str, listener: str | None, path: str, prefix: list[str],
               host: str | None = None, model: str | None = None) -> list[Hop]:
        """The weighted links a request `path` (Host `host`, default the service's; body `model` when
        its hostname routes by model name) takes from the listener, each with its part."""
        gw = (self.gateway["namespace"], self.gateway["name"])
        host = host or self.host
        route, i, rule = _rule(self.objs, host, gw, listener, path, {MODEL_HEADER: model} if model else None)
        answer = self._direct(route, rule)
        if answer:
            return [Hop(self.name, 0, [*prefix, answer], lands="gateway", weight=Fraction(1))]
        if rule is None or not rule.get("backendRefs"):
            what = f"no route for {host} {path}" + (f" with model {model!r}" if model else "")
            return [Hop(self.name, 0, list(prefix), broken=f"{what} on this cluster (404)", weight=Fraction(1))]
        base = [*prefix, f"{route['kind']} {route['metadata']['namespace']}/{route['metadata']['name']} rule {i}"]
        if route["kind"] == "AIGatewayRoute":
            return self._ai_route(route, rule, path, base)
        return self._refs(route, rule, path, base)

    def _direct(self, route: dict | None, rule: dict | None) -> str:
        """What a rule without backends answers itself (an Envoy Gateway directResponse filter), or ""."""
        if rule is None or rule.get("backendRefs"):
            return ""
        ns = route["metadata"]["namespace"]
        for f in rule.get("filters") or []:
            ref = f.get("extensionRef") or {}
            spec = (self.objs.get(("HTTPRouteFilter", ns, ref.get("name"))) or {}).get("spec") or {}
            if ref.get("kind") == "HTTPRouteFilter" and "directResponse" in spec:
                return (f"HTTPRoute {ns}/{route['metadata']['name']} answers "
                        f"{spec['directResponse'].get('statusCode', 200)} itself (HTTPRouteFilter {ns}/{ref['name']})")
        return ""

    def _ai_route(self, route: dict, rule: dict, path: str, base: list[str]) -> list[Hop]:
        """An AIGatewayRoute rule's backends by priority: the first priority's, and where its attempt
        fails with a 5xx or a failed connection, Envoy's retry at the next priority (the fallback
        provider), if a BackendTrafficPolicy on the route retries per priority (routing.FALLBACK_RETRY)."""
        ns, name = route["metadata"]["namespace"], route["metadata"]["name"]
        refs = sorted(rule["backendRefs"], key=lambda r: int(r.get("priority", 0)))
        hops = self._ai_ref(ns, refs[0], path, base)
        later = [r for r in refs if int(r.get("priority", 0)) > int(refs[0].get("priority", 0))]
        if not later:
            return hops
        retries = any((p.get("spec") or {}).get("retry", {}).get("numAttemptsPerPriority")
                      and any(t.get("name") == name for t in p["spec"].get("targetRefs") or [])
                      for (k, pns, _), p in _sorted(self.objs) if k == "BackendTrafficPolicy" and pns == ns)
        out = []
        for hop in hops:
            if not hop.broken or "(404)" in hop.broken or not retries:
                out.append(hop)
                continue
            why = (f"priority {int(refs[0].get('priority', 0))} fails ({hop.broken}); Envoy retries at priority "
                   f"{int(later[0].get('priority', 0))}")
            for fb in self._ai_ref(ns, later[0], path, [*base, why]):
                fb.weight *= hop.weight
                out.append(fb)
        return out

    def _ai_ref(self, ns: str, ref: dict, path: str, base: list[str]) -> list[Hop]:
        """Where one AIGatewayRoute backendRef leads: the hop Gateway's entry rule for the service's own
        split (routing.model_objects), or a provider's Backend (routing.fallback_objects)."""
        name = ref["name"]
        ai = self.objs.get(("AIServiceBackend", ns, name))
        bref = ((ai or {}).get("spec") or {}).get("backendRef") or {}
        backend = self.objs.get(("Backend", ns, bref.get("name")))
        if ai is None or backend is None:
            return [Hop(self.name, 0, list(base), broken=f"AIServiceBackend {ns}/{name} or its Backend is not "
                                                         "rendered on this cluster", weight=Fraction(1))]
        fqdn = backend["spec"]["endpoints"][0]["fqdn"]
        if not fqdn["hostname"].startswith(f"{HOP_SERVICE}.{ENVOY_NAMESPACE}."):
            hop = Hop(self.name, 0, [*base, f"AIServiceBackend {ns}/{name} -> Backend {ns}/{bref['name']} -> "
                                            f"https://{fqdn['hostname']}:{int(fqdn['port'])} (provider)"],
                      weight=Fraction(1))
            if fqdn["hostname"] in self.world.provider_hosts:
                hop.broken = f"provider {fqdn['hostname']} is down (5xx or no connection)"
            else:
                hop.lands = "provider"
            return [hop]
        # The service's own share enters the hop Gateway tagged with the service.
        base = list(base)
        route, i, rule, why = self._entry(ns, {"backendRefs": [ref]}, path, base)
        if why:
            return [Hop(self.name, 0, base, broken=why, weight=Fraction(1))]
        return self._refs(route, rule, path, base)

    def _refs(self, route: dict, rule: dict, path: str, base: list[str]) -> list[Hop]:
        """The weighted backendRefs of one HTTPRoute rule, each followed to where it lands."""
        problems = rule_problems({"metadata": route["metadata"], "spec": {"rules": [rule]}})
        refs = rule["backendRefs"]
        total = sum(int(r.get("weight", 1)) for r in refs) or 1
        out = []
        for ref in refs:
            hop = Hop(self.name, 0, list(base), weight=Fraction(int(ref.get("weight", 1)), total))
            if problems:
                hop.broken = problems[0]
            else:
                self._target(ref, route["metadata"]["namespace"], path, hop)
            out.append(hop)
        return out

    def _target(self, ref: dict, route_ns: str, path: str, hop: Hop, depth: int = 0) -> None:
        kind, ns, name = ref.get("kind"), ref.get("namespace", route_ns), ref.get("name")
        if kind == "Service" and name == HOP_SERVICE and ns == ENVOY_NAMESPACE:
            self._hop(ref, path, hop, depth)
        elif kind == "InferencePool":
            self._pool(ns, name, hop, path)
        elif kind == "Service":
            self._service(ns, name, hop)
        elif kind == "Backend":
            backend = self.objs.get(("Backend", ns, name))
            if backend is None:
                hop.broken = f"Backend {ns}/{name} is not rendered on this cluster"
                return
            fqdn = backend["spec"]["endpoints"][0]["fqdn"]
            hop.path.append(f"Backend {ns}/{name} -> https://{fqdn['hostname']}:{int(fqdn['port'])} (provider)")
            if fqdn["hostname"] in self.world.provider_hosts:
                hop.broken = f"provider {fqdn['hostname']} is down (5xx or no connection)"
            else:
                hop.lands = "provider"
        else:
            hop.broken = f"backendRef kind {kind} is not one modelplane routes to"

    def _no_hop(self) -> str:
        """Why the hop Gateway is missing here, or ""."""
        # A cluster of this stack shows its substrate's objects; another stack's says so in its inventory.
        local = any(k == "Gateway" for k, _, _ in self.objs)
        rendered = ("Service", ENVOY_NAMESPACE, HOP_SERVICE) in self.objs and \
            ("Gateway", GATEWAY_NAMESPACE, HOP_GATEWAY) in self.objs
        if not (self.gateway or {}).get("hop") or (local and not rendered):
            return f"the hop Gateway ({ENVOY_NAMESPACE}/{HOP_SERVICE}) does not exist on this cluster"
        if self.name in self.world.hops:
            # Its Service has no ready endpoint: the connection fails (a 503 from Envoy).
            return f"the hop Gateway's Envoy ({ENVOY_NAMESPACE}/{HOP_SERVICE}) is down: no endpoint (503)"
        return ""

    def _entry(self, ns: str, rule: dict, path: str, base: list[str]):
        """(route, index, rule, why broken) of the hop Gateway rule a model route's backend enters:
        AIServiceBackend -> Backend naming the hop Service, with the service's entry header."""
        name = rule["backendRefs"][0]["name"]
        ai = self.objs.get(("AIServiceBackend", ns, name))
        ref = ((ai or {}).get("spec") or {}).get("backendRef") or {}
        backend = self.objs.get(("Backend", ns, ref.get("name")))
        if ai is None or backend is None:
            return None, None, None, f"AIServiceBackend {ns}/{name} or its Backend is not rendered on this cluster"
        fqdn = backend["spec"]["endpoints"][0]["fqdn"]["hostname"]
        sent = {h["name"]: h["value"] for h in (ai["spec"].get("headerMutation") or {}).get("set") or []}
        if not fqdn.startswith(f"{HOP_SERVICE}.{ENVOY_NAMESPACE}.") or ENTRY_HEADER not in sent:
            return None, None, None, f"AIServiceBackend {ns}/{name} does not lead to the hop Gateway"
        why = self._no_hop()
        if why:
            return None, None, None, why
        base.append(f"AIServiceBackend {ns}/{name} -> hop Gateway {GATEWAY_NAMESPACE}/{HOP_GATEWAY} with "
                    f"{ENTRY_HEADER}: {sent[ENTRY_HEADER]}")
        route, i, hop_rule = _rule(self.objs, fqdn, (GATEWAY_NAMESPACE, HOP_GATEWAY), "http", path,
                                   {ENTRY_HEADER: sent[ENTRY_HEADER]})
        if hop_rule is None or not hop_rule.get("backendRefs"):
            return None, None, None, f"no hop Gateway rule matches {ENTRY_HEADER}: {sent[ENTRY_HEADER]} (404)"
        return route, i, hop_rule, ""

    def _hop(self, ref: dict, path: str, hop: Hop, depth: int) -> None:
        header = next((h["value"] for f in ref.get("filters") or [] for h in
                       (f.get("requestHeaderModifier") or {}).get("set") or [] if h["name"] == HOP_HEADER), None)
        if depth:
            hop.broken = "a hop Gateway rule sends the request back to the hop (a loop)"
            return
        why = self._no_hop()
        if why:
            hop.broken = why
            return
        hop.path.append(f"hop Gateway {GATEWAY_NAMESPACE}/{HOP_GATEWAY} with {HOP_HEADER}: {header}")
        route, i, rule = _rule(self.objs, self.host, (GATEWAY_NAMESPACE, HOP_GATEWAY), "http", path,
                               {HOP_HEADER: header})
        if rule is None or len(rule.get("backendRefs") or []) != 1:
            hop.broken = f"no hop Gateway rule matches {HOP_HEADER}: {header} (404)"
            return
        hop.path.append(f"HTTPRoute {route['metadata']['namespace']}/{route['metadata']['name']} rule {i}")
        problems = rule_problems({"metadata": route["metadata"], "spec": {"rules": [rule]}})
        if problems:
            hop.broken = problems[0]
            return
        self._target(rule["backendRefs"][0], route["metadata"]["namespace"], path, hop, depth + 1)

    def _pool(self, ns: str, name: str, hop: Hop, path: str = "/v1/") -> None:
        pool = self.objs.get(("InferencePool", ns, name))
        if pool is None:
            hop.broken = f"InferencePool {ns}/{name} is not rendered on this cluster"
            return
        picker = pool["spec"]["endpointPickerRef"]["name"]
        if ("Service", ns, picker) not in self.objs or ("Deployment", ns, picker) not in self.objs:
            hop.broken = f"InferencePool {ns}/{name}'s endpoint picker {ns}/{picker} is not rendered"
            return
        if self.world.picker_down(self.name, ns, picker):
            # AI Gateway v1.0.0 runs the picker as a fail-closed ext_proc (internal/extensionserver/
            # inferencepool.go L295-315): with no picker pod ready, every request of the pool fails.
            hop.path.append(f"InferencePool {ns}/{name} (endpoint picker {ns}/{picker})")
            hop.broken = f"endpoint picker {ns}/{picker} is down: the ext_proc is fail-closed (500)"
            return
        members = [(n, svc) for (k, n_ns, n), svc in _sorted(self.objs)
                   if k == "LLMInferenceService" and n_ns == ns and pool_ref(svc.get("spec") or {}) == name]
        hop.path.append(f"InferencePool {ns}/{name} (endpoint picker {ns}/{picker}, {len(members)} replica(s))")
        # A bodyless probe gets a random pod of the pool, any role (llm-d-router@v0.9.0
        # pkg/epp/requestcontrol/director.go L571-578); a request needs a decode pod.
        self._serving(ns, members, "LLMInferenceService", hop,
                      "its endpoint picker finds no ready pod (503)", probe=path.startswith(HEALTH_PREFIX))

    def _service(self, ns: str, name: str, hop: Hop) -> None:
        svc = self.objs.get(("Service", ns, name))
        if svc is None:
            hop.broken = f"Service {ns}/{name} is not rendered on this cluster"
            return
        selector = (svc.get("spec") or {}).get("selector") or {}
        if all(selector.get(k) == v for k, v in WORKLOAD.items()):   # pods KServe makes for LLMInferenceServices
            # A replica's probe Service (picker.replica_probe_service) selects that replica's pods alone.
            members = [(n, obj) for (k, wns, n), obj in _sorted(self.objs) if k == "LLMInferenceService"
                       and wns == ns and all((obj["metadata"].get("labels") or {}).get(key) == selector[key]
                                             for key in (DEPLOYMENT, REPLICA) if key in selector)]
        else:
            members = [(n, obj) for (k, wns, n), obj in _sorted(self.objs)
                       if k in ("Deployment", "LeaderWorkerSet") and wns == ns and _selects(selector, obj)]
        hop.path.append(f"Service {ns}/{name}")
        if not members:
            hop.broken = f"Service {ns}/{name} selects no rendered workload"
            return
        self._serving(ns, members, members[0][1]["kind"], hop, "the Service has no ready endpoint (503)")

    def _serving(self, ns: str, members: list, kind: str, hop: Hop, none_left: str, probe: bool = False) -> None:
        """The members whose pods still serve: a request needs a decode pod (the picker's P/D profile
        handler fails without one, llm-d-router@v0.9.0 pkg/epp/framework/plugins/scheduling/
        profilehandler/disagg/disagg_profile_handler.go L351-354), a `probe` through the picker any pod.
        With no prefill pod left it runs decode-only (L360-362: the prefill result is optional, and the
        routing sidecar skips prefill without its header, pkg/sidecar/proxy/chat_completions.go L85-107)."""
        if not members:
            hop.broken = f"no {kind} serves it on this cluster"
            return
        up = {n: self.world.roles_up(ns, obj) for n, obj in members}
        alive = [(n, obj) for n, obj in members if up[n] if probe or "decode" in up[n]]
        if not alive:
            hop.broken = f"every replica behind it is down: {none_left}"
            return
        pd = [n for n, obj in members if "prefill" in (obj.get("spec") or {})]
        if pd and not probe and not any("prefill" in up[n] for n in pd):
            hop.degraded = "served decode-only (degraded): no prefill pod is left, the decode pods prefill every prompt"
        pins = []
        for n, obj in alive:
            pools = _pins(obj)
            if not pools:
                hop.broken = f"{kind} {ns}/{n} pins no GPU pool ({POOL_LABEL_KEY})"
                return
            pins.append(f"{n} on {', '.join(pools)}")
        gone = len(members) - len(alive)
        hop.replicas = [n for n, _ in alive]
        hop.path.append(f"GPU pods of {', '.join(pins)}" + (f" ({gone} replica(s) down, skipped)" if gone else "")
                        + (f" ({hop.degraded})" if hop.degraded else ""))
        hop.lands = "gpu"

    def healthy(self, service: str, namespace: str, gateways: dict, check_host: str) -> tuple[bool, str]:
        """Whether the DNS health check of the service passes here: the health route's rule, on the
        listener clients use, reaches a ready pod. `check_host`: the Host the check sends."""
        entered, listener, broken = self.listener(gateways)
        if broken:
            return False, broken
        for path in self.probe_paths(service, namespace):
            hops = self.follow(namespace, listener, path, [], check_host)
            if not any(h.lands for h in hops):
                why = next((h.broken for h in hops if h.broken), "the health route reaches nothing")
                return False, why if path == health_path(service, namespace) else f"its check through the picker: {why}"
        return True, ""

    def replica_healthy(self, service: str, namespace: str, replica: tuple[str, int], listener: str | None,
                        check_host: str) -> tuple[bool, str]:
        """Whether the probe of one replica's own record passes (render/stack.py replica_records):
        its rule of the health route reaches that replica's serving pods."""
        hops = self.follow(namespace, listener, replica_path(service, namespace, *replica), [], check_host)
        if any(h.lands for h in hops):
            return True, ""
        return False, next((h.broken for h in hops if h.broken), "the health route reaches nothing")

    def probe_paths(self, service: str, namespace: str) -> list[str]:
        """The paths DNS probes here: the health path and, where the health route has a rule for it,
        the one through a P/D deployment's pools (Route 53 ANDs both: render/stack.py record_check)."""
        route = self.objs.get(("HTTPRoute", namespace, f"{service}-health")) or {}
        paths = [health_path(service, namespace)]
        second = picker_path(service, namespace)
        if any(m.get("path", {}).get("value") == second for r in route.get("spec", {}).get("rules") or []
               for m in r.get("matches") or []):
            paths.append(second)
        return paths


def _selects(selector: dict, workload: dict) -> bool:
    spec = workload.get("spec") or {}
    template = spec.get("template") or (spec.get("leaderWorkerTemplate") or {}).get("leaderTemplate") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items()
                                  if k != "leaderworkerset.sigs.k8s.io/worker-index")


def _checks(run, service: str, namespace: str) -> set[str] | None:
    """Clusters whose DNS record of the service is health-checked (None: no DNS layer, all unchecked)."""
    spec = run.result.spec
    if spec.dns is None:
        return None
    names = {r.name for r in run.records if r.type in (ROUTE53_CHECK, CLOUD_DNS_CHECK)}
    routes = run.result.routes[f"{namespace}/{service}"]
    clusters = [*routes.dns, *routes.standby]
    if spec.dns.kind == "route53":
        return {c for c in clusters if f"{namespace}-{service}-{c}" in names}
    return set(clusters) if f"{namespace}-{service}" in names else set()


def _per_mille(weights: list[Fraction]) -> list[int]:
    """Whole per-mille shares that add up to 1,000 (largest remainder; ties to the earlier hop)."""
    total = sum(weights)
    if not total:
        return [0] * len(weights)
    exact = [w / total * 1000 for w in weights]
    out = [int(x) for x in exact]
    order = sorted(range(len(exact)), key=lambda i: (-(exact[i] - out[i]), i))
    for i in order[:1000 - sum(out)]:
        out[i] += 1
    return out


def trace(run, host: str, down: list[str] | tuple = (), model: str | None = None) -> Trace:
    """Follow `host` (a request for `model`, where the hostname routes by model name) through the
    plan `run` as if `down` were gone; raises TraceError for a host no service claims, a model name
    it does not answer to, or a --down name the stack does not have."""
    from .report import services

    entries: dict[str, list[dict]] = {}
    for s in services(run):
        if s["hostname"]:
            entries.setdefault(s["hostname"], []).append(s)
    if host not in entries:
        known = ", ".join(sorted(entries)) or "none"
        raise TraceError(f"{host} is not the hostname of a service in stack {run.stack} (hostnames: {known})")
    members = entries[host]
    by_model = members[0]["routedBy"] == "model"
    models = ", ".join(sorted(s["model"] for s in members))
    if by_model and model is None:
        raise TraceError(f"{host} routes by model name: give --model (it answers to: {models})")
    entry = next((s for s in members if s["model"] == model), None) if model else members[0]
    if entry is None:
        raise TraceError(f"no service on {host} answers to model {model!r}: Envoy AI Gateway answers 404 "
                         f"(it answers to: {models})")
    world = World(run, list(down))
    svc_ns, svc_name = entry["service"].split("/", 1)
    out = Trace(host, entry["service"], entry["dns"], [], list(down))
    standby = (entry.get("fallback") or {}).get("standby", [])
    carried = sorted({*entry["clusters"], *standby})
    gateways = {c: run.result.inventories[c].get("gateway") for c in carried}
    # A fallback's route is an AIGatewayRoute matching the service's model name (routing.model_objects).
    model = model or (entry["model"] if entry.get("fallback") else None)
    # The records: one per cluster, or one per replica where a cluster's is split (render/stack.py
    # replica_records, review N11): set identifier -> (cluster, replica or None, weight).
    records: dict[str, tuple[str, tuple[str, int] | None, Fraction]] = {}
    for d in entry["dns"]:
        for r in d.get("replicas") or [None]:
            replica = None if r is None else (r["replica"].rpartition("#")[0], int(r["replica"].rpartition("#")[2]))
            records[record_id(d["cluster"], replica)] = (d["cluster"], replica, Fraction(d["weight"] if r is None
                                                                                        else r["weight"]))
    if not entry["dns"]:
        records = {c: (c, None, Fraction(u)) for c, u in entry["clusters"].items()}
    clusters = {c: Cluster(run, c, host, world) for c in carried}
    # DNS: a record whose health check fails leaves the answers (all failing: all answered again).
    # A shared hostname's check is the AND of its services' (render/stack.py shared_records).
    failing = {}
    for member in members if by_model else [entry]:
        ns, name = member["service"].split("/", 1)
        checked = _checks(run, name, ns)
        for c in carried:
            if c not in failing and checked is not None and c in checked:
                ok, why = clusters[c].healthy(name, ns, gateways, check_host(run.result.spec.dns, c))
                if not ok:
                    failing[c] = why if member is entry else f"{member['service']}'s check: {why}"
    # A per-replica record also needs its replica's own probe (the cluster's checks AND it).
    lost: dict[str, str] = {}
    for rid, (c, replica, w) in records.items():
        if replica is not None and c not in failing:
            ok, why = clusters[c].replica_healthy(svc_name, svc_ns, replica, clusters[c].listener(gateways)[1],
                                                  check_host(run.result.spec.dns, c))
            if not ok:
                lost[rid] = why
    if (failing or lost) and run.result.spec.dns is not None:
        out.detection = detection_window(run.result.spec.dns)
        out.notes.append(f"DNS detection window: about {out.detection} s after the failure (3 failed checks "
                         f"30 s apart, then the {run.result.spec.dns.ttl} s TTL); until then, requests DNS still sends to "
                         "a dropped record fail there (or, for a replica's own record, go to its cluster's other "
                         "replicas). The figures below are after it")
    for key, idx, role in sorted(world.roles):
        where = next((p.cluster for p in run.result.plan.placements if (p.deployment, p.replica) == (key, idx)), "")
        if where not in failing and record_id(where, (key, idx)) not in lost:
            out.notes.append(f"{key}#{idx}/{role} down on {where}: its health checks still pass (a decode pod "
                             "or another replica answers), so DNS keeps the cluster and there is no DNS detection "
                             "window; the picker stops choosing the role's pods once they are not Ready")
    weighted = [rid for rid, (_, _, w) in records.items() if w]
    live = {rid: w for rid, (c, _, w) in records.items() if w and c not in failing and rid not in lost}
    if not live and weighted:
        # Route 53 considers zero-weight records once every non-zero one is unhealthy (developer
        # guide, "Weighted routing": "Health checks and weighted routing"), each alike.
        live = {rid: Fraction(1) for rid, (c, _, w) in records.items() if not w and c not in failing}
        if live:
            out.notes.append("every weighted record's health check fails: DNS answers the standby records "
                             f"(weight 0: {', '.join(sorted(live))})")
    if not live and (failing or lost):
        # Route 53 treats a group whose every record is unhealthy as all healthy (Route 53 developer
        # guide, "How Amazon Route 53 chooses records when health checking is configured").
        out.notes.append("every record's health check fails: DNS answers with all of them again")
        failing, lost = {}, {}
        live = {rid: w for rid, (_, _, w) in records.items() if w} or {rid: Fraction(1) for rid in records}
    for rid, why in sorted(lost.items()):
        c, replica, w = records[rid]
        out.notes.append(f"DNS drops record {rid} (weight {w}): its replica's own check fails ({why}); "
                         f"{c} keeps its other records, so the replica's part moves to every record left, "
                         "in proportion to its weight")
    total = sum(live.values())
    shares = {}
    for rid, w in live.items():
        shares[records[rid][0]] = shares.get(records[rid][0], Fraction(0)) + w
    for c in carried:
        cl = clusters[c]
        share = shares.get(c, Fraction(0)) / total if total else Fraction(0)
        entered, listener, broken = cl.listener(gateways)
        prefix = [entered or "no gateway"]
        if c in failing:
            out.hops.append(Hop(c, 0, [f"dropped from DNS, its health check fails: {failing[c]}"], weight=Fraction(0)))
            continue
        if c not in shares and any(records[rid][0] == c for rid in lost):
            out.hops.append(Hop(c, 0, ["dropped from DNS: every record of it fails its replica's check"],
                                weight=Fraction(0)))
            continue
        if c not in shares:
            out.hops.append(Hop(c, 0, ["standby (DNS weight 0): answered only when every weighted record fails"],
                                weight=Fraction(0)))
            continue
        if broken:
            out.hops.append(Hop(c, 0, prefix, broken=broken, weight=share))
            continue
        for hop in cl.follow(svc_ns, listener, "/v1/", prefix, model=model if by_model or entry.get("fallback") else None):
            hop.weight *= share
            out.hops.append(hop)
    for hop, n in zip(out.hops, _per_mille([h.weight for h in out.hops]), strict=True):
        hop.share = n
    if world.names:
        out.load = _load(out, trace(run, host, (), model if by_model else None))
    return out


def _replica_load(t: Trace) -> dict[tuple[str, str], Fraction]:
    """(cluster, replica) -> its part of the host's requests: a pool's (or Service's) share spread
    alike over the replicas whose pods serve it (the picker balances by queue and cache load, so
    equal replicas take about equal parts)."""
    total = sum(h.weight for h in t.hops) or Fraction(1)
    out: dict[tuple[str, str], Fraction] = {}
    for h in t.hops:
        if h.lands == "gpu" and not h.broken and h.replicas:
            for name in h.replicas:
                out[(h.cluster, name)] = out.get((h.cluster, name), Fraction(0)) + h.weight / total / len(h.replicas)
    return out


def _load(t: Trace, planned: Trace) -> list[dict]:
    """Each replica still serving the host in `t`, with its share and its plan's (`planned`: the
    trace with nothing down), per mille: what lands on the survivors once DNS has acted."""
    now, plan = _replica_load(t), _replica_load(planned)
    return [{"cluster": c, "replica": n, "perMille": round(w * 1000), "plannedPerMille": round(plan.get((c, n), 0) * 1000)}
            for (c, n), w in sorted(now.items())]


def render(t: Trace) -> list[str]:
    """The trace as lines for the terminal."""
    lines = [f"trace {t.host} (service {t.service})" + (f", as if {', '.join(t.down)} were down" if t.down else "")]
    for d in t.dns:
        split = ("; a record per replica: " + ", ".join(f"{r['replica']} {r['weight']}%" for r in d["replicas"])
                 if d.get("replicas") else "")
        lines.append(f"  DNS {d['weight']}% -> {d.get('target', 'your own records')} -> {d['cluster']} ({d['gateway']})"
                     + split)
    for note in t.notes:
        lines.append(f"  {note}")
    for h in t.hops:
        if not h.lands and not h.broken:
            lines.append(f"  {h.cluster} 0.0%: " + " -> ".join(h.path))
            continue
        end = f"BROKEN: {h.broken}" if h.broken else {"gpu": "reaches GPU pods", "provider": "reaches the provider"}[h.lands]
        lines.append(f"  {h.cluster} {h.share / 10:.1f}%: " + " -> ".join(h.path) + f"  [{end}]")
    if t.load:
        parts = [f"{r['replica']} on {r['cluster']} {r['perMille'] / 10:.1f}%"
                 + (f" (plan {r['plannedPerMille'] / 10:.1f}%, {r['perMille'] / r['plannedPerMille']:.2f}x)"
                    if r["plannedPerMille"] else " (no share in the plan)") for r in t.load]
        lines.append("  load on the serving replicas after DNS detection: " + ", ".join(parts))
    j = t.to_json()["reaches"]
    degraded = f" ({j['degraded'] / 10:.1f}% degraded: decode-only)" if j.get("degraded") else ""
    lines.append(f"  reaches GPU pods {j['gpu'] / 10:.1f}%{degraded}, providers {j['provider'] / 10:.1f}%, "
                 f"broken {j['broken'] / 10:.1f}%")
    return lines
