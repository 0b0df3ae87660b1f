"""Our own LLMInferenceServiceConfig presets: pipeline parallelism across nodes (pure).

KServe v0.20 picks a multi-node preset by name: a service with `worker` and
`parallelism.pipeline` merges `kserve-config-llm-worker-pipeline-parallel`, and a disaggregated
one `kserve-config-llm-decode-worker-pipeline-parallel` for its decode role and
`kserve-config-llm-prefill-worker-pipeline-parallel` for its prefill role
(pkg/controller/v1alpha2/llmisvc/config_merge.go L228-263 @ v0.20.0); a missing one fails with
ConfigNotFound (getConfig, L741-758), and no release ships them (the names sit under "FIXME move
those presets to well-known", L90-94; being outside WellKnownDefaultConfigs, WellKnownConfigResolver
resolves them to these plain names). So the substrate installs all three under exactly those names
in `kserve`, and every LLMInferenceService with pipeline > 1 gets them as KServe's own presets are
got: no baseRefs (listing them there too would merge them twice).

The engine is one vLLM over `pipeline` nodes with the multiprocessing executor's multi-node form
(vllm-project/vllm#23691; docs/serving/parallelism_scaling.md "Running vLLM with
MultiProcessing"): every node runs `vllm serve` with the same `--tensor-parallel-size`,
`--pipeline-parallel-size`, `--nnodes` and `--master-addr`; node 0 (the LWS leader) serves the
API, the others add `--node-rank N --headless`. The image is the one KServe v0.20.0's presets
run, ghcr.io/llm-d/llm-d-cuda:v0.8.0, which carries vLLM v0.23.0 (llm-d/llm-d#1819), later
than that change; on GPUDirect pools every LLMInferenceService names the pool's image in its
template and worker instead (catalog/gpudirect.yaml kserveImage: llm-d's Ubuntu build). KServe sizes the LeaderWorkerSet to `pipeline` pods (ParallelismSpec.GetSize,
pkg/apis/serving/v1alpha2/llm_inference_service_types_func.go L102-116), and LWS numbers them
through LWS_WORKER_INDEX (0 = leader) and names the leader in LWS_LEADER_ADDRESS. The rest of
the pod (security context, volumes, probes on the leader only, "--" so service args reach
`vllm serve` through "$@") follows config-llm-worker-data-parallel.yaml @ v0.20.0; the roles of a
disaggregated service follow its decode and prefill data-parallel presets
(config-llm-decode-worker-data-parallel.yaml: the leader's engine on port 8001 behind llm-d's
routing sidecar on 8000; config-llm-prefill-worker-data-parallel.yaml: the pods under
spec.prefill, the parallelism read from .Spec.Prefill.Parallelism).
"""
from __future__ import annotations

from .names import MANAGED_BY, meta

NAME = "kserve-config-llm-worker-pipeline-parallel"
DECODE_NAME = "kserve-config-llm-decode-worker-pipeline-parallel"
PREFILL_NAME = "kserve-config-llm-prefill-worker-pipeline-parallel"
API_VERSION = "serving.kserve.io/v1alpha2"      # the version KServe v0.20.0's own presets are written in
IMAGE = "ghcr.io/llm-d/llm-d-cuda:v0.8.0"       # config/llmisvcconfig/*.yaml @ v0.20.0
SIDECAR_IMAGE = "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.9.0"   # config-llm-decode-*.yaml @ v0.20.0
CONTAINER = "main"
# What KServe v0.20.0's multi-node worker presets add to the engine (config-llm-worker-data-parallel.yaml
# securityContext.capabilities.add, template and worker); a service that names capabilities replaces the list.
WORKER_CAPABILITIES = ("IPC_LOCK", "SYS_RAWIO", "NET_RAW")
PORT = 8000
DECODE_ENGINE_PORT = 8001                       # a decode engine listens behind the routing sidecar
MASTER_PORT = 29500

TLS = "{{ if .GlobalConfig.EnableTLS }}"
SCHEME = "{{ if .GlobalConfig.EnableTLS }}HTTPS{{else}}HTTP{{- end }}"


def _parallelism(spec: str, field: str) -> str:
    """A Go template KServe fills from the LLMInferenceService (ReplaceVariables, config_merge.go L607)."""
    return "{{ " + spec + ".Parallelism." + field + " }}"


def _script(rank: str, headless: bool, spec: str = ".Spec", port: int = PORT) -> str:
    """bash -c text of one node: resolve the leader's IP (as the data-parallel preset does, since
    the engine's sockets bind to an address, not a name), then exec vllm serve."""
    tensor, pipeline = _parallelism(spec, "Tensor"), _parallelism(spec, "Pipeline")
    lines = [
        'RESOLVE_ATTEMPTS=${MASTER_ADDRESS_RESOLVE_ATTEMPTS:-30}',
        'for ((i=1; i<=RESOLVE_ATTEMPTS; i++)); do',
        '  MASTER_ADDR=$(getent hosts ${LWS_LEADER_ADDRESS} | cut -d" " -f1)',
        '  [ -n "$MASTER_ADDR" ] && break',
        '  sleep 1',
        'done',
        'MASTER_ADDR=${MASTER_ADDR:-${LWS_LEADER_ADDRESS}}',
        f'NODE_RANK={rank}',
        'echo "pipeline-parallel node ${NODE_RANK} of ' + pipeline + ', master ${MASTER_ADDR}"',
        'eval "exec vllm serve /mnt/models \\',
        '  --served-model-name "{{ .Spec.Model.Name }}" "publishers/{{ .ObjectMeta.Namespace }}/models/'
        '{{ .Spec.Model.Name }}" \\',
        f'  --port {port} \\',
        f'  --tensor-parallel-size {tensor} \\',
        f'  --pipeline-parallel-size {pipeline} \\',
        '  --distributed-executor-backend mp \\',
        f'  --nnodes {pipeline} \\',
        '  --node-rank ${NODE_RANK} \\',
        '  --master-addr ${MASTER_ADDR} \\',
        f'  --master-port {MASTER_PORT} \\',
    ]
    if headless:
        lines.append('  --headless \\')
    else:
        lines += [f'  {TLS}--ssl-certfile /var/run/kserve/tls/tls.crt{{{{- end }}}} \\',
                  f'  {TLS}--ssl-keyfile /var/run/kserve/tls/tls.key{{{{- end }}}} \\']
    lines += ['  ${VLLM_ADDITIONAL_ARGS} \\', '  $@"']
    return "\n".join(lines)


def _probe(path: str, period: int, failures: int, timeout: int = 1, port: int = PORT) -> dict:
    return {"httpGet": {"path": path, "port": port, "scheme": SCHEME},
            "periodSeconds": period, "timeoutSeconds": timeout, "failureThreshold": failures}


def _routing_sidecar() -> dict:
    """llm-d's routing sidecar in front of a decode engine: it takes the requests on 8000, has the
    prefill role compute the prompt and hands decoding to the engine on 8001 (KServe v0.20.0's
    config-llm-decode-template.yaml and config-llm-decode-worker-data-parallel.yaml)."""
    return {
        "name": "llm-d-routing-sidecar", "image": SIDECAR_IMAGE, "imagePullPolicy": "IfNotPresent",
        "restartPolicy": "Always", "ports": [{"containerPort": PORT, "protocol": "TCP"}],
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": False, "runAsNonRoot": True,
                            "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}},
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "livenessProbe": {**_probe("/health", 10, 3, 10), "initialDelaySeconds": 10},
        "readinessProbe": {**_probe("/health", 10, 10, 5), "initialDelaySeconds": 10},
        "command": ["/app/pd-sidecar", f"--port={PORT}", f"--vllm-port={DECODE_ENGINE_PORT}", "--kv-connector=nixlv2",
                    "--enable-ssrf-protection=true", "--pool-group=inference.networking.x-k8s.io",
                    "--inference-pool={{ .GlobalConfig.InferencePoolNamespacedName }}",
                    "{{ if .GlobalConfig.EnableTLS }}--secure-proxy=true{{else}}--secure-proxy=false{{- end }}",
                    "{{ if .GlobalConfig.EnableTLS }}--cert-path=/var/run/kserve/tls{{- end }}",
                    "{{ if .GlobalConfig.EnableTLS }}--enable-tls=decoder{{- end }}",
                    "{{ if .GlobalConfig.EnableTLS }}--enable-tls=prefiller{{- end }}"],
        "volumeMounts": [{"mountPath": "/var/run/kserve/tls", "name": "tls-certs", "readOnly": True}],
        "env": [{"name": "INFERENCE_POOL_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                {"name": "SSL_CERT_DIR",
                 "value": "/var/run/kserve/tls:/var/run/secrets/kubernetes.io/serviceaccount:/etc/pki/tls/certs"}],
    }


def _pod(rank: str, leader: bool, spec: str = ".Spec", port: int = PORT, sidecar: bool = False) -> dict:
    """One node's pod. `spec`: where the role's parallelism is read (.Spec, or .Spec.Prefill);
    `port`: the engine's; `sidecar`: the decode leader's routing sidecar."""
    main = {
        "name": CONTAINER, "image": IMAGE, "imagePullPolicy": "IfNotPresent",
        # "--" ends bash's options: the service's args become "$@" of the script.
        "command": ["/bin/bash", "-c", _script(rank, not leader, spec, port), "--"],
        "env": [{"name": "HOME", "value": "/home"}, {"name": "VLLM_LOGGING_LEVEL", "value": "INFO"},
                {"name": "HF_HUB_CACHE", "value": "/models"}],
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": False, "runAsNonRoot": True,
                            "capabilities": {"add": list(WORKER_CAPABILITIES), "drop": ["ALL"]},
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [{"mountPath": "/home", "name": "home"}, {"mountPath": "/tmp", "name": "tmp-dir"},
                         {"mountPath": "/dev/shm", "name": "dshm"}, {"mountPath": "/models", "name": "model-cache"},
                         {"mountPath": "/var/run/kserve/tls", "name": "tls-certs", "readOnly": True}],
    }
    if leader:   # only node 0 serves HTTP; the headless nodes have no port to probe
        main["ports"] = [{"containerPort": port, "protocol": "TCP"}]
        main["startupProbe"] = _probe("/health", 10, 60, port=port)
        main["livenessProbe"] = _probe("/health", 10, 10, port=port)
        main["readinessProbe"] = _probe("/health", 1, 2, port=port)
    pod = {"initContainers": [_routing_sidecar()]} if sidecar and leader else {}
    return {
        **pod,
        "containers": [main],
        "terminationGracePeriodSeconds": 60,
        "volumes": [{"name": "home", "emptyDir": {}}, {"name": "tmp-dir", "emptyDir": {}},
                    {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},
                    {"name": "model-cache", "emptyDir": {}},
                    {"name": "tls-certs", "secret": {"secretName": "{{ ChildName .ObjectMeta.Name "
                                                                   "`-kserve-self-signed-certs` }}"}}],
    }


def _preset(name: str, namespace: str, spec: dict) -> dict:
    return {"apiVersion": API_VERSION, "kind": "LLMInferenceServiceConfig",
            "metadata": meta(name, namespace, MANAGED_BY), "spec": spec}


WORKER_RANK = "${LWS_WORKER_INDEX}"


def pipeline_parallel(namespace: str) -> dict:
    """The whole-model preset, installed in KServe's namespace after its webhook is ready."""
    return _preset(NAME, namespace, {"template": _pod("0", leader=True), "worker": _pod(WORKER_RANK, leader=False)})


def decode_pipeline_parallel(namespace: str) -> dict:
    """A disaggregated service's decode role: the leader's engine behind the routing sidecar."""
    return _preset(DECODE_NAME, namespace, {
        "template": _pod("0", True, port=DECODE_ENGINE_PORT, sidecar=True),
        "worker": _pod(WORKER_RANK, False, port=DECODE_ENGINE_PORT)})


def prefill_pipeline_parallel(namespace: str) -> dict:
    """A disaggregated service's prefill role (spec.prefill), sized by .Spec.Prefill.Parallelism."""
    return _preset(PREFILL_NAME, namespace, {"prefill": {
        "template": _pod("0", True, ".Spec.Prefill"), "worker": _pod(WORKER_RANK, False, ".Spec.Prefill")}})


def all_presets(namespace: str) -> tuple[dict, ...]:
    """Every preset the KServe substrate installs."""
    return (pipeline_parallel(namespace), decode_pipeline_parallel(namespace), prefill_pipeline_parallel(namespace))
