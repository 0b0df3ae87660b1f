"""Issue 35: the cloud review of 2026-11-24 (findings F1-F12), one regression test per finding, each
citing the upstream source it rests on. Asserted on rendered inputs, placements and policy verdicts
of two-node replicas on GKE A3 High (GPUDirect-TCPX) and A3 Mega (GPUDirect-TCPXO), and on the
example infra stacks."""
import copy
import json
from pathlib import Path

import pytest
import yaml

from modelplane.engine import offline
from modelplane.api import load_catalog
from modelplane.policy import evaluate
from modelplane.policy.serving import fabric_wired
from modelplane.prices import gce
from modelplane.scheduler.model import FABRIC

from helpers import planned, stack_policy_args

ROOT = Path(__file__).resolve().parents[1]

UBI = "ghcr.io/llm-d/llm-d-cuda:v0.8.0"            # llm-d's RHEL 9 build, KServe v0.20.0's preset image
UBUNTU = "ghcr.io/llm-d/llm-d-cuda-ubuntu:v0.8.0"
VLLM = "vllm/vllm-openai:v0.10.2"

CLUSTERS = [
    {"name": "gke-a3high", "labels": {"site": "high"},
     "gke": {"project": "acme", "region": "us-central1", "version": "1.34"},
     "nodePools": [{"name": "h100", "class": "gke-h100-8x-a3high", "minNodes": 0, "maxNodes": 10,
                    "zones": ["us-central1-c"], "capacity": {"type": "reservation", "reservation": "a3h-usc1"}}],
     "queues": [{"namespace": "chat", "gpuQuota": 160}]},
    {"name": "gke-a3mega", "labels": {"site": "mega"},
     "gke": {"project": "acme", "region": "europe-west4", "version": "1.34"},
     "nodePools": [{"name": "h100", "class": "gke-h100-8x-a3mega", "minNodes": 0, "maxNodes": 10,
                    "zones": ["europe-west4-b"], "capacity": {"type": "spot"}}],
     "queues": [{"namespace": "chat", "gpuQuota": 160}]},
]
SITES = {"high": ("gke-a3high", "tcpx"), "mega": ("gke-a3mega", "tcpxo")}
SHAPES = {"pp": {"tensor": 8, "pipeline": 2}, "dp": {"tensor": 8, "data": 2, "dataLocal": 1}}


def two_node(site, shape, backend, image=None, env=None):
    out = {"name": f"{backend[:2]}-{shape}-{site}", "namespace": "chat", "replicas": 1,
           "model": {"uri": "hf://deepseek-ai/DeepSeek-R1" if shape == "pp" else "hf://Qwen/Qwen3-32B"},
           "clusterSelector": {"matchLabels": {"site": site}}, "nodeSelector": {"cel": 'gpu.product == "H100"'},
           "workers": {"count": 1, "topology": SHAPES[shape]}}
    if backend == "native":
        out["backend"] = "native"
    if image or backend == "native":
        out["engine"] = {"image": image or VLLM}
    if env:
        out.setdefault("engine", {})["env"] = env
    return out


def plan(tmp_path, deployments, clusters=None, name="review"):
    doc = {"config": {"modelplane:clusters": clusters or copy.deepcopy(CLUSTERS),
                      "modelplane:deployments": deployments}}
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return offline.run(name, path)


def engines(run, name):
    """(annotations, pod spec, engine container) of every GPU pod template of deployment `name`."""
    out = []
    for r in run.records:
        spec, meta = r.inputs.get("spec") or {}, r.inputs.get("metadata") or {}
        if not str(meta.get("name", "")).startswith(name) or str(meta.get("name")).endswith("-epp"):
            continue     # the deployment's endpoint picker runs no GPU
        if r.type.endswith(":LLMInferenceService"):
            for part in (spec, spec.get("prefill")):
                out += [(part.get("annotations") or {}, part[t], part[t]["containers"][0])
                        for t in ("template", "worker") if part and t in part]
        elif r.type.endswith((":LeaderWorkerSet", ":Deployment")):
            templates = spec.get("leaderWorkerTemplate") or {"template": spec.get("template")}
            out += [(t["metadata"].get("annotations") or {}, t["spec"], t["spec"]["containers"][0])
                    for t in templates.values() if isinstance(t, dict) and "spec" in t]
    assert out, name
    return out


def env_of(container) -> dict:
    return {e["name"]: e.get("value") for e in container.get("env") or []}


@pytest.fixture(scope="module")
def a3(tmp_path_factory):
    """The acceptance stack: two-node replicas, pipeline 2 and data 2, on both backends, on A3 High
    and A3 Mega; plus a single-node P/D replica on each (NIXL, no GPUDirect)."""
    deps = [two_node(site, shape, backend) for site in SITES for shape in SHAPES for backend in ("kserve", "native")]
    for site in SITES:
        deps.append({"name": f"pd-{site}", "namespace": "chat", "replicas": 1, "model": {"uri": "hf://Qwen/Qwen3-32B"},
                     "clusterSelector": {"matchLabels": {"site": site}}, "nodeSelector": {"cel": 'gpu.product == "H100"'},
                     "workers": {"count": 1, "topology": {"tensor": 8}},
                     "prefill": {"workers": {"count": 1, "topology": {"tensor": 8}}}})
    return plan(tmp_path_factory.mktemp("a3"), deps)


def test_the_acceptance_stack_places_every_two_node_replica_and_validates(a3, schema_catalog):
    from modelplane.output import report

    assert not a3.result.plan.unplaced
    for p in a3.result.plan.placements:
        if not p.deployment.startswith("chat/pd-"):
            assert (p.roles["decode"].nodes, p.roles["decode"].workers) == (2, 1), p.deployment
    assert [v for v in evaluate(a3) if v["level"] != "advisory"] == []
    for r in a3.records:
        if report.is_manifest(r):
            status, line = schema_catalog.report(report.manifest(r))
            assert status == "ok", f"{r.name}: {line}"


# F1 --------------------------------------------------------------------------------------------

def test_f1_tcpxo_pods_never_run_llm_d_ubi_build(a3):
    """F1 (HIGH): every GPUDirect-TCPXO release since May 01, 2025 needs glibc >= 2.35 in the workload
    (GoogleCloudPlatform/container-engine-accelerators@992db812 gpudirect-tcpxo/README.md L247-253);
    ghcr.io/llm-d/llm-d-cuda (no suffix) is llm-d's RHEL 9 / UBI9 build, glibc 2.34, and the Ubuntu 24.04
    build is published as llm-d-cuda-ubuntu (llm-d/llm-d .github/workflows/ci-release.yaml, index copy
    @117c7c85: "RHEL is the default image (no suffix in image name)", image_suffix "-ubuntu"). KServe's
    template and worker on GPUDirect pools name the Ubuntu build explicitly, over the presets' image."""
    recipe = load_catalog().gpudirect["tcpxo"]
    assert recipe.min_glibc == "2.35" and "glibc 2.34" in recipe.refused_images["ghcr.io/llm-d/llm-d-cuda"]
    for site in SITES:
        for shape in SHAPES:
            pods = engines(a3, f"ks-{shape}-{site}")
            assert len(pods) == 2                         # template and worker
            assert {c["image"] for _, _, c in pods} == {UBUNTU}
    for _, _, c in engines(a3, "pd-mega"):               # single-node P/D: no plugin, the presets' image stays
        assert "image" not in c


@pytest.mark.parametrize("backend", ["kserve", "native"])
def test_f1_a_multi_node_worker_on_the_ubi_image_is_not_placed_on_tcpxo(tmp_path, backend):
    """F1: where the engine's image is known not to load the TCPXO plugin, Filter refuses the
    multi-node worker on that pool with the reason (fabric) instead of letting NCCL fall back to TCP."""
    run = plan(tmp_path, [two_node("mega", "pp" if backend == "native" else "dp", backend, image=UBI)])
    (unplaced,) = run.result.plan.unplaced
    (why,) = [r for r in unplaced.reasons if r.cluster == "gke-a3mega"]
    assert why.pool == "h100" and why.reason == FABRIC
    assert f"image {UBI} cannot load the FasTrak NCCL plugin" in why.detail
    assert "glibc 2.34" in why.detail and UBUNTU in why.detail
    # the same reason in the Filter table `plan --explain` prints
    explained = run.result.plan.rejections[f"chat/{run.result.spec.deployments[0].name}"]
    assert [(r.pool, r.reason) for r in explained if "glibc 2.34" in r.detail] == [("h100", FABRIC)]
    # TCPX states no glibc floor: the same image places on A3 High
    run = plan(tmp_path, [two_node("high", "pp" if backend == "native" else "dp", backend, image=UBI)], name="high")
    assert not run.result.plan.unplaced


# F2 --------------------------------------------------------------------------------------------

def test_f2_a3_high_runs_the_tcpx_release_google_pairs_with_gke_1_34(a3, tmp_path):
    """F2 (HIGH): container-engine-accelerators@98c85a6e gpudirect-tcpx/README.md release "Jun 22, 2026":
    installer nccl-plugin-gpudirecttcpx-dev:v3.1.12, TCPX-daemon tcpgpudmarxd-dev:v2.0.15; commit
    21ed6613 (2026-05-19): daemon v2.0.15+ is what GKE 1.34 (COS 125, devmem TCP) uses. DRA pins
    clusters to 1.34+, so A3 High gets that release; a cluster below 1.34 keeps the Feb 15, 2024 one."""
    files = {r.name: r.inputs["file"] for r in a3.records if r.type == "kubernetes:yaml/v2:ConfigFile"}
    assert files["gke-a3high-nccl-tcpx-installer"] == (
        "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/"
        "98c85a6e581d7ec53329f9ab1de5f8626b637dbb/gpudirect-tcpx/nccl-tcpx-installer.yaml")
    checked = load_catalog().substrate["tcpxInstaller"]["checked"]
    assert "nccl-plugin-gpudirecttcpx-dev:v3.1.12" in checked and "Jun 22, 2026" in checked
    for shape in SHAPES:
        for backend in ("ks", "na"):
            for _, pod, engine in engines(a3, f"{backend}-{shape}-high"):
                (daemon,) = pod["initContainers"]
                assert daemon["image"] == "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.15"
                assert env_of(engine)["NCCL_ALGO"] == "Ring,Tree"
    older = copy.deepcopy(CLUSTERS[:1])
    older[0].update(dra=False, gke={**older[0]["gke"], "version": "1.33"})
    run = plan(tmp_path, [two_node("high", "pp", "native")], clusters=older, name="older")
    files = {r.name: r.inputs["file"] for r in run.records if r.type == "kubernetes:yaml/v2:ConfigFile"}
    assert "992db81257553607f1477945f1b3219632991829/gpudirect-tcpx/" in files["gke-a3high-nccl-tcpx-installer"]
    for _, pod, engine in engines(run, "na-pp-high"):
        assert pod["initContainers"][0]["image"].endswith("tcpgpudmarxd-dev:v2.0.12")
        assert env_of(engine)["NCCL_ALGO"] == "Ring"


# F3 --------------------------------------------------------------------------------------------

def test_f3_nccl_is_pinned_to_the_plugin_and_speaks_up(a3):
    """F3: NCCL falls back silently (NVIDIA/nccl v2.27.5-1 src/plugin/net.cc: the external
    libnccl-net.so, then internal IB, then Socket; NCCL_NET names the one plugin to use, compared with
    strcasecmp against its registered name). The names: "FasTrak" (google/nccl-plugin-gpudirect-tcpxo
    @04815d1 tcpdirect_plugin/fastrak_offload/fastrak_plugin.cc L358-359) and "GPUDirectTCPX_v7"
    (google/nccl-plugin-gpudirecttcpx@4b8ea7f2 src/nccl_plugin.cc L22-23; not "GPUDirectTCPX", which
    would match nothing). NCCL_DEBUG=WARN and the subsystems of the TCPXO release of Jan 9, 2026."""
    want = {"high": "GPUDirectTCPX_v7", "mega": "FasTrak"}
    for site in SITES:
        for shape in SHAPES:
            for backend in ("ks", "na"):
                for _, _, engine in engines(a3, f"{backend}-{shape}-{site}"):
                    env = env_of(engine)
                    assert env["NCCL_NET"] == want[site] and env["NCCL_DEBUG"] == "WARN"
                    if site == "mega":
                        assert env["NCCL_DEBUG_SUBSYS"] == "INIT,NET,ENV,COLL,GRAPH"


def test_f3_a_deployment_may_raise_nccl_debug_but_not_unpin_the_plugin(tmp_path):
    """F3: the documented check (docs/cloud-recipes.md) sets NCCL_DEBUG=INFO to see "Using network
    FasTrak" (NCCL logs it at INFO under INIT: NVIDIA/nccl v2.27.5-1 src/init.cc L346); NCCL_NET stays
    the recipe's whatever the deployment sets."""
    env = [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "NCCL_NET", "value": "Socket"}]
    run = plan(tmp_path, [two_node("mega", "pp", "native", env=env)])
    for _, _, engine in engines(run, "na-pp-mega"):
        names = [e["name"] for e in engine["env"]]
        assert len(names) == len(set(names))
        assert env_of(engine)["NCCL_DEBUG"] == "INFO" and env_of(engine)["NCCL_NET"] == "FasTrak"


def test_f3_fabric_wired_fails_a_gpudirect_pod_that_does_not_pin_nccl(a3):
    """F3: the mandatory fabric-wired policy fails a multi-node pod on a GPUDirect pool whose engine
    does not pin NCCL_NET, or runs an image that cannot load the plugin."""
    wrapped = stack_policy_args(a3)
    assert fabric_wired(wrapped) == []
    for r in wrapped:
        if r.props.get("kind") == "LeaderWorkerSet" and r.props["metadata"]["name"].startswith("na-pp-mega"):
            engine = r.props["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
            engine["env"] = [e for e in engine["env"] if e["name"] != "NCCL_NET"]
        if r.props.get("kind") == "LLMInferenceService" and r.props["metadata"]["name"].startswith("ks-dp-mega"):
            r.props["spec"]["worker"]["containers"][0]["image"] = UBI
    found = sorted(m for m, _ in fabric_wired(wrapped))
    assert len(found) == 2
    assert "ks-dp-mega replica 0 decode" in found[0] and "glibc 2.34" in found[0]
    assert "na-pp-mega replica 0 decode" in found[1] and "NCCL_NET=FasTrak" in found[1]


# F4 --------------------------------------------------------------------------------------------

def test_f4_the_engine_keeps_its_images_library_path(a3, tmp_path):
    """F4: LD_LIBRARY_PATH was replaced, dropping the llm-d image's UCX, NVSHMEM and EFA entries.
    llm-d docker/Dockerfile.cuda (index copy @0199edbf) sets LD_LIBRARY_PATH with /usr/local/nvidia/lib64
    already in it, as NVIDIA's CUDA base images (under vllm/vllm-openai) do; Google prepends the plugin
    directory rather than replacing (google/nccl-plugin-gpudirect-tcpxo@04815d1
    tcpxo_scripts/nccl-env-profile.sh: LD_LIBRARY_PATH="${NCCL_LIB_DIR}:${LD_LIBRARY_PATH}")."""
    for site in SITES:
        for shape in SHAPES:
            for backend in ("ks", "na"):
                for _, _, engine in engines(a3, f"{backend}-{shape}-{site}"):
                    assert "LD_LIBRARY_PATH" not in env_of(engine)
    env = [{"name": "LD_LIBRARY_PATH", "value": "/opt/ucx/lib:/opt/amazon/efa/lib"}]
    run = plan(tmp_path, [two_node("high", "pp", "native", env=env)])
    for _, _, engine in engines(run, "na-pp-high"):
        assert env_of(engine)["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64:/opt/ucx/lib:/opt/amazon/efa/lib"


# F5 --------------------------------------------------------------------------------------------

def infra_eks(tmp_path, edit=None):
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.infra-eks-us-east-1.yaml").read_text())
    if edit:
        edit(doc["config"]["modelplane:clusters"][0], doc["config"])
    path = tmp_path / "Pulumi.eks.yaml"
    path.write_text(yaml.safe_dump(doc))
    return offline.run("eks", path)


def test_f5_no_cluster_placement_group_across_subnets(eks, tmp_path):
    """F5: AWS Auto Scaling CreateAutoScalingGroup.PlacementGroup: "A cluster placement group is a
    logical grouping of instances within a single Availability Zone. You cannot specify multiple
    Availability Zones and a cluster placement group." eksctl@99984adb pkg/apis/eksctl.io/v1alpha5/
    validation.go L882-885: "efaEnabled nodegroups must have only one subnet or one availability zone".
    infra-eks-us-east-1's l40s group spans the cluster's three subnets: no placement group, and its
    EFA (OS-bypass traffic stays within a subnet) is not a multi-node fabric, with the reason."""
    lts = {r.name: r.inputs for r in eks.records if r.type == "aws:ec2/launchTemplate:LaunchTemplate"}
    groups = {r.name: r.inputs for r in eks.records if r.type == "aws:eks/nodeGroup:NodeGroup"}
    assert len(groups["eks-use1-l40s"]["subnetIds"]) == 3 and "placement" not in lts["eks-use1-l40s"]
    assert len(groups["eks-use1-h100"]["subnetIds"]) == 1 and lts["eks-use1-h100"]["placement"] == {
        "groupName": "eks-use1-h100"}
    l40s = next(p for p in eks.result.inventories["eks-use1"]["pools"] if p["name"] == "l40s")["fabric"]
    assert l40s["declared"] == "efa" and l40s["effective"] == "tcp" and "spans 3" in l40s["note"]
    # One subnet: the placement group and the EFA fabric come back.
    run = infra_eks(tmp_path, lambda c, _: c["nodePools"][2].update(subnetIds=["subnet-0c33c0ffee0000003"]))
    lt = next(r.inputs for r in run.records if r.name == "eks-use1-l40s" and r.type.endswith("LaunchTemplate"))
    assert lt["placement"] == {"groupName": "eks-use1-l40s"}
    l40s = next(p for p in run.result.inventories["eks-use1"]["pools"] if p["name"] == "l40s")["fabric"]
    assert l40s["effective"] == "efa"


# F6 --------------------------------------------------------------------------------------------

def test_f6_p6_b200_capacity_blocks_are_planned_with_a_warning(tmp_path):
    """F6: p6-b200 is sold mainly as Capacity Blocks (AWS, May 2025; cloud review F6), and the newest
    EC2 "Capacity Blocks for ML" Region table could not be read: a Region not on the class's list is an
    advisory warning (capacity-block-region), never an input error."""
    block = {"type": "capacity-block", "reservation": "cr-0123456789abcdef0"}

    def edit(c, _):
        c["nodePools"].append({"name": "b200", "class": "eks-b200-8x-p6", "minNodes": 1, "maxNodes": 2,
                               "subnetIds": ["subnet-0a11c0ffee0000001"], "capacity": block})
    run = infra_eks(tmp_path, edit)
    group = next(r.inputs for r in run.records if r.name == "eks-use1-b200" and r.type.endswith(":NodeGroup"))
    assert group["capacityType"] == "CAPACITY_BLOCK"
    (warning,) = [v for v in evaluate(run) if v["policy"] == "capacity-block-region"]
    assert warning["level"] == "advisory" and "eks-use1/b200" in warning["message"]
    assert "p6-b200.48xlarge" in warning["message"] and "prices refresh" in warning["message"]


def test_f6_an_offering_prices_refresh_recorded_is_evidence_enough():
    """F6: `modelplane prices refresh` reads DescribeCapacityBlockOfferings; a capacity-block price it
    wrote for the class and Region counts as EC2 selling blocks there."""
    from modelplane.api.catalog import Price
    from modelplane.api.rules import capacity_block_gap

    catalog = load_catalog()
    p6 = catalog.classes["eks-b200-8x-p6"]
    assert "no list of Regions" in capacity_block_gap(p6, "us-east-1", catalog.prices)
    row = Price.model_validate({"class": p6.name, "region": "us-east-1", "capacityType": "capacity-block",
                                "hourly": 60.0, "source": "https://ec2.us-east-1.amazonaws.com DescribeCapacityBlockOfferings",
                                "asOf": "2026-11-24"})
    assert capacity_block_gap(p6, "us-east-1", {**catalog.prices, (p6.name, "us-east-1", "capacity-block"): row}) is None
    p5 = catalog.classes["eks-h100-8x-p5"]
    assert capacity_block_gap(p5, "us-east-2", catalog.prices) is None                 # on the documented list


# F7 --------------------------------------------------------------------------------------------

def test_f7_wired_engines_get_ipc_lock(a3):
    """F7: Google's TCPX workload container adds IPC_LOCK (container-engine-accelerators@98c85a6e
    gpudirect-tcpx/nccl-test-latest.yaml), as NVIDIA's TCPXO workers do (NVIDIA/aicr
    docs/user/fabric-attached-training.md: "Without IPC_LOCK, NCCL may fail to register pinned
    buffers"). KServe's own worker presets add IPC_LOCK, SYS_RAWIO and NET_RAW (kserve@v0.20.0
    config/llmisvcconfig/config-llm-worker-data-parallel.yaml): a service that names capabilities
    replaces that list, so KServe pods name all three."""
    for site in SITES:
        for shape in SHAPES:
            for _, _, engine in engines(a3, f"na-{shape}-{site}"):
                assert engine["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
            for _, _, engine in engines(a3, f"ks-{shape}-{site}"):
                assert engine["securityContext"]["capabilities"]["add"] == ["IPC_LOCK", "SYS_RAWIO", "NET_RAW"]
    for _, _, engine in engines(a3, "pd-high"):         # not wired: nothing added
        assert "securityContext" not in engine


# F8 --------------------------------------------------------------------------------------------

def test_f8_the_efa_layout_doc_names_both_published_layouts():
    """F8: docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.md (English, read 2026-11-24)
    describes an EFA-only interface at card 0 / device index 1 and EFA-only at device index 0 on the
    other cards; the amazonaws.cn, de and zh_tw copies describe the layout modelplane renders. The doc
    no longer claims the second is in no readable copy (the layout itself: test_cloud_recipes
    test_7_efa_interfaces_follow_the_readable_ec2_layout)."""
    text = (ROOT / "docs" / "cloud-recipes.md").read_text()
    assert "is not in any readable copy" not in text
    assert "efa-acc-inst-types.md" in text and "device index 1" in text


# F9 --------------------------------------------------------------------------------------------

def test_f9_single_node_pd_pods_carry_no_gpudirect(a3, prod):
    """F9: NIXL moves the KV cache between prefill and decode without NCCL's net plugins, and a device
    network is one pod per node (nodes advertise networking.gke.io.networks/<net>: 1): single-node P/D
    pods on A3 High/Mega get no networks, sidecar, NCCL settings or CUDA_VISIBLE_DEVICES. RDMA NICs
    NIXL does use (RoCE DRANET claims, EFA) stay on disaggregated pods."""
    for site in SITES:
        for annotations, pod, engine in engines(a3, f"pd-{site}"):
            assert "networking.gke.io/interfaces" not in annotations and "initContainers" not in pod
            env = env_of(engine)
            assert not {"NCCL_NET", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH"} & set(env)
            assert not any(v.get("hostPath") for v in pod["volumes"])
    claims = [r.inputs["metadata"]["name"] for r in prod.records if r.type.endswith("ResourceClaimTemplate")]
    assert "deepseek-r1-1-prefill-nics" in claims     # single-node prefill on RoCE (A3 Ultra) keeps its NICs


# F10 -------------------------------------------------------------------------------------------

def test_f10_gke_spot_pools_consume_no_reservation():
    """F10: GoogleCloudPlatform/cluster-toolkit@1047080 modules/compute/gke-node-pool/main.tf L435-437:
    "Spot consumption option only works with reservation_affinity consume_reservation_type
    NO_RESERVATION"; infra-gke-europe-west4's A3 Mega Spot pool says so."""
    run = planned("infra-gke-europe-west4")
    pool = next(r.inputs for r in run.records if r.name == "gke-euw4-h100" and r.type.endswith(":NodePool"))
    assert pool["nodeConfig"]["spot"] is True
    assert pool["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}


# F11 -------------------------------------------------------------------------------------------

def skus():
    from test_prices import all_skus
    return all_skus()


def test_f11_a3_mega_is_priced_from_its_own_a3plus_skus():
    """F11: A3 Mega bills "A3Plus Instance Core/Ram" and its GPU as "Nvidia H100 80GB Mega" or "... Plus"
    by region (skypilot-org/skypilot sky/catalog/data_fetchers/fetch_gcp.py: "H100-MEGA has two
    different descriptions in SKUs in different regions"; cloudpilot-ai instanceprice familyMatchers
    a3plus). Recorded fixtures: tests/fixtures/prices/gcp-skus-page2.json (A012-A019)."""
    from test_prices import rate

    mega = gce.MACHINES["a3-megagpu-8g"]
    for region, gpu, where in (("us-central1", "Nvidia H100 80GB Mega GPU running in Americas", "Americas"),
                               ("europe-west4", "Nvidia H100 80GB Plus GPU running in EMEA", "EMEA")):
        hourly, ids = gce.machine_price(skus(), mega, region, "on-demand")
        assert hourly == pytest.approx(8 * rate(gpu) + 208 * rate(f"A3Plus Instance Core running in {where}")
                                       + 1872 * rate(f"A3Plus Instance Ram running in {where}")
                                       + 6000 * rate("SSD backed Local Storage") / 730)
    spot, _ = gce.machine_price(skus(), mega, "europe-west4", "spot")
    assert spot == pytest.approx(8 * rate("Nvidia H100 80GB Plus GPU attached to Spot Preemptible VMs running in EMEA")
                                 + 208 * rate("Spot Preemptible A3Plus Instance Core running in EMEA")
                                 + 1872 * rate("Spot Preemptible A3Plus Instance Ram running in EMEA")
                                 + 6000 * rate("SSD backed Local Storage attached to Spot Preemptible VMs") / 730)


def test_f11_without_a3plus_skus_a3_mega_is_unpriced_not_priced_as_a3_high():
    plain = [s for s in skus() if "A3Plus" not in s["description"]]
    got = gce.machine_price(plain, gce.MACHINES["a3-megagpu-8g"], "us-central1", "on-demand")
    assert got == 'no OnDemand CPU SKU "A3Plus Instance Core running in..." in us-central1 (cpu)'


# F12 -------------------------------------------------------------------------------------------

def test_f12_shipped_prices_are_dated_and_the_expired_block_rate_is_gone():
    """F12: g6e.12xlarge us-east-1 on-demand is the Price List's 10.49264 (an `aws pricing get-products`
    quote of 2026-09-29), so it is no longer unconfirmed; the p5 Capacity Block row came from a table
    "scheduled to be updated on January 1, 2025" (aws.amazon.com/ec2/capacityblocks/pricing) and is
    dropped; the A3 Mega rows built from A3 High's vCPU/memory SKUs are marked (F11)."""
    prices = load_catalog().prices
    g6e = prices[("eks-l40s-4x-g6e", "us-east-1", "on-demand")]
    assert g6e.hourly == 10.4926 and not g6e.unconfirmed and g6e.as_of.isoformat() == "2026-09-29"
    assert not [k for k, p in prices.items() if p.capacity_type == "capacity-block"]
    assert all(prices[("gke-h100-8x-a3mega", "europe-west4", t)].unconfirmed for t in ("on-demand", "spot"))


def test_the_inventory_says_which_release_and_plugin_a_pool_runs(a3):
    """What pods need travels with the pool (an apps stack renders from the infra stack's inventory)."""
    high = next(p for p in a3.result.inventories["gke-a3high"]["pools"] if p["name"] == "h100")["fabric"]["gpudirect"]
    assert (high["ncclNet"], high["released"], high["kserveImage"]) == ("GPUDirectTCPX_v7", "2026-06-22", UBUNTU)
    mega = next(p for p in a3.result.inventories["gke-a3mega"]["pools"] if p["name"] == "h100")["fabric"]["gpudirect"]
    assert mega["ncclNet"] == "FasTrak" and "ghcr.io/llm-d/llm-d-cuda" in mega["refusedImages"]
    json.dumps(mega)                                   # JSON-able as exported
