"""The order of an `up`, as resource options on the graph (pure; docs/changes.md tells it whole).

Found by what the nodes are, not by who rendered them, so it holds whatever the routing
renderers emit:
- a workload is a Kubernetes object of a kind in WORKLOAD_KINDS labelled with a deployment and a
  replica (names.DEPLOYMENT, names.REPLICA); `up` awaits it Ready (names.await_ready);
- traffic is an HTTPRoute, GRPCRoute or InferencePool (its deployment label, else its service
  label, says whose replicas it sends requests to) and a DNS record of a service's hostname
  (Route 53: one per cluster, `setIdentifier`; Cloud DNS: one record set over the clusters).
  Traffic depends on the workloads it reaches on its cluster, so it only moves to replicas that
  are Ready; what a plan no longer declares Pulumi deletes at the end of `up`, after all of it
  (pulumi/pulumi pkg/resource/deploy/deployment_executor.go, `performDeletes` runs once the
  program's registrations are done).
"""
from __future__ import annotations

from .graph import Graph, Node
from .names import DEPLOYMENT, REPLICA, WORKLOAD_KINDS
from .routing import SERVICE_LABEL

TRAFFIC_KINDS = ("HTTPRoute", "GRPCRoute", "InferencePool")
ROUTE53_RECORD, CLOUD_DNS_RECORD = "aws:route53/record:Record", "gcp:dns/recordSet:RecordSet"
CLOUD_CLUSTERS = ("gcp:container/cluster:Cluster", "aws:eks/cluster:Cluster")
CLOUD_POOLS = ("gcp:container/nodePool:NodePool", "aws:eks/nodeGroup:NodeGroup")


def _labels(node: Node) -> dict:
    meta = node.inputs.get("metadata") if node.type.startswith("kubernetes:") else None
    return (meta or {}).get("labels") or {} if isinstance(meta, dict) else {}


def _namespace(node: Node) -> str:
    return (node.inputs.get("metadata") or {}).get("namespace") or ""


def workloads(graph: Graph) -> dict[tuple[str, str, int], list[str]]:
    """(cluster, "namespace/deployment", replica) -> the keys of that replica's workload nodes."""
    out: dict[tuple[str, str, int], list[str]] = {}
    for node in graph:
        lbls = _labels(node)
        if node.inputs.get("kind") in WORKLOAD_KINDS and DEPLOYMENT in lbls and REPLICA in lbls:
            key = (node.cluster, f"{_namespace(node)}/{lbls[DEPLOYMENT]}", int(lbls[REPLICA]))
            out.setdefault(key, []).append(node.key)
    return out


def _after(node: Node, keys) -> None:
    node.depends_on = tuple(dict.fromkeys([*node.depends_on, *(k for k in keys if k != node.key)]))


def await_traffic(graph: Graph, services: dict[str, dict]) -> None:
    """Make every route, InferencePool and DNS record of a service wait for the workloads it
    sends requests to. `services`: "namespace/name" -> {"hostname", "deployments": [keys]}."""
    by_replica = workloads(graph)
    on: dict[tuple[str, str], list[str]] = {}
    for (cluster, deployment, _), keys in sorted(by_replica.items()):
        on.setdefault((cluster, deployment), []).extend(keys)
    hosts = {s["hostname"]: s["deployments"] for s in services.values() if s.get("hostname")}
    for node in graph:
        targets, clusters = (), ()
        if node.type.startswith("kubernetes:") and node.inputs.get("kind") in TRAFFIC_KINDS:
            lbls, ns = _labels(node), _namespace(node)
            if DEPLOYMENT in lbls:
                targets = (f"{ns}/{lbls[DEPLOYMENT]}",)
            elif SERVICE_LABEL in lbls:
                targets = tuple(services.get(f"{ns}/{lbls[SERVICE_LABEL]}", {}).get("deployments", ()))
            clusters = (node.cluster,)
        elif node.type == ROUTE53_RECORD and node.inputs.get("name") in hosts:
            targets, clusters = hosts[node.inputs["name"]], (node.inputs.get("setIdentifier"),)
        elif node.type == CLOUD_DNS_RECORD and str(node.inputs.get("name", "")).rstrip(".") in hosts:
            targets = hosts[node.inputs["name"].rstrip(".")]
            clusters = tuple(sorted({c for c, _ in on}))
        _after(node, [k for c in clusters for d in targets for k in on.get((c, d), ())])


def one_at_a_time(graph: Graph, chains: list[list[tuple[str, str, int]]]) -> None:
    """Each (cluster, deployment, replica) of a chain waits for the workloads of the one before it,
    so `up` changes them one replica at a time, each awaited Ready before the next starts."""
    by_replica = workloads(graph)
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
    for node in graph:
        lbls = _labels(node)
        if node.custom and DEPLOYMENT in lbls and REPLICA in lbls and "spec" in node.inputs and \
                (node.cluster, f"{_namespace(node)}/{lbls[DEPLOYMENT]}", int(lbls[REPLICA])) in wanted:
            node.replace_on_changes, node.delete_before_replace = ("spec",), True


def protect(graph: Graph, wanted: dict[str, bool]) -> None:
    """Pulumi `protect` on cloud clusters and node pools by name (`<cluster>`, `<cluster>-<pool>`):
    `up` then refuses to delete or replace them until an `up` without it ran."""
    for node in graph:
        if node.type in (*CLOUD_CLUSTERS, *CLOUD_POOLS) and node.name in wanted:
            node.protect = wanted[node.name]


def immutable_specs(graph: Graph) -> None:
    """A ResourceClaimTemplate's spec is immutable (Kubernetes 1.35 OpenAPI: "This field is
    immutable"): a changed one is replaced, never sent as an update the API server refuses."""
    for node in graph:
        if node.inputs.get("kind") == "ResourceClaimTemplate" and node.type.startswith("kubernetes:"):
            node.replace_on_changes = ("spec",)
