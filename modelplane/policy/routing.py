"""Stack policies on services: they read the ModelService components' outputs (spec, routes, the
providers and the labels of their targets) and apply the same rules the loader does."""
from __future__ import annotations

from types import SimpleNamespace

from pydantic import ValidationError

from ..api.cluster import external_issuer, https_problems, issuance_problems
from ..api.rules import check_services
from ..api.service import ModelService, Provider
from .registry import ADVISORY, policy
from .stackview import of_type

MODEL_SERVICE = "modelplane:index:ModelService"


def _services(resources):
    for r in of_type(resources, MODEL_SERVICE):
        if r.props.get("spec"):
            yield r


def _findings(resources, rule: str) -> list[tuple[str, str]]:
    """check_services over every ModelService of the stack, keeping one rule's findings."""
    components = list(_services(resources))
    services, providers, targets, urns, out = [], {}, {}, [], []
    for r in components:
        try:
            svc = ModelService.model_validate(r.props["spec"], strict=False)
            for name, doc in (r.props.get("providers") or {}).items():
                providers[name] = Provider.model_validate(doc, strict=False)
        except ValidationError as exc:
            if rule == "service-routing":
                spec = r.props["spec"]
                first = exc.errors()[0]
                out.append((f"{spec.get('namespace')}/{spec.get('name')}: {'.'.join(map(str, first['loc']))}: "
                            f"{first['msg']}", r.urn))
            continue
        for key, labels in (r.props.get("targets") or {}).items():
            if key not in providers:
                targets[key] = SimpleNamespace(labels=dict(labels or {}))
        services.append(svc)
        urns.append(r.urn)
    wanted = {"service-routing": ("service-endpoints", "service-model")}.get(rule, (rule,))
    for f in check_services(services, targets, providers):
        if f.rule in wanted:
            svc = services[f.path[1]]
            out.append((f"{svc.key}: {f.message} (fix: {f.fix})", urns[f.path[1]]))
    return out


@policy("service-routing", "Services are well formed: every endpoint names exactly one deployment or provider that "
        "exists, with a positive integer weight; providers are https; requests pass through unchanged, so a "
        "provider serves the model name the service's clients send.", "stack",
        fix="make each service endpoint name exactly one deployment (namespace/name) or provider of this stack, "
            "with a whole weight above 0; providers use https://")
def service_routing(resources, config=None):
    return _findings(resources, "service-routing")


@policy("service-hostnames", "No two services claim the same hostname and model name on a gateway.", "stack",
        fix="give each service its own hostname")
def service_hostnames(resources, config=None):
    return _findings(resources, "service-hostnames")


@policy("service-residency", "A service labelled with a residency routes only to deployments and providers labelled "
        "for the same jurisdiction.", "stack",
        fix="route the service only to deployments and providers labelled for its jurisdiction, or remove its "
            "residency label")
def service_residency(resources, config=None):
    return _findings(resources, "service-residency")


@policy("service-endpoints-placed", "Every endpoint of a service has placed replicas (otherwise its weight goes to "
        "the others and the service is degraded); mandatory in production configs.", "stack", level=ADVISORY,
        fix="make room for the endpoint's deployment (a pool's maxNodes, another cluster in its clusterSelector; "
            "`plan --explain DEPLOYMENT` shows why), or take the endpoint out of the service")
def service_endpoints_placed(resources, config=None):
    out = []
    for r in _services(resources):
        routes = r.props.get("routes") or {}
        missing, spec = routes.get("missing") or [], r.props["spec"]
        if missing and len(missing) == len(spec.get("endpoints") or []):
            out.append((f"{spec['namespace']}/{spec['name']} serves nothing: no endpoint has a placed replica", r.urn))
        elif missing:
            out.append((f"{spec['namespace']}/{spec['name']} is degraded: {', '.join(missing)} has nothing placed; its "
                        "weight goes to the other endpoints", r.urn))
    return out


@policy("service-https", "Every service hostname is served over HTTPS on every cluster that carries it, with a "
        "certificate that covers it (the cluster's `tls`); mandatory in production configs.", "stack", level=ADVISORY,
        fix="add the service's hostname to tls.hostnames (with issuerRef or acme) of every cluster that carries it")
def service_https(resources, config=None):
    out = []
    for r in _services(resources):
        spec = r.props["spec"]
        carried = (r.props.get("routes") or {}).get("clusters") or {}
        gateways = {c: g for c, g in (r.props.get("gateways") or {}).items() if c in carried}
        for problem in https_problems(f"{spec['namespace']}/{spec['name']}", spec.get("hostname"), gateways):
            out.append((f"{problem} (fix: set tls on the cluster with hostnames that cover it)", r.urn))
    return out


def _carried(r) -> dict:
    carried = (r.props.get("routes") or {}).get("clusters") or {}
    return {c: g for c, g in (r.props.get("gateways") or {}).items() if c in carried}


@policy("certificate-issuable", "Every certificate a service hostname depends on can issue: ACME HTTP-01 is "
        "refused for a name that weighted DNS sends to more than one cluster (only the cluster holding the "
        "challenge answers it); solve DNS-01 there instead.", "stack",
        fix="solve DNS-01 for names weighted DNS sends to several clusters (tls.acme.dns01, or an issuerRef to a "
            "DNS-01 issuer), or serve the name from one cluster")
def certificate_issuable(resources, config=None):
    out = []
    for r in _services(resources):
        spec = r.props["spec"]
        for problem in issuance_problems(spec.get("hostname"), _carried(r)).values():
            out.append((f"{spec['namespace']}/{spec['name']}: {problem} (fix: set tls.acme.dns01 on that cluster, "
                        "e.g. dns01: {route53: {hostedZoneId: ...}} on EKS or {cloudDns: {project: ..., managedZone: ...}} on GKE)", r.urn))
    return out


@policy("certificate-issuer-external", "A certificate signed by an issuer this stack does not create (tls.issuerRef) "
        "issues only if that issuer exists on the cluster; reported so it is checked before `up`.", "stack",
        level=ADVISORY,
        fix="create the (Cluster)Issuer tls.issuerRef names on that cluster before `up`, or let modelplane create "
            "one (tls.acme)")
def certificate_issuer_external(resources, config=None):
    out, seen = [], set()
    # One finding per cluster, on the first service (by name) that uses it, whichever order the engine
    # hands the resources in.
    for r in sorted(_services(resources), key=lambda r: (r.props["spec"].get("namespace"), r.props["spec"].get("name"))):
        for cluster, gw in sorted(_carried(r).items()):
            issuer = external_issuer(gw)
            if issuer and cluster not in seen:
                seen.add(cluster)
                out.append((f"cluster {cluster} signs its HTTPS certificate with {issuer}, which no modelplane stack "
                            f"creates (fix: make sure it exists: kubectl get {issuer.split()[0].lower()} "
                            f"{issuer.split()[1]})", r.urn))
    return out
