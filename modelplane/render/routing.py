"""Routing objects (pure): a service's entry on one cluster, and the per-provider backend.

On every cluster that carries a share of a service (scheduler/traffic.py):
- an `HTTPRoute` (gateway.networking.k8s.io/v1) on the cluster's inference Gateway: the service's
  hostname, `/v1/` paths, weighted backendRefs to the InferencePool KServe made for each replica
  there (`<replica>-inference-pool`; the pool's endpoint picker then chooses the pod and the
  prefill/decode pair) or, on the native backend, the replica's Service; and to providers;
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
from .kserve import inference_pool
from .names import MANAGED_BY, SecretValue, meta

SERVICE_LABEL = "modelplane.ai/service"
ENVOY = "gateway.envoyproxy.io"
GATEWAY_API = "gateway.networking.k8s.io"
INFERENCE_POOL_GROUP = "inference.networking.k8s.io"
KSERVE_POOL_PORT = 8000       # the port KServe's own route uses for its InferencePool


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
        ref = {"kind": "Service", "name": f"{replica_name}-decode", "port": port}
    if namespace != route_ns:
        ref["namespace"] = namespace
    return {**ref, "weight": weight}


def provider_ref(service: str, provider: str, weight: int) -> dict:
    name = backend_name(service, provider)
    return {"group": ENVOY, "kind": "Backend", "name": name, "port": 443, "weight": weight,
            "filters": [{"type": "ExtensionRef", "extensionRef": {"group": ENVOY, "kind": "HTTPRouteFilter",
                                                                  "name": name}}]}


def http_route(service: str, namespace: str, hostname: str | None, gateway: dict, backend_refs: list[dict]) -> dict:
    spec = {"parentRefs": [{"group": GATEWAY_API, "kind": "Gateway", "name": gateway["name"],
                            "namespace": gateway["namespace"]}]}
    if hostname:
        spec["hostnames"] = [hostname]
    # LLM responses stream for minutes: no gateway timeout (KServe's own route does the same).
    spec["rules"] = [{"matches": [{"path": {"type": "PathPrefix", "value": "/v1/"}}],
                      "backendRefs": backend_refs, "timeouts": {"request": "0s", "backendRequest": "0s"}}]
    return {"apiVersion": f"{GATEWAY_API}/v1", "kind": "HTTPRoute", "metadata": meta(service, namespace, _labels(service)),
            "spec": spec}


def reference_grant(from_namespace: str, to_namespace: str) -> dict:
    """Lets HTTPRoutes of `from_namespace` send traffic to InferencePools and Services here."""
    return {"apiVersion": f"{GATEWAY_API}/v1beta1", "kind": "ReferenceGrant",
            "metadata": meta(f"modelplane-routes-from-{from_namespace}", to_namespace, MANAGED_BY),
            "spec": {"from": [{"group": GATEWAY_API, "kind": "HTTPRoute", "namespace": from_namespace}],
                     "to": [{"group": INFERENCE_POOL_GROUP, "kind": "InferencePool"}, {"group": "", "kind": "Service"}]}}


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


def service_objects(svc, routes, deployments: dict, providers: dict, gateways: dict) -> dict[str, list[dict]]:
    """cluster -> the service's objects there. `routes`: traffic.Routes of the service; `deployments`:
    key -> ModelDeployment; `providers`: name -> Provider; `gateways`: cluster -> its Gateway ref."""
    from .names import replica_name, workload_name   # local: names imports nothing of routing

    out: dict[str, list[dict]] = {}
    for cluster in routes.clusters:
        refs, used = [], []
        for b in routes.backends:
            if b.cluster != cluster:
                continue
            if b.kind == "deployment":
                md = deployments[b.name]
                name = workload_name(md, b.replica, b.cluster) if md.backend == "kserve" else \
                    replica_name(md.name, b.replica)
                refs.append(deployment_ref(md.namespace, name, md.backend,
                                           md.engine.port, b.units, svc.namespace))
            else:
                refs.append(provider_ref(svc.name, b.name, b.units))
                used.append(providers[b.name])
        objects = [http_route(svc.name, svc.namespace, svc.hostname, gateways[cluster], refs)]
        for provider in used:
            objects += provider_objects(svc.name, svc.namespace, provider)
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
