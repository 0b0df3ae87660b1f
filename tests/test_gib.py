"""Cloud review 2026-11-26 G3: RoCE pools on GKE (A3 Ultra, A4, A4X) get Google's gIB NCCL plugin installed
and pinned in multi-node engines; DeepEP, whose GKE settings modelplane does not render, is refused there."""
import copy

import pytest
import yaml

from modelplane.api import load_catalog
from modelplane.engine import offline

from test_gpudirect import pods

CLUSTER = {"name": "gke-u", "gke": {"project": "acme", "region": "us-central1", "version": "1.34"},
           "nodePools": [{"name": "h200", "class": "gke-h200-8x-a3ultra", "minNodes": 0, "maxNodes": 4,
                          "zones": ["us-central1-b"], "capacity": {"type": "reservation", "reservation": "a3u"}}],
           "queues": [{"namespace": "ml", "gpuQuota": 64}]}
R1 = {"namespace": "ml", "model": {"uri": "hf://deepseek-ai/DeepSeek-R1"}, "replicas": 1,
      "workers": {"count": 1, "topology": {"tensor": 1, "data": 16, "dataLocal": 8, "expert": True}}}


def deployment(name, **more):
    return {**copy.deepcopy(R1), "name": name, **more}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    deps = [deployment("r1-kserve"),
            deployment("r1-native", backend="native", engine={"image": "vllm/vllm-openai:v0.10.2"}),
            deployment("r1-deepep", engine={"env": [{"name": "VLLM_ALL2ALL_BACKEND", "value": "deepep_low_latency"}]})]
    path = tmp_path_factory.mktemp("gib") / "Pulumi.gib.yaml"
    path.write_text(yaml.safe_dump({"config": {"modelplane:clusters": [copy.deepcopy(CLUSTER)],
                                               "modelplane:deployments": deps}}))
    return offline.run("gib", path)


def test_the_gib_pin_is_googles():
    """cluster-toolkit@1047080 examples/gke-a4/nccl-jobset-example.yaml L182-186: `export NCCL_NET=gIB`,
    `source /usr/local/gib/scripts/set_nccl_env.sh`."""
    gib = load_catalog().net_plugins["gib"]
    assert gib.nccl_net == "gIB" and gib.env_script == "/usr/local/gib/scripts/set_nccl_env.sh"
    assert gib.installers == {"amd64": "gibInstaller", "arm64": "gibInstallerArm64"}


@pytest.mark.parametrize("name", ["r1-kserve", "r1-native"])
def test_multi_node_pods_on_roce_pin_gib_and_mount_it(run, name):
    """container-engine-accelerators@992db812 gpudirect-rdma/nccl-test-managed-rdma.yaml L58-60, L77-78 (the gib
    host directory at /usr/local/gib); llm-d wide-ep-lws gke kustomization.yaml @9d70db85 (BASH_ENV)."""
    assert f"ml/{name}" in {p.deployment for p in run.result.plan.placements}
    for _, pod in pods(run, name):
        (engine,) = pod["containers"]
        env = {e["name"]: e.get("value") for e in engine["env"]}
        assert env["NCCL_NET"] == "gIB" and env["BASH_ENV"] == "/usr/local/gib/scripts/set_nccl_env.sh"
        # G5: vLLM expert_parallel_deployment.md @01702569, GLOO_SOCKET_IFNAME=eth0 against init hangs
        assert env["GLOO_SOCKET_IFNAME"] == env["NCCL_SOCKET_IFNAME"] == "eth0"
        volumes = {v["name"]: v for v in pod["volumes"]}
        mounts = {m["mountPath"]: m["name"] for m in engine["volumeMounts"]}
        assert volumes[mounts["/usr/local/gib"]]["hostPath"]["path"] == "/home/kubernetes/bin/gib"
        assert volumes[mounts["/usr/local/nvidia/lib64"]]["hostPath"]["path"] == "/home/kubernetes/bin/nvidia/lib64"
        if name == "r1-native":    # /bin/sh ignores BASH_ENV: the command sources the script itself
            script = "/usr/local/gib/scripts/set_nccl_env.sh"
            assert engine["command"][2].startswith(f"if [ -r {script} ]; then . {script}; fi; ")


def test_the_cluster_installs_googles_gib_installer(run):
    """gpudirect-rdma/nccl-rdma-installer.yaml @992db812: nccl-plugin-gib:v1.1.1 on nvidia-h200-141gb / nvidia-b200."""
    files = [r for r in run.records if r.type == "kubernetes:yaml/v2:ConfigFile" and "gib" in r.name]
    assert len(files) == 1
    assert files[0].inputs["file"] == load_catalog().substrate["gibInstaller"]["manifests"]


def test_deepep_is_refused_across_nodes_on_gke_roce(run):
    [unplaced] = [u for u in run.result.plan.unplaced if u.deployment == "ml/r1-deepep"]
    [why] = [r.detail for r in unplaced.reasons if r.reason == "fabric"]
    assert "all-to-all backend deepep_low_latency cannot run across nodes here" in why
    assert "privileged engine for GPU-initiated RDMA" in why


def test_a4x_clusters_get_the_arm64_gib_installer():
    """gpudirect-rdma/nccl-rdma-installer-a4x.yaml @992db812: nccl-plugin-gib-arm64:v1.1.0 on nvidia-gb200 arm64 nodes."""
    from helpers import planned

    run = planned("example-wide-ep")
    files = {r.name: r.inputs["file"] for r in run.records
             if r.type == "kubernetes:yaml/v2:ConfigFile" and "gib" in r.name}
    arm = load_catalog().substrate["gibInstallerArm64"]["manifests"]
    assert arm in files.values() and arm.endswith("gpudirect-rdma/nccl-rdma-installer-a4x.yaml")
