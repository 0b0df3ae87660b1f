"""Routing objects (pure): a service's entry on one cluster, and the per-provider backend.

On every cluster that carries a share of a service (scheduler/traffic.py):
- an `HTTPRoute` (gateway.networking.k8s.io/v1) `<service>` on the cluster's inference Gateway: the
  service's hostname, `/v1/` paths, weighted backendRefs, one per target there: a deployment's
  shared InferencePool (KServe: its endpoint picker spreads requests over every ready pod of every
  replica there, render/picker.py), a native deployment's Service over its serving pods, or a
  provider's Backend;
- where a cluster's share is split between several targets and one of them needs a rule of its
  own (an InferencePool: Envoy AI Gateway v1.0.0 programs a pool only as the single backend of its
  rule, internal/extensionserver/post_route_modify.go; a provider whose base path is not /v1: Envoy
  Gateway applies a path rewrite only at rule level), the weighted rule sends that target's share
  to the cluster's hop Gateway (render/addons.py: a second Envoy, ClusterIP only) with a header
  naming the target, and `<service>-hop` on the hop Gateway holds one rule per such target, which
  strips the header. The hop Gateway's routes never lead back to it, so nothing can loop, and no
  client outside the cluster can reach it;
- with TLS, `<service>-http` on the `http` listener answers every request of the host with a 308
  to https (308 keeps the method and body, RFC 9110 15.4.9);
- `<service>-health` (with DNS): what a DNS health check probes, on the listener clients use;
- a `BackendTrafficPolicy` sizing Envoy's circuit breakers for long LLM streams;
- a `ReferenceGrant` in each deployment namespace other than the service's (cross-namespace
  backendRefs need one), and one in Envoy Gateway's namespace for the hop Service;
- per provider: an Envoy Gateway `Backend` (the provider's host, TLS verified against the system
  CAs with SNI), the provider's Host set by a core `URLRewrite` on its backendRef (Envoy Gateway
  v1.8.1 turns it into the weighted cluster's host_rewrite_literal, internal/xds/translator/route.go
  L374-380, but drops the hostname of a backend-level HTTPRouteFilter), and an `HTTPRouteFilter`
  injecting the API key from a Secret (credentialInjection works per backend: cluster.go L1046).
- with a fallback provider (`fallback: true`): the service route is an AIGatewayRoute whose rule
  holds the service's entry at priority 0 and the provider at priority 1, retried there on a
  failure (model_objects, fallback_objects, FALLBACK_RETRY), on every gateway cluster it may enter.
Requests pass through unchanged otherwise, so every target serves the model name clients send.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..api.service import CREDENTIAL_KEY
from . import native, picker
from .addons import ENVOY_NAMESPACE, GATEWAY_NAMESPACE, HOP_GATEWAY, HOP_PORT, HOP_SERVICE, is_own_gateway
from .names import MANAGED_BY, SecretValue, meta

SERVICE_LABEL = "modelplane.ai/service"
ENVOY = "gateway.envoyproxy.io"
GATEWAY_API = "gateway.networking.k8s.io"
INFERENCE_POOL_GROUP = "inference.networking.k8s.io"
KSERVE_POOL_PORT = 8000       # the port KServe's own route uses for an InferencePool backendRef
HOP_HEADER = "x-modelplane-target"   # set on the way to the hop Gateway; names the target, stripped there
# Envoy's circuit breakers default to 1,024 connections and requests per upstream cluster; an LLM
# stream holds one for minutes, and the hop funnels every pool share through one cluster. Room for
# more in flight than any vLLM replica runs or queues by default (--max-num-seqs <= 1024).
STREAMS_PER_REPLICA = 2048


def _labels(service: str) -> dict:
    return {**MANAGED_BY, SERVICE_LABEL: service}


def backend_name(service: str, provider: str) -> str:
    return f"{service}-{provider}"


@dataclass(frozen=True)
class Target:
    """One weighted target of a service on a cluster: its backendRef (without weight), whether it
    needs a rule of its own when it shares the cluster, and the filters that rule carries."""

    ref: dict
    weight: int
    own_rule: bool = False
    rule_filters: tuple = field(default=(), compare=False)

    def key(self, route_ns: str) -> str:
        """What the hop header says: `<namespace>.<name>` of the target (unique on a Gateway)."""
        return f"{self.ref.get('namespace', route_ns)}.{self.ref['name']}"

    def weighted(self) -> dict:
        return {**self.ref, "weight": self.weight}


def deployment_target(md, weight: int, route_ns: str) -> Target:
    """A deployment on one cluster: KServe's shared InferencePool (picked by its endpoint picker), or
    the native deployment's Service over its serving pods."""
    if md.backend == "kserve":
        ref = {"group": INFERENCE_POOL_GROUP, "kind": "InferencePool", "name": picker.pool_name(md.name),
               "port": KSERVE_POOL_PORT}
    else:
        ref = {"kind": "Service", "name": native.shared_service(md.name), "port": md.engine.port}
    if md.namespace != route_ns:
        ref["namespace"] = md.namespace
    return Target(ref, weight, own_rule=md.backend == "kserve")


def provider_target(service: str, provider, weight: int) -> Target:
    """A provider's Backend with its Host (a core URLRewrite on the backendRef) and, with an API key,
    the credential filter. A base path other than /v1 is rewritten by its own rule."""
    name = backend_name(service, provider.name)
    filters = []
    if provider.api_key is not None:
        filters.append({"type": "ExtensionRef", "extensionRef": {"group": ENVOY, "kind": "HTTPRouteFilter",
                                                                 "name": name}})
    rewrite = {"hostname": provider.host}
    if provider.base_path == "/v1":
        ref = {"group": ENVOY, "kind": "Backend", "name": name, "port": 443,
               "filters": [{"type": "URLRewrite", "urlRewrite": rewrite}, *filters]}
        return Target(ref, weight)
    rewrite["path"] = {"type": "ReplacePrefixMatch", "replacePrefixMatch": f"{provider.base_path}/"}
    ref = {"group": ENVOY, "kind": "Backend", "name": name, "port": 443, **({"filters": filters} if filters else {})}
    return Target(ref, weight, own_rule=True, rule_filters=({"type": "URLRewrite", "urlRewrite": rewrite},))


def _match(path: str = "/v1/", header: str | None = None) -> dict:
    match = {"path": {"type": "PathPrefix", "value": path}}
    if header is not None:
        match["headers"] = [{"type": "Exact", "name": HOP_HEADER, "value": header}]
    return match


# LLM responses stream for minutes: no gateway timeout (KServe's own route does the same).
NO_TIMEOUT = {"request": "0s", "backendRequest": "0s"}


def _rule(backend_refs: list[dict], filters=(), match: dict | None = None) -> dict:
    rule = {"matches": [match or _match()]}
    if filters:
        rule["filters"] = list(filters)
    return {**rule, "backendRefs": backend_refs, "timeouts": dict(NO_TIMEOUT)}


def http_route(service: str, namespace: str, hostname: str | None, gateway: dict, rules: list[dict],
               name: str | None = None, listener: str | None = None) -> dict:
    parent = {"group": GATEWAY_API, "kind": "Gateway", "name": gateway["name"], "namespace": gateway["namespace"]}
    if listener:
        parent["sectionName"] = listener
    spec = {"parentRefs": [parent]}
    if hostname:
        spec["hostnames"] = [hostname]
    spec["rules"] = rules
    return {"apiVersion": f"{GATEWAY_API}/v1", "kind": "HTTPRoute",
            "metadata": meta(name or service, namespace, _labels(service)), "spec": spec}


REDIRECT = {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
            "filters": [{"type": "RequestRedirect", "requestRedirect": {"scheme": "https", "statusCode": 308}}]}
HOP_GATEWAY_REF = {"name": HOP_GATEWAY, "namespace": GATEWAY_NAMESPACE}


def is_pool(ref: dict) -> bool:
    return ref.get("kind") == "InferencePool"


def needs_hop(targets: list[Target]) -> bool:
    """Whether a cluster's targets split its share and one of them needs a rule of its own."""
    return len(targets) > 1 and any(t.own_rule for t in targets)


def hop_ref(target: Target, route_ns: str) -> dict:
    """A target's weighted share on its way to the hop Gateway, tagged with the target."""
    return {"kind": "Service", "name": HOP_SERVICE, "namespace": ENVOY_NAMESPACE, "port": HOP_PORT,
            "weight": target.weight,
            "filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {
                "set": [{"name": HOP_HEADER, "value": target.key(route_ns)}]}}]}


STRIP_HOP = {"type": "RequestHeaderModifier", "requestHeaderModifier": {"remove": [HOP_HEADER]}}


def split_rule(targets: list[Target], route_ns: str, match: dict | None = None, filters=(),
               hop: bool | None = None) -> dict:
    """One rule over a cluster's targets: a single target directly (with its own rule filters), or a
    weighted split with own-rule targets through the hop (`hop`: whether they go through it, default
    when the split needs it)."""
    hop = needs_hop(targets) if hop is None else hop
    if len(targets) == 1 and not (hop and targets[0].own_rule):
        t = targets[0]
        return _rule([t.weighted()], [*filters, *t.rule_filters], match)
    refs = [hop_ref(t, route_ns) if hop and t.own_rule else t.weighted() for t in targets]
    return _rule(refs, filters, match)


def hop_rules(targets: list[Target], route_ns: str) -> list[dict]:
    """The hop Gateway's rules for one service: per own-rule target, any path with its header."""
    return [_rule([{**t.ref, "weight": 1}], [STRIP_HOP, *t.rule_filters], _match("/", t.key(route_ns)))
            for t in targets if t.own_rule]


def cluster_routes(service: str, namespace: str, hostname: str | None, gateway: dict,
                   targets: list[Target], model: str | None = None, fallback: str | None = None) -> list[dict]:
    """The routes of one service on one cluster: the service route (on `https` with TLS), with TLS
    the redirect on `http`, and where the split needs the hop, `<service>-hop` on the hop Gateway.
    With `model` (a hostname several services share, or a service with a fallback provider) the
    service route is an AIGatewayRoute matching that model name, whose share enters the hop Gateway
    (model_objects), and with `fallback` (its AIServiceBackend) the provider backs it up there. A
    cluster with no `targets` (a standby) routes to the fallback alone."""
    tls = bool(gateway.get("tls"))
    listener = "https" if tls else None
    hop = needs_hop(targets)
    if model is None:
        out = [http_route(service, namespace, hostname, gateway, [split_rule(targets, namespace)], listener=listener)]
    else:
        out = model_objects(service, namespace, hostname, gateway, model, listener, fallback, bool(targets))
    if tls:
        out.append(http_route(service, namespace, hostname, gateway, [REDIRECT], name=f"{service}-http",
                              listener="http"))
    if targets and (hop or model is not None):
        problem = hop_problem(f"{namespace}/{service}", "this cluster", gateway, targets, model is not None)
        if problem:
            raise ValueError(problem)     # assemble refuses it first, as input (services.hop_problems)
        rules = hop_rules(targets, namespace)
        if model is not None:
            # The entry rule: the model route's share, split here as the service route would split it.
            strip = {"type": "RequestHeaderModifier", "requestHeaderModifier": {"remove": [ENTRY_HEADER]}}
            entry = {"path": {"type": "PathPrefix", "value": "/"},
                     "headers": [{"type": "Exact", "name": ENTRY_HEADER, "value": entry_key(service, namespace)}]}
            rules.insert(0, split_rule(targets, namespace, entry, [strip]))
        # The model route's Host is the hop Service's name (AI Gateway rewrites it to its Backend's).
        out.append(http_route(service, namespace, None if model else hostname, HOP_GATEWAY_REF, rules,
                              name=f"{service}-hop", listener="http"))
    return out


# Model-name routing (a hostname several services share). Envoy AI Gateway v1.0.0 reads the OpenAI
# body's `model` into the `x-ai-eg-model` header and re-selects the route
# (internal/extproc/processor_impl.go L263-268, L301), but only on routes an AIGatewayRoute
# generated (internal/extensionserver/post_translate_modify.go L585-620); the generated HTTPRoute has
# the AIGatewayRoute's name and ends with a rule answering 404 to any other model
# (internal/controller/ai_gateway_route.go L120-159, L320-333). Its backends are AIServiceBackends
# over Envoy Gateway Backends only (api/v1beta1/ai_service_backend.go L59-67), so the service's share
# enters the cluster's hop Gateway through a Backend naming the hop Service, tagged with the service.
MODEL_HEADER = "x-ai-eg-model"
ENTRY_HEADER = "x-modelplane-service"   # set by the model route's backend; names the service; stripped at the hop
AI_GATEWAY = "aigateway.envoyproxy.io"


def entry_key(service: str, namespace: str) -> str:
    return f"{namespace}.{service}"


def entry_name(service: str) -> str:
    return f"{service}-entry"


def model_objects(service: str, namespace: str, hostname: str | None, gateway: dict, model: str,
                  listener: str | None, fallback: str | None = None, primary: bool = True) -> list[dict]:
    """The AIGatewayRoute answering to one model name on the hostname, and (`primary`: the cluster
    carries a share) the AIServiceBackend and Backend that carry its requests to the hop Gateway.
    With `fallback`, the provider's AIServiceBackend joins the rule at priority 1: Envoy AI Gateway
    v1.0.0 sets each backendRef's priority on its endpoints within the rule's one cluster
    (api/v1beta1/ai_gateway_route.go L362-372, internal/extensionserver/post_translate_modify.go
    L236-239), and a failed attempt is retried at the next priority (FALLBACK_RETRY)."""
    parent = {"group": GATEWAY_API, "kind": "Gateway", "name": gateway["name"], "namespace": gateway["namespace"],
              **({"sectionName": listener} if listener else {})}
    name = entry_name(service)
    refs = [{"name": name, **({"priority": 0} if fallback else {})}] if primary else []
    if fallback:
        refs.append({"name": fallback, "priority": 1})
    route = {"apiVersion": f"{AI_GATEWAY}/v1beta1", "kind": "AIGatewayRoute",
             "metadata": meta(service, namespace, _labels(service)),
             "spec": {"parentRefs": [parent], **({"hostnames": [hostname]} if hostname else {}),
                      "rules": [{"matches": [{"headers": [{"type": "Exact", "name": MODEL_HEADER, "value": model}]}],
                                 "backendRefs": refs, "timeouts": dict(NO_TIMEOUT)}]}}
    if not primary:
        return [route]
    backend = {"apiVersion": f"{AI_GATEWAY}/v1beta1", "kind": "AIServiceBackend",
               "metadata": meta(name, namespace, _labels(service)),
               "spec": {"schema": {"name": "OpenAI"},
                        "backendRef": {"group": ENVOY, "kind": "Backend", "name": name},
                        # set overwrites a client's value; a client's target header could pick a
                        # pool on the hop past the weights (the main Gateway's own refs `set` it)
                        "headerMutation": {"set": [{"name": ENTRY_HEADER, "value": entry_key(service, namespace)}],
                                           "remove": [HOP_HEADER]}}}
    hop = {"apiVersion": f"{ENVOY}/v1alpha1", "kind": "Backend", "metadata": meta(name, namespace, _labels(service)),
           "spec": {"endpoints": [{"fqdn": {"hostname": f"{HOP_SERVICE}.{ENVOY_NAMESPACE}.svc.cluster.local",
                                            "port": HOP_PORT}}]}}
    return [route, backend, hop]


def hop_problem(service: str, cluster: str, gateway: dict, targets: list[Target], by_model: bool = False) -> str | None:
    """Why a cluster cannot carry a service's split, or None: the split needs the hop Gateway (several
    targets, one of them needing a rule of its own; or the service shares its hostname, `by_model`)
    and the cluster serves through a Gateway of its own (a gatewayRef), which has none."""
    if not (needs_hop(targets) or by_model) or gateway.get("hop"):
        return None
    if by_model:
        return (f"service {service} shares its hostname, routed by model name through the hop Gateway, but {cluster} "
                f"serves through its own Gateway {gateway.get('namespace')}/{gateway.get('name')} (gatewayRef), "
                "which has none")
    names = ", ".join(t.ref["name"] for t in targets)
    return (f"service {service} splits its share on cluster {cluster} between {names}, which need a rule each, but "
            f"{cluster} serves through its own Gateway {gateway.get('namespace')}/{gateway.get('name')} (gatewayRef), "
            "which has no modelplane hop Gateway to split them")


def circuit_breaker(service: str, namespace: str, routes: list[str], replicas: int, name: str | None = None,
                    retry: dict | None = None) -> dict:
    """Envoy Gateway's circuit breakers for the service's routes on one cluster, sized for long
    streams; with `retry`, the fallback's retry policy too (one policy per route: Envoy Gateway
    applies only one BackendTrafficPolicy to a route)."""
    n = max(1, replicas) * STREAMS_PER_REPLICA
    spec = {"targetRefs": [{"group": GATEWAY_API, "kind": "HTTPRoute", "name": r} for r in routes],
            "circuitBreaker": {"maxConnections": n, "maxPendingRequests": n, "maxParallelRequests": n}}
    if retry:
        spec["retry"] = retry
    return {"apiVersion": f"{ENVOY}/v1alpha1", "kind": "BackendTrafficPolicy",
            "metadata": meta(name or service, namespace, _labels(service)), "spec": spec}


# How a failed attempt reaches the fallback: Envoy Gateway v1.8.1 turns numAttemptsPerPriority into
# Envoy's previous_priorities retry predicate (internal/xds/translator/route.go L811-823), so the
# retry goes to the next priority, the provider (AI Gateway's own provider_fallback example does the
# same, examples/provider_fallback/fallback.yaml at v1.0.0). The triggers cover what the primary
# answers when no replica can: a hop Envoy that is gone (connect-failure), a pool whose picker finds
# no ready pod or is down (500/503), no upstream (503). No per-try timeout: LLM streams are long.
FALLBACK_RETRY = {"numRetries": 1, "numAttemptsPerPriority": 1,
                  "retryOn": {"triggers": ["connect-failure", "retriable-status-codes", "reset"],
                              "httpStatusCodes": [500, 502, 503, 504]}}


def fallback_objects(service: str, namespace: str, provider) -> list[dict]:
    """The fallback provider as Envoy AI Gateway reaches it: an AIServiceBackend over the provider's
    Backend (its base path as the schema prefix; AI Gateway's default prefix is v1,
    internal/controller/gateway.go L171) and, with an API key, a BackendSecurityPolicy reading the
    Secret's `apiKey` key (internal/controller/ai_gateway_route.go L45), which AI Gateway sends as
    `Authorization: Bearer` (internal/backendauth/api_key.go L29-31)."""
    name = backend_name(service, provider.name)
    lbls = _labels(service)
    schema = {"name": "OpenAI", **({"prefix": provider.base_path} if provider.base_path != "/v1" else {})}
    out = [{"apiVersion": f"{AI_GATEWAY}/v1beta1", "kind": "AIServiceBackend", "metadata": meta(name, namespace, lbls),
            "spec": {"schema": schema, "backendRef": {"group": ENVOY, "kind": "Backend", "name": name}}}]
    if provider.api_key is not None:
        out.append({"apiVersion": f"{AI_GATEWAY}/v1beta1", "kind": "BackendSecurityPolicy",
                    "metadata": meta(name, namespace, lbls),
                    "spec": {"targetRefs": [{"group": AI_GATEWAY, "kind": "AIServiceBackend", "name": name}],
                             "type": "APIKey", "apiKey": {"secretRef": {"name": f"{name}-credential"}}}})
    return out


HEALTH_PREFIX = "/modelplane/health"


def health_path(service: str, namespace: str) -> str:
    return f"{HEALTH_PREFIX}/{namespace}/{service}"


def picker_path(service: str, namespace: str) -> str:
    """The second probe of a P/D deployment's cluster: through its InferencePool and endpoint picker."""
    return f"{health_path(service, namespace)}/picker"


def replica_path(service: str, namespace: str, deployment: str, index: int) -> str:
    """The probe of one replica, where its cluster's record is split per replica (review N11)."""
    return f"{health_path(service, namespace)}/replicas/{deployment}/{index}"


def replica_target(md, index: int, route_ns: str) -> Target:
    """One replica's serving pods on its cluster: KServe, the probe Service over them
    (picker.replica_probe_service; decode pods for P/D); native, the replica's own Service."""
    if md.backend == "kserve":
        ref = {"kind": "Service", "name": picker.replica_probe(md.name, index), "port": picker.TARGET_PORT}
    else:
        ref = {"kind": "Service", "name": f"{md.name}-{index}-decode", "port": md.engine.port}
    if md.namespace != route_ns:
        ref["namespace"] = md.namespace
    return Target(ref, 1)


def health_route(service: str, namespace: str, hostnames: list[str], gateway: dict, targets: list[Target],
                 hop: bool = False, through_pickers: list[Target] | None = None,
                 replicas: list[tuple[str, Target]] | None = None) -> dict:
    """What a DNS health check asks on one cluster, on the listener clients use (so a missing
    certificate fails it): `GET <health path>` rewritten to `/health` and sent where the service's
    requests go on this cluster — a KServe deployment's InferencePool (its picker answers with a
    ready pod, and 500 when it has none: llm-d-router@v0.9.0 pkg/epp/handlers/request.go L41-64),
    its decode pods for P/D (a ready prefill pod must not make the cluster look healthy), a native
    deployment's Service. With `hop` (the service's requests reach its pools through the hop
    Gateway here) the pools are probed through the hop too, by the same header rules, so a hop
    Envoy that is down or a hop rule that is missing fails the check (review N3).
    `through_pickers` (a P/D deployment here, Route 53): a second rule on `picker_path`, sent where
    client requests go (its pool, so its picker), which a second check probes (review N4).
    `replicas` (path, target): a rule per replica of a cluster whose record is split per replica,
    straight to that replica's pods; Route 53 ANDs each with the checks above (review N11)."""
    rewrite = {"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplaceFullPath", "replaceFullPath": "/health"}}}
    match = {"path": {"type": "Exact", "value": health_path(service, namespace)}}
    if targets:
        rule = split_rule(targets, namespace, match, [rewrite], hop=hop)
    else:   # nothing of ours to probe here: the Gateway answers itself (gateway_health)
        rule = {"matches": [match], "filters": [{"type": "ExtensionRef", "extensionRef": {
            "group": ENVOY, "kind": "HTTPRouteFilter", "name": f"{service}-health"}}]}
    rules = [rule]
    if through_pickers:
        rules.append(split_rule(through_pickers, namespace, {"path": {"type": "Exact", "value": picker_path(
            service, namespace)}}, [rewrite], hop=hop))
    for path, target in replicas or ():
        rules.append(_rule([target.weighted()], [rewrite], {"path": {"type": "Exact", "value": path}}))
    tls = bool(gateway.get("tls"))
    parent = {"group": GATEWAY_API, "kind": "Gateway", "name": gateway["name"], "namespace": gateway["namespace"],
              "sectionName": "https" if tls else "http"}
    return {"apiVersion": f"{GATEWAY_API}/v1", "kind": "HTTPRoute",
            "metadata": meta(f"{service}-health", namespace, _labels(service)),
            "spec": {"parentRefs": [parent], "hostnames": hostnames, "rules": rules}}


def gateway_health(service: str, namespace: str) -> dict:
    """Where a cluster forwards only to a provider (a provider's share, or a fallback's standby),
    its DNS check asks the Gateway itself: an Envoy Gateway HTTPRouteFilter `directResponse` 200
    (v1.8.1 api/v1alpha1/httproutefilter_types.go L44, L77-91) on the health path, so the check
    still fails with the cluster, its Gateway or its certificate (the provider is not probed: a
    check through it would spend its quota)."""
    return {"apiVersion": f"{ENVOY}/v1alpha1", "kind": "HTTPRouteFilter",
            "metadata": meta(f"{service}-health", namespace, _labels(service)),
            "spec": {"directResponse": {"statusCode": 200, "contentType": "text/plain",
                                        "body": {"type": "Inline", "inline": "gateway ok"}}}}


def rule_problems(route: dict) -> list[str]:
    """What Envoy Gateway + AI Gateway would refuse or mis-route in one HTTPRoute: a rule with more
    than one InferencePool; an InferencePool beside another backend (its endpoint picker takes every
    request, so the other weights are never served); a provider Backend that would receive the
    client's Host (only a core URLRewrite hostname on its backendRef, or on its own rule, reaches a
    weighted backend) or a path rewrite on a backendRef, which Envoy Gateway v1.8.1 drops."""
    out = []
    name = (route.get("metadata") or {}).get("name")
    for i, rule in enumerate((route.get("spec") or {}).get("rules") or []):
        refs = rule.get("backendRefs") or []
        pools = [r.get("name") for r in refs if is_pool(r)]
        if len(pools) > 1:
            out.append(f"HTTPRoute {name} rule {i} references {len(pools)} InferencePools ({', '.join(pools)}); "
                       "Envoy AI Gateway accepts at most one per rule and then freezes every route of the Gateway")
        elif pools and len(refs) > 1:
            out.append(f"HTTPRoute {name} rule {i} mixes InferencePool {pools[0]} with {len(refs) - 1} other "
                       "backend(s); the pool's endpoint picker takes every request, so their weights are never served")
        rule_host = any((f.get("urlRewrite") or {}).get("hostname") for f in rule.get("filters") or [])
        for ref in refs:
            rewrites = [f.get("urlRewrite") or {} for f in ref.get("filters") or [] if f.get("type") == "URLRewrite"]
            if any("path" in r for r in rewrites):
                out.append(f"HTTPRoute {name} rule {i}: backendRef {ref.get('name')} rewrites the path, which Envoy "
                           "Gateway drops on a weighted backend; give it a rule of its own")
            if ref.get("kind") == "Backend" and not rule_host and not any(r.get("hostname") for r in rewrites):
                out.append(f"HTTPRoute {name} rule {i}: provider Backend {ref.get('name')} would receive the client's "
                           "Host; set a URLRewrite hostname on its backendRef")
    return out


def reference_grant(from_namespace: str, to_namespace: str) -> dict:
    """Lets HTTPRoutes of `from_namespace` send traffic to InferencePools and Services here."""
    return {"apiVersion": f"{GATEWAY_API}/v1beta1", "kind": "ReferenceGrant",
            "metadata": meta(f"modelplane-routes-from-{from_namespace}", to_namespace, MANAGED_BY),
            "spec": {"from": [{"group": GATEWAY_API, "kind": "HTTPRoute", "namespace": from_namespace}],
                     "to": [{"group": INFERENCE_POOL_GROUP, "kind": "InferencePool"}, {"group": "", "kind": "Service"}]}}


def hop_grant(service: str, from_namespace: str) -> dict:
    """Lets one service's route send shares to the hop Service (one grant per service, so services
    never share an object)."""
    return {"apiVersion": f"{GATEWAY_API}/v1beta1", "kind": "ReferenceGrant",
            "metadata": meta(f"modelplane-hop-{from_namespace}-{service}", ENVOY_NAMESPACE, _labels(service)),
            "spec": {"from": [{"group": GATEWAY_API, "kind": "HTTPRoute", "namespace": from_namespace}],
                     "to": [{"group": "", "kind": "Service", "name": HOP_SERVICE}]}}


FALLBACK_KEY = "apiKey"     # the Secret key an AI Gateway BackendSecurityPolicy of type APIKey reads


def provider_objects(service: str, namespace: str, provider, weighted: bool = True,
                     fallback: bool = False) -> list[dict]:
    """Backend and, with an API key, the credential HTTPRouteFilter of a `weighted` share and (for a
    config-key API key) its Secret, which also holds the bare key for a `fallback`'s policy."""
    name = backend_name(service, provider.name)
    lbls = _labels(service)
    objects = [{"apiVersion": f"{ENVOY}/v1alpha1", "kind": "Backend", "metadata": meta(name, namespace, lbls),
                "spec": {"endpoints": [{"fqdn": {"hostname": provider.host, "port": provider.port}}],
                         "tls": {"sni": provider.host, "wellKnownCACertificates": "System"}}}]
    if fallback:
        objects += fallback_objects(service, namespace, provider)
    key = provider.api_key
    if key is None:
        return objects
    secret = f"{name}-credential" if key.secret else key.secret_key_ref.name
    if weighted:
        objects.append({"apiVersion": f"{ENVOY}/v1alpha1", "kind": "HTTPRouteFilter",
                        "metadata": meta(name, namespace, lbls),
                        "spec": {"credentialInjection": {"header": key.header, "overwrite": True,
                                                         "credential": {"valueRef": {"name": secret}}}}})
    if key.secret:
        prefix = f"{key.scheme} " if key.scheme else ""
        data = {**({CREDENTIAL_KEY: SecretValue(key.secret, prefix)} if weighted else {}),
                **({FALLBACK_KEY: SecretValue(key.secret)} if fallback else {})}
        objects.append({"apiVersion": "v1", "kind": "Secret", "metadata": meta(secret, namespace, lbls),
                        "type": "Opaque", "stringData": data})
    return objects


def cluster_targets(svc, routes, deployments: dict, providers: dict) -> dict[str, list[Target]]:
    """cluster -> the service's targets there, in the order traffic.py lists its backends."""
    out: dict[str, list[Target]] = {}
    for b in routes.backends:
        if b.kind == "deployment":
            target = deployment_target(deployments[b.name], b.units, svc.namespace)
        else:
            target = provider_target(svc.name, providers[b.name], b.units)
        out.setdefault(b.cluster, []).append(target)
    return out


def probe_targets(svc, routes, deployments: dict) -> dict[str, list[Target]]:
    """cluster -> what a DNS health check of the service probes there: its deployments' shared pools
    (P/D: the decode pods' Service) and native Services, weighted like the service. A cluster with
    no deployment of the service (a provider's share, a fallback's standby) is absent: its check
    asks the Gateway itself (gateway_health)."""
    out: dict[str, list[Target]] = {}
    for b in routes.backends:
        if b.kind != "deployment":
            continue
        md = deployments[b.name]
        target = deployment_target(md, b.units, svc.namespace)
        if md.backend == "kserve" and md.disaggregated:
            ref = {"kind": "Service", "name": picker.decode_service(md.name), "port": picker.TARGET_PORT,
                   **({"namespace": md.namespace} if md.namespace != svc.namespace else {})}
            target = Target(ref, b.units)
        out.setdefault(b.cluster, []).append(target)
    return out


def picker_probes(svc, routes, deployments: dict) -> dict[str, list[Target]]:
    """cluster -> the targets a second check probes where the first one skips a picker: a cluster
    with a P/D KServe deployment of the service, whose first check asks its decode pods only. The
    second asks what clients use, the pools: a bodyless request gets a random pod of the pool, prefill
    or decode, and 500 with none or with the picker down (llm-d-router@v0.9.0
    pkg/epp/handlers/request.go L41-47, L60-63; pkg/epp/requestcontrol/director.go L571-578; AI
    Gateway's ext_proc is fail-closed, ai-gateway@v1.0.0 internal/extensionserver/inferencepool.go
    L295-315). Only a Route 53 CALCULATED check can AND the two (render/stack.py)."""
    out: dict[str, list[Target]] = {}
    pd = {b.cluster for b in routes.backends if b.kind == "deployment"
          and deployments[b.name].backend == "kserve" and deployments[b.name].disaggregated}
    for b in routes.backends:
        if b.kind == "deployment" and b.cluster in pd:
            out.setdefault(b.cluster, []).append(deployment_target(deployments[b.name], b.units, svc.namespace))
    return out


def replica_probes(svc, routes, deployments: dict, split: dict) -> dict[str, list[tuple[str, Target]]]:
    """cluster -> (path, target) of each replica probe, for the clusters whose record is split per
    replica (`split`: traffic.replica_weights of the service)."""
    return {c: [(replica_path(svc.name, svc.namespace, key, i), replica_target(deployments[key], i, svc.namespace))
                for key, i in sorted(parts)] for c, parts in split.items()}


def service_objects(svc, routes, deployments: dict, providers: dict, gateways: dict,
                    health_hosts: dict | None = None, model: str | None = None,
                    and_pickers: bool = False, split: dict | None = None) -> dict[str, list[dict]]:
    """cluster -> the service's objects there. `routes`: traffic.Routes of the service; `deployments`:
    key -> ModelDeployment; `providers`: name -> Provider; `gateways`: cluster -> its Gateway ref;
    `health_hosts`: cluster -> the hostnames DNS health checks use there (no health route without);
    `model`: the model name it answers to when it shares its hostname (routed by model name);
    `and_pickers`: DNS can AND two checks (Route 53), so a P/D cluster is also probed through its pools;
    `split`: the clusters whose record is split per replica (Route 53), each replica probed too."""
    probes = probe_targets(svc, routes, deployments) if health_hosts else {}
    per_replica = replica_probes(svc, routes, deployments, split) if health_hosts and split else {}
    pickers = picker_probes(svc, routes, deployments) if health_hosts and and_pickers else {}
    replicas: dict[str, int] = {}
    for b in routes.backends:
        replicas[b.cluster] = replicas.get(b.cluster, 0) + len(b.replicas)
    fallback = backend_name(svc.name, routes.fallback) if routes.fallback else None
    by_cluster = cluster_targets(svc, routes, deployments, providers)
    if fallback:
        by_cluster.update({c: [] for c in routes.standby})
    out: dict[str, list[dict]] = {}
    for cluster, targets in by_cluster.items():
        gateway = gateways[cluster]
        objects = cluster_routes(svc.name, svc.namespace, svc.hostname, gateway, targets, model, fallback)
        # The pools are reached through the hop here; the health check takes the same way (N3).
        via_hop = bool(targets) and (needs_hop(targets) or model is not None)
        probe_hop = via_hop and bool((health_hosts or {}).get(cluster)) and \
            any(t.own_rule for t in [*probes.get(cluster, []), *pickers.get(cluster, [])])
        if probe_hop:
            hop_route = next(o for o in objects if o["metadata"]["name"] == f"{svc.name}-hop")
            if "hostnames" in hop_route["spec"]:      # Envoy keeps the check's Host on its way to the hop
                hop_route["spec"]["hostnames"] += health_hosts[cluster]
        if needs_hop(targets) or probe_hop:
            objects.append(hop_grant(svc.name, svc.namespace))
        if is_own_gateway(gateway):
            names = [r["metadata"]["name"] for r in objects if r["kind"] in ("HTTPRoute", "AIGatewayRoute")
                     and not r["metadata"]["name"].endswith("-http")]
            if fallback:
                # The retry belongs to the model route alone (a retry at the hop would re-send to the pool).
                objects.append(circuit_breaker(svc.name, svc.namespace, [svc.name], replicas.get(cluster, 0),
                                               retry=FALLBACK_RETRY))
                names.remove(svc.name)
                if names:
                    objects.append(circuit_breaker(svc.name, svc.namespace, names, replicas.get(cluster, 0),
                                                   name=f"{svc.name}-hop"))
            else:
                objects.append(circuit_breaker(svc.name, svc.namespace, names, replicas.get(cluster, 0)))
        weighted = [b.name for b in routes.backends if b.cluster == cluster and b.kind == "provider"]
        for name in weighted + ([routes.fallback] if fallback and routes.fallback not in weighted else []):
            objects += provider_objects(svc.name, svc.namespace, providers[name], name in weighted,
                                        name == routes.fallback)
        if (health_hosts or {}).get(cluster):
            objects.append(health_route(svc.name, svc.namespace, health_hosts[cluster], gateway,
                                        probes.get(cluster, []), hop=via_hop, through_pickers=pickers.get(cluster),
                                        replicas=per_replica.get(cluster)))
            if cluster not in probes:
                objects.append(gateway_health(svc.name, svc.namespace))
        out[cluster] = objects
    return out


def grants(routes_by_service: dict, services: dict, deployments: dict) -> dict[str, list[dict]]:
    """cluster -> the ReferenceGrants all services' routes need there (one per namespace pair)."""
    pairs: set[tuple[str, str, str]] = set()
    for key, routes in routes_by_service.items():
        svc = services[key]
        for b in routes.backends:
            if b.kind == "deployment" and deployments[b.name].namespace != svc.namespace:
                pairs.add((b.cluster, svc.namespace, deployments[b.name].namespace))
    out: dict[str, list[dict]] = {}
    for cluster, src, dst in sorted(pairs):
        out.setdefault(cluster, []).append(reference_grant(src, dst))
    return out
