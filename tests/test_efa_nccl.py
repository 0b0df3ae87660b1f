"""Cloud review 2026-11-26 G2: multi-node workers on EFA pin NCCL to the aws-ofi-nccl plugin, run only
images not known to lack it, and keep vLLM's default all-to-all (catalog/netplugins.yaml)."""
import copy

import pytest
import yaml

from modelplane.api import load_catalog
from modelplane.engine import offline

from test_gpudirect import pods

CLUSTER = {"name": "eks-a", "eks": {"region": "us-east-1", "version": "1.34",
                                    "subnetIds": ["subnet-0a11c0ffee0000001", "subnet-0b22c0ffee0000002"]},
           "nodePools": [{"name": "h100", "class": "eks-h100-8x-p5", "minNodes": 1, "maxNodes": 12,
                          "subnetIds": ["subnet-0b22c0ffee0000002"]}],
           "queues": [{"namespace": "ml", "gpuQuota": 64}]}
R1 = {"namespace": "ml", "model": {"uri": "hf://deepseek-ai/DeepSeek-R1"}, "replicas": 1,
      "workers": {"count": 1, "topology": {"tensor": 8, "data": 2, "dataLocal": 1, "expert": True}}}
OWN_IMAGE = "registry.acme.io/vllm-efa:0.11"    # a build of one's own with aws-ofi-nccl


def deployment(name, **more):
    return {**copy.deepcopy(R1), "name": name, **more}


def plan(tmp_path, deps, catalog_dir=None):
    config = {"modelplane:clusters": [copy.deepcopy(CLUSTER)], "modelplane:deployments": deps}
    if catalog_dir:
        config["modelplane:catalogDir"] = str(catalog_dir)
    path = tmp_path / "Pulumi.efa.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    return offline.run("efa", path)


def reasons(run, key):
    [unplaced] = [u for u in run.result.plan.unplaced if u.deployment == key]
    return [r.detail for r in unplaced.reasons if r.reason == "fabric"]


def test_the_efa_plugin_name_is_the_one_aws_ofi_nccl_registers():
    """aws/aws-ofi-nccl@2475c4c7 (v1.21.1) src/nccl_ofi_interface_nvidia.cpp L662-803: `.name = "Libfabric"`;
    NVIDIA/nccl@5067397c src/plugin/net.cc L331 (strcasecmp of NCCL_NET with each net's name), L349
    ("Failed to initialize any NET plugin")."""
    efa = load_catalog().net_plugins["efa"]
    assert efa.nccl_net == "Libfabric" and efa.kserve_image is None
    assert any(u.startswith("kserveImage") for u in efa.unconfirmed)


@pytest.fixture(scope="module")
def efa_run(tmp_path_factory):
    deps = [deployment("r1-kserve"),                                               # KServe's preset image
            deployment("r1-aws", engine={"image": "ghcr.io/llm-d/llm-d-aws:v0.8.0"}),
            deployment("r1-deepep", engine={"image": OWN_IMAGE,
                                            "env": [{"name": "VLLM_ALL2ALL_BACKEND", "value": "deepep_low_latency"}]}),
            deployment("r1-deepep-arg", engine={"image": OWN_IMAGE, "args": ["--all2all-backend=deepep_high_throughput"]}),
            deployment("r1-native", backend="native", engine={"image": OWN_IMAGE}),
            deployment("r1-one-node", backend="native", engine={"image": "vllm/vllm-openai:v0.10.2"},
                       workers={"count": 1, "topology": {"tensor": 1, "data": 8, "dataLocal": 8, "expert": True}},
                       model={"uri": "hf://Qwen/Qwen3-30B-A3B"})]
    return plan(tmp_path_factory.mktemp("efa"), deps)


def test_kserve_presets_image_is_refused_on_efa_it_carries_no_plugin(efa_run):
    """llm-d ci-release.yaml @117c7c85 builds llm-d-cuda without ENABLE_EFA; install-efa.sh @2760655c skips EFA."""
    [why] = reasons(efa_run, "ml/r1-kserve")
    assert "ghcr.io/llm-d/llm-d-cuda:v0.8.0 cannot load the Libfabric NCCL plugin" in why
    assert "built without EFA" in why and "set engine.image" in why


def test_llm_d_aws_is_refused_until_it_is_known_to_carry_the_plugin(efa_run):
    """llm-d docker/Dockerfile.cuda @0199edbf: the runtime stage copies /opt/amazon/efa (libfabric), not
    aws-ofi-nccl; so the llm-d-aws image's NCCL plugin is unconfirmed, and not rendered as a guess."""
    [why] = reasons(efa_run, "ml/r1-aws")
    assert "unconfirmed" in why and "aws-ofi-nccl" in why


@pytest.mark.parametrize("name,backend", [("r1-deepep", "deepep_low_latency"),
                                          ("r1-deepep-arg", "deepep_high_throughput")])
def test_deepep_backends_are_refused_across_nodes_on_efa(efa_run, name, backend):
    """DeepEP's inter-node kernels need NVSHMEM IBGDA, mlx5 only (deepseek-ai/DeepEP#369, open;
    awslabs/ai-on-eks#198)."""
    [why] = reasons(efa_run, f"ml/{name}")
    assert f"all-to-all backend {backend} cannot run across nodes here" in why and "IBGDA" in why


def test_ep_across_nodes_on_efa_with_the_default_all_to_all_renders_the_ofi_pin(efa_run):
    placed = {p.deployment: p for p in efa_run.result.plan.placements}
    assert placed["ml/r1-native"].roles["decode"].nodes == 2
    for _, pod in pods(efa_run, "r1-native"):
        (engine,) = pod["containers"]
        env = {e["name"]: e.get("value") for e in engine["env"]}
        assert engine["image"] == OWN_IMAGE
        assert env["NCCL_NET"] == "Libfabric" and env["NCCL_DEBUG"] == "WARN"     # fail closed, visibly
        assert engine["resources"]["limits"]["vpc.amazonaws.com/efa"] == 32


def test_single_node_workers_on_efa_are_not_pinned(efa_run):
    """NCCL's net plugin carries only node-to-node traffic; a one-node worker keeps NVLink and its image."""
    assert "ml/r1-one-node" in {p.deployment for p in efa_run.result.plan.placements}
    for _, pod in pods(efa_run, "r1-one-node"):
        env = {e["name"] for e in pod["containers"][0].get("env") or []}
        assert "NCCL_NET" not in env


def test_an_efa_image_of_ones_own_from_catalog_dir_is_what_kserve_runs(tmp_path):
    """The EFA image is overridable as the GPUDirect ones are: a catalogDir file's netPlugins.efa."""
    own = tmp_path / "catalog"
    own.mkdir()
    efa = load_catalog().net_plugins["efa"].model_dump(by_alias=True)
    efa["kserveImage"] = OWN_IMAGE
    (own / "efa.yaml").write_text(yaml.safe_dump({"netPlugins": {"efa": efa}}))
    run = plan(tmp_path, [deployment("r1-kserve")], catalog_dir=own)
    assert [p.deployment for p in run.result.plan.placements] == ["ml/r1-kserve"]
    for _, pod in pods(run, "r1-kserve"):
        (engine,) = pod["containers"]
        env = {e["name"]: e.get("value") for e in engine["env"]}
        assert engine["image"] == OWN_IMAGE and env["NCCL_NET"] == "Libfabric"


def test_fabric_wired_fails_a_rendered_deepep_backend_or_a_missing_pin_on_efa(efa_run):
    """The pack re-checks rendered pods with the same rule (policy/serving.py fabric-wired)."""
    from helpers import stack_policy_args
    from modelplane.policy.serving import fabric_wired

    args = stack_policy_args(efa_run)
    assert fabric_wired(args) == []
    for r in args:
        if r.resource_type.endswith(":LeaderWorkerSet") and "r1-native" in r.props["metadata"]["name"]:
            for t in r.props["spec"]["leaderWorkerTemplate"].values():
                if isinstance(t, dict) and "spec" in t:
                    t["spec"]["containers"][0]["env"].append({"name": "VLLM_ALL2ALL_BACKEND", "value": "deepep_low_latency"})
    [(msg, _)] = fabric_wired(args)
    assert "lack vLLM's default all-to-all (all-to-all backend deepep_low_latency cannot run" in msg
