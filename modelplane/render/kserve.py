"""KServe backend: one LLMInferenceService per replica (decode on top, prefill in spec.prefill),
all of a deployment's replicas on a cluster behind one InferencePool.

API version serving.kserve.io/v1alpha1, as KServe v0.20 serves it (v0.16 introduced the CRD; the
presets below are v0.20's). The engine container is named `main`, the name the presets merge
into; they supply the image (llm-d, non-root), the command, ports and probes. What we pass:
- args, each shell-quoted: the presets run `eval "exec vllm serve ... $@"`, which would otherwise
  split JSON such as --kv-transfer-config into several broken flags;
- `worker` for multi-node roles, the same pod (KServe's data-parallel worker presets, and our
  pipeline-parallel one in presets.py, run the engine headless and give the worker no probes);
- the router: our hop Gateway (refs; no client outside the cluster reaches it), KServe's managed HTTPRoute and
  the deployment's shared InferencePool on this cluster (`scheduler.pool.ref`, render/picker.py),
  which the service routes point at.
"""
from __future__ import annotations

import shlex

from ..api.deployment import Topology
from .addons import GATEWAY_NAMESPACE, HOP_GATEWAY, KSERVE_LISTENER, is_own_gateway
from .names import NameTooLong
from .picker import runs_picker

CONTAINER = "main"


def quote_args(args) -> list[str]:
    """Arguments that survive the presets' `eval` intact (each becomes exactly one word)."""
    return [shlex.quote(a) for a in args]


def parallelism(t: Topology) -> dict:
    """Tensor is per node (KServe derives the LWS group size from data/dataLocal). `expert`: the
    data-parallel presets add --enable-expert-parallel (config-llm-*worker-data-parallel.yaml @ v0.20.0)."""
    out = {"tensor": t.tensor}
    if t.pipeline > 1:
        out["pipeline"] = t.pipeline
    if t.data > 1:
        out["data"] = t.data
        out["dataLocal"] = t.data_local
    if t.expert:
        out["expert"] = True
    return out


def multi_node(t: Topology) -> bool:
    """Whether the role gets a `worker` and so KServe's worker presets: every multi-node worker,
    and every data-parallel one, even on one node (LeaderWorkerSet size 1). KServe picks a preset by
    `worker` (config_merge.go L228-263 @ v0.20.0); its single-node presets pass only
    --tensor-parallel-size, so without `worker` data parallelism and `expert` would be dropped."""
    return t.nodes_per_worker > 1 or t.data > 1


def workload(workers: int, topology: Topology, pod: dict, pod_labels: dict, pod_annotations: dict) -> dict:
    out = {"replicas": workers, "parallelism": parallelism(topology),
           "labels": dict(pod_labels), "annotations": dict(pod_annotations), "template": pod}
    if multi_node(topology):
        out["worker"] = pod
    return out


def router(gateway: dict | None, pool: str) -> dict:
    """The deployment's shared InferencePool on the cluster's inference Gateway (render/picker.py).
    KServe becomes Ready only once a route on a Gateway reaches the pool (router.go L706-729), so
    its managed route stays. On a Gateway of ours it attaches to the hop Gateway's `kserve`
    listener (ClusterIP only, a Host of its own): KServe's paths (`/<ns>/<name>/v1/...`) and its
    model header never answer on a public listener (a route without sectionName attaches to every
    listener, config_merge.go L566-580), nor to a request the hop carries for a service, and the
    ref never changes when a cluster gains TLS. That matters: Envoy Gateway
    v1.8.1 keeps the status of a parent a route no longer names (internal/provider/kubernetes/
    status.go L661-676), and KServe counts any stale parent as not ready (router_discovery.go
    L682-705), so moving a managed route between listeners leaves its service NotReady for good
    (seen on the real operators: tests/e2e g5). A cluster without a Gateway keeps KServe's own
    per-service scheduler (reachable inside the cluster only)."""
    if not runs_picker("kserve", gateway):
        return {"scheduler": {}}
    ref = {"name": gateway["name"], "namespace": gateway["namespace"]}
    if is_own_gateway(gateway):   # we know our Gateways' listeners (a gatewayRef's we do not)
        ref = {"name": HOP_GATEWAY, "namespace": GATEWAY_NAMESPACE, "sectionName": KSERVE_LISTENER}
    return {"gateway": {"refs": [ref]}, "route": {}, "scheduler": {"pool": {"ref": {"name": pool}}}}


def pool_ref(spec: dict) -> str | None:
    """The shared InferencePool an LLMInferenceService's spec names, if any."""
    return ((((spec.get("router") or {}).get("scheduler") or {}).get("pool") or {}).get("ref") or {}).get("name")


# The workloads KServe v0.20.0 makes of an LLMInferenceService, named kmeta.ChildName(name, suffix)
# (pkg/controller/v1alpha2/llmisvc/workload_single_node.go L511-517: Deployments `-kserve` and
# `-kserve-prefill`; workload_multi_node.go L663-669: LeaderWorkerSets `-kserve-mn` and
# `-kserve-mn-prefill`); a part with a `worker` runs as a LeaderWorkerSet, else as a Deployment
# (workload_single_node.go L64-86, L197-220; workload_multi_node.go L63-86). knative.dev/pkg
# kmeta/names.go ChildName keeps `name + suffix` while it fits in 63 characters and hashes it
# past that; we name only what we can name exactly.
CHILD_NAME_MAX = 63
CHILD_KINDS = {False: ("apps/v1", "Deployment", "-kserve"),
               True: ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "-kserve-mn")}


def children(name: str, spec: dict) -> list[tuple[str, str, str]]:
    """(apiVersion, kind, name) of each workload KServe creates for this LLMInferenceService:
    the main one, then prefill's if it has one."""
    out = []
    for part, tail in ((spec, ""), (spec.get("prefill"), "-prefill")):
        if part is None:
            continue
        api_version, kind, suffix = CHILD_KINDS[part.get("worker") is not None]
        child = name + suffix + tail
        if len(child) > CHILD_NAME_MAX:
            raise NameTooLong(name, f"LLMInferenceService {name!r}: KServe names its {kind} {child!r}, longer than "
                             f"{CHILD_NAME_MAX} characters, and then hashes it, so `up` cannot await it by name; "
                             f"fix: shorten the deployment's name by {len(child) - CHILD_NAME_MAX} characters")
        out.append((api_version, kind, child))
    return out


def llm_inference_service(metadata: dict, uri: str, served_name: str, decode: dict, prefill: dict | None,
                          gateway: dict | None, pool: str) -> dict:
    spec = {"model": {"uri": uri, "name": served_name}, **decode}
    if prefill is not None:
        spec["prefill"] = prefill
    spec["router"] = router(gateway, pool)
    return {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "LLMInferenceService",
            "metadata": metadata, "spec": spec}
