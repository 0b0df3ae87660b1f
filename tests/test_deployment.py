"""ModelDeployment under mocks: 5P3D on both backends, KEDA autoscaling, dependsOn as resource dependencies."""
import pytest
import yaml

from modelplane.engine import offline
from modelplane.api import load_catalog, parse_stack_config
from modelplane.api.loader import Source
from modelplane.errors import InputError

from helpers import PROM, objects, planned


@pytest.fixture(scope="module")
def run():
    return planned("example-5p3d")


def test_5p3d_kserve_gang_is_eleven_pods_with_multi_node_decode(run):
    pg = objects(run, "PodGroup")["kimi-0"].inputs["spec"]
    assert pg["minMember"] == 11 and pg["subGroups"] == [{"name": "decode", "minMember": 6},
                                                         {"name": "prefill", "minMember": 5}]
    spec = objects(run, "LLMInferenceService")["kimi-0"].inputs["spec"]
    assert spec["replicas"] == 3 and spec["parallelism"] == {"tensor": 8, "data": 2, "dataLocal": 1}
    assert "worker" in spec and spec["prefill"]["replicas"] == 5 and "worker" not in spec["prefill"]
    assert spec["model"]["name"] == "ml/kimi"       # <namespace>/<deployment> unless model.name says otherwise


def test_5p3d_native_uses_lws_for_decode_and_keda_for_prefill(run):
    lws = objects(run, "LeaderWorkerSet")["kimi-native-0-decode"].inputs["spec"]
    assert lws["replicas"] == 3 and lws["leaderWorkerTemplate"]["size"] == 2
    deployments = objects(run, "Deployment")
    assert "replicas" not in deployments["kimi-native-0-prefill"].inputs["spec"]    # KEDA owns it
    scaled = {n: r.inputs["spec"] for n, r in objects(run, "ScaledObject").items()}
    assert scaled["kimi-native-0-prefill"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                                                 "name": "kimi-native-0-prefill"}
    assert (scaled["kimi-native-0-prefill"]["minReplicaCount"], scaled["kimi-native-0-prefill"]["maxReplicaCount"]) == (5, 6)
    assert scaled["kimi-native-0-prefill"]["triggers"][0]["type"] == "prometheus"
    # The gang waits for the minimum; the scheduler reserved room for the maximum.
    assert objects(run, "PodGroup")["kimi-native-0"].inputs["spec"]["minMember"] == 11
    placed = next(p for p in run.result.plan.placements if p.deployment == "ml/kimi-native")
    assert placed.roles["prefill"].workers == 6


ROUTER = {"name": "router", "image": "ghcr.io/example/router:v1", "replicas": 1, "dependsOn": ["decode", "prefill"]}
PREFILL = {"workers": {"count": 1, "topology": {"tensor": 8}}}


def test_depends_on_becomes_resource_dependencies(tmp_path):
    native = stack({"backend": "native", "engine": {"image": "vllm/vllm-openai:v0.10.2"},
                    "prefill": {**PREFILL, "engine": {"image": "vllm/vllm-openai:v0.10.2"}}, "roles": [ROUTER],
                    "autoscaling": [{"role": "router", "minReplicas": 0, "maxReplicas": 4, "serverAddress": PROM, "query": "q",
                                     "threshold": "5"}]})
    run = plan_doc(tmp_path, native)
    router = objects(run, "Deployment")["m-0-router"]
    workloads = {objects(run, "Deployment")["m-0-decode"].urn, objects(run, "Deployment")["m-0-prefill"].urn}
    assert workloads <= set(router.dependencies)
    assert router.urn not in objects(run, "Deployment")["m-0-prefill"].dependencies
    scaled = objects(run, "ScaledObject")["m-0-router"].inputs["spec"]
    assert scaled["minReplicaCount"] == 0 and "replicas" not in router.inputs["spec"]   # extra roles scale to zero
    kserve = plan_doc(tmp_path, stack({"prefill": PREFILL, "roles": [ROUTER]}))
    router = objects(kserve, "Deployment")["m-0-router"]
    assert objects(kserve, "LLMInferenceService")["m-0"].urn in router.dependencies


def plan_doc(tmp_path, doc):
    path = tmp_path / "Pulumi.t.yaml"
    path.write_text(yaml.safe_dump({"config": doc}))
    return offline.run("t", path)


def stack(deployment, substrate=None):
    cluster = {"name": "c", "existing": {"kubeconfigSecret": "kc", "version": "1.34"},
               "nodePools": [{"name": "h", "class": "h200-8x", "maxNodes": 8}],
               "queues": [{"namespace": "ml"}], **({"substrate": substrate} if substrate else {})}
    base = {"name": "m", "namespace": "ml", "model": {"uri": "hf://org/m"}, "replicas": 1,
            "workers": {"count": 1, "topology": {"tensor": 8}}}
    return {"modelplane:kc": {"secure": "x"}, "modelplane:clusters": [cluster], "modelplane:deployments": [{**base, **deployment}]}


@pytest.mark.parametrize("deployment,path,words", [
    ({"autoscaling": [{"role": "decode", "maxReplicas": 2}]},
     "modelplane:deployments[0].autoscaling[0].role", "the substrate installs no WVA"),
    ({"prefill": {"workers": {"count": 1, "topology": {"tensor": 8}}},
      "autoscaling": [{"role": "prefill", "maxReplicas": 2}]},
     "modelplane:deployments[0].autoscaling[0].role", "without its CRD KServe stops reconciling"),
    ({"backend": "native", "engine": {"image": "vllm/vllm-openai:v0.10.2"},
      "autoscaling": [{"role": "decode", "maxReplicas": 2, "query": "q", "threshold": "1"}]},
     "modelplane:deployments[0].autoscaling[0].serverAddress", "needs serverAddress"),
    ({"roles": [{"name": "tok", "image": "ghcr.io/x/tok:v1"}],
      "autoscaling": [{"role": "tok", "maxReplicas": 2, "serverAddress": "prometheus:9090", "query": "q",
                       "threshold": "1"}]},
     "modelplane:deployments[0].autoscaling[0].serverAddress", "is not an http(s) URL"),
    ({"backend": "native", "engine": {"image": "vllm/vllm-openai:v0.10.2"},
      "autoscaling": [{"role": "decode", "maxReplicas": 2}]},
     "modelplane:deployments[0].autoscaling[0].query", "needs query"),
    ({"backend": "native", "engine": {"image": "vllm/vllm-openai:v0.10.2"},
      "autoscaling": [{"role": "decode", "minReplicas": 0, "maxReplicas": 2, "serverAddress": PROM, "query": "q", "threshold": "1"}]},
     "modelplane:deployments[0].autoscaling[0].minReplicas", "cannot scale to zero"),
    ({"backend": "native", "engine": {"image": "vllm/vllm-openai:v0.10.2"},
      "autoscaling": [{"role": "decoder", "maxReplicas": 2, "serverAddress": PROM, "query": "q", "threshold": "1"}]},
     "modelplane:deployments[0].autoscaling[0].role", "unknown role 'decoder'"),
])
def test_autoscaling_errors(deployment, path, words):
    with pytest.raises(InputError) as err:
        parse_stack_config(stack(deployment), Source("stacks/Pulumi.t.yaml", None), load_catalog())
    assert any(p.path == path and words in p.message for p in err.value.problems), err.value.render()


def test_autoscaling_on_a_cluster_without_keda_is_refused(tmp_path):
    doc = stack({"backend": "native", "engine": {"image": "vllm/vllm-openai:v0.10.2"},
                 "autoscaling": [{"role": "decode", "maxReplicas": 2, "serverAddress": PROM, "query": "q", "threshold": "1"}]},
                substrate={"keda": False})
    path = tmp_path / "Pulumi.t.yaml"
    path.write_text(yaml.safe_dump({"config": doc}))
    with pytest.raises(InputError, match="which cluster c does not run"):
        offline.run("t", path)


@pytest.mark.parametrize("backend,fix", [("kserve", "KServe already runs one"), ("native", "no InferencePool")])
def test_m_c_the_endpoint_picker_is_refused_as_an_extra_role(backend, fix):
    """M-c: the EPP exits without --pool-name (GAIE v1.0.0 cmd/epp/runner/runner.go L467-469)."""
    doc = stack({"backend": backend, "engine": {"image": "vllm/vllm-openai:v0.10.2"} if backend == "native" else {},
                 "roles": [{"name": "router", "image": "ghcr.io/llm-d/llm-d-inference-scheduler:v0.3.0"},
                           {"name": "tok", "image": "ghcr.io/x/tok:v1"}]})
    with pytest.raises(InputError) as err:
        parse_stack_config(doc, Source("stacks/Pulumi.t.yaml", None), load_catalog())
    [problem] = err.value.problems
    assert problem.path == "modelplane:deployments[0].roles[0].image"
    assert "runs the endpoint picker" in problem.message and fix in problem.fix


def test_native_prefill_without_a_router_is_reported_idle(tmp_path):
    """Native P/D: no P/D-aware router sends prompts to prefill; the plan, --json and the pack say so."""
    from modelplane.output import report
    from modelplane.policy import Analyzer, default_config, evaluate, read_config

    native = stack({"backend": "native", "engine": {"image": "vllm/vllm-openai:v0.10.2"},
                    "prefill": {**PREFILL, "engine": {"image": "vllm/vllm-openai:v0.10.2"}}})
    run = plan_doc(tmp_path, native)
    [row] = report.document(run, [])["idlePrefill"]
    assert (row["deployment"], row["replica"], row["cluster"], row["pool"], row["gpus"]) == ("ml/m", 0, "c", "h", 8)
    with Analyzer(stack="t") as a:
        verdicts = evaluate(run, read_config(default_config(True)), a)
    [hit] = [v for v in verdicts if v["policy"] == "native-prefill-idle"]
    assert hit["level"] == "advisory" and "8 prefill GPUs get no traffic" in hit["message"]
    kserve = plan_doc(tmp_path, stack({"prefill": PREFILL}))
    assert report.document(kserve, [])["idlePrefill"] == []


# --- Issue 36: DeepSeek-R1 with wide expert parallelism (stacks/Pulumi.example-wide-ep.yaml) ------------

@pytest.fixture(scope="module")
def wide_ep():
    return planned("example-wide-ep")


def test_deepseek_r1_places_as_wide_ep_on_h200_and_nvl72_and_never_on_a3_mega(wide_ep):
    placed = {p.deployment: {r: (rp.pool, rp.nodes, rp.gpus_per_node) for r, rp in p.roles.items()}
              for p in wide_ep.result.plan.placements}
    assert placed == {
        "ml/deepseek-r1-wide-ep": {"decode": ("h200", 2, 8), "prefill": ("h200", 2, 8)},   # DP16 + EP, KServe
        "ml/deepseek-r1-wide-ep-native": {"decode": ("h200", 2, 8)},                       # DP16 + EP, native
        "ml/deepseek-r1-dp8": {"decode": ("h200", 1, 8)},                                  # DP8 + EP, one node
        "ml/deepseek-r1-nvl72": {"decode": ("gb200", 4, 4)},                               # DP16 + EP, NVL72
    }
    rejected = {(r.pool, r.role): r for r in wide_ep.result.plan.rejections["ml/deepseek-r1-wide-ep"]}
    assert rejected[("mega", "decode")].reason == "fabric" and "gpudirect-tcpxo" in rejected[("mega", "decode")].detail


def test_kserve_services_carry_parallelism_expert_and_the_data_parallel_worker(wide_ep):
    svcs = {n: r.inputs["spec"] for n, r in objects(wide_ep, "LLMInferenceService").items()}
    wide = svcs["deepseek-r1-wide-ep-0"]
    for role in (wide, wide["prefill"]):
        assert role["parallelism"] == {"tensor": 1, "data": 16, "dataLocal": 8, "expert": True} and "worker" in role
    # one node, still KServe's data-parallel preset (a `worker`, LWS size 1): the single-node one drops data/expert
    assert svcs["deepseek-r1-dp8-0"]["parallelism"] == {"tensor": 1, "data": 8, "dataLocal": 8, "expert": True}
    assert "worker" in svcs["deepseek-r1-dp8-0"]
    # the disk request is the real checkpoint (641 GiB x 1.1), not a lie that made the weights fit
    requests = wide["template"]["containers"][0]["resources"]["requests"]
    assert requests["ephemeral-storage"] == "706Gi"


def test_native_lws_runs_vllm_data_parallel_with_expert_parallelism(wide_ep, tmp_path):
    import json
    import os
    import subprocess

    lws = objects(wide_ep, "LeaderWorkerSet")["deepseek-r1-wide-ep-native-0-decode"].inputs["spec"]
    template = lws["leaderWorkerTemplate"]
    assert template["size"] == 2
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "getent").write_text('#!/bin/sh\necho "10.8.0.1 $2"\n')
    (stub / "vllm").write_text('#!/usr/bin/env python3\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n')
    for f in stub.iterdir():
        f.chmod(0o755)
    argvs = []
    for index, pod in enumerate((template["leaderTemplate"], template["workerTemplate"])):
        command = pod["spec"]["containers"][0]["command"]
        env = {"PATH": f"{stub}:{os.environ['PATH']}", "LWS_LEADER_ADDRESS": "leader.svc", "LWS_WORKER_INDEX": str(index)}
        out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=30, check=True).stdout
        argvs.append(json.loads(out.strip().splitlines()[-1]))
    for argv in argvs:
        assert {"--tensor-parallel-size=1", "--data-parallel-size=16", "--data-parallel-size-local=8",
                "--enable-expert-parallel"} <= set(argv)
        assert argv[argv.index("--data-parallel-address") + 1] == "10.8.0.1"
        assert argv[argv.index("--data-parallel-rpc-port") + 1] == "5555"
    assert "--headless" not in argvs[0] and "--data-parallel-start-rank" not in argvs[0]
    assert "--headless" in argvs[1] and argvs[1][argvs[1].index("--data-parallel-start-rank") + 1] == "8"


def test_nvl72_pods_claim_an_imex_channel_of_their_compute_domain(wide_ep):
    [domain] = objects(wide_ep, "ComputeDomain").values()
    assert domain.inputs["apiVersion"] == "resource.nvidia.com/v1beta1"
    channel = domain.inputs["spec"]["channel"]["resourceClaimTemplate"]["name"]
    spec = objects(wide_ep, "LLMInferenceService")["deepseek-r1-nvl72-0"].inputs["spec"]
    assert spec["parallelism"] == {"tensor": 1, "data": 16, "dataLocal": 4, "expert": True}
    for pod in (spec["template"], spec["worker"]):
        assert {"name": "imex", "resourceClaimTemplateName": channel} in pod["resourceClaims"]
        assert {"name": "imex"} in pod["containers"][0]["resources"]["claims"]
        assert {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"} in \
            pod["tolerations"]
    # single-node workers (H200) share no memory across nodes: no ComputeDomain, no channel
    assert all("imex" not in str(r.inputs) for n, r in objects(wide_ep, "LLMInferenceService").items() if "nvl72" not in n)


def test_nvl72_clusters_run_the_dra_driver_s_compute_domains_and_keep_the_pool_in_one_domain(wide_ep):
    driver = next(r for r in wide_ep.records if r.type == "kubernetes:helm.sh/v3:Release"
                  and r.inputs["name"] == "dra-driver-nvidia-gpu")
    assert driver.inputs["values"]["resources"]["computeDomains"] == {"enabled": True}
    other = planned("infra-gke-us-central1")
    driver = next(r for r in other.records if r.type == "kubernetes:helm.sh/v3:Release"
                  and r.inputs["name"] == "dra-driver-nvidia-gpu")
    assert driver.inputs["values"]["resources"]["computeDomains"] == {"enabled": False}
    [policy] = [r for r in wide_ep.records if r.type == "gcp:compute/resourcePolicy:ResourcePolicy"]
    assert policy.inputs["workloadPolicy"] == {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "1x72"}
    gb200 = next(r for r in wide_ep.records if r.type == "gcp:container/nodePool:NodePool" and r.name == "gke-moe-gb200")
    assert gb200.inputs["placementPolicy"]["type"] == "COMPACT" and policy.urn in gb200.dependencies
    assert gb200.inputs["nodeConfig"]["guestAccelerators"][0]["type"] == "nvidia-gb200"


def test_the_pack_holds_placed_workers_to_the_all_to_all_and_nvlink_domain_rules(wide_ep):
    """topology-fits re-checks what was placed with the Filter's own rules (scheduler/filter.py)."""
    from types import SimpleNamespace

    from modelplane.policy.stack import topology_fits
    from helpers import stack_policy_args

    resources = stack_policy_args(wide_ep)
    assert topology_fits(resources) == []
    md = next(r for r in resources if r.resource_type == "modelplane:index:ModelDeployment"
              and r.props["spec"]["name"] == "deepseek-r1-wide-ep")
    moved = {**md.props, "placements": [{**p, "roles": {r: {**rp, "pool": "mega"} for r, rp in p["roles"].items()}}
                                        for p in md.props["placements"]]}
    tampered = [SimpleNamespace(**{**vars(r), "props": moved}) if r is md else r for r in resources]
    found = [m for m, _ in topology_fits(tampered)]
    assert len(found) == 2 and all("needs RDMA (InfiniBand, RoCE) or one NVLink domain; pods on this pool talk "
                                   "over gpudirect-tcpxo" in m for m in found)


def test_the_served_model_name_is_namespace_slash_deployment_unless_model_name_says_otherwise():
    """Unique on a gateway many teams share (as the seed spec names it); model.name overrides it."""
    from modelplane.api import ModelDeployment

    base = {"name": "m", "namespace": "ml", "model": {"uri": "hf://org/m"}, "replicas": 1}
    assert ModelDeployment.model_validate(base).served_name == "ml/m"
    named = {**base, "model": {"uri": "hf://org/m", "name": "org/m-instruct"}}
    assert ModelDeployment.model_validate(named).served_name == "org/m-instruct"
