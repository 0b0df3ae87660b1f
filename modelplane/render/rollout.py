"""The order of an `up`, as resource options on the graph (pure; docs/changes.md tells it whole).

Found by what the nodes are, not by who rendered them, so it holds whatever the routing
renderers emit:
- a workload is a Kubernetes object of a kind in WORKLOAD_KINDS labelled with a deployment and a
  replica (names.DEPLOYMENT, names.REPLICA); `up` awaits it Ready (names.await_ready);
- what a workload references by name comes first: an LLMInferenceService depends on the
  InferencePool its `router.scheduler.pool.ref` names (both API groups) and on that pool's
  endpoint picker (Service and Deployment), because KServe keeps it NotReady while the pool is
  missing (kserve/kserve@v0.20.0 pkg/controller/v1alpha2/llmisvc/router.go L706-715) and a
  dependent is registered only once its dependency's create, await included, finished;
- traffic is an HTTPRoute or GRPCRoute (its deployment label, else its service label, says whose
  replicas it sends requests to) and a DNS record of a service's hostname (Route 53: one per
  cluster, `setIdentifier`; Cloud DNS: one record set over the clusters). Traffic depends on the
  workloads it reaches on its cluster, so it only moves to replicas that are Ready. An
  InferencePool is not traffic: it sends nothing until a route does, and it selects Ready pods only.
- except the record of a name a cluster's certificate proves over ACME HTTP-01: the challenge
  needs that record, the https listener needs the certificate, and the workloads' Ready needs the
  listener (envoyproxy/gateway@v1.8.1 internal/gatewayapi/validate.go L500-505; kserve@v0.20.0
  router_discovery.go L633-648), so that record waits only for its cluster's Gateway record;
  the Route 53 health check keeps clients off until the cluster serves.
- a DNS record of a service also depends on that service's routes on its cluster (Cloud DNS: on
  every cluster), through a drain per cluster, the HTTP-01 records above excepted.
What a plan no longer declares Pulumi deletes at the end of `up`, after all of it, and in reverse
dependency order: a resource goes only once everything that depended on it is gone, by the
dependencies its state recorded (pulumi/pulumi@v3.259.0 pkg/resource/deploy/deployment_executor.go
L446-557 `performPostSteps`; step_generator.go L2721-2794 `ScheduleDeletes`, antichains reversed).
So when a cluster leaves a service, its record goes first, then its routes, then its workloads.
Between record and routes stands a drain (render/drain.py) whose delete waits the record's TTL:
resolvers that cached the record stop sending requests there before the routes go. Without it
(`dns.drain: false`, or an HTTP-01 record, which cannot wait for routes) they go seconds apart,
and the plan says so (`trafficDelta` `undrained`).
"""
from __future__ import annotations

import hashlib
import json

from .drain import DRAIN_TYPE, drain_inputs, drain_name
from .graph import Graph, Node
from .kserve import children, pool_ref
from .names import DEPLOYMENT, REPLICA, TIMEOUT, WORKLOAD_KINDS, await_ready
from .routing import SERVICE_LABEL
from .stack import k8s_type, logical_name, record_cluster

TRAFFIC_KINDS = ("HTTPRoute", "GRPCRoute")
POOL_KIND, POOL_REF_KINDS = "InferencePool", ("LLMInferenceService",)
ROUTE53_RECORD, CLOUD_DNS_RECORD = "aws:route53/record:Record", "gcp:dns/recordSet:RecordSet"
CLOUD_CLUSTERS = ("gcp:container/cluster:Cluster", "aws:eks/cluster:Cluster")
CLOUD_POOLS = ("gcp:container/nodePool:NodePool", "aws:eks/nodeGroup:NodeGroup")
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
# Releases whose delete takes every workload with it: the chart ships the LLMInferenceService CRD
# as a plain template, without `helm.sh/resource-policy: keep` (kserve@v0.20.0
# charts/kserve-llmisvc-crd/templates/serving.kserve.io_llminferenceservices.yaml L1-7), and
# deleting a CRD deletes every object of it.
WORKLOAD_CRD_RELEASES = ("kserve-llmisvc-crd",)


def _labels(node: Node) -> dict:
    meta = node.inputs.get("metadata") if node.type.startswith("kubernetes:") else None
    return (meta or {}).get("labels") or {} if isinstance(meta, dict) else {}


def _namespace(node: Node) -> str:
    return (node.inputs.get("metadata") or {}).get("namespace") or ""


class Index:
    """The graph read once for every pass of `order_up` (without it, each pass reads every node):
    Kubernetes objects by kind, every node by type, each in registration order, and every node's
    place. Passes change dependencies and options, never a node's kind, type or the order of the
    nodes indexed, except `_dependencies_first`, which indexes the graph again when it reorders
    it. `edited`: nodes whose dependencies a pass extended, the only ones that can now come
    before a dependency (the renderers register a node after its parent, provider and
    dependencies: graph.py)."""

    def __init__(self, graph: Graph):
        self.scan(graph)

    def scan(self, graph: Graph) -> None:
        self.kinds: dict[str, list[Node]] = {}
        self.types: dict[str, list[Node]] = {}
        self.edited: list[Node] = []
        kinds, types = self.kinds, self.types
        for node in graph:
            types.setdefault(node.type, []).append(node)
            if node.type.startswith("kubernetes:"):
                kind = node.inputs.get("kind")
                if kind.__class__ is str:       # what a pass asks for; any other is never equal to it
                    kinds.setdefault(kind, []).append(node)
        self.place = {key: i for i, key in enumerate(graph.nodes)}

    def of(self, kinds=(), types=()) -> list[Node]:
        """Kubernetes objects of these kinds and nodes of these types, in registration order."""
        lists = [found for k in kinds if (found := self.kinds.get(k))] + \
                [found for t in types if (found := self.types.get(t))]
        if len(lists) == 1:
            return list(lists[0])
        place = self.place
        return sorted((n for found in lists for n in found), key=lambda n: place[n.key])


def workloads(graph: Graph, index: Index | None = None) -> dict[tuple[str, str, int], list[str]]:
    """(cluster, "namespace/deployment", replica) -> the keys of that replica's workload nodes."""
    out: dict[tuple[str, str, int], list[str]] = {}
    for node in (graph if index is None else index.of(WORKLOAD_KINDS)):
        if node.inputs.get("kind") not in WORKLOAD_KINDS:     # the cheap test first: most nodes fail it
            continue
        lbls = _labels(node)
        if DEPLOYMENT in lbls and REPLICA in lbls:
            key = (node.cluster, f"{_namespace(node)}/{lbls[DEPLOYMENT]}", int(lbls[REPLICA]))
            out.setdefault(key, []).append(node.key)
    return out


def _after(node: Node, keys, index: Index | None = None) -> None:
    if not keys:            # most nodes of a pass gain nothing
        return
    node.depends_on = tuple(dict.fromkeys([*node.depends_on, *(k for k in keys if k != node.key)]))
    if index is not None:
        index.edited.append(node)


def await_traffic(graph: Graph, services: dict[str, dict], http01: frozenset = frozenset(),
                  drain_ttl: int | None = None, index: Index | None = None) -> None:
    """Make every route and DNS record of a service wait for the workloads it sends requests to,
    and every record for the service's routes on its cluster(s): created after them, so a resolved
    name finds a route, and deleted before them when a cluster leaves the service (module docstring).
    With `drain_ttl` (the records' TTL; None: `dns.drain: false`) a drain stands between a record
    and the routes of each cluster (render/drain.py), registered just before the record.
    `services`: "namespace/name" -> {"hostname", "deployments": [keys]}; `http01`: the (hostname,
    cluster) pairs whose certificate that cluster proves over ACME HTTP-01: their records wait for
    the cluster's Gateway record instead, undrained (module docstring). `index`: `Index(graph)`,
    if made already."""
    by_replica = workloads(graph, index)
    on: dict[tuple[str, str], list[str]] = {}
    for (cluster, deployment, _), keys in sorted(by_replica.items()):
        on.setdefault((cluster, deployment), []).extend(keys)
    hosts: dict[str, list[str]] = {}
    routes: dict[tuple[str, str], list[str]] = {}    # (cluster, hostname) -> its services' routes there
    named = {}
    for key, s in services.items():
        if s.get("hostname"):
            mine = hosts.setdefault(s["hostname"], [])     # a shared hostname: every service's deployments
            mine += [d for d in s["deployments"] if d not in mine]
            named[key] = s["hostname"]
    records = (ROUTE53_RECORD, CLOUD_DNS_RECORD)
    traffic = []            # the routes and DNS records in graph order: the nodes the pass below changes
    gateways = {}           # cluster -> its Gateway's record
    for node in (graph if index is None else index.of(TRAFFIC_KINDS, records)):
        if node.type in records:
            traffic.append(node)
            if node.type == ROUTE53_RECORD and node.name.startswith("gateway-"):
                gateways[node.name.removeprefix("gateway-")] = node.key
        elif node.inputs.get("kind") in TRAFFIC_KINDS and node.type.startswith("kubernetes:"):
            traffic.append(node)
            lbls = _labels(node)
            if SERVICE_LABEL in lbls and (host := named.get(f"{_namespace(node)}/{lbls[SERVICE_LABEL]}")):
                routes.setdefault((node.cluster, host), []).append(node.key)
    drains: dict[str, list[Node]] = {}      # record key -> its drains

    def through_drain(record: Node, host: str, cluster: str, keys, name: str) -> list[str]:
        """What the record waits for on `cluster`: its routes there, or a drain that waits for them."""
        if drain_ttl is None or not keys:
            return list(keys)
        d = Node(DRAIN_TYPE, name, drain_inputs(host, cluster, drain_ttl), record.parent, None, tuple(keys))
        drains.setdefault(record.key, []).append(d)
        return [d.key]

    for node in traffic:
        targets, clusters = (), ()
        if node.type.startswith("kubernetes:") and node.inputs.get("kind") in TRAFFIC_KINDS:
            lbls, ns = _labels(node), _namespace(node)
            if DEPLOYMENT in lbls:
                targets = (f"{ns}/{lbls[DEPLOYMENT]}",)
            elif SERVICE_LABEL in lbls:
                targets = tuple(services.get(f"{ns}/{lbls[SERVICE_LABEL]}", {}).get("deployments", ()))
            clusters = (node.cluster,)
        elif node.type == ROUTE53_RECORD and node.inputs.get("name") in hosts:
            cluster = record_cluster(node.inputs.get("setIdentifier") or "")    # a per-replica record's too
            if (node.inputs["name"], cluster) in http01:
                _after(node, [gateways[cluster]] if cluster in gateways else [])
                continue
            targets, clusters = hosts[node.inputs["name"]], (cluster,)
            _after(node, through_drain(node, node.inputs["name"], cluster, routes.get((cluster, node.inputs["name"]), ()),
                                       drain_name(node.name)))
        elif node.type == CLOUD_DNS_RECORD and str(node.inputs.get("name", "")).rstrip(".") in hosts:
            host = node.inputs["name"].rstrip(".")
            if any(h == host for h, _ in http01):    # its rrdatas are the Gateway addresses already
                continue
            targets = hosts[host]
            clusters = tuple(sorted({c for c, _ in on}))
            _after(node, [k for (c, h), keys in sorted(routes.items()) if h == host
                          for k in through_drain(node, host, c, keys, drain_name(node.name, c))])
        _after(node, [k for c in clusters for d in targets for k in on.get((c, d), ())])
    if drains:
        order = [n for node in graph for n in (*drains.get(node.key, ()), node)]
        graph.nodes = {}
        for node in order:
            graph.add(node)


def _picker_name(pool: Node) -> str | None:
    spec = pool.inputs.get("spec") or {}
    return (spec.get("endpointPickerRef") or spec.get("extensionRef") or {}).get("name")


# The kinds `await_pools` and `await_references` look up by name
NAMED_KINDS = (POOL_KIND, "Service", "Deployment", "AIServiceBackend", "Secret")


def index_by_name(graph: Graph, index: Index | None = None) -> dict[tuple[str, str, str, str], list[Node]]:
    """(cluster, namespace, name, kind) -> the Kubernetes objects of that name and kind, in
    registration order (an InferencePool in both API groups shares one key). With `index`
    (`Index(graph)`), only the objects of NAMED_KINDS, the ones the passes look up."""
    named: dict[tuple[str, str, str, str], list[Node]] = {}
    for node in (graph if index is None else index.of(NAMED_KINDS)):
        if node.type.startswith("kubernetes:"):
            name = (node.inputs.get("metadata") or {}).get("name") or ""
            named.setdefault((node.cluster, _namespace(node), name, node.inputs.get("kind") or ""), []).append(node)
    return named


def await_references(graph: Graph, named: dict | None = None, index: Index | None = None) -> None:
    """Envoy AI Gateway's objects after what they name, so deleted before it: an AIGatewayRoute after
    the AIServiceBackends of its rules, an AIServiceBackend after the BackendSecurityPolicy that
    targets it, that policy after its Secret. AI Gateway v1.0.0 removes its finalizer with one
    Update whose conflict it only logs (internal/controller/controller.go L606-619), and its
    controllers ignore status and metadata-only changes (GenerationChangedPredicate, L298-302), so
    nothing retries: a backend deleted while the policy's deletion had AI Gateway rewrite the
    backend's status kept its finalizer for good ("Failed to remove finalizer ... the object has
    been modified" in its log), and `destroy` waited out its 10 minutes (e2e g4). One after
    another, nothing writes the backend while it goes. `named`: `index_by_name(graph)`, `index`:
    `Index(graph)`, if made already."""
    named = index_by_name(graph, index) if named is None else named

    def first(cluster: str, ns: str, kind: str, name) -> Node | None:
        found = named.get((cluster, ns, name, kind))
        return found[0] if found else None

    kinds = ("AIGatewayRoute", "BackendSecurityPolicy")
    for node in (list(graph) if index is None else index.of(kinds)):
        kind = node.inputs.get("kind")
        if kind not in kinds or not node.type.startswith("kubernetes:"):
            continue
        spec, where = node.inputs.get("spec") or {}, (node.cluster, _namespace(node))
        if kind == "AIGatewayRoute":
            refs = [r.get("name") for rule in spec.get("rules", []) for r in rule.get("backendRefs", [])]
            _after(node, [b.key for n in refs if (b := first(*where, "AIServiceBackend", n))], index)
            continue
        secret = first(*where, "Secret", ((spec.get("apiKey") or {}).get("secretRef") or {}).get("name"))
        if secret:
            _after(node, [secret.key], index)
        for t in spec.get("targetRefs", []):
            if t.get("kind") == "AIServiceBackend" and (backend := first(*where, "AIServiceBackend", t.get("name"))):
                _after(backend, [node.key], index)
    _dependencies_first(graph, index)


def _dependencies_first(graph: Graph, index: Index | None = None) -> None:
    """Registration order again with each node after its parent, provider and dependencies (the
    materialiser resolves a dependency by the node registered before it); nodes already in order
    keep their places. With `index`, only the nodes it says were edited are checked (the others
    were registered in order), and it indexes the graph again if the order changes."""
    nodes, placed, order = graph.nodes, set(), []
    if _in_order(nodes) if index is None else _edits_in_order(index):
        return

    def place(node: Node) -> None:
        placed.add(node.key)
        for k in (node.parent, node.provider, *node.depends_on):
            if k in nodes and k not in placed:
                place(nodes[k])
        order.append(node)

    for node in list(nodes.values()):
        if node.key not in placed:
            place(node)
    graph.nodes = {n.key: n for n in order}
    if index is not None:
        index.scan(graph)


def _edits_in_order(index: Index) -> bool:
    """Every edited node still after its dependencies (`_in_order`, for the nodes a pass changed)."""
    at = index.place.get
    for node in index.edited:
        i = at(node.key)
        for k in node.depends_on:
            if at(k, -1) > i:
                return False
    return True


def _in_order(nodes: dict) -> bool:
    """Every node already after its parent, provider and dependencies (the common case: then the
    pass would only rebuild the same order)."""
    at = {key: i for i, key in enumerate(nodes)}.get
    for i, node in enumerate(nodes.values()):
        if at(node.parent, -1) > i or at(node.provider, -1) > i:
            return False
        for k in node.depends_on:
            if at(k, -1) > i:
                return False
    return True


def await_pools(graph: Graph, named: dict | None = None, index: Index | None = None) -> None:
    """Every LLMInferenceService that names a shared InferencePool (`router.scheduler.pool.ref`)
    depends on that pool on its cluster and namespace, in every API group, and on the pool's
    endpoint picker: the Service the pool names and the Deployment that Service selects
    (module docstring). Nothing here depends on a workload, so no cycle can form. `named`:
    `index_by_name(graph)`, `index`: `Index(graph)`, if made already (dependencies change here, not
    names or registration order)."""
    named = index_by_name(graph, index) if named is None else named
    # each (cluster, namespace)'s Deployments in the order `named` holds them, by what their selector
    # matches: one scan, not one per pool ref (2,000 refs at 100 x 2,000)
    deployments: dict[tuple, list[Node]] = {}
    for (c, n, _, kind), ds in named.items():
        if kind == "Deployment":
            for d in ds:
                if (labels := _label_key(_match_labels(d))) is not None:
                    deployments.setdefault((c, n, labels), []).append(d)
    for node in (graph if index is None else index.of(POOL_REF_KINDS)):
        if not (node.type.startswith("kubernetes:") and node.inputs.get("kind") in POOL_REF_KINDS):
            continue
        ref = pool_ref(node.inputs.get("spec") or {})
        if not ref:
            continue
        cluster, ns = node.cluster, _namespace(node)
        needs = list(named.get((cluster, ns, ref, POOL_KIND), ()))   # every API group's
        for picker in sorted({p for pool in needs if (p := _picker_name(pool))}):
            for svc in named.get((cluster, ns, picker, "Service"), ()):
                needs.append(svc)
                selector = (svc.inputs.get("spec") or {}).get("selector") or {}
                if selector and (labels := _label_key(selector)) is not None:
                    needs += deployments.get((cluster, ns, labels), ())
        _after(node, [n.key for n in needs], index)


def _match_labels(deployment: Node):
    return ((deployment.inputs.get("spec") or {}).get("selector") or {}).get("matchLabels")


def _label_key(labels) -> frozenset | None:
    """Labels as a key, equal where the dicts are equal; None where they cannot be one (not a
    dict, or a value that is not text, which the API server refuses anyway)."""
    if not isinstance(labels, dict):
        return None
    try:
        return frozenset(labels.items())
    except TypeError:
        return None


def keep_own_pools(graph: Graph) -> None:
    """The first `up` of an install made before the shared pools (`perReplicaPools`): every
    LLMInferenceService leaves out `router.scheduler.pool.ref`, so KServe keeps the pool and picker
    it made for the replica, which the old routes still name; the shared pool, its picker and the
    routes to it are created beside them. KServe deletes a replica's own pool as soon as its
    service names a shared one (kserve@v0.20.0 pkg/controller/v1alpha2/llmisvc/scheduler.go
    L188-209), so `pool.ref` comes in the next `up`, once no route names the old pool."""
    for node in graph:
        if node.type.startswith("kubernetes:") and node.inputs.get("kind") in POOL_REF_KINDS and \
                pool_ref(node.inputs.get("spec") or {}):
            spec = node.inputs["spec"]
            node.inputs["spec"] = {**spec, "router": {**spec["router"], "scheduler": {}}}


SPEC_DIGEST = "modelplane.ai/spec-digest"


def _digest(spec) -> str:
    """A stable digest of an LLMInferenceService spec (expressions by their fields, never their ids)."""
    text = json.dumps(spec, sort_keys=True, default=lambda o: vars(o) if hasattr(o, "__dataclass_fields__")
                      else type(o).__name__)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def await_children(graph: Graph) -> None:
    """Beside each LLMInferenceService of a replica, one Patch resource per workload KServe makes
    of it (kserve.children), right after it and depending on it, that `up` awaits until that
    workload has rolled (names.await_ready of the child's kind: a Deployment's `Progressing`
    reason `NewReplicaSetAvailable`, a LeaderWorkerSet's `Available`, both only at the child's
    current generation).

    Why: KServe sets Ready at the new generation in the reconcile that pushes the new spec to its
    child, reading the child's old `Available` (kserve@v0.20.0 pkg/controller/v1alpha2/llmisvc/
    controller.go L240-252; workload_single_node.go L83-86, L324-350; workload_multi_node.go
    L82-85, L113-136), so the service's own await returns before anything rolls. The patch writes
    only metadata (the service's spec digest, so any spec change updates it and its await runs
    again, and the replica labels, so the rollout order counts it as the replica's workload);
    KServe leaves extra metadata alone (DeepDerivative on labels and annotations,
    workload_single_node.go L352-358). pulumi-kubernetes applies a Patch resource server-side and
    awaits it like any object, on create and on update (pulumi/pulumi-kubernetes@v4.32.0
    provider/pkg/await/await.go L190-206, L306-361, L454-545; kinds/util.go L9-13: the type is
    the kind + "Patch"); `pulumi.com/waitFor` checks `status.observedGeneration` or the
    condition's own first (await/condition/jsonpath.go L46-53, kubectl.go L53-62), so the child's
    status before the new spec never satisfies it. `retainOnDelete`: deleting a Patch applies its
    bare identity (provider/pkg/ssa/actions.go L34-58), which would try to create the child once
    KServe deleted it (a rolled or moved replica) and fail on its required fields
    (provider/pkg/provider/provider.go L2627-2634), failing `up`; retained, it only leaves state."""
    order: list[Node] = []
    for node in graph:
        order.append(node)
        if node.inputs.get("kind") != "LLMInferenceService":
            continue
        lbls = _labels(node)
        if DEPLOYMENT not in lbls or REPLICA not in lbls:
            continue
        meta, spec = node.inputs["metadata"], node.inputs.get("spec") or {}
        digest = None
        for api_version, kind, name in children(meta["name"], spec):
            digest = digest or _digest(spec)      # once per service, not per child
            obj = {"apiVersion": api_version, "kind": kind,
                   "metadata": {"name": name, "namespace": meta.get("namespace"),
                                "labels": {DEPLOYMENT: lbls[DEPLOYMENT], REPLICA: lbls[REPLICA]},
                                "annotations": {**await_ready(kind, int(meta["annotations"][TIMEOUT])),
                                                SPEC_DIGEST: digest}}}
            order.append(Node(k8s_type(obj) + "Patch", logical_name(node.cluster, obj), obj, node.parent,
                              node.provider, (node.key,), retain_on_delete=True, cluster=node.cluster))
    if len(order) == len(graph.nodes):
        return
    nodes = {n.key: n for n in order}
    if len(nodes) == len(order):
        graph.nodes = nodes
        return
    graph.nodes = {}
    for node in order:      # a name taken twice: Graph.add raises, naming it
        graph.add(node)


def one_at_a_time(graph: Graph, chains: list[list[tuple[str, str, int]]], index: Index | None = None) -> None:
    """Each (cluster, deployment, replica) of a chain waits for the workloads of the one before it,
    so `up` changes them one replica at a time, each awaited Ready before the next starts."""
    chains = [chain for chain in chains if len(chain) > 1]
    if not chains:          # a first plan: nothing ran before, no graph pass
        return
    by_replica = workloads(graph, index)
    for chain in chains:
        for before, now in zip(chain, chain[1:]):
            for key in by_replica.get(now, ()):
                _after(graph.nodes[key], by_replica.get(before, ()))


def replace_in_place(graph: Graph, replicas: list[tuple[str, str, int]]) -> None:
    """Objects of these replicas (cluster, deployment, replica) are replaced, not updated, when
    their spec changes, the old deleted first (`replaceOnChanges`, `deleteBeforeReplace`): KServe
    refuses a new parallelism as an update (kserve v0.20.0 pkg/apis/serving/v1alpha1/
    llm_inference_service_validation.go, validateImmutableParallelism), a ResourceClaimTemplate's
    spec is immutable (Kubernetes 1.35 OpenAPI, schemas/kubernetes), and the old replica's nodes
    are what the new one runs on."""
    wanted = set(replicas)
    if not wanted:
        return
    for node in graph:
        lbls = _labels(node)
        if node.custom and DEPLOYMENT in lbls and REPLICA in lbls and "spec" in node.inputs and \
                (node.cluster, f"{_namespace(node)}/{lbls[DEPLOYMENT]}", int(lbls[REPLICA])) in wanted:
            node.replace_on_changes, node.delete_before_replace = ("spec",), True


def protect(graph: Graph, wanted: dict[str, bool], index: Index | None = None) -> None:
    """Pulumi `protect` on cloud clusters, node pools and workload CRD releases by name
    (`<cluster>`, `<cluster>-<pool>`, `<cluster>-kserve-llmisvc-crd`): `up` and `destroy` then
    refuse to delete or replace them until an `up` without it ran."""
    types = (*CLOUD_CLUSTERS, *CLOUD_POOLS, HELM_RELEASE)
    for node in (graph if index is None else index.of(types=types)):
        if node.type in types and node.name in wanted:
            node.protect = wanted[node.name]


def immutable_specs(graph: Graph, index: Index | None = None) -> None:
    """A ResourceClaimTemplate's spec is immutable (Kubernetes 1.35 OpenAPI: "This field is
    immutable"): a changed one is replaced, never sent as an update the API server refuses, and
    the old one is deleted first. Its name is fixed, and pulumi-kubernetes asks for delete-first
    only for its own force-new fields (pulumi/pulumi-kubernetes@v4.32.0 provider/pkg/provider/
    provider.go L1645-1658; no resource.k8s.io kind in diff.go L45-80), so a create-first
    replacement fails `AlreadyExists` (its create is client-side since 4.29.0, await.go L241-253);
    the engine takes the program's choice over the provider's (pulumi/pulumi@v3.259.0
    pkg/resource/deploy/step_generator.go L2044-2047). Deleting a template leaves the claims made
    from it, and the pods holding them, as they are (claims are owned by their pods)."""
    for node in (graph if index is None else index.of(("ResourceClaimTemplate",))):
        if node.inputs.get("kind") == "ResourceClaimTemplate" and node.type.startswith("kubernetes:"):
            node.replace_on_changes, node.delete_before_replace = ("spec",), True
