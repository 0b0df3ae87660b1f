"""Issue 25 section 1: two-node workers on GKE A3 High (GPUDirect-TCPX) and A3 Mega (GPUDirect-TCPXO),
asserted on the rendered cloud inputs, in-cluster objects and pods (docs/cloud-recipes.md)."""
import copy
import json

import pytest
import yaml

from modelplane.engine import offline
from modelplane.output import report
from modelplane.api import load_catalog
from modelplane.api.fabric import fabric_wiring
from modelplane.policy import evaluate
from modelplane.policy.serving import fabric_wired

from helpers import stack_policy_args

CLUSTERS = [
    {"name": "gke-a3high", "labels": {"site": "high"},
     "gke": {"project": "acme", "region": "us-central1", "version": "1.34"},
     "nodePools": [{"name": "h100", "class": "gke-h100-8x-a3high", "minNodes": 0, "maxNodes": 6,
                    "zones": ["us-central1-c"], "capacity": {"type": "reservation", "reservation": "a3h-usc1"}},
                   {"name": "l4", "class": "gke-l4-1x-g2", "minNodes": 0, "maxNodes": 2, "zones": ["us-central1-a"]}],
     "queues": [{"namespace": "chat", "gpuQuota": 96}]},
    {"name": "gke-a3mega", "labels": {"site": "mega"},
     "gke": {"project": "acme", "region": "europe-west4", "version": "1.34"},
     "nodePools": [{"name": "h100", "class": "gke-h100-8x-a3mega", "minNodes": 0, "maxNodes": 4,
                    "zones": ["europe-west4-b"], "capacity": {"type": "spot"}}],
     "queues": [{"namespace": "chat", "gpuQuota": 64}]},
]
NICS = {"high": 4, "mega": 8}
KIND = {"high": "tcpx", "mega": "tcpxo"}


def deployments():
    out = []
    for site in ("high", "mega"):
        pin = {"clusterSelector": {"matchLabels": {"site": site}}, "nodeSelector": {"cel": 'gpu.product == "H100"'}}
        # KServe: two data-parallel ranks of TP8, one per node.
        out.append({"name": f"qwen-dp-{site}", "namespace": "chat", "model": {"uri": "hf://Qwen/Qwen3-32B"},
                    "replicas": 1, **pin, "workers": {"count": 1, "topology": {"tensor": 8, "data": 2, "dataLocal": 1}}})
        # Native (LeaderWorkerSet): DeepSeek-R1 does not fit 8 x H100, so TP8 x PP2 over two nodes.
        out.append({"name": f"r1-pp-{site}", "namespace": "chat", "model": {"uri": "hf://deepseek-ai/DeepSeek-R1"},
                    "replicas": 1, "backend": "native", **pin,
                    "workers": {"count": 1, "topology": {"tensor": 8, "pipeline": 2}},
                    "engine": {"image": "vllm/vllm-openai:v0.10.2",
                               "env": [{"name": "LD_LIBRARY_PATH", "value": "/opt/other"},
                                       {"name": "VLLM_LOGGING_LEVEL", "value": "INFO"}]}})
    out.append({"name": "qwen-small", "namespace": "chat", "model": {"uri": "hf://Qwen/Qwen3-32B"}, "replicas": 1,
                "backend": "native", "clusterSelector": {"matchLabels": {"site": "high"}},
                "nodeSelector": {"cel": 'gpu.product == "H100"'},
                "workers": {"count": 1, "topology": {"tensor": 8}}, "engine": {"image": "vllm/vllm-openai:v0.10.2"}})
    return out


def write_stack(tmp_path, clusters=None, deps=None, name="a3"):
    doc = {"config": {"modelplane:clusters": clusters or copy.deepcopy(CLUSTERS),
                      "modelplane:deployments": deployments() if deps is None else deps}}
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture(scope="module")
def a3(tmp_path_factory):
    return offline.run("a3", write_stack(tmp_path_factory.mktemp("a3")))


def records(run, suffix):
    return {r.name: r for r in run.records if r.type.endswith(suffix)}


def pods(run, name):
    """(annotations, pod spec) of every GPU pod template of deployment `name`."""
    out = []
    for r in run.records:
        spec = r.inputs.get("spec") or {}
        if r.type.endswith(":LLMInferenceService") and r.inputs["metadata"]["name"].startswith(name):
            out += [(spec.get("annotations") or {}, spec[part]) for part in ("template", "worker") if part in spec]
        if r.type.endswith((":LeaderWorkerSet", ":Deployment")) and r.inputs["metadata"]["name"].startswith(name) \
                and not r.inputs["metadata"]["name"].endswith("-epp"):    # the endpoint picker runs no GPU
            templates = spec.get("leaderWorkerTemplate") or {"template": spec.get("template")}
            out += [(t["metadata"].get("annotations") or {}, t["spec"]) for t in templates.values()
                    if isinstance(t, dict) and "spec" in t]
    assert out, name
    return out


def test_two_node_workers_place_on_a3_high_and_a3_mega(a3):
    placed = {p.deployment: p for p in a3.result.plan.placements}
    assert not a3.result.plan.unplaced
    for site, cluster in (("high", "gke-a3high"), ("mega", "gke-a3mega")):
        for name in (f"chat/qwen-dp-{site}", f"chat/r1-pp-{site}"):
            p = placed[name]
            assert p.cluster == cluster and p.roles["decode"].pool == "h100"
            assert (p.roles["decode"].nodes, p.roles["decode"].workers, p.roles["decode"].gpus_per_node) == (2, 1, 8)
    for cluster, kind in (("gke-a3high", "tcpx"), ("gke-a3mega", "tcpxo")):
        fabric = next(p for p in a3.result.inventories[cluster]["pools"] if p["name"] == "h100")["fabric"]
        assert fabric["effective"] == fabric["declared"] == f"gpudirect-{kind}"
        assert fabric["via"] == f"gke-gpudirect-{kind}" and fabric["gpudirect"]["nics"] == {"tcpx": 4, "tcpxo": 8}[kind]


@pytest.mark.parametrize("site", ["high", "mega"])
@pytest.mark.parametrize("prefix", ["qwen-dp", "r1-pp"])
def test_multi_node_pods_carry_the_gpudirect_networks_daemon_mounts_and_nccl_env(a3, site, prefix):
    recipe = load_catalog().gpudirect[KIND[site]]
    release = recipe.release_for("1.34")
    daemon = f"{KIND[site]}-daemon"
    for annotations, pod in pods(a3, f"{prefix}-{site}"):
        interfaces = json.loads(annotations["networking.gke.io/interfaces"])
        assert interfaces == [{"interfaceName": "eth0", "network": "default"}] + [
            {"interfaceName": f"eth{i}", "network": f"vpc{i}"} for i in range(1, NICS[site] + 1)]
        assert annotations["networking.gke.io/default-interface"] == "eth0"
        devices = yaml.safe_load(annotations[f"devices.gke.io/container.{daemon}"])
        assert [d["path"] for d in devices][:8] == [f"/dev/nvidia{i}" for i in range(8)]
        assert ({"path": "/dev/dmabuf_import_helper"} in devices) == (site == "mega")
        (sidecar,) = pod["initContainers"]
        assert sidecar["name"] == daemon and sidecar["image"] == release.daemon_image
        assert sidecar["restartPolicy"] == "Always"                        # a native sidecar
        assert {"mountPath": "/usr/local/nvidia/lib64", "name": "gpudirect-libraries"} in sidecar["volumeMounts"]
        assert "NET_ADMIN" in sidecar["securityContext"]["capabilities"]["add"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["gpudirect-libraries"]["hostPath"]["path"] == "/home/kubernetes/bin/nvidia/lib64"
        (engine,) = pod["containers"]
        env = {e["name"]: e["value"] for e in engine["env"] if "value" in e}
        names = [e["name"] for e in engine["env"]]
        assert len(names) == len(set(names))             # env is keyed by name: the recipe replaces
        assert env["NCCL_NET"] == recipe.nccl_net and env["NCCL_DEBUG"] == "WARN"       # fail closed, visibly
        if prefix == "r1-pp":    # the deployment's own library path, with the plugin's directory first
            assert env["VLLM_LOGGING_LEVEL"] == "INFO"
            assert env["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64:/opt/other"
        else:                    # the image's own (it lists /usr/local/nvidia/lib64 already)
            assert "LD_LIBRARY_PATH" not in env
            assert engine["image"] == recipe.kserve_image == "ghcr.io/llm-d/llm-d-cuda-ubuntu:v0.8.0"
            assert engine["securityContext"] == {"capabilities": {"add": ["IPC_LOCK", "SYS_RAWIO", "NET_RAW"]}}
        if prefix == "r1-pp":
            assert engine["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
        assert release.nccl_env.items() <= env.items()
        mounts = {m["mountPath"]: m["name"] for m in engine["volumeMounts"]}
        assert mounts["/usr/local/nvidia/lib64"] == "gpudirect-libraries"
        if site == "high":      # the NCCL plugin reaches the receive-datapath manager over a socket in /tmp
            assert mounts["/tmp"] == "tcpx-socket" and volumes["tcpx-socket"] == {"name": "tcpx-socket", "emptyDir": {}}
            assert env["NCCL_GPUDIRECTTCPX_SOCKET_IFNAME"] == "eth1,eth2,eth3,eth4"
        else:
            assert mounts["/dev/aperture_devices"] == "aperture-devices"
            assert env["NCCL_FASTRAK_IFNAME"] == ",".join(f"eth{i}" for i in range(1, 9))
            assert sidecar["startupProbe"]["exec"]["command"] == ["cat", "/run/health-check"]


def test_single_node_pods_on_a3_are_left_alone(a3):
    for annotations, pod in pods(a3, "qwen-small"):
        assert "networking.gke.io/interfaces" not in annotations and "initContainers" not in pod


def test_node_pools_attach_one_vpc_per_gpu_nic_on_a_multi_networking_cluster(a3):
    pools = records(a3, ":NodePool")
    clusters = records(a3, ":Cluster")
    nets, subnets, rules = records(a3, "/network:Network"), records(a3, ":Subnetwork"), records(a3, ":Firewall")
    for site, cluster in (("high", "gke-a3high"), ("mega", "gke-a3mega")):
        assert clusters[cluster].inputs["enableMultiNetworking"] is True
        assert clusters[cluster].inputs["datapathProvider"] == "ADVANCED_DATAPATH"
        extra = pools[f"{cluster}-h100"].inputs["networkConfig"]["additionalNodeNetworkConfigs"]
        assert extra == [{"network": f"{cluster}-gpunet-{i}", "subnetwork": f"{cluster}-gpunet-{i}-subnet"}
                         for i in range(NICS[site])]
        ranges = [subnets[f"{cluster}-gpunet-{i}-subnet"].inputs["ipCidrRange"] for i in range(NICS[site])]
        assert len(set(ranges)) == NICS[site] and all(r.startswith("192.168.") and r.endswith("/20") for r in ranges)
        for i in range(NICS[site]):
            vpc = nets[f"{cluster}-gpunet-{i}"].inputs
            assert vpc["mtu"] == 8244 and vpc["autoCreateSubnetworks"] is False
            rule = rules[f"{cluster}-gpunet-{i}-allow-internal"].inputs
            assert rule["sourceRanges"] == [ranges[i]] and {"protocol": "icmp"} in rule["allows"]
    assert "networkConfig" not in pools["gke-a3high-l4"].inputs           # no GPUDirect on G2


def test_the_cluster_gets_network_objects_installers_and_the_nri_injector(a3, schema_catalog):
    files = {r.name: r.inputs["file"] for r in a3.records if r.type == "kubernetes:yaml/v2:ConfigFile"}
    pinned = "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/" \
             "992db81257553607f1477945f1b3219632991829/"
    tcpx_2026 = "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/" \
                "98c85a6e581d7ec53329f9ab1de5f8626b637dbb/"      # GKE 1.34: plugin v3.1.12 (release Jun 22, 2026)
    assert files["gke-a3high-nccl-tcpx-installer"] == tcpx_2026 + "gpudirect-tcpx/nccl-tcpx-installer.yaml"
    assert files["gke-a3mega-nccl-tcpxo-installer"] == pinned + "gpudirect-tcpxo/nccl-tcpxo-installer.yaml"
    for cluster in ("gke-a3high", "gke-a3mega"):
        assert files[f"{cluster}-nri-device-injector"] == pinned + "nri_device_injector/nri-device-injector.yaml"
    assert "gke-a3high-nccl-tcpxo-installer" not in files and "gke-a3mega-nccl-tcpx-installer" not in files
    params = {r.name: r.inputs for r in a3.records if r.type.endswith(":GKENetworkParamSet")}
    networks = {r.name: r.inputs for r in a3.records if r.type.endswith("networking.gke.io/v1:Network")}
    assert len(params) == len(networks) == 4 + 8
    for site, cluster in (("high", "gke-a3high"), ("mega", "gke-a3mega")):
        for i in range(NICS[site]):
            gnp = next(p for n, p in params.items() if n.startswith(cluster) and p["metadata"]["name"] == f"vpc{i + 1}")
            assert gnp["spec"] == {"vpc": f"{cluster}-gpunet-{i}", "vpcSubnet": f"{cluster}-gpunet-{i}-subnet",
                                   "deviceMode": "NetDevice"}
    for r in a3.records:
        if report.is_manifest(r):
            status, line = schema_catalog.report(report.manifest(r))
            assert status == "ok", f"{r.name}: {line}"


def test_the_a3_plan_is_policy_clean_and_fabric_wired_catches_a_pod_without_the_daemon(a3):
    assert [v for v in evaluate(a3) if v["level"] != "advisory"] == []
    wrapped = stack_policy_args(a3)
    assert fabric_wired(wrapped) == []
    for r in wrapped:
        if r.props.get("kind") == "LeaderWorkerSet" and r.props["metadata"]["name"].startswith("r1-pp-mega"):
            r.props["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"].pop("initContainers")
    found = fabric_wired(wrapped)
    assert len(found) == 1 and "r1-pp-mega replica 0 decode" in found[0][0] and "tcpxo-daemon" in found[0][0]


@pytest.mark.parametrize("kind,version,wired", [
    ("tcpxo", "1.34", True), ("tcpxo", "1.32.11-gke.1174000", True), ("tcpxo", "1.32.10-gke.1000000", False),
    ("tcpxo", "1.32", False), ("tcpxo", "1.27", False), ("tcpx", "1.29.15-gke.2467000", True),
    ("tcpx", "1.26", False), ("tcpx", "1.33", True)])
def test_gpudirect_below_its_gke_floor_stays_tcp(kind, version, wired):
    catalog = load_catalog()
    cls = catalog.classes["gke-h100-8x-a3mega" if kind == "tcpxo" else "gke-h100-8x-a3high"]
    w = fabric_wiring(cls, "gke", catalog.gpudirect, version)
    assert (w.effective == f"gpudirect-{kind}") == wired
    if not wired:
        assert w.effective == "tcp" and "needs GKE" in w.note and version in w.note


def test_without_a_recipe_the_pool_stays_tcp_and_refuses_multi_node_workers():
    catalog = load_catalog()
    w = fabric_wiring(catalog.classes["gke-h100-8x-a3high"], "gke", {}, "1.34")
    assert w.effective == "tcp" and "gpudirect.tcpx" in w.note
