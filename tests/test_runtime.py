"""Issue 18: what the operators would do with our objects (../shared/docs/runtime-review.md), one regression
test per HIGH finding, asserted offline on the rendered objects of the example stacks."""
import subprocess

import pytest

from modelplane.api import load_catalog, parse_stack_config
from modelplane.api.loader import Source
from modelplane.errors import InputError
from modelplane.policy.resource import pod_templates
from modelplane.render.kserve import quote_args
from modelplane.scheduler import DISK, MEMORY, Cluster, Demand, Pool, Role, schedule
from helpers import planned


def releases(run):
    return {r.inputs["name"]: r for r in run.records if r.type == "kubernetes:helm.sh/v3:Release"}


def depends_on(run, record) -> set[str]:
    names = {r.urn: (r.inputs.get("name") if r.type.endswith(":Release") else r.name) for r in run.records}
    return {names[d] for d in record.dependencies}


def kinds(run, kind):
    return [r for r in run.records if r.type.endswith(f":{kind}") and r.type.startswith("kubernetes:")]


def gpu_pods(run):
    for r in kinds(run, "LLMInferenceService") + kinds(run, "LeaderWorkerSet") + kinds(run, "Deployment"):
        for where, meta, pod in pod_templates(r.inputs):
            limits = [set((c.get("resources") or {}).get("limits") or {}) for c in pod["containers"]]
            if pod.get("resourceClaims") or any(lim & {"nvidia.com/gpu", "amd.com/gpu"} for lim in limits):
                yield r, where, meta, pod


def test_h1_kserve_presets_are_installed_after_the_webhook_is_ready(gke):
    rel = releases(gke)
    configs = rel["kserve-runtime-configs"]
    assert configs.inputs["chart"] == "oci://ghcr.io/kserve/charts/kserve-runtime-configs"
    assert configs.inputs["values"] == {"kserve": {"llmisvcConfigs": {"enabled": True}}}
    gate = next(r for r in gke.records if r.type == "kubernetes:core/v1:EndpointsPatch")
    assert gate.inputs["metadata"]["name"] == "llmisvc-webhook-server-service"
    assert gate.inputs["metadata"]["annotations"] == {"pulumi.com/waitFor": "jsonpath={.subsets[0].addresses[0].ip}"}
    assert gate.name in depends_on(gke, configs) and "kserve-llmisvc-resources" in depends_on(gke, gate)


def test_h2_cert_manager_comes_before_kserve(gke):
    rel = releases(gke)
    assert rel["cert-manager"].inputs["values"] == {"crds": {"enabled": True}}
    assert {"cert-manager", "kserve-llmisvc-crd", "lws", "gke-usc1-gateway-api-crds"} <= \
        depends_on(gke, rel["kserve-llmisvc-resources"])


def test_h3_the_inference_extension_crds_have_one_owner(gke):
    files = [r.inputs["file"] for r in gke.records if r.type == "kubernetes:yaml/v2:ConfigFile"]
    assert not [f for f in files if "gateway-api-inference-extension" in f]
    assert releases(gke)["kserve-llmisvc-resources"].inputs["values"]["kserve"]["llmisvc"]["createGIECRDs"] is True


def test_h4_every_cluster_has_a_gateway_implementation_and_the_gateway_kserve_routes_to(gke, prod):
    rel = releases(gke)
    eg = rel["envoy-gateway"].inputs
    assert eg["chart"] == "oci://docker.io/envoyproxy/gateway-helm" and eg["skipCrds"] is True
    manager = eg["values"]["config"]["envoyGateway"]["extensionManager"]
    assert manager["backendResources"] == [{"group": "inference.networking.k8s.io", "kind": "InferencePool",
                                            "version": "v1"}]
    assert "ai-gateway" in rel and "envoy-gateway" in depends_on(gke, rel["ai-gateway"])
    # By name: the hop Gateway is a Gateway too, and records arrive in registration order, which
    # the SDK's async registration does not fix (picking the first one made this test flaky).
    gateway = next(r for r in gke.records if r.type.endswith(":Gateway") and r.inputs["metadata"]["name"] == "inference")
    assert gateway.inputs["spec"]["gatewayClassName"] == "envoy"
    assert gateway.inputs["metadata"]["annotations"]["pulumi.com/waitFor"] == "jsonpath={.status.addresses[0].value}"
    for r in kinds(prod, "LLMInferenceService"):   # the deployment's shared pool (docs/routing.md)
        dep = r.inputs["metadata"]["labels"]["modelplane.ai/deployment"]
        assert r.inputs["spec"]["router"] == {
            "gateway": {"refs": [{"name": "inference-hop", "namespace": "modelplane-gateway", "sectionName": "kserve"}]},
            "route": {}, "scheduler": {"pool": {"ref": {"name": f"{dep}-pool"}}}}


def test_m_a_envoy_gateway_starts_after_the_inference_pool_crd(gke):
    """EG v1.8.1 watches each backendResources kind with no CRD check (controller.go L2847-2857)."""
    rel = releases(gke)
    assert {"envoy-gateway-crds", "kserve-llmisvc-resources"} <= depends_on(gke, rel["envoy-gateway"])
    from modelplane.render.addons import ClusterFacts, addons
    versions = {k: {"version": "v1"} for k in ("envoyGatewayCrds", "envoyGateway", "gatewayApi", "aiGatewayCrds",
                                               "aiGateway")}
    no_kserve = {a.name: a for a in addons(ClusterFacts("c", "existing", "r", False, {"kserve": False}), versions)}
    assert no_kserve["envoy-gateway"].after == ("envoy-gateway-crds",)   # a cluster that brings its own KServe


def test_pool_group_of_the_routing_sidecar_finds_its_pool(gke):
    """KServe's P/D presets start the routing sidecar with --pool-group=inference.networking.x-k8s.io
    (config-llm-decode-template.yaml L283 @ v0.20.0): it watches the v1alpha2 InferencePool. createGIECRDs
    installs that CRD beside v1 (the chart's files/llmisvc/resources.yaml L435 and L809), and KServe then
    reconciles a v1alpha2 pool of the same name (scheduler.go reconcileV1Alpha2InferencePool)."""
    values = releases(gke)["kserve-llmisvc-resources"].inputs["values"]
    assert values == {"kserve": {"llmisvc": {"createGIECRDs": True}}}


def test_h5_kserve_pods_run_the_presets_non_root_image(prod, example):
    for run in (prod, example):
        for r in kinds(run, "LLMInferenceService"):
            for where, _, pod in pod_templates(r.inputs):
                # prod's DeepSeek-R1 decode names its own non-root build (aws-ofi-nccl for EFA, issue 46)
                own = "deepseek-r1" in r.name and where != "spec.prefill.template"
                assert pod["containers"][0].get("image") == (
                    "registry.acme.io/ml/llm-d-aws-ofi-nccl:v0.8.0" if own and run is prod else None), (r.name, where)
    md = {"name": "m", "namespace": "ml", "model": {"uri": "hf://org/m"}, "replicas": 1,
          "engine": {"image": "vllm/vllm-openai:v0.10.2"}}
    with pytest.raises(InputError) as err:
        parse_stack_config({"modelplane:deployments": [md]}, Source("stacks/Pulumi.t.yaml", None), load_catalog())
    assert err.value.problems[0].rule == "kserve-image" and "runAsNonRoot" in err.value.problems[0].message


def test_h6_kserve_multi_node_is_data_parallel_and_its_worker_has_no_probe(example):
    llmis = next(r for r in kinds(example, "LLMInferenceService")).inputs["spec"]
    assert llmis["parallelism"] == {"tensor": 8, "data": 2, "dataLocal": 1}
    for part in (llmis["template"], llmis["worker"]):
        main = part["containers"][0]
        assert "readinessProbe" not in main and "ports" not in main     # the presets own ports and probes
    # KServe refuses pipeline with data (a disaggregated pipeline runs through our presets: test_presets.py)
    md = {"name": "m", "namespace": "ml", "model": {"uri": "hf://org/m"}, "replicas": 1,
          "workers": {"topology": {"tensor": 8, "pipeline": 2, "data": 2}}}
    with pytest.raises(InputError) as err:
        parse_stack_config({"modelplane:deployments": [md]}, Source("stacks/Pulumi.t.yaml", None), load_catalog())
    assert err.value.problems[0].rule == "kserve-multi-node" and "backend: native" in err.value.problems[0].fix


def test_h7_engine_args_survive_the_presets_eval(prod):
    args = next(r for r in kinds(prod, "LLMInferenceService")
                if r.name.endswith("deepseek-r1-0")).inputs["spec"]["template"]["containers"][0]["args"]
    assert args[1] == """'--kv-transfer-config={"kv_connector":"NixlConnector","kv_role":"kv_both"}'"""
    raw = ['--kv-transfer-config={"kv_connector":"NixlConnector","kv_role":"kv_both"}', "--x=a b $HOME *", "--y={a,b}"]
    # what every KServe v0.20 preset runs: eval "exec vllm serve ... $@"
    seen = subprocess.run(["bash", "-c", 'eval "printf \\"[%s]\\n\\" $@"', "--", *quote_args(raw)],
                          capture_output=True, text=True).stdout.splitlines()
    assert seen == [f"[{a}]" for a in raw]


def test_h8_kai_leaves_our_gangs_alone_and_every_subgroup_exists(prod, example):
    for run in (prod, example):
        groups = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in kinds(run, "PodGroup")}
        for r, where, meta, pod in gpu_pods(run):
            annotations = meta.get("annotations") or {}
            group = annotations["pod-group-name"]
            assert annotations["kai.scheduler/skip-podgrouper"] == "true", r.name
            subgroup = (meta.get("labels") or {}).get("kai.scheduler/subgroup-name")
            assert subgroup in {s["name"] for s in groups[group]["subGroups"]}, (r.name, subgroup)
        assert all(g["stalenessGracePeriod"] == "-1s" for g in groups.values())


def test_h9_the_dra_driver_installs_and_reaches_tainted_gpu_nodes_without_nfd(gke, eks):
    for run in (gke, eks):
        driver = releases(run)["dra-driver-nvidia-gpu"].inputs
        assert driver["chart"] == "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
        assert driver["values"]["resources"] == {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}}
        assert driver["values"]["kubeletPlugin"]["tolerations"] == [{"operator": "Exists"}]
    pools = [r.inputs["nodeConfig"]["labels"] for r in gke.records if r.type.endswith("nodePool:NodePool")
             and "guestAccelerators" in r.inputs["nodeConfig"]]
    pools += [r.inputs["labels"] for r in eks.records if r.type.endswith("nodeGroup:NodeGroup")
              and "NVIDIA" in r.inputs["amiType"]]
    assert pools and all(p["nvidia.com/gpu.present"] == "true" for p in pools)   # the kubelet plugin's selector
    quota = next(r for r in gke.records if r.type.endswith(":ResourceQuota")).inputs
    assert quota["metadata"]["namespace"] == "dra-driver-nvidia-gpu"
    assert quota["spec"]["scopeSelector"]["matchExpressions"][0]["values"] == ["system-node-critical",
                                                                                "system-cluster-critical"]


def test_h12_eks_node_groups_are_scaled_by_the_cluster_autoscaler(eks):
    ca = releases(eks)["cluster-autoscaler"]
    assert ca.inputs["values"]["autoDiscovery"] == {"clusterName": "eks-use1"}
    assert ca.inputs["values"]["extraArgs"]["enable-dynamic-resource-allocation"] is True
    assocs = [r for r in eks.records if r.type == "aws:eks/podIdentityAssociation:PodIdentityAssociation"
              and r.inputs["serviceAccount"] == "cluster-autoscaler"]
    assert len(assocs) == 1 and assocs[0].name in depends_on(eks, ca)
    groups = [r for r in eks.records if r.type == "aws:eks/nodeGroup:NodeGroup" and r.name != "eks-use1-system"]
    assert groups and all(g.ignore_changes == ("scalingConfig.desiredSize",) for g in groups)


def test_h13_weights_land_on_local_storage_sized_for_them(gke, eks, prod):
    h200 = next(r for r in gke.records if r.name == "gke-usc1-h200").inputs
    assert h200["nodeConfig"]["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 32}
    lt = next(r for r in eks.records if r.name == "eks-use1-h200" and r.type.endswith("LaunchTemplate")).inputs
    import base64
    assert "strategy: RAID0" in base64.b64decode(lt["userData"]).decode()
    deepseek = next(r for r in kinds(prod, "LLMInferenceService") if r.name.endswith("deepseek-r1-0")).inputs
    assert deepseek["spec"]["template"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] == "706Gi"
    demand = Demand("ml/big", 1, (Role("decode", "", 1, 1, 8, 700.0, 8),))
    small_disk = Cluster("c", (Pool("p", "cls", 8, 2, {}, "roce", 143771, 186),))
    plan = schedule([demand], [small_disk])
    assert plan.unplaced and {r.reason for r in plan.unplaced[0].reasons} == {DISK}


def test_h14_native_multi_node_is_one_engine_over_ray(example):
    lws = next(r for r in kinds(example, "LeaderWorkerSet")).inputs["spec"]["leaderWorkerTemplate"]
    leader, worker = lws["leaderTemplate"]["spec"]["containers"][0], lws["workerTemplate"]["spec"]["containers"][0]
    assert "leader --ray_cluster_size=$(LWS_GROUP_SIZE)" in leader["command"][2]
    assert "--distributed-executor-backend ray" in leader["command"][2] and "--pipeline-parallel-size=2" in leader["command"][2]
    assert "worker --ray_address=$(LWS_LEADER_ADDRESS)" in worker["command"][2]
    assert "readinessProbe" in leader and "readinessProbe" not in worker and "ports" not in worker
    svc = next(r for r in kinds(example, "Service") if r.name.endswith("kimi-native-0-decode")).inputs
    assert svc["spec"]["selector"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0"


def test_h15_every_chart_creates_its_namespace(gke):
    assert all(r.inputs["createNamespace"] is True for r in releases(gke).values())
    assert not [r for r in gke.records if r.type == "kubernetes:helm.sh/v4:Chart"]


def test_h16_a3_mega_is_never_on_demand():
    pool = {"name": "h", "class": "gke-h100-8x-a3mega", "maxNodes": 1, "zones": ["europe-west4-b"]}
    cluster = {"name": "c", "gke": {"project": "p", "region": "europe-west4"}, "nodePools": [pool]}
    with pytest.raises(InputError) as err:
        parse_stack_config({"modelplane:clusters": [cluster]}, Source("stacks/Pulumi.t.yaml", None), load_catalog())
    (p,) = err.value.problems
    assert p.rule == "pool-capacity" and "reservation, spot, flex-start" in p.fix
    eu = planned("infra-gke-europe-west4").result.inventories["gke-euw4"]["pools"]
    assert next(p for p in eu if p["name"] == "h100")["capacityType"] == "spot"


def test_h17_gated_models_download_with_a_token_linked_to_the_pods_service_account(prod):
    secrets = {r.name: r.inputs for r in kinds(prod, "Secret")}
    accounts = {r.name: r.inputs for r in kinds(prod, "ServiceAccount")}
    secret = secrets["gke-usc1/chat/secret/modelplane-hf-token"]
    assert set(secret["stringData"]) == {"4dabf18193072939515e22adb298388d", "value"}   # a Pulumi secret
    assert set(secret["stringData"]["value"]) == {"HF_TOKEN"}
    assert accounts["gke-usc1/chat/serviceaccount/modelplane-models"]["secrets"] == [{"name": "modelplane-hf-token"}]
    for r in kinds(prod, "LLMInferenceService"):
        for _, _, pod in pod_templates(r.inputs):
            assert pod["serviceAccountName"] == "modelplane-models"
    md = {"name": "m", "namespace": "ml", "model": {"uri": "hf://meta-llama/Llama-3.3-70B-Instruct"}, "replicas": 1}
    with pytest.raises(InputError) as err:
        parse_stack_config({"modelplane:deployments": [md]}, Source("stacks/Pulumi.t.yaml", None), load_catalog())
    assert err.value.problems[0].rule == "model-credentials"


def test_h18_a_model_that_cannot_fit_its_gpus_is_refused(example):
    kimi = load_catalog().models["hf://moonshotai/Kimi-K2-Instruct"].size_gib
    tp1 = Demand("ml/kimi", 1, (Role("prefill", "", 1, 1, 1, kimi, 1),))
    plan = schedule([tp1], [Cluster("lab", (Pool("h200", "h200-8x", 8, 24, {}, "infiniband", 143771),))])
    assert plan.unplaced and plan.unplaced[0].reasons[0].reason == MEMORY
    assert "exceed 90% of 1 x 140 GiB" in plan.unplaced[0].reasons[0].detail
    placed = {p.deployment: p for p in example.result.plan.placements}
    assert placed["ml/kimi"].roles["prefill"].gpus_per_node == 8     # the example's prefill is TP8 now


def test_m_pods_have_requests_workloads_are_awaited_and_never_surge_in_place(example, prod):
    """Every workload carries `pulumi.com/waitFor` (the condition its controller reports Ready by)
    and an hour to get there; a Deployment's own rollout never surges (the plan booked its GPUs:
    a surge is a second replica beside it, docs/changes.md)."""
    import json

    for run in (example, prod):
        for r, where, _, pod in gpu_pods(run):
            requests = pod["containers"][0]["resources"]["requests"]
            assert {"cpu", "memory", "ephemeral-storage"} <= set(requests), r.name
    want = {"LLMInferenceService": "condition=Ready", "LeaderWorkerSet": "condition=Available"}
    for run in (example, prod):
        for r in run.records:
            kind = r.inputs.get("kind") if r.type.startswith("kubernetes:") else None
            if kind not in ("LLMInferenceService", "LeaderWorkerSet", "Deployment"):
                continue
            notes = r.inputs["metadata"]["annotations"]
            assert "pulumi.com/skipAwait" not in notes and notes["pulumi.com/timeoutSeconds"] == "3600", r.name
            if kind == "Deployment":
                assert json.loads(notes["pulumi.com/waitFor"]) == [
                    "condition=Available",
                    'jsonpath={.status.conditions[?(@.type=="Progressing")].reason}=NewReplicaSetAvailable']
            else:
                assert notes["pulumi.com/waitFor"] == want[kind], r.name
    for r in kinds(prod, "Deployment"):
        if r.name.endswith("-epp"):   # the endpoint picker: one CPU pod, its own rollout strategy
            continue
        assert r.inputs["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}


def test_m_substrate_waits_for_the_system_pool(gke):
    system = next(r for r in gke.records if r.name == "gke-usc1-system")
    for name, r in releases(gke).items():
        reached = set(r.dependencies)
        frontier = list(reached)
        urns = {x.urn: x for x in gke.records}
        while frontier:      # through other addons, every release ends up after the system pool
            for dep in urns[frontier.pop()].dependencies:
                if dep not in reached:
                    reached.add(dep)
                    frontier.append(dep)
        assert system.urn in reached, name


def test_l5_eks_launch_templates_require_imdsv2(eks):
    for r in eks.records:
        if r.type.endswith("LaunchTemplate"):
            assert r.inputs["metadataOptions"]["httpTokens"] == "required"


def test_amd_pods_tolerate_the_amd_taint():
    run = planned("lab")
    pod = next(r for r in kinds(run, "Deployment") if "llama-405b" in r.name).inputs["spec"]["template"]["spec"]
    assert pod["tolerations"] == [{"key": "amd.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_namespace_objects_every_apps_stack_declares_are_kept_on_delete(prod):
    """The model ServiceAccount, HF token Secret, pickers' RBAC (and ReferenceGrants) carry the
    namespace's names, so two apps stacks deploying into one namespace declare the same objects; a
    destroy of one must leave them to the other's running pods (found on the real control plane,
    docs/e2e.md g4/g5). The replicas' own objects are deleted as usual."""
    namespaces = {r.urn for r in prod.records if r.type == "modelplane:index:ModelNamespace"}
    shared = [r for r in prod.records if r.parent in namespaces]
    assert {r.type.rsplit(":", 1)[1] for r in shared} >= {"ServiceAccount", "Secret", "Role", "RoleBinding",
                                                           "ClusterRoleBinding"}
    assert all(r.retain_on_delete for r in shared), [r.name for r in shared if not r.retain_on_delete]
    assert not any(r.retain_on_delete for r in kinds(prod, "LLMInferenceService"))


def test_kserves_managed_route_keeps_the_presets_rules(prod):
    """No `router.route.http.spec` of ours: KServe v0.20.0's CRD defaults its absent `rules` to one
    rule matching `/` with no backend (config/crd/full/llmisvc/serving.kserve.io_llminferenceservices.yaml
    L8056-8061), which then replaces the preset's rules and their backendRef to the pool; on the real
    control plane no service became Ready (docs/routing.md, N10)."""
    services = kinds(prod, "LLMInferenceService")
    assert services
    for r in services:
        router = r.inputs["spec"]["router"]
        assert router.get("route") == {}, (r.name, router)
