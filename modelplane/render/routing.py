"""Routing objects (pure): a service's entry on one cluster, and the per-provider backend.

On every cluster that carries a share of a service (scheduler/traffic.py):
- an `HTTPRoute` (gateway.networking.k8s.io/v1) on the cluster's inference Gateway: the service's
  hostname, `/v1/` paths, backendRefs to the InferencePool KServe made for each replica there
  (`<replica>-inference-pool`; the pool's endpoint picker then chooses the pod and the
  prefill/decode pair) or, on the native backend, the replica's Service; and to providers.
  Envoy AI Gateway v1.0.0 programs an InferencePool only as the single backend of its rule
  (`internal/extensionserver/post_route_modify.go`: "at most one inferencepool can be referenced
  per route rule"; a failed hook stops Envoy Gateway from publishing any route of the Gateway),
  and a pool's rule hands every request to its endpoint picker, so a weight beside a pool is
  never honoured. When a cluster's share goes to more than one target and one of them is a
  pool, the weighted split therefore happens one hop earlier: the service route's weighted
  backendRefs send a pool's share back through the cluster's own Envoy (the loopback Service)
  with a header naming the pool, and a second route, `<service>-pools`, sends each header to its
  pool in a rule of its own (see docs/routing.md);
- a `ReferenceGrant` in each deployment namespace other than the service's (cross-namespace
  backendRefs need one);
- per provider: an Envoy Gateway `Backend` (the provider's host, TLS verified against the system
  CAs with SNI), an `HTTPRouteFilter` that rewrites Host to the provider and injects the API key
  from a Secret (Envoy Gateway credentialInjection: the Secret's `credential` key holds the header
  value), and that Secret when the key comes from a secret stack config value.
Requests pass through unchanged, so every target serves the model name clients send.
"""
from __future__ import annotations

from ..api.service import CREDENTIAL_KEY
from .addons import ENVOY_NAMESPACE, LOOPBACK_PORT, LOOPBACK_SERVICE
from .kserve import inference_pool, workload_service
from .names import MANAGED_BY, SecretValue, meta

SERVICE_LABEL = "modelplane.ai/service"
ENVOY = "gateway.envoyproxy.io"
GATEWAY_API = "gateway.networking.k8s.io"
INFERENCE_POOL_GROUP = "inference.networking.k8s.io"
KSERVE_POOL_PORT = 8000       # the port KServe's own route uses for its InferencePool
POOL_HEADER = "x-modelplane-pool"   # set on the loopback hop; names the pool a request goes to


def _labels(service: str) -> dict:
    return {**MANAGED_BY, SERVICE_LABEL: service}


def backend_name(service: str, provider: str) -> str:
    return f"{service}-{provider}"


def deployment_ref(namespace: str, replica_name: str, backend: str, port: int, weight: int, route_ns: str) -> dict:
    """A replica as a weighted backend: KServe's InferencePool, or the native decode Service."""
    if backend == "kserve":
        ref = {"group": INFERENCE_POOL_GROUP, "kind": "InferencePool", "name": inference_pool(replica_name),
               "port": KSERVE_POOL_PORT}
    else:
        ref = {"kind": "Service", "name": decode_service(replica_name), "port": port}
    if namespace != route_ns:
        ref["namespace"] = namespace
    return {**ref, "weight": weight}


def decode_service(replica_name: str) -> str:
    """A native replica's entry: the Service in front of its decode (or unified) pods."""
    return f"{replica_name}-decode"


def provider_ref(service: str, provider: str, weight: int) -> dict:
    name = backend_name(service, provider)
    return {"group": ENVOY, "kind": "Backend", "name": name, "port": 443, "weight": weight,
            "filters": [{"type": "ExtensionRef", "extensionRef": {"group": ENVOY, "kind": "HTTPRouteFilter",
                                                                  "name": name}}]}


def _rule(backend_refs: list[dict], header: str | None = None) -> dict:
    match = {"path": {"type": "PathPrefix", "value": "/v1/"}}
    if header is not None:
        match["headers"] = [{"type": "Exact", "name": POOL_HEADER, "value": header}]
    # LLM responses stream for minutes: no gateway timeout (KServe's own route does the same).
    return {"matches": [match], "backendRefs": backend_refs, "timeouts": {"request": "0s", "backendRequest": "0s"}}


def http_route(service: str, namespace: str, hostname: str | None, gateway: dict, backend_refs: list[dict],
               name: str | None = None, rules: list[dict] | None = None, listener: str | None = None) -> dict:
    parent = {"group": GATEWAY_API, "kind": "Gateway", "name": gateway["name"], "namespace": gateway["namespace"]}
    if listener:
        parent["sectionName"] = listener
    spec = {"parentRefs": [parent]}
    if hostname:
        spec["hostnames"] = [hostname]
    spec["rules"] = rules if rules is not None else [_rule(backend_refs)]
    return {"apiVersion": f"{GATEWAY_API}/v1", "kind": "HTTPRoute",
            "metadata": meta(name or service, namespace, _labels(service)), "spec": spec}


REDIRECT = {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
            "filters": [{"type": "RequestRedirect", "requestRedirect": {"scheme": "https", "statusCode": 308}}]}


def is_pool(ref: dict) -> bool:
    return ref.get("kind") == "InferencePool"


def pool_key(ref: dict, route_ns: str) -> str:
    """The header value that names one pool: `<namespace>.<pool>` (unique on a Gateway)."""
    return f"{ref.get('namespace', route_ns)}.{ref['name']}"


def loopback_ref(ref: dict, route_ns: str) -> dict:
    """A pool's weighted share as a hop back through the cluster's Envoy, tagged with the pool."""
    return {"kind": "Service", "name": LOOPBACK_SERVICE, "namespace": ENVOY_NAMESPACE, "port": LOOPBACK_PORT,
            "weight": ref["weight"],
            "filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {
                "set": [{"name": POOL_HEADER, "value": pool_key(ref, route_ns)}]}}]}


def needs_hop(refs: list[dict]) -> bool:
    """Whether a cluster's backendRefs split between a pool and other targets (the loopback hop)."""
    return len(refs) > 1 and any(is_pool(r) for r in refs)


def cluster_routes(service: str, namespace: str, hostname: str | None, gateway: dict,
                   refs: list[dict]) -> list[dict]:
    """The HTTPRoutes of one service on one cluster. One rule when its targets can share one: a
    single target, or weighted Services and provider Backends. With a pool among several targets,
    the service route splits by weight (each pool's share through the loopback hop) and
    `<service>-pools` holds one rule per pool, matched on the hop's header."""
    pools = [r for r in refs if is_pool(r)]
    hop = needs_hop(refs)
    split = [loopback_ref(r, namespace) if is_pool(r) and hop else r for r in refs]
    per_pool = [_rule([{**r, "weight": 1}], pool_key(r, namespace)) for r in pools] if hop else []
    if gateway.get("tls"):
        # Clients come in on HTTPS; on HTTP the host's requests are redirected, except the loopback
        # hop's (they carry the pool header, a more specific match in the same virtual host).
        return [http_route(service, namespace, hostname, gateway, split, listener="https"),
                http_route(service, namespace, hostname, gateway, [], name=f"{service}-http",
                           rules=[*per_pool, REDIRECT], listener="http")]
    out = [http_route(service, namespace, hostname, gateway, split)]
    if hop:
        out.append(http_route(service, namespace, hostname, gateway, [], name=f"{service}-pools", rules=per_pool))
    return out


HEALTH_PREFIX = "/modelplane/health"
KSERVE_WORKLOAD_PORT = 8000   # KServe's `<name>-kserve-workload-svc`, which its own catch-all rules use


def health_path(service: str, namespace: str) -> str:
    return f"{HEALTH_PREFIX}/{namespace}/{service}"


def health_route(service: str, namespace: str, hostnames: list[str], gateway: dict, refs: list[dict]) -> dict:
    """What a DNS health check asks on one cluster: the service's replicas there answer vLLM's
    `/health`, reached through their Services (KServe's workload Service, the native decode Service)
    so the check sees the pods without the endpoint picker. One rule, no pool: a plain weighted split."""
    rule = {"matches": [{"path": {"type": "Exact", "value": health_path(service, namespace)}}],
            "filters": [{"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplaceFullPath",
                                                                         "replaceFullPath": "/health"}}}],
            "backendRefs": refs}
    parent = {"group": GATEWAY_API, "kind": "Gateway", "name": gateway["name"], "namespace": gateway["namespace"],
              "sectionName": "http"}
    return {"apiVersion": f"{GATEWAY_API}/v1", "kind": "HTTPRoute",
            "metadata": meta(f"{service}-health", namespace, _labels(service)),
            "spec": {"parentRefs": [parent], "hostnames": hostnames, "rules": [rule]}}


def rule_problems(route: dict) -> list[str]:
    """What Envoy Gateway + AI Gateway would refuse or mis-route in one HTTPRoute: a rule with more
    than one InferencePool, or an InferencePool beside another backend (its endpoint picker takes
    every request, so the other weights are never served)."""
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
    return out


def reference_grant(from_namespace: str, to_namespace: str) -> dict:
    """Lets HTTPRoutes of `from_namespace` send traffic to InferencePools and Services here."""
    return {"apiVersion": f"{GATEWAY_API}/v1beta1", "kind": "ReferenceGrant",
            "metadata": meta(f"modelplane-routes-from-{from_namespace}", to_namespace, MANAGED_BY),
            "spec": {"from": [{"group": GATEWAY_API, "kind": "HTTPRoute", "namespace": from_namespace}],
                     "to": [{"group": INFERENCE_POOL_GROUP, "kind": "InferencePool"}, {"group": "", "kind": "Service"}]}}


def loopback_grant(service: str, from_namespace: str) -> dict:
    """Lets one service's route send a pool's share to the loopback Service (one grant per service,
    so services never share an object)."""
    return {"apiVersion": f"{GATEWAY_API}/v1beta1", "kind": "ReferenceGrant",
            "metadata": meta(f"modelplane-loopback-{from_namespace}-{service}", ENVOY_NAMESPACE, _labels(service)),
            "spec": {"from": [{"group": GATEWAY_API, "kind": "HTTPRoute", "namespace": from_namespace}],
                     "to": [{"group": "", "kind": "Service", "name": LOOPBACK_SERVICE}]}}


def provider_objects(service: str, namespace: str, provider) -> list[dict]:
    """Backend, HTTPRouteFilter and (for a config-key API key) the credential Secret."""
    name = backend_name(service, provider.name)
    lbls = _labels(service)
    backend = {"apiVersion": f"{ENVOY}/v1alpha1", "kind": "Backend", "metadata": meta(name, namespace, lbls),
               "spec": {"endpoints": [{"fqdn": {"hostname": provider.host, "port": provider.port}}],
                        "tls": {"sni": provider.host, "wellKnownCACertificates": "System"}}}
    rewrite = {"hostname": {"type": "Backend"}}
    if provider.base_path != "/v1":
        rewrite["path"] = {"type": "ReplaceRegexMatch",
                           "replaceRegexMatch": {"pattern": "^/v1", "substitution": provider.base_path}}
    spec = {"urlRewrite": rewrite}
    objects = [backend]
    key = provider.api_key
    if key is not None:
        secret = f"{name}-credential" if key.secret else key.secret_key_ref.name
        spec["credentialInjection"] = {"header": key.header, "overwrite": True,
                                       "credential": {"valueRef": {"name": secret}}}
        if key.secret:
            prefix = f"{key.scheme} " if key.scheme else ""
            objects.append({"apiVersion": "v1", "kind": "Secret", "metadata": meta(secret, namespace, lbls),
                            "type": "Opaque", "stringData": {CREDENTIAL_KEY: SecretValue(key.secret, prefix)}})
    objects.insert(1, {"apiVersion": f"{ENVOY}/v1alpha1", "kind": "HTTPRouteFilter",
                       "metadata": meta(name, namespace, lbls), "spec": spec})
    return objects


def _replica_name(md, b) -> str:
    from .names import replica_name, workload_name   # local: names imports nothing of routing

    return workload_name(md, b.replica, b.cluster) if md.backend == "kserve" else replica_name(md.name, b.replica)


def health_targets(svc, routes, deployments: dict) -> dict[str, list[dict]]:
    """cluster -> the backendRefs a DNS health check probes there: each replica's own Service
    (KServe's workload Service, the native decode Service). A cluster with nothing to probe (a
    provider's share only, or KServe names too long to predict) is absent: its record goes unchecked."""
    out: dict[str, list[dict]] = {}
    for b in routes.backends:
        if b.kind != "deployment":
            continue
        md = deployments[b.name]
        name = _replica_name(md, b)
        target = workload_service(name) if md.backend == "kserve" else decode_service(name)
        if target is not None:
            out.setdefault(b.cluster, []).append(
                {"kind": "Service", "name": target, "weight": 1,
                 **({"namespace": md.namespace} if md.namespace != svc.namespace else {}),
                 "port": KSERVE_WORKLOAD_PORT if md.backend == "kserve" else md.engine.port})
    return out


def service_objects(svc, routes, deployments: dict, providers: dict, gateways: dict,
                    health_hosts: dict | None = None) -> dict[str, list[dict]]:
    """cluster -> the service's objects there. `routes`: traffic.Routes of the service; `deployments`:
    key -> ModelDeployment; `providers`: name -> Provider; `gateways`: cluster -> its Gateway ref;
    `health_hosts`: cluster -> the hostnames DNS health checks use there (no health route without)."""
    health = health_targets(svc, routes, deployments) if health_hosts else {}
    out: dict[str, list[dict]] = {}
    for cluster in routes.clusters:
        refs, used = [], []
        for b in routes.backends:
            if b.cluster != cluster:
                continue
            if b.kind == "deployment":
                md = deployments[b.name]
                refs.append(deployment_ref(md.namespace, _replica_name(md, b), md.backend,
                                           md.engine.port, b.units, svc.namespace))
            else:
                refs.append(provider_ref(svc.name, b.name, b.units))
                used.append(providers[b.name])
        objects = cluster_routes(svc.name, svc.namespace, svc.hostname, gateways[cluster], refs)
        if needs_hop(refs):
            objects.append(loopback_grant(svc.name, svc.namespace))
        for provider in used:
            objects += provider_objects(svc.name, svc.namespace, provider)
        if cluster in health and health_hosts.get(cluster):
            objects.append(health_route(svc.name, svc.namespace, health_hosts[cluster], gateways[cluster],
                                        health[cluster]))
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
