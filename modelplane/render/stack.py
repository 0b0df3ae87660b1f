"""The stack's resources as a graph (pure): clusters with their cloud resources and substrate,
model namespaces, deployments, services and DNS, each with its parent, provider and dependencies.

Components are nodes too (`custom=False`): InferenceCluster, ModelNamespace, ModelDeployment,
ModelService and ServiceDns, with the outputs the policy pack's stack rules read. A dependency on
a component stands for every resource under it, as the Pulumi SDK expands it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..api import Catalog, InferenceCluster as ClusterSpec
from ..api.deployment import GPU_ROLES
from ..api.substrate import overrides, preinstalled, toggles
from ..engine.fleet import inventory_of
from ..scheduler.ratio import largest_remainder
from ..scheduler.traffic import DNS_TOTAL, replica_weights
from . import eks, gke, picker
from .addons import GATEWAY_NAME, SYSTEM, ClusterFacts, addons
from .graph import Apply, Graph, Node, Ref, Secret, StackOutput
from .names import ROLE, NameTooLong, SecretValue
from .order import rank, role_edges, scale_change
from .replica import render_cluster_entry, render_replica
from .routing import health_path, picker_path, picker_probes, replica_path, service_objects
from .substrate import model_identity, namespace, priority_classes, queues

PROJECT = "modelplane"
INFERENCE_CLUSTER, MODEL_NAMESPACE = "modelplane:index:InferenceCluster", "modelplane:index:ModelNamespace"
MODEL_DEPLOYMENT, MODEL_SERVICE = "modelplane:index:ModelDeployment", "modelplane:index:ModelService"
SERVICE_DNS = "modelplane:index:ServiceDns"
K8S_PROVIDER = "pulumi:providers:kubernetes"
RELEASE, CONFIG_FILE = "kubernetes:helm.sh/v3:Release", "kubernetes:yaml/v2:ConfigFile"
ENDPOINTS_PATCH = "kubernetes:core/v1:EndpointsPatch"

GATEWAYS_SUBDOMAIN = "gateways"
# Cloud DNS health checks of external endpoints probe from three Google Cloud regions.
HEALTH_SOURCE_REGIONS = ("us-central1", "europe-west4", "asia-southeast1")
HEALTH_HOST = "modelplane-health"   # the Host Cloud DNS health checks send (they probe addresses)


# ---- Kubernetes objects ------------------------------------------------------------------

def logical_name(cluster: str, obj: dict) -> str:
    m = obj["metadata"]
    ns = m.get("namespace") or "_"
    return f"{cluster}/{ns}/{obj['kind'].lower()}/{m['name']}"


# Fields the typed pulumi-kubernetes class of a core kind sends; any other kind is an
# apiextensions CustomResource, which sends apiVersion, kind, metadata and spec only.
_TYPED_FIELDS = {
    ("v1", "Namespace"): ("metadata",), ("v1", "Service"): ("metadata", "spec"),
    ("v1", "ServiceAccount"): ("metadata", "secrets"), ("v1", "Secret"): ("metadata", "type", "stringData"),
    ("v1", "ResourceQuota"): ("metadata", "spec"), ("apps/v1", "Deployment"): ("metadata", "spec"),
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): ("metadata", "spec"),
    ("scheduling.k8s.io/v1", "PriorityClass"): ("metadata", "value", "preemptionPolicy", "globalDefault",
                                                "description"),
    ("rbac.authorization.k8s.io/v1", "Role"): ("metadata", "rules"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ("metadata", "roleRef", "subjects"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): ("metadata", "roleRef", "subjects"),
}


def k8s_type(obj: dict) -> str:
    return f"kubernetes:{obj['apiVersion'] if '/' in obj['apiVersion'] else 'core/' + obj['apiVersion']}:{obj['kind']}"


def _secrets(value):
    """SecretValue markers as secret expressions (a prefix stays outside the secret's text)."""
    if isinstance(value, SecretValue):
        return Secret(Apply(_concat, (value.prefix, SecretValue(value.config_key)))) if value.prefix else Secret(value)
    if isinstance(value, dict):
        return {k: _secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_secrets(v) for v in value]
    return value


def _concat(*parts) -> str:
    return "".join(parts)


def k8s_inputs(obj: dict) -> dict:
    fields = _TYPED_FIELDS.get((obj["apiVersion"], obj["kind"]), ("metadata", "spec"))
    inputs = {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
              **{f: obj[f] for f in fields if obj.get(f) is not None}}
    if obj["kind"] == "Secret" and "stringData" in inputs:
        inputs["stringData"] = Secret(_secrets(inputs["stringData"]))   # the typed class marks it secret
    return inputs


def k8s_node(cluster: str, obj: dict, parent: str | None, provider: str | None, depends_on=(),
             import_id: str = "") -> Node:
    return Node(k8s_type(obj), logical_name(cluster, obj), k8s_inputs(obj), parent, provider, tuple(depends_on),
                import_id=import_id, cluster=cluster)


# ---- InferenceCluster ----------------------------------------------------------------------

@dataclass
class ClusterNodes:
    """What other parts of the stack need of a cluster: its inventory, provider, the substrate's
    sinks (`ready`) and per team namespace its Namespace and Queue, the Gateway node and the
    kubeconfig and gateway address (expressions)."""

    name: str
    inventory: dict
    provider: str
    kubeconfig: object = None
    gateway_address: object = None
    ready: list = field(default_factory=list)
    namespaced: dict = field(default_factory=dict)

    def ready_in(self, ns: str) -> list:
        return [*self.ready, *self.namespaced.get(ns, [])]


def facts_of(c: ClusterSpec, catalog: Catalog) -> ClusterFacts:
    efa = c.source == "eks" and any(catalog.classes[p.class_].provisioning.eks.efa_interfaces for p in c.node_pools)
    root = c.existing.nvidia_driver_root if c.existing else "/"
    latest = gpudirect = nics = None
    plugin_installers: set[str] = set()
    if c.source == "gke":
        gkes = [catalog.classes[p.class_].provisioning.gke for p in c.node_pools]
        latest = any(g.gpu_driver == "LATEST" for g in gkes)
        wired = [w for p in c.node_pools if (w := gke.wiring_of(c, catalog, p)).release]
        gpudirect = tuple(sorted({(w.gpudirect, w.release.installer) for w in wired}))
        nics = gke.gpu_nics(c, catalog)
        for p in c.node_pools:   # a net plugin's installer per node architecture (gIB: x86 and A4X's Arm)
            if (w := gke.wiring_of(c, catalog, p)).plugin:
                arch = catalog.classes[p.class_].capabilities.arch or "amd64"
                if w.plugin.installers.get(arch):
                    plugin_installers.add(w.plugin.installers[arch])
    tls = c.tls.model_dump(by_alias=True, exclude_none=True) if c.tls else None
    account = gke.dns01_account(c)
    return ClusterFacts(c.name, c.source, c.region, c.dra and c.substrate.dra_driver.enabled, toggles(c.substrate),
                        efa, root, latest_driver=bool(latest), gpudirect_installers=gpudirect or (),
                        plugin_installers=tuple(sorted(plugin_installers)),
                        gpu_nics=nics or 0, tls=tls, dns01_account=account[1] if account else "",
                        overrides=overrides(c.substrate), preinstalled=preinstalled(c.substrate),
                        compute_domains=any(catalog.classes[p.class_].domain_nodes for p in c.node_pools))


def chart_ref(spec: dict) -> tuple[str, dict | None]:
    """(chart, repositoryOpts): an OCI chart is addressed by its full reference, others by repo."""
    if spec["repository"].startswith("oci://"):
        return f"{spec['repository']}/{spec['chart']}", None
    return spec["chart"], {"repo": spec["repository"]}


def _addon_nodes(c: ClusterSpec, addon, versions: dict, parent: str, provider: str, deps: list) -> list[Node]:
    name = f"{c.name}-{addon.name}"
    if addon.kind == "release":
        spec = versions[addon.key]
        chart, repo = chart_ref(spec)
        inputs = {"name": addon.name, "chart": chart, "version": addon.version, "repositoryOpts": repo,
                  "namespace": spec["namespace"], "createNamespace": True, "atomic": True, "cleanupOnFail": True,
                  "skipCrds": addon.skip_crds or None, "timeout": 900, "values": addon.values}
        return [Node(RELEASE, name, {k: v for k, v in inputs.items() if v is not None}, parent, provider, tuple(deps),
                     cluster=c.name)]
    if addon.kind == "manifests":
        return [Node(CONFIG_FILE, name, {"file": versions[addon.key]["manifests"]}, parent, provider, tuple(deps),
                     custom=False, remote=True, cluster=c.name)]
    if addon.kind == "gate":
        obj = addon.objects[0]
        metadata = {**obj["metadata"], "annotations": {"pulumi.com/waitFor": addon.wait_for}}
        return [Node(ENDPOINTS_PATCH, name, {"apiVersion": "v1", "kind": "Endpoints", "metadata": metadata}, parent,
                     provider, tuple(deps), cluster=c.name)]
    return [k8s_node(c.name, obj, parent, provider, deps) for obj in addon.objects]


def _address(status) -> str | None:
    addresses = (status or {}).get("addresses") or []
    return addresses[0].get("value") if addresses else None


def inference_cluster(graph: Graph, c: ClusterSpec, catalog: Catalog, team_namespaces: list[str]) -> ClusterNodes:
    """InferenceCluster: cloud cluster + GPU pools from catalog recipes + substrate + inventory."""
    me = graph.add(Node(INFERENCE_CLUSTER, c.name, custom=False))
    inventory = inventory_of(c, catalog)
    system, extra = [], {}
    if c.gke:
        kubeconfig, system, extra = gke.build(c, catalog, graph, me)
    elif c.eks:
        built = eks.build(c, catalog, graph, me)
        kubeconfig, system, extra = built.kubeconfig, built.system, built.addon_deps
    else:
        # Bring your own: pools are declared, not created; the kubeconfig is a secret config key.
        kubeconfig = Secret(SecretValue(c.existing.kubeconfig_secret))
    provider = graph.add(Node(K8S_PROVIDER, f"{c.name}-k8s", {"kubeconfig": kubeconfig, "clusterIdentifier": c.name},
                              me))
    out = ClusterNodes(c.name, inventory, provider, kubeconfig)
    versions = catalog.substrate
    done: dict[str, list] = {SYSTEM: list(system)}
    plan = addons(facts_of(c, catalog), versions)
    gateway = None
    for addon in plan:
        deps = [r for dep in addon.after for r in done.get(dep, [])] + list(extra.get(addon.name, []))
        created = [graph.add(n) for n in _addon_nodes(c, addon, versions, me, provider, deps)]
        done[addon.name] = created
        if addon.name == "gateway":
            gateway = next(r for r, o in zip(created, addon.objects, strict=True)
                           if o["kind"] == "Gateway" and o["metadata"]["name"] == GATEWAY_NAME)
    awaited = {dep for addon in plan for dep in addon.after}
    out.ready += [r for addon in plan if addon.name not in awaited for r in done[addon.name]]
    after = [*done.get("kai-scheduler", []), *system]
    for ns in sorted(set(team_namespaces)):
        out.namespaced.setdefault(ns, []).append(graph.add(k8s_node(c.name, namespace(ns), me, provider, after)))
    if c.substrate.kai:
        out.ready += [graph.add(k8s_node(c.name, pc, me, provider, after)) for pc in priority_classes()]
        for q in queues([q.model_dump(by_alias=True) for q in c.queues]):
            key = graph.add(k8s_node(c.name, q, me, provider, after))
            own = q["metadata"]["name"]
            if own in out.namespaced:
                out.namespaced[own].append(key)
            else:      # the root queue
                out.ready.append(key)
    # The Gateway's live status holds its address once provisioned (unknown at preview).
    out.gateway_address = Apply(_address, (Ref(gateway, "status"),)) if gateway is not None else None
    graph.nodes[me].outputs = {"inventory": inventory, "kubeconfig": kubeconfig,
                               "gatewayAddress": out.gateway_address}
    return out


def remote_cluster(graph: Graph, inventory: dict, ref: str) -> ClusterNodes:
    """A cluster another stack built: a provider from that stack's exported kubeconfig."""
    name = inventory["name"]
    kubeconfig = StackOutput(ref, "kubeconfigs", name, required=True)
    provider = graph.add(Node(K8S_PROVIDER, f"{name}-k8s", {"kubeconfig": kubeconfig, "clusterIdentifier": name}))
    return ClusterNodes(name, inventory, provider, kubeconfig, StackOutput(ref, "gateways", name))


# ---- ModelNamespace and ModelDeployment ---------------------------------------------------

def model_namespace(graph: Graph, cluster: str, ns: str, token_key: str | None, target: ClusterNodes,
                    extra: list[dict]) -> str:
    """Per cluster and team namespace: the model ServiceAccount and, if needed, the HF token
    Secret, and the ReferenceGrants services of other namespaces need to route to it.

    Their names are the namespace's, not the stack's, so every apps stack deploying into the
    namespace declares the same objects (the provider's server-side apply adopts an existing one).
    Each is kept on delete: one stack's destroy, or an `up` that leaves the namespace, must not take
    the account and RBAC from another stack's running pods there (found on the real control plane:
    e2e g4's destroy took `modelplane-models` from g1's replicas, and KServe stopped reconciling
    them). Once no stack deploys into the namespace, they are the user's to delete (docs/stacks.md)."""
    me = graph.add(Node(MODEL_NAMESPACE, f"{cluster}-{ns}", custom=False, outputs={}))
    for obj in [*model_identity(ns, token_key), *extra]:
        node = k8s_node(cluster, obj, me, target.provider, target.ready_in(ns))
        node.retain_on_delete = True
        graph.add(node)
    return me


def _role(obj: dict) -> str | None:
    """The role an object belongs to; the LLMInferenceService runs decode (and prefill)."""
    return obj["metadata"]["labels"].get(ROLE) or ("decode" if obj["kind"] == "LLMInferenceService" else None)


def model_deployment(graph: Graph, spec, placements: list, targets: dict[str, ClusterNodes], weights_gib: float, served_names: list[str] | None, namespaces: dict[str, str],
                     progress: dict, previous: dict, probed: set | None = None) -> str:
    """Each placed replica's rendered objects on its cluster. Extra roles start after the roles
    they depend on: objects follow a topological order, each waiting for its dependencies'
    objects; an InPlace size change follows the scale order. `probed`: (cluster, replica) of the
    KServe replicas a DNS record of their own checks (split_records), each given a probe Service."""
    me = graph.add(Node(MODEL_DEPLOYMENT, f"{spec.namespace}-{spec.name}", custom=False))
    deps = {r.name: r.depends_on for r in spec.roles}
    # First what the replicas share on a cluster (InferencePool, picker): the replicas name the pool
    # and wait for it (render/rollout.py await_pools), so it is registered before them.
    for cluster in sorted({p.cluster for p in placements}):
        target = targets[cluster]
        ns = namespaces.get(cluster)
        probes = [picker.replica_probe_service(spec.name, spec.namespace, i, spec.disaggregated)
                  for c, i in sorted(probed or ()) if c == cluster and spec.backend == "kserve"]
        for obj in [*render_cluster_entry(spec, target.inventory), *probes]:
            graph.add(k8s_node(cluster, obj, me, target.provider, [*target.ready_in(spec.namespace), *([ns] if ns else [])]))
    for placement in placements:
        edges = role_edges(spec.role_names(), deps, *scale_change(spec, placement, previous.get(placement.replica)))
        ranks = rank(edges)
        target = targets[placement.cluster]
        ns = namespaces.get(placement.cluster)
        base = [*target.ready_in(spec.namespace), *([ns] if ns else [])]
        by_role: dict[str, list] = {}
        objs = render_replica(spec, placement, target.inventory, weights_gib, served_names)
        # Adopted objects are imported (ID namespace/name) by the first `up` instead of created.
        adopted = {(a.kind, a.name) for a in spec.adopted(placement.replica, placement.cluster).values()}
        for obj in sorted(objs, key=lambda o: ranks.get(_role(o), 0)):
            role = _role(obj)
            needs = [k for dep in sorted(edges.get(role, ())) for k in by_role.get(dep, [])]
            m = obj["metadata"]
            imported = f"{m['namespace']}/{m['name']}" if (obj["kind"], m["name"]) in adopted else ""
            key = graph.add(k8s_node(placement.cluster, obj, me, target.provider, [*base, *needs], imported))
            # One LLMInferenceService runs every GPU role of the replica.
            for r in (GPU_ROLES if obj["kind"] == "LLMInferenceService" else (role,)):
                by_role.setdefault(r, []).append(key)
    # What the policy pack's stack rules read: the spec, where it landed and those clusters' facts.
    graph.nodes[me].outputs = {
        "spec": spec.model_dump(by_alias=True, exclude_none=True, mode="json"),
        "placements": [p.to_json() for p in placements],
        "clusters": {c: targets[c].inventory for c in sorted({p.cluster for p in placements})},
        "weightsGiB": weights_gib,
        "progress": progress or {},
    }
    return me


# ---- ModelService and ServiceDns -----------------------------------------------------------

def routes_json(routes) -> dict:
    return {"endpoints": routes.endpoints, "clusters": routes.clusters, "dns": routes.dns,
            "missing": routes.missing, **({"fallback": routes.fallback, "standby": routes.standby}
                                          if routes.fallback else {}),
            "backends": [{"cluster": b.cluster, "kind": b.kind, "name": b.name, "replicas": list(b.replicas),
                          "units": b.units} for b in routes.backends]}


def gateway_record(domain: str, cluster: str) -> str:
    """The per-cluster name a service's weighted records point at (Route 53)."""
    return f"{cluster}.{GATEWAYS_SUBDOMAIN}.{domain}"


def check_host(dns, cluster: str | None = None) -> str:
    """The Host a DNS health check of `cluster` sends: Route 53 the cluster's gateway record (its
    `fqdn`), Cloud DNS one fixed name for every cluster (one check probes every address of a record set)."""
    return gateway_record(dns.zone.domain, cluster) if dns.kind == "route53" else f"{HEALTH_HOST}.{dns.zone.domain}"


def health_hosts(dns, routes) -> dict | None:
    """cluster -> the hostnames its health route answers: the Route 53 per-cluster gateway name,
    and one fixed name for Cloud DNS (one health check serves every address of a record set)."""
    if dns is None:
        return None
    return {c: [gateway_record(dns.zone.domain, c), f"{HEALTH_HOST}.{dns.zone.domain}"]
            for c in [*routes.dns, *standby(routes)]}


def model_service(graph: Graph, svc, routes, deployments: dict, providers: dict, targets: dict, model: str,
                  dns=None, shared: bool = False, split: dict | None = None) -> str:
    """A service's route (and provider backends) on every cluster that carries a share of it;
    `shared`: its hostname is shared with other services, so it is routed by model name; `split`:
    its records split per replica (split_records), each replica probed too."""
    me = graph.add(Node(MODEL_SERVICE, f"{svc.namespace}-{svc.name}", custom=False))
    gateways = {c: targets[c].inventory["gateway"] for c in [*routes.clusters, *routes.standby]}
    hosts = health_hosts(dns, routes) if svc.hostname else None
    # A fallback provider is reached through Envoy AI Gateway's priorities: the route matches the model.
    for cluster, objects in service_objects(svc, routes, deployments, providers, gateways, hosts,
                                              model if shared or routes.fallback else None,
                                              and_pickers=dns is not None and dns.kind == "route53",
                                              split=split).items():
        target = targets[cluster]
        for obj in objects:
            graph.add(k8s_node(cluster, obj, me, target.provider, target.ready_in(svc.namespace)))
    graph.nodes[me].outputs = {
        "spec": svc.model_dump(by_alias=True, exclude_none=True, mode="json"),
        "model": model,
        "routes": routes_json(routes),
        "providers": {p: providers[p].model_dump(by_alias=True, exclude_none=True, mode="json", exclude={"api_key"})
                      for p in sorted({e.provider for e in svc.endpoints if e.provider in providers})},
        "targets": {e.key(svc.namespace): (deployments[e.key(svc.namespace)].labels if e.deployment else {})
                    for e in svc.endpoints if e.deployment is None or e.key(svc.namespace) in deployments},
        "gateways": gateways,
    }
    return me


def service_dns(graph: Graph, dns, services: list, addresses: dict, deployments: dict,
                tls: dict | None = None, splits: dict | None = None) -> str:
    """Weighted records for every service with a hostname: one per cluster that carries a share of it,
    weighted by that share (`splits`: service key -> split_records, a cluster's record per replica). Route 53: a weighted CNAME per cluster to `<cluster>.gateways.<domain>`
    (an A record for an IP gateway, a CNAME for a load balancer hostname). Cloud DNS: one A record
    set with a weighted round robin routing policy (IP gateways only)."""
    me = graph.add(Node(SERVICE_DNS, dns.kind, custom=False, outputs={}))
    zone = dns.zone
    tls = tls or {}    # cluster -> whether its Gateway terminates TLS
    if dns.kind == "route53":
        provider = graph.add(Node("pulumi:providers:aws", "dns-route53", {
            "region": "us-east-1"}, me))
        for cluster in sorted({c for _, routes in services for c in [*routes.dns, *standby(routes)]}):
            address, kind = addresses[cluster]
            graph.add(Node("aws:route53/record:Record", f"gateway-{cluster}", {
                "zoneId": zone.zone_id, "name": gateway_record(zone.domain, cluster),
                "type": "A" if kind == "IPAddress" else "CNAME", "ttl": dns.ttl, "records": [address]}, me, provider))
        by_host: dict[str, list] = {}
        for svc, routes in services:
            by_host.setdefault(svc.hostname, []).append((svc, routes))
        for host, members in sorted(by_host.items()):
            if len(members) > 1:
                shared_records(graph, me, provider, dns, host, members, deployments, tls)
                continue
            svc, routes = members[0]
            split = (splits or {}).get(svc.key, {})
            for cluster, weight in sorted(routes.dns.items()):
                name = f"{svc.namespace}-{svc.name}-{cluster}"
                checks = route53_checks(graph, me, provider, dns, svc, routes, deployments, cluster, tls)
                if cluster in split:
                    replica_records(graph, me, provider, dns, svc, cluster, split[cluster], checks, tls)
                    continue
                check = record_check(graph, me, provider, name, checks)
                record = {"zoneId": zone.zone_id, "name": svc.hostname, "type": "CNAME", "ttl": dns.ttl,
                          "setIdentifier": cluster, "weightedRoutingPolicies": [{"weight": weight}],
                          "records": [gateway_record(zone.domain, cluster)]}
                if check:
                    record["healthCheckId"] = Ref(check, "id")
                graph.add(Node("aws:route53/record:Record", name, record, me, provider))
            for cluster in standby(routes):
                # Weight 0, checked like every record of the name: Route 53 considers zero-weight
                # records only once every non-zero one is unhealthy (developer guide, "Weighted
                # routing", "Health checks and weighted routing"), so a standby takes clients only
                # when no replica can; its check asks its Gateway (routing.gateway_health).
                check = record_check(graph, me, provider, f"{svc.namespace}-{svc.name}-{cluster}",
                                     route53_checks(graph, me, provider, dns, svc, routes, deployments, cluster, tls))
                graph.add(Node("aws:route53/record:Record", f"{svc.namespace}-{svc.name}-{cluster}", {
                    "zoneId": zone.zone_id, "name": svc.hostname, "type": "CNAME", "ttl": dns.ttl,
                    "setIdentifier": cluster, "weightedRoutingPolicies": [{"weight": 0}],
                    "records": [gateway_record(zone.domain, cluster)], "healthCheckId": Ref(check, "id")},
                    me, provider))
    else:
        provider = graph.add(Node("pulumi:providers:gcp", "dns-clouddns", {"project": zone.project}, me))
        for svc, routes in services:
            policy = {"wrrs": [{"weight": weight, "rrdatas": [addresses[cluster][0]]}
                               for cluster, weight in sorted(routes.dns.items())]}
            if routes.dns:    # every cluster has a health route (a provider's share: its Gateway's)
                # Health-checked WRR on external endpoints: items carry healthCheckedTargets instead of
                # rrdatas, and one health check (with three source regions) probes each address, over
                # HTTPS when every cluster of the service terminates TLS (one check serves them all).
                https = all(tls.get(c) for c in routes.dns)
                probe = {"port": 443 if https else 80, "host": check_host(dns),
                         "requestPath": health_path(svc.name, svc.namespace)}
                check = graph.add(Node("gcp:compute/healthCheck:HealthCheck", f"{svc.namespace}-{svc.name}", {
                    "project": zone.project, "sourceRegions": list(HEALTH_SOURCE_REGIONS),
                    "checkIntervalSec": CHECK_INTERVAL_S, "timeoutSec": 10, "unhealthyThreshold": CHECK_FAILURES,
                    "httpsHealthCheck" if https else "httpHealthCheck": probe}, me, provider))
                policy = {"healthCheck": Ref(check, "id"), "wrrs": [
                    {"weight": weight, "healthCheckedTargets": {"externalEndpoints": [addresses[cluster][0]]}}
                    for cluster, weight in sorted(routes.dns.items())]}
            graph.add(Node("gcp:dns/recordSet:RecordSet", f"{svc.namespace}-{svc.name}", {
                "project": zone.project, "managedZone": zone.managed_zone, "name": f"{svc.hostname}.", "type": "A",
                "ttl": dns.ttl, "routingPolicy": policy}, me, provider))
    return me


def split_records(dns, svc, routes, shared: bool = False) -> dict[str, dict[tuple[str, int], int]]:
    """cluster -> {(deployment key, replica): weight} of the clusters whose record of the service is
    split per replica (traffic.replica_weights): with Route 53 only, whose records each take a
    health check of their own (a Cloud DNS record set takes one check for all its items,
    `routingPolicy.healthCheck`, which cannot tell two replicas behind one address apart), and not
    for a hostname several services share (one record per cluster carries them all)."""
    if dns is None or dns.kind != "route53" or not svc.hostname or shared:
        return {}
    return replica_weights(routes)


# Route 53 ResourceRecordSet.SetIdentifier: 1-128 characters (botocore route53 model,
# ResourceRecordSetIdentifier min 1, max 128); a 40-character cluster, 63-character namespace and
# 40-character deployment can pass it.
SET_IDENTIFIER_MAX = 128


def record_id(cluster: str, replica: tuple[str, int] | None = None) -> str:
    """A Route 53 record's `setIdentifier`: its cluster, or `<cluster>/<deployment key>#<replica>`
    for one of a cluster's per-replica records (the trace's --down name after the cluster)."""
    if replica is None:
        return cluster
    name = f"{cluster}/{replica[0]}#{replica[1]}"
    if len(name) > SET_IDENTIFIER_MAX:
        raise NameTooLong(replica[0], f"replica {replica[1]}'s Route 53 record on {cluster} is told apart by "
                          f"setIdentifier {name!r}, longer than Route 53's {SET_IDENTIFIER_MAX} characters; fix: "
                          f"shorten the deployment's namespace or name (or the cluster's) by "
                          f"{len(name) - SET_IDENTIFIER_MAX} characters")
    return name


def record_cluster(set_identifier: str) -> str:
    """The cluster a Route 53 record's `setIdentifier` (record_id) sends clients to."""
    return set_identifier.partition("/")[0]


def replica_records(graph: Graph, me: str, provider: str, dns, svc, cluster: str, weights: dict,
                    checks: list[str], tls: dict) -> None:
    """A cluster carrying several replicas of the service: one weighted record per replica, all
    pointing at the cluster's gateway record (a weighted group is records of one name and type
    told apart by `setIdentifier`, Route 53 developer guide, "Values specific for weighted
    records"), each checked by a CALCULATED check healthy only while the cluster's checks and a
    probe of that replica alone all are (`childHealthThreshold` = their number). Lost, a replica
    takes its own weight out of DNS and the cluster keeps the rest (review N11)."""
    base = f"{svc.namespace}-{svc.name}-{cluster}"
    for (key, index), weight in sorted(weights.items()):
        name = f"{base}-{key.replace('/', '-')}-{index}"
        probe = graph.add(Node("aws:route53/healthCheck:HealthCheck", f"{name}-probe",
                               http_check(dns, cluster, replica_path(svc.name, svc.namespace, key, index), tls),
                               me, provider))
        children = [*checks, probe]
        check = graph.add(Node("aws:route53/healthCheck:HealthCheck", f"{name}-calculated", {
            "type": "CALCULATED", "childHealthchecks": [Ref(c, "id") for c in children],
            "childHealthThreshold": len(children)}, me, provider))
        graph.add(Node("aws:route53/record:Record", name, {
            "zoneId": dns.zone.zone_id, "name": svc.hostname, "type": "CNAME", "ttl": dns.ttl,
            "setIdentifier": record_id(cluster, (key, index)), "weightedRoutingPolicies": [{"weight": weight}],
            "records": [gateway_record(dns.zone.domain, cluster)], "healthCheckId": Ref(check, "id")}, me, provider))


# Every DNS health check: a probe each 30 s, unhealthy after 3 failures in a row.
CHECK_INTERVAL_S = 30
CHECK_FAILURES = 3


def detection_window(dns) -> int:
    """Seconds until clients stop reaching a cluster whose check starts failing: the failures that
    mark it unhealthy, then resolvers keep the old answer for the record's TTL."""
    return CHECK_INTERVAL_S * CHECK_FAILURES + dns.ttl


def standby(routes) -> list[str]:
    """The clusters that route a service only to its fallback provider, as Route 53 standbys."""
    return [c for c in routes.standby if c not in routes.dns]


def route53_checks(graph: Graph, me: str, provider: str, dns, svc, routes, deployments: dict, cluster: str,
                   tls: dict) -> list[str]:
    """A cluster whose replicas, route or certificate fail loses its share until they answer again:
    each check asks what a client's request uses, over HTTPS where the cluster terminates TLS (Route 53
    sends the fqdn as SNI and Host; it does not validate the certificate, but a listener without one
    refuses the connection). One check, and a second through the pools where the first asks a P/D
    deployment's decode pods only (routing.picker_probes, review N4)."""
    name = f"{svc.namespace}-{svc.name}-{cluster}"
    paths = [(name, health_path(svc.name, svc.namespace))]
    if cluster in picker_probes(svc, routes, deployments):
        paths.append((f"{name}-picker", picker_path(svc.name, svc.namespace)))
    return [graph.add(Node("aws:route53/healthCheck:HealthCheck", check, http_check(dns, cluster, path, tls),
                           me, provider)) for check, path in paths]


def http_check(dns, cluster: str, path: str, tls: dict) -> dict:
    """A Route 53 check of one path on a cluster's Gateway, through the listener clients use."""
    https = bool(tls.get(cluster))
    return {"type": "HTTPS" if https else "HTTP", "port": 443 if https else 80,
            "fqdn": check_host(dns, cluster), **({"enableSni": True} if https else {}),
            "resourcePath": path, "requestInterval": CHECK_INTERVAL_S, "failureThreshold": CHECK_FAILURES}


def record_check(graph: Graph, me: str, provider: str, name: str, children: list[str]) -> str:
    """The check a record names: its one check, or a Route 53 CALCULATED check healthy only while every
    child is (`childHealthThreshold` = their number; pulumi-aws `aws.route53.HealthCheck`: `type`
    CALCULATED, `childHealthchecks`, `childHealthThreshold`, which the API takes as the number of
    healthy children required). Children stay plain checks, so a shared hostname ANDs all of its
    services' checks in one (shared_records) rather than nesting calculated checks."""
    if len(children) == 1:
        return children[0]
    return graph.add(Node("aws:route53/healthCheck:HealthCheck", f"{name}-calculated", {
        "type": "CALCULATED", "childHealthchecks": [Ref(c, "id") for c in children],
        "childHealthThreshold": len(children)}, me, provider))


def shared_weights(members: list) -> dict[str, int]:
    """cluster -> the DNS weight of a hostname several services share: the clusters' shares of all
    their traffic together, in whole percent (each service counts the same)."""
    units: dict[str, int] = {}
    for _, routes in members:
        for cluster, n in routes.clusters.items():
            units[cluster] = units.get(cluster, 0) + n
    return largest_remainder(DNS_TOTAL, units, lo={c: 1 for c in units}) if units else {}


def shared_records(graph: Graph, me: str, provider: str, dns, host: str, members: list, deployments: dict,
                   tls: dict) -> None:
    """One weighted record per cluster for a hostname several services share (requests are routed
    by model name on every cluster, services.shared_host_problems), its check the AND of theirs: a
    Route 53 CALCULATED health check healthy only while all its children are (childHealthThreshold)."""
    slug = host.replace(".", "-")
    for cluster, weight in sorted(shared_weights(members).items()):
        children = [c for svc, routes in members if cluster in routes.dns
                    for c in route53_checks(graph, me, provider, dns, svc, routes, deployments, cluster, tls)]
        record = {"zoneId": dns.zone.zone_id, "name": host, "type": "CNAME", "ttl": dns.ttl, "setIdentifier": cluster,
                  "weightedRoutingPolicies": [{"weight": weight}], "records": [gateway_record(dns.zone.domain, cluster)]}
        if children:
            check = graph.add(Node("aws:route53/healthCheck:HealthCheck", f"{slug}-{cluster}", {
                "type": "CALCULATED", "childHealthchecks": [Ref(c, "id") for c in children],
                "childHealthThreshold": len(children)}, me, provider))
            record["healthCheckId"] = Ref(check, "id")
        graph.add(Node("aws:route53/record:Record", f"{slug}-{cluster}", record, me, provider))
