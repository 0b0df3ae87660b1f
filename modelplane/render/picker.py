"""One endpoint picker per model per cluster (pure).

Every KServe replica of a deployment on a cluster names one shared InferencePool in its
`router.scheduler.pool.ref`. KServe then runs no picker of its own for it and points its managed
route at that pool (kserve/kserve@v0.20.0 pkg/controller/v1alpha2/llmisvc/scheduler.go L97-L233,
config_merge.go L212-214 and L355-368), so one endpoint picker sees the ready pods of every replica
there and balances by queue, KV-cache use and prefix cache across all of them. It drops pods that
are not Ready (llm-d-router@v0.9.0 pkg/epp/controller/pod_reconciler.go L90-101),
so a lost replica costs only its capacity. Why this shape and not one LLMInferenceService with
`replicas: N`: docs/routing.md.

What runs is what KServe v0.20.0's own scheduler preset would run for one service
(config/llmisvcconfig/config-llm-scheduler.yaml; its plugin configuration is generated in
scheduler.go L492-589): the llm-d router's endpoint picker, gRPC ext-proc on 9002 with its
self-signed TLS (Envoy AI Gateway v1.0.0 always dials the picker over TLS without verifying it,
internal/extensionserver/inferencepool.go L202-272), health on 9003, metrics on 9090.
"""
from __future__ import annotations

from functools import lru_cache

import yaml

from ..api import substrate
from .names import DEPLOYMENT, MANAGED_BY, REPLICA, await_ready, labels, meta

# The default image: KServe v0.20.0's scheduler preset (config-llm-scheduler.yaml L49), llm-d/llm-d-router
# v0.9.0, the renamed llm-d-inference-scheduler (its Makefile L20-22 builds llm-d-router-endpoint-picker).
# A cluster's substrate.endpointPicker points it at a mirror, a digest or another build (api/substrate.py).
EPP_IMAGE = substrate.EPP_IMAGE
# High availability as KServe's scheduler HA mode runs it: more than one replica gets
# `--ha-enable-leader-election` (kserve@v0.20.0 pkg/controller/v1alpha2/llmisvc/scheduler.go L407-414).
# Only the leader passes readiness, the standby stays live (llm-d-router@v0.9.0
# cmd/epp/runner/health.go L66-89), and the lease is released on shutdown
# (pkg/epp/server/controller_manager.go L109-115), so a standby takes over a lost leader in seconds.
PICKER_REPLICAS = 2
# KServe's preset sleeps 15 s before SIGTERM so Envoy stops opening streams to a leaving pod first
# (config-llm-scheduler.yaml L30-35).
PRESTOP_SLEEP = 15
GRPC_PORT, HEALTH_PORT, METRICS_PORT = 9002, 9003, 9090
TARGET_PORT = 8000          # vLLM, or on P/D decode pods the routing sidecar (KServe hard-codes 8000)
WORKLOAD = {"kserve.io/component": "workload"}   # single-node pods, LWS leaders and prefill pods; not LWS workers
ROLE_LABEL = "llm-d.ai/role"
COMPONENT = "app.kubernetes.io/component"
POOL_V1 = "inference.networking.k8s.io"
POOL_V1ALPHA2 = "inference.networking.x-k8s.io"


def runs_picker(backend: str, gateway: dict | None) -> bool:
    """Whether a deployment's replicas on a cluster share a pool and picker: KServe, on a cluster
    whose Gateway routes to them (without one, KServe keeps a picker per replica, in-cluster only)."""
    return backend == "kserve" and gateway is not None


def pool_name(deployment: str) -> str:
    """The shared InferencePool of a deployment on a cluster (never one of KServe's
    `<service>-inference-pool` children, which KServe deletes for a service with pool.ref)."""
    return f"{deployment}-pool"


def picker_name(deployment: str) -> str:
    """The endpoint picker's Deployment and Service."""
    return f"{deployment}-epp"


# Every picker of a team namespace on a cluster runs as one ServiceAccount with one Role: they need
# the same rights, and one set per namespace keeps a fleet's object count down.
PICKER_ACCOUNT = "modelplane-epp"


def decode_service(deployment: str) -> str:
    """P/D: a Service over the deployment's ready decode pods there (what DNS health checks probe)."""
    return f"{deployment}-decode"


def selector(deployment: str) -> dict:
    return {DEPLOYMENT: deployment, **WORKLOAD}


def replica_probe(deployment: str, index: int) -> str:
    """A Service over one replica's serving pods there (its decode pods for P/D): what that replica's
    own DNS record is checked against, where a cluster carries several replicas (review N11)."""
    return f"{deployment}-{index}-health"


def replica_probe_service(deployment: str, namespace: str, index: int, disaggregated: bool) -> dict:
    """The Service `replica_probe` names. It selects by label (every pod of the replica, a surged
    one's too), so no KServe child is named: KServe's own `<service>-kserve-workload-svc` is its to
    reshape."""
    sel = {**selector(deployment), REPLICA: str(index), **({ROLE_LABEL: "decode"} if disaggregated else {})}
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": meta(replica_probe(deployment, index), namespace, labels(deployment, index)),
            "spec": {"type": "ClusterIP", "selector": sel,
                     "ports": [{"name": "http", "port": TARGET_PORT, "targetPort": TARGET_PORT, "protocol": "TCP"}]}}


def _profile(*plugins) -> list[dict]:
    return [{"pluginRef": p} if w is None else {"pluginRef": p, "weight": w} for p, w in plugins]


@lru_cache(maxsize=2)   # one text per kind: a fleet renders thousands of pickers
def picker_config(disaggregated: bool) -> str:
    """The EndpointPickerConfig KServe v0.20.0 generates (scheduler.go L501-588): one default profile
    for unified serving; for P/D a prefill and a decode profile split by `llm-d.ai/role`, every
    request prefilled on a prefill pod (always-disagg-pd-decider)."""
    if disaggregated:
        doc = {"apiVersion": "inference.networking.x-k8s.io/v1alpha1", "kind": "EndpointPickerConfig",
               "plugins": [{"type": t} for t in (
                   "disagg-headers-handler", "prefill-filter", "decode-filter", "queue-scorer",
                   "kv-cache-utilization-scorer", "active-request-scorer", "prefix-cache-scorer", "max-score-picker",
                   "always-disagg-pd-decider")] + [
                   {"type": "disagg-profile-handler",
                    "parameters": {"deciders": {"prefill": "always-disagg-pd-decider"}}}],
               "schedulingProfiles": [
                   {"name": "prefill", "plugins": _profile(("prefill-filter", None), ("prefix-cache-scorer", 3),
                                                           ("queue-scorer", 2), ("kv-cache-utilization-scorer", 2),
                                                           ("max-score-picker", None))},
                   {"name": "decode", "plugins": _profile(("decode-filter", None), ("active-request-scorer", 2),
                                                          ("prefix-cache-scorer", 3), ("max-score-picker", None))}]}
    else:
        doc = {"apiVersion": "inference.networking.x-k8s.io/v1alpha1", "kind": "EndpointPickerConfig",
               "plugins": [{"type": t} for t in ("single-profile-handler", "queue-scorer", "kv-cache-utilization-scorer",
                                                 "prefix-cache-scorer", "no-hit-lru-scorer", "max-score-picker")],
               "schedulingProfiles": [{"name": "default", "plugins": _profile(
                   ("queue-scorer", 2), ("kv-cache-utilization-scorer", 2), ("prefix-cache-scorer", 3),
                   ("no-hit-lru-scorer", 2), ("max-score-picker", None))}]}
    return yaml.safe_dump(doc, sort_keys=False)


# The picker's Role, as KServe grants its own (scheduler.go L651-780): it watches pods, its pool and
# the inference objectives/rewrites of both API groups, and leases for leader election.
RULES = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [POOL_V1, POOL_V1ALPHA2], "resources": ["inferencepools", "inferenceobjectives", "inferencemodels"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": [POOL_V1ALPHA2], "resources": ["inferencemodelrewrites", "inferencepoolimports"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["llm-d.ai"], "resources": ["inferenceobjectives", "inferencemodelrewrites"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
]


def _grpc_probe(service: str, delay: int) -> dict:
    return {"grpc": {"port": HEALTH_PORT, "service": service}, "initialDelaySeconds": delay, "periodSeconds": 10}


def picker_rbac(namespace: str) -> list[dict]:
    """The ServiceAccount, Role and RoleBinding the namespace's endpoint pickers run as (the rights
    KServe grants its own, scheduler.go L651-780), and the binding to `system:auth-delegator`: the
    picker authenticates scrapes of /metrics with TokenReviews (llm-d-router@v0.9.0
    pkg/epp/server/options.go L141, on by default)."""
    lbls = {**MANAGED_BY, COMPONENT: "endpoint-picker"}
    subject = [{"kind": "ServiceAccount", "name": PICKER_ACCOUNT, "namespace": namespace}]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(PICKER_ACCOUNT, namespace, lbls)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta(PICKER_ACCOUNT, namespace, lbls),
         "rules": RULES},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": meta(PICKER_ACCOUNT, namespace, lbls),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": PICKER_ACCOUNT},
         "subjects": subject},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": meta(f"{namespace}-{PICKER_ACCOUNT}-auth", None, lbls),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:auth-delegator"},
         "subjects": subject},
    ]


def picker_objects(deployment: str, namespace: str, disaggregated: bool, image: str = EPP_IMAGE) -> list[dict]:
    """The shared InferencePool and its endpoint picker for one deployment on one cluster (it runs as
    the namespace's picker account, `picker_rbac`); for P/D also the pool's v1alpha2 twin and the
    decode Service.

    The picker is highly available (PICKER_REPLICAS, leader election, a PodDisruptionBudget). It
    keeps `Recreate`, as KServe and llm-d-router's chart do (scheduler.go L367-374; llm-d-router
    config/charts/routerlib/templates/_deployment.yaml L12-19): a rolling update can never take
    the old leader down, since the new pods are not ready until they lead. So a picker change
    (image, flags, config) is a brief outage of that pool; a lost pod or node is not.
    The budget counts ready pods, i.e. the leader: it refuses a drain's eviction of the leader
    (delete that pod to hand over) and `AlwaysAllow` lets the not-ready standby go at any time.

    The twin: KServe v0.20.0's decode template runs the llm-d routing sidecar with SSRF protection
    against `--pool-group=inference.networking.x-k8s.io --inference-pool=<ns>/<pool.ref>`
    (config-llm-decode-template.yaml L277-288), and the v0.9.0 sidecar reads that group's flat
    `spec.selector` only (llm-d-router@v0.9.0 pkg/sidecar/proxy/allowlist.go L250-274); without a
    v1alpha2 pool of that name its allowlist stays empty and every prefill call gets 403."""
    name, picker = pool_name(deployment), picker_name(deployment)
    lbls = {**MANAGED_BY, DEPLOYMENT: deployment}
    picker_lbls = {**lbls, COMPONENT: "endpoint-picker"}
    args = ["--pool-name", name, "--pool-namespace", namespace, "--zap-encoder", "json",
            "--grpc-port", str(GRPC_PORT), "--grpc-health-port", str(HEALTH_PORT),
            "--config-text", picker_config(disaggregated), "--ha-enable-leader-election"]
    container = {"name": "epp", "image": image, "imagePullPolicy": "IfNotPresent", "command": ["/app/epp"],
                 "args": args,
                 "ports": [{"name": "grpc", "containerPort": GRPC_PORT, "protocol": "TCP"},
                           {"name": "grpc-health", "containerPort": HEALTH_PORT, "protocol": "TCP"},
                           {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
                 "livenessProbe": _grpc_probe("liveness", 5), "readinessProbe": _grpc_probe("readiness", 30),
                 "lifecycle": {"preStop": {"exec": {"command": ["/bin/sleep", str(PRESTOP_SLEEP)]}}},
                 "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "16Gi"}}}
    match = {DEPLOYMENT: deployment, COMPONENT: "endpoint-picker"}
    # Leader and standby on different nodes where the cluster has more than one.
    spread = [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
               "labelSelector": {"matchLabels": match}}]
    out = [
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": meta(picker, namespace, picker_lbls, await_ready("Deployment")),
         "spec": {"replicas": PICKER_REPLICAS, "strategy": {"type": "Recreate"},
                  "selector": {"matchLabels": match},
                  "template": {"metadata": {"labels": picker_lbls},
                               "spec": {"serviceAccountName": PICKER_ACCOUNT, "terminationGracePeriodSeconds": 130,
                                        "topologySpreadConstraints": spread, "containers": [container]}}}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta(picker, namespace, picker_lbls),
         "spec": {"minAvailable": 1, "selector": {"matchLabels": match},
                  "unhealthyPodEvictionPolicy": "AlwaysAllow"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": meta(picker, namespace, picker_lbls),
         "spec": {"type": "ClusterIP", "selector": match,
                  "ports": [{"name": "grpc", "port": GRPC_PORT, "targetPort": "grpc", "protocol": "TCP"},
                            {"name": "grpc-health", "port": HEALTH_PORT, "targetPort": "grpc-health",
                             "protocol": "TCP"},
                            {"name": "metrics", "port": METRICS_PORT, "targetPort": "metrics", "protocol": "TCP"}]}},
        # FailClose is the API's default; Envoy AI Gateway v1.0.0 fails closed whatever it says
        # (FailureModeAllow false, inferencepool.go L314).
        {"apiVersion": f"{POOL_V1}/v1", "kind": "InferencePool", "metadata": meta(name, namespace, lbls),
         "spec": {"selector": {"matchLabels": selector(deployment)}, "targetPorts": [{"number": TARGET_PORT}],
                  "endpointPickerRef": {"kind": "Service", "name": picker, "port": {"number": GRPC_PORT},
                                        "failureMode": "FailClose"}}},
    ]
    if disaggregated:
        out.append({"apiVersion": f"{POOL_V1ALPHA2}/v1alpha2", "kind": "InferencePool",
                    "metadata": meta(name, namespace, lbls),
                    "spec": {"selector": selector(deployment), "targetPortNumber": TARGET_PORT,
                             "extensionRef": {"name": picker, "portNumber": GRPC_PORT, "failureMode": "FailClose"}}})
        out.append({"apiVersion": "v1", "kind": "Service", "metadata": meta(decode_service(deployment), namespace, lbls),
                    "spec": {"type": "ClusterIP", "selector": {**selector(deployment), ROLE_LABEL: "decode"},
                             "ports": [{"name": "http", "port": TARGET_PORT, "targetPort": TARGET_PORT,
                                        "protocol": "TCP"}]}})
    return out
