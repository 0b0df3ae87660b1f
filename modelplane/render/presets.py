"""Our own LLMInferenceServiceConfig preset: pipeline parallelism across nodes (pure).

KServe v0.20 picks a multi-node preset by name: a service with `worker` and
`parallelism.pipeline` merges `kserve-config-llm-worker-pipeline-parallel`
(pkg/controller/v1alpha2/llmisvc/config_merge.go L261-263 @ v0.20.0) and fails with
ConfigNotFound when no such config exists in the service's namespace or in `kserve` (getConfig,
L741-758); no release ships it (the names sit under "FIXME move those presets to well-known",
L90-94). So the substrate installs this one under exactly that name in `kserve`, and every
LLMInferenceService with pipeline > 1 gets it as KServe's own presets are got: no baseRefs
(listing it there too would merge it twice).

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
`vllm serve` through "$@") follows config-llm-worker-data-parallel.yaml @ v0.20.0.
"""
from __future__ import annotations

from .names import MANAGED_BY, meta

NAME = "kserve-config-llm-worker-pipeline-parallel"
API_VERSION = "serving.kserve.io/v1alpha2"      # the version KServe v0.20.0's own presets are written in
IMAGE = "ghcr.io/llm-d/llm-d-cuda:v0.8.0"       # config/llmisvcconfig/*.yaml @ v0.20.0
CONTAINER = "main"
# What KServe v0.20.0's multi-node worker presets add to the engine (config-llm-worker-data-parallel.yaml
# securityContext.capabilities.add, template and worker); a service that names capabilities replaces the list.
WORKER_CAPABILITIES = ("IPC_LOCK", "SYS_RAWIO", "NET_RAW")
PORT = 8000
MASTER_PORT = 29500

# Go templates KServe fills from the LLMInferenceService (ReplaceVariables, config_merge.go L607).
TENSOR = "{{ .Spec.Parallelism.Tensor }}"
PIPELINE = "{{ .Spec.Parallelism.Pipeline }}"
TLS = "{{ if .GlobalConfig.EnableTLS }}"
SCHEME = "{{ if .GlobalConfig.EnableTLS }}HTTPS{{else}}HTTP{{- end }}"


def _script(rank: str, headless: bool) -> str:
    """bash -c text of one node: resolve the leader's IP (as the data-parallel preset does, since
    the engine's sockets bind to an address, not a name), then exec vllm serve."""
    lines = [
        'RESOLVE_ATTEMPTS=${MASTER_ADDRESS_RESOLVE_ATTEMPTS:-30}',
        'for ((i=1; i<=RESOLVE_ATTEMPTS; i++)); do',
        '  MASTER_ADDR=$(getent hosts ${LWS_LEADER_ADDRESS} | cut -d" " -f1)',
        '  [ -n "$MASTER_ADDR" ] && break',
        '  sleep 1',
        'done',
        'MASTER_ADDR=${MASTER_ADDR:-${LWS_LEADER_ADDRESS}}',
        f'NODE_RANK={rank}',
        'echo "pipeline-parallel node ${NODE_RANK} of ' + PIPELINE + ', master ${MASTER_ADDR}"',
        'eval "exec vllm serve /mnt/models \\',
        '  --served-model-name "{{ .Spec.Model.Name }}" "publishers/{{ .ObjectMeta.Namespace }}/models/'
        '{{ .Spec.Model.Name }}" \\',
        f'  --port {PORT} \\',
        f'  --tensor-parallel-size {TENSOR} \\',
        f'  --pipeline-parallel-size {PIPELINE} \\',
        '  --distributed-executor-backend mp \\',
        f'  --nnodes {PIPELINE} \\',
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


def _probe(path: str, period: int, failures: int, timeout: int = 1) -> dict:
    return {"httpGet": {"path": path, "port": PORT, "scheme": SCHEME},
            "periodSeconds": period, "timeoutSeconds": timeout, "failureThreshold": failures}


def _pod(rank: str, leader: bool) -> dict:
    main = {
        "name": CONTAINER, "image": IMAGE, "imagePullPolicy": "IfNotPresent",
        # "--" ends bash's options: the service's args become "$@" of the script.
        "command": ["/bin/bash", "-c", _script(rank, headless=not leader), "--"],
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
        main["ports"] = [{"containerPort": PORT, "protocol": "TCP"}]
        main["startupProbe"] = _probe("/health", 10, 60)
        main["livenessProbe"] = _probe("/health", 10, 10)
        main["readinessProbe"] = _probe("/health", 1, 2)
    return {
        "containers": [main],
        "terminationGracePeriodSeconds": 60,
        "volumes": [{"name": "home", "emptyDir": {}}, {"name": "tmp-dir", "emptyDir": {}},
                    {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},
                    {"name": "model-cache", "emptyDir": {}},
                    {"name": "tls-certs", "secret": {"secretName": "{{ ChildName .ObjectMeta.Name "
                                                                   "`-kserve-self-signed-certs` }}"}}],
    }


def pipeline_parallel(namespace: str) -> dict:
    """The preset object, installed in KServe's namespace after its webhook is ready."""
    return {"apiVersion": API_VERSION, "kind": "LLMInferenceServiceConfig",
            "metadata": meta(NAME, namespace, MANAGED_BY),
            "spec": {"template": _pod("0", leader=True), "worker": _pod("${LWS_WORKER_INDEX}", leader=False)}}
