"""Issue 16: every GPU pool follows its cloud's documented recipe (docs/cloud-recipes.md), point by point,
asserted on the provider inputs the example infra stacks render."""

from pathlib import Path
import pytest
import yaml

from modelplane.engine import offline
from modelplane.output import report
from modelplane.api import load_catalog, parse_stack_config
from modelplane.api.loader import Source
from modelplane.errors import InputError
from modelplane.policy import evaluate
from modelplane.policy.serving import fabric_wired

from helpers import stack_policy_args

ROOT = Path(__file__).resolve().parents[1]


def by_name(run, type_):
    return {r.name: r for r in run.records if r.type == type_}


def releases(run):
    return {r.inputs["name"]: r for r in run.records if r.type == "kubernetes:helm.sh/v3:Release"}


def with_cluster(tmp_path, edit, stack="infra-gke-us-central1"):
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    edit(doc["config"]["modelplane:clusters"][0])
    path = tmp_path / "Pulumi.variant.yaml"
    path.write_text(yaml.safe_dump(doc))
    return offline.run("variant", path)


# 1. DRA on GKE -------------------------------------------------------------------------------

def test_1_gke_dra_pools_disable_the_managed_driver_and_device_plugin(gke):
    for name in ("gke-usc1-h200", "gke-usc1-h100", "gke-usc1-l4"):
        node = by_name(gke, "gcp:container/nodePool:NodePool")[name].inputs["nodeConfig"]
        assert node["guestAccelerators"][0]["gpuDriverInstallationConfig"] == {"gpuDriverVersion": "INSTALLATION_DISABLED"}
        assert {"gke-no-default-nvidia-gpu-device-plugin": "true", "nvidia.com/gpu.present": "true",
                "cloud.google.com/gke-nvidia-gpu-dra-driver": "true"}.items() <= node["labels"].items()
    files = {r.name: r.inputs["file"] for r in gke.records if r.type == "kubernetes:yaml/v2:ConfigFile"}
    assert files["gke-usc1-cos-driver-installer"] == (      # the H200 pool needs the LATEST driver (review #6)
        "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/"
        "992db81257553607f1477945f1b3219632991829/nvidia-driver-installer/cos/daemonset-preloaded-latest.yaml")
    driver = releases(gke)["dra-driver-nvidia-gpu"]
    assert driver.inputs["values"]["nvidiaDriverRoot"] == "/home/kubernetes/bin/nvidia"      # COS
    urns = {r.urn: r.name for r in gke.records}
    assert {"gke-usc1-cos-driver-installer", "gke-usc1/dra-driver-nvidia-gpu/resourcequota/critical-pods"} <= \
        {urns[d] for d in driver.dependencies}


def test_1_gke_dra_driver_meets_every_class_floor_review_6(gke, tmp_path):
    """DRA pools skip GKE's driver install, so the COS installer must honour the classes' gpuDriver:
    LATEST (H200 >= 550, B200 >= 570) through its --version=latest manifest; default otherwise."""
    def installer(run, cluster):
        return next(r.inputs["file"] for r in run.records
                    if r.type == "kubernetes:yaml/v2:ConfigFile" and r.name == f"{cluster}-cos-driver-installer")
    catalog = load_catalog()
    assert catalog.classes["gke-h200-8x-a3ultra"].provisioning.gke.gpu_driver == "LATEST"
    assert catalog.classes["gke-b200-8x-a4"].provisioning.gke.gpu_driver == "LATEST"
    assert installer(gke, "gke-usc1") == catalog.substrate["cosDriverInstallerLatest"]["manifests"]
    assert catalog.substrate["cosDriverInstallerLatest"]["manifests"].endswith("/cos/daemonset-preloaded-latest.yaml")
    # H100 and L4 only (both DEFAULT): the default driver, which meets their floors.
    run = with_cluster(tmp_path, lambda c: c.update(nodePools=[p for p in c["nodePools"] if p["name"] != "h200"]))
    assert installer(run, "gke-usc1") == catalog.substrate["cosDriverInstaller"]["manifests"]
    # A B200 pool (A4) alone turns it to latest again.
    run = with_cluster(tmp_path, lambda c: c.update(nodePools=[
        {"name": "b200", "class": "gke-b200-8x-a4", "minNodes": 0, "maxNodes": 2, "zones": ["us-central1-b"],
         "capacity": {"type": "reservation", "reservation": "a4-usc1"}}]))
    assert installer(run, "gke-usc1") == catalog.substrate["cosDriverInstallerLatest"]["manifests"]


def test_1_eks_dra_driver_uses_the_al2023_host_driver(eks):
    assert releases(eks)["dra-driver-nvidia-gpu"].inputs["values"]["nvidiaDriverRoot"] == "/"
    assert "nvidia-device-plugin" not in releases(eks)          # never beside the DRA driver


def test_1_non_dra_pools_keep_the_managed_driver_and_device_plugin(tmp_path):
    run = with_cluster(tmp_path, lambda c: c.update(dra=False))
    node = by_name(run, "gcp:container/nodePool:NodePool")["gke-usc1-h200"].inputs["nodeConfig"]
    assert node["guestAccelerators"][0]["gpuDriverInstallationConfig"] == {"gpuDriverVersion": "LATEST"}
    assert "gke-no-default-nvidia-gpu-device-plugin" not in node["labels"]
    assert "dra-driver-nvidia-gpu" not in releases(run)
    assert not [r for r in run.records if r.name.endswith("cos-driver-installer")]


# 2. Flex-start -------------------------------------------------------------------------------

def test_2_flex_start_pools_are_scaled_by_the_autoscaler_not_queued(gke, prod):
    pool = by_name(gke, "gcp:container/nodePool:NodePool")["gke-usc1-h100"].inputs
    assert "queuedProvisioning" not in pool and pool["nodeConfig"]["flexStart"] is True
    assert pool["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert pool["management"]["autoRepair"] is False and pool["autoscaling"]["locationPolicy"] == "ANY"
    flex = [v for v in evaluate(prod) if v["policy"] == "flex-start-serving"]
    assert flex and all(v["level"] == "advisory" and "at most 7 days" in v["message"] for v in flex)


# 3. Fabrics ----------------------------------------------------------------------------------

def test_3_gke_rdma_pools_are_wired_through_managed_dranet(gke, prod):
    cluster = by_name(gke, "gcp:container/cluster:Cluster")["gke-usc1"].inputs
    assert cluster["datapathProvider"] == "ADVANCED_DATAPATH"           # DRANET needs Dataplane V2
    h200 = by_name(gke, "gcp:container/nodePool:NodePool")["gke-usc1-h200"].inputs
    assert h200["networkConfig"] == {"acceleratorNetworkProfile": "auto"}
    assert h200["nodeConfig"]["labels"]["cloud.google.com/gke-networking-dra-driver"] == "true"
    claims = {r.inputs["metadata"]["name"]: r for r in prod.records if r.type.endswith("ResourceClaimTemplate")}
    nics = [c for n, c in claims.items() if n.endswith("-nics")]
    assert nics and all(c.inputs["spec"]["spec"]["devices"]["requests"][0]["exactly"] ==
                        {"deviceClassName": "mrdma.google.com", "allocationMode": "All"} for c in nics)


def test_3_eks_efa_pods_request_every_interface(prod, eks):
    assert "efa-device-plugin" in releases(eks)
    for r in prod.records:
        if r.name.startswith("eks-use1/chat/llminferenceservice/deepseek-r1"):
            for part in (r.inputs["spec"], r.inputs["spec"]["prefill"]):
                limits = part["template"]["containers"][0]["resources"]["limits"]
                assert limits == {"vpc.amazonaws.com/efa": 16}          # p5en: 16 EFA interfaces


def test_3_gke_a3_high_pools_are_wired_for_gpudirect_tcpx(gke):
    h100 = next(p for p in gke.result.inventories["gke-usc1"]["pools"] if p["name"] == "h100")
    assert h100["fabric"]["declared"] == h100["fabric"]["effective"] == "gpudirect-tcpx"
    assert h100["fabric"]["gpudirect"]["nics"] == 4          # tests/test_gpudirect.py covers the whole recipe


def test_3_gpudirect_below_its_gke_floor_counts_as_tcp_and_never_carries_a_multi_node_worker(tmp_path):
    run = with_cluster(tmp_path, lambda c: c.update(dra=False, gke={**c["gke"], "version": "1.26"}))
    h100 = next(p for p in run.result.inventories["gke-usc1"]["pools"] if p["name"] == "h100")
    assert h100["fabric"]["declared"] == "gpudirect-tcpx" and h100["fabric"]["effective"] == "tcp"
    assert "needs GKE 1.27.16-gke.2874000" in h100["fabric"]["note"]
    node = by_name(run, "gcp:container/nodePool:NodePool")["gke-usc1-h100"].inputs
    assert "networkConfig" not in node and not by_name(run, "gcp:compute/network:Network")


def test_3_fabric_wired_fails_when_pods_do_not_claim_the_nics(prod):
    wrapped = stack_policy_args(prod)
    assert fabric_wired(wrapped) == []
    for r in wrapped:
        if r.props.get("kind") == "LLMInferenceService" and r.props["metadata"]["name"] == "deepseek-r1-0":
            r.props["spec"]["template"].pop("resourceClaims", None)
            r.props["spec"]["template"]["containers"][0]["resources"].pop("limits", None)
    found = fabric_wired(wrapped)
    assert found and "deepseek-r1 replica 0 decode" in found[0][0]


# 4. Cluster versions -------------------------------------------------------------------------

def test_4_control_plane_versions_are_pinned(gke, eks):
    assert by_name(gke, "gcp:container/cluster:Cluster")["gke-usc1"].inputs["minMasterVersion"] == "1.34"
    assert by_name(eks, "aws:eks/cluster:Cluster")["eks-use1"].inputs["version"] == "1.34"


@pytest.mark.parametrize("cluster,words", [
    ({"name": "c", "gke": {"project": "p", "region": "us-central1", "version": "1.33"}}, "needs 1.34 or later"),
    ({"name": "c", "eks": {"region": "us-east-1", "version": "1.32", "subnetIds": ["subnet-1", "subnet-2"]}},
     "needs 1.34 or later"),
    ({"name": "c", "existing": {"kubeconfigSecret": "kc"}}, "does not say which Kubernetes version"),
])
def test_4_dra_on_an_older_control_plane_is_refused(cluster, words):
    pools = [{"name": "h", "class": "h100-8x" if "existing" in cluster else
              ("gke-l4-1x-g2" if "gke" in cluster else "eks-l40s-4x-g6e"), "minNodes": 1, "maxNodes": 1,
              **({"zones": ["us-central1-a"]} if "gke" in cluster else {})}]
    config = {"modelplane:clusters": [{**cluster, "nodePools": pools}], "modelplane:kc": {"secure": "x"}}
    with pytest.raises(InputError) as err:
        parse_stack_config(config, Source("stacks/Pulumi.t.yaml", None), load_catalog())
    (problem,) = [p for p in err.value.problems if p.rule == "cluster-version"]
    assert words in problem.message and "dra: false" in problem.fix


# 5. --out keeps every resource -----------------------------------------------------------------

def test_5_out_writes_one_file_per_resource_with_its_type_in_the_name(eks, tmp_path):
    report.write_out(eks, tmp_path)
    cloud = sorted(p.name for p in (tmp_path / "cloud").iterdir())
    assert {"aws.ec2.LaunchTemplate--eks-use1-h200.pulumi", "aws.eks.NodeGroup--eks-use1-h200.pulumi",
            "aws.eks.Cluster--eks-use1.pulumi", "aws.iam.Role--eks-use1-cluster.pulumi"} <= set(cloud)
    expected = [r for r in eks.records if not report.is_manifest(r) and not r.type.startswith(("pulumi:", "modelplane:"))]
    assert len(cloud) == len(expected)
    lt = yaml.safe_load((tmp_path / "cloud" / "aws.ec2.LaunchTemplate--eks-use1-h200.pulumi").read_text())
    assert lt["inputs"]["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}}


# 6. Versions and their sources -----------------------------------------------------------------

def test_6_every_pinned_chart_and_manifest_says_where_it_comes_from():
    substrate = load_catalog().substrate
    assert len(substrate) >= 17
    for name, entry in substrate.items():
        assert entry.get("version") and entry.get("source", "").startswith("https://") and entry.get("checked"), name
        assert ("chart" in entry and "repository" in entry and "namespace" in entry) or "manifests" in entry, name
    assert substrate["draDriver"]["repository"] == "oci://registry.k8s.io/dra-driver-nvidia/charts"
    assert substrate["kserve"]["version"] == substrate["kserveCrds"]["version"] == \
        substrate["kserveRuntimeConfigs"]["version"] == "v0.20.0"


# 7. Review 2026-11-23 (issue 25 section 2), asserted on the rendered inputs --------------------

def eks_pool(run, name):
    return (by_name(run, "aws:eks/nodeGroup:NodeGroup")[f"eks-use1-{name}"].inputs,
            by_name(run, "aws:ec2/launchTemplate:LaunchTemplate")[f"eks-use1-{name}"].inputs)


def with_eks(tmp_path, edit):
    return with_cluster(tmp_path, edit, stack="infra-eks-us-east-1")


def to_us_east_2(c):
    c["eks"]["region"] = "us-east-2"


def test_7_capacity_blocks_outside_the_listed_regions_are_a_warning_not_a_refusal(tmp_path):
    """Review #29, revised by the 2026-11-24 review (F6): the documented list (p5en: us-east-2) is
    evidence, not a rule; a block pool elsewhere is planned, and the advisory capacity-block-region
    policy names the list, its source and date, and how to check (tests/test_cloud_review.py)."""
    blocks = load_catalog().classes["eks-h200-8x-p5en"].provisioning.eks.capacity_blocks
    assert blocks.regions == ["us-east-2"] and blocks.source.startswith("https://docs.aws.amazon.com/")
    assert blocks.as_of.isoformat() == "2026-11-23"
    block = {"type": "capacity-block", "reservation": "cr-0123456789abcdef0"}
    run = with_eks(tmp_path, lambda c: c["nodePools"][0].update(capacity=block))
    (warning,) = [v for v in evaluate(run) if v["policy"] == "capacity-block-region"]
    assert warning["level"] == "advisory"
    assert "eks-use1/h200" in warning["message"] and "in us-east-2" in warning["message"]
    assert "not in us-east-1" in warning["message"] and "describe-capacity-block-offerings" in warning["message"]


def test_7_the_example_stack_keeps_its_h200_pool_on_a_capacity_reservation(eks):
    group, lt = eks_pool(eks, "h200")
    assert group["capacityType"] == "ON_DEMAND" and group["instanceTypes"] == ["p5en.48xlarge"]
    assert "instanceMarketOptions" not in lt
    assert lt["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}}


def test_7_capacity_block_groups_can_go_to_zero_for_upgrades(tmp_path):
    """Review #28: EKS scales a Capacity Block group to 0 before the block ends and needs desired 0 to
    upgrade it, so its minimum is 0; the pool's nodes are the desired size at creation."""
    block = {"type": "capacity-block", "reservation": "cr-0123456789abcdef0"}
    run = with_eks(tmp_path, lambda c: (to_us_east_2(c), c["nodePools"][0].update(capacity=block)))
    group, lt = eks_pool(run, "h200")
    assert group["capacityType"] == "CAPACITY_BLOCK" and "instanceTypes" not in group
    assert group["scalingConfig"] == {"minSize": 0, "maxSize": 4, "desiredSize": 4}
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"} and lt["instanceType"] == "p5en.48xlarge"
    assert "placement" not in lt          # EC2 places a block's instances close together itself
    h100, _ = eks_pool(run, "h100")
    assert h100["scalingConfig"]["minSize"] == 1     # other groups keep their minimum


def test_7_efa_groups_get_a_cluster_placement_group(eks):
    """Review #26: eksctl (efaEnabled) and terraform-aws-eks create a cluster placement group for EFA
    node groups; a capacity reservation or Capacity Block fixes placement itself, and a group over
    several subnets gets none (2026-11-24 review F5: tests/test_cloud_review.py)."""
    groups = by_name(eks, "aws:ec2/placementGroup:PlacementGroup")
    assert {n: g.inputs for n, g in groups.items()} == {"eks-use1-h100": {"name": "eks-use1-h100", "strategy": "cluster"}}
    assert eks_pool(eks, "h100")[1]["placement"] == {"groupName": "eks-use1-h100"}
    assert "placement" not in eks_pool(eks, "h200")[1] and "placement" not in eks_pool(eks, "l40s")[1]


def test_7_efa_interfaces_follow_the_readable_ec2_layout(eks):
    """Review #22: the EC2 guide's readable copies (efa-acc-inst-types) recommend EFA (with ENA) at
    card 0 / device 0 and, on every other card, device index 1 with EFA or EFA-only; that is what
    the launch templates carry. The EFA-only-at-device-0 layout the review describes was not found
    in any readable copy (docs/cloud-recipes.md)."""
    for pool, count in (("h100", 32), ("h200", 16), ("l40s", 1)):
        nics = eks_pool(eks, pool)[1]["networkInterfaces"]
        assert [(n["networkCardIndex"], n["deviceIndex"], n["interfaceType"]) for n in nics] == \
            [(0, 0, "efa")] + [(i, 1, "efa-only") for i in range(1, count)]


def test_7_bottlerocket_with_dra_is_refused_with_the_actual_reason():
    """Review #20: EKS lists Bottlerocket for the NVIDIA DRA driver; modelplane refuses it because it
    renders only AL2023's node setup and Bottlerocket runs its built-in device plugin."""
    from modelplane.api.rules import check_cluster
    catalog = load_catalog()
    p5 = catalog.classes["eks-h100-8x-p5"]
    bottlerocket = p5.model_copy(update={"provisioning": p5.provisioning.model_copy(update={
        "eks": p5.provisioning.eks.model_copy(update={"ami_type": "BOTTLEROCKET_x86_64_NVIDIA"})})})
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.infra-eks-us-east-1.yaml").read_text())
    spec = parse_stack_config(doc["config"], Source("stacks/Pulumi.infra-eks-us-east-1.yaml", None), catalog)
    found = check_cluster(spec.clusters[0], {**catalog.classes, "eks-h100-8x-p5": bottlerocket})
    (finding,) = [f for f in found if f.rule == "pool-class"]
    assert finding.path == ("nodePools", 1, "class")
    assert "AL2023" in finding.message and "built-in NVIDIA device plugin" in finding.message
    assert "dra: false" in finding.fix


def test_7_one_gpu_model_has_one_memory_figure_and_one_interconnect_convention():
    """Review #38 and #39: B200 is 180 GiB nominal in both clouds' classes; interconnect bandwidth is
    per GPU with both directions summed, so the NVLink 4 GPUs (H100, H200) carry the same figure."""
    classes = load_catalog().classes.values()
    by_product: dict[str, set] = {}
    for cls in classes:
        gpu, link = cls.capabilities.gpu, cls.capabilities.interconnect
        by_product.setdefault(gpu.product, set()).add((gpu.memory_gib, link.bandwidth_gbs if link.type in
                                                       ("nvswitch", "nvlink") else None))
    assert by_product["B200"] == {(180, 1800)}
    assert {bw for _, bw in by_product["H100"]} == {bw for _, bw in by_product["H200"]} == {900}
    assert {bw for _, bw in by_product["A100-80GB"]} == {600}
