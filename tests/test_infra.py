"""InferenceCluster under mocks: the provider inputs that matter, parents and providers, config errors."""
import pytest

from modelplane.api import load_catalog, parse_stack_config
from modelplane.api.loader import Source
from modelplane.errors import InputError


def by_name(run, type_):
    return {r.name: r for r in run.records if r.type == type_}


def assert_owned(run, cluster):
    """Every resource of a cluster has the component as parent (or an ancestor) and k8s ones its provider."""
    comp = by_name(run, "modelplane:index:InferenceCluster")[cluster]
    provider = by_name(run, "pulumi:providers:kubernetes")[f"{cluster}-k8s"]
    urns = {r.urn: r for r in run.records}
    owned = [r for r in run.records if r.parent == comp.urn]
    assert provider.parent == comp.urn
    for r in run.records:
        if r.type.startswith(("gcp:", "aws:")):
            assert r.parent == comp.urn, r.name
        if r.type.startswith("kubernetes:") and r.parent in urns:
            assert r.provider.startswith(provider.urn), r.name
    return owned


def test_gke_cluster_and_pools_from_recipes(gke):
    cluster = by_name(gke, "gcp:container/cluster:Cluster")["gke-usc1"].inputs
    assert cluster["removeDefaultNodePool"] is True and cluster["releaseChannel"] == {"channel": "REGULAR"}
    assert cluster["workloadIdentityConfig"] == {"workloadPool": "acme-ml-prod.svc.id.goog"}
    pools = by_name(gke, "gcp:container/nodePool:NodePool")
    assert set(pools) == {"gke-usc1-system", "gke-usc1-h200", "gke-usc1-h100", "gke-usc1-l4"}
    h200 = pools["gke-usc1-h200"].inputs
    acc = h200["nodeConfig"]["guestAccelerators"][0]
    assert (h200["nodeConfig"]["machineType"], acc["type"], int(acc["count"])) == \
        ("a3-ultragpu-8g", "nvidia-h200-141gb", 8)
    assert acc["gpuDriverInstallationConfig"] == {"gpuDriverVersion": "INSTALLATION_DISABLED"}   # DRA pool
    assert "placementPolicy" not in h200 and h200["nodeLocations"] == ["us-central1-b"]   # the reservation places it
    assert h200["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
        "values": ["a3u-usc1-prod"]}
    assert h200["autoscaling"]["totalMinNodeCount"] == 0 and h200["autoscaling"]["totalMaxNodeCount"] == 8
    h100 = pools["gke-usc1-h100"].inputs
    assert "queuedProvisioning" not in h100 and h100["nodeConfig"]["flexStart"] is True
    assert "placementPolicy" not in h100      # the Dynamic Workload Scheduler obtains flex-start VMs
    l4 = pools["gke-usc1-l4"].inputs
    assert l4["nodeConfig"]["guestAccelerators"][0]["gpuDriverInstallationConfig"] == {
        "gpuDriverVersion": "INSTALLATION_DISABLED"}
    assert l4["autoscaling"]["locationPolicy"] == "BALANCED" and l4["initialNodeCount"] == 1   # per zone
    for name in ("gke-usc1-h200", "gke-usc1-h100", "gke-usc1-l4"):
        nc = pools[name].inputs["nodeConfig"]
        assert nc["labels"]["modelplane.ai/pool"] == name.rsplit("-", 1)[1]
        assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"} in nc["taints"]
    assert "taints" not in pools["gke-usc1-system"].inputs["nodeConfig"]
    assert_owned(gke, "gke-usc1")


def test_eks_node_groups_launch_templates_and_efa(eks):
    groups = by_name(eks, "aws:eks/nodeGroup:NodeGroup")
    assert set(groups) == {"eks-use1-system", "eks-use1-h200", "eks-use1-h100", "eks-use1-l40s"}
    h200 = groups["eks-use1-h200"].inputs
    assert h200["instanceTypes"] == ["p5en.48xlarge"] and (h200["amiType"], h200["capacityType"]) == \
        ("AL2023_x86_64_NVIDIA", "ON_DEMAND")        # a capacity reservation (Capacity Blocks: test_cloud_recipes)
    assert h200["subnetIds"] == ["subnet-0a11c0ffee0000001"]
    assert h200["scalingConfig"] == {"minSize": 4, "maxSize": 4, "desiredSize": 4}
    assert h200["labels"]["modelplane.ai/pool"] == "h200"
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"} in h200["taints"]
    l40s = groups["eks-use1-l40s"].inputs
    assert l40s["capacityType"] == "SPOT" and len(l40s["subnetIds"]) == 3
    templates = by_name(eks, "aws:ec2/launchTemplate:LaunchTemplate")
    nics = {name: t.inputs["networkInterfaces"] for name, t in templates.items()}
    assert {name: len(n) for name, n in nics.items()} == {"eks-use1-h200": 16, "eks-use1-h100": 32, "eks-use1-l40s": 1}
    first, rest = nics["eks-use1-h100"][0], nics["eks-use1-h100"][1:]
    assert (first["interfaceType"], first["deviceIndex"], first["networkCardIndex"]) == ("efa", 0, 0)
    assert all(n["interfaceType"] == "efa-only" and n["deviceIndex"] == 1 for n in rest)
    assert [n["networkCardIndex"] for n in nics["eks-use1-h100"]] == list(range(32))
    assert all(len(n["securityGroups"]) == 2 for n in nics["eks-use1-h100"])
    h200_lt = templates["eks-use1-h200"].inputs
    assert "instanceMarketOptions" not in h200_lt and "instanceType" not in h200_lt
    assert h200_lt["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}}
    sg = by_name(eks, "aws:ec2/securityGroup:SecurityGroup")["eks-use1-efa"].inputs
    assert {"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True} in sg["ingress"]
    assert "diskSize" not in h200 and groups["eks-use1-system"].inputs["amiType"] == "AL2023_x86_64_STANDARD"
    assert_owned(eks, "eks-use1")


def test_existing_cluster_creates_no_cloud_resources_and_keeps_the_kubeconfig_secret(lab):
    assert not [r for r in lab.records if r.type.startswith(("gcp:", "aws:"))]
    owned = assert_owned(lab, "lab-onprem")
    assert {r.type for r in owned} >= {"pulumi:providers:kubernetes", "kubernetes:helm.sh/v3:Release"}
    inv = lab.result.inventories["lab-onprem"]
    assert (inv["source"], inv["cloud"], inv["region"]) == ("existing", "on-prem", "ams1")
    assert inv["dra"]["deviceClasses"] == ["gpu.amd.com", "gpu.nvidia.com"]
    releases = {r.name for r in lab.records if r.type == "kubernetes:helm.sh/v3:Release"}
    assert not any("kserve" in n for n in releases)      # substrate toggles are honoured


def test_inventory_is_what_the_scheduler_and_other_stacks_read(gke):
    inv = gke.result.inventories["gke-usc1"]
    assert set(inv) == {"version", "name", "cloud", "region", "source", "kubernetesVersion", "labels", "dra", "kai",
                        "keda", "gateway", "pools"}
    assert inv["kai"]["queues"] == ["chat", "search"] and inv["dra"]["deviceClasses"] == ["gpu.nvidia.com", "mrdma.google.com"]
    pool = next(p for p in inv["pools"] if p["name"] == "h200")
    assert (pool["class"], pool["gpusPerNode"], pool["minNodes"], pool["maxNodes"], pool["capacityType"]) == \
        ("gke-h200-8x-a3ultra", 8, 0, 8, "reservation")


def problems(clusters):
    with pytest.raises(InputError) as err:
        parse_stack_config({"modelplane:clusters": clusters}, Source("stacks/Pulumi.t.yaml", None), load_catalog())
    return [(p.path, p.message, p.fix) for p in err.value.problems]


GKE = {"name": "c", "gke": {"project": "p", "region": "us-central1"}}
EKS = {"name": "c", "eks": {"region": "us-east-1", "subnetIds": ["subnet-1", "subnet-2"]}}


@pytest.mark.parametrize("cluster,path,words", [
    ({**GKE, "nodePools": [{"name": "h", "class": "eks-h100-8x-p5", "maxNodes": 1, "zones": ["us-central1-a"]}]},
     "modelplane:clusters[0].nodePools[0].class", "no provisioning.gke block"),
    ({**GKE, "nodePools": [{"name": "h", "class": "gke-h200-8x-a3ultra", "maxNodes": 1,
                            "zones": ["us-central1-a", "us-central1-b"]}]},
     "modelplane:clusters[0].nodePools[0].zones", "compact placement"),
    ({**GKE, "nodePools": [{"name": "h", "class": "gke-l4-1x-g2", "maxNodes": 1, "zones": ["europe-west4-a"]}]},
     "modelplane:clusters[0].nodePools[0].zones[0]", "not in region us-central1"),
    ({**GKE, "nodePools": [{"name": "h", "class": "gke-l4-1x-g2", "maxNodes": 1}]},
     "modelplane:clusters[0].nodePools[0].zones", "has no zones"),
    ({**GKE, "nodePools": [{"name": "h", "class": "gke-l4-1x-g2", "minNodes": 3, "maxNodes": 1, "zones": ["us-central1-a"]}]},
     "modelplane:clusters[0].nodePools[0]", "minNodes (3) is greater than maxNodes (1)"),
    ({**EKS, "nodePools": [{"name": "h", "class": "eks-h200-8x-p5en", "maxNodes": 1,
                            "capacity": {"type": "capacity-block", "reservation": "cr-0abc"}}]},
     "modelplane:clusters[0].nodePools[0].subnetIds", "one Availability Zone"),
    ({**EKS, "nodePools": [{"name": "h", "class": "eks-l40s-4x-g6e", "maxNodes": 1, "zones": ["us-east-1a"]}]},
     "modelplane:clusters[0].nodePools[0].zones", "placed by subnet"),
    ({**EKS, "nodePools": [{"name": "h", "class": "eks-l40s-4x-g6e", "maxNodes": 1, "capacity": {"type": "flex-start"}}]},
     "modelplane:clusters[0].nodePools[0].capacity.type", "flex-start is a GKE feature"),
])
def test_cluster_config_errors_name_cluster_pool_and_fix(cluster, path, words):
    found = problems([cluster])
    assert any(p == path and words in m and fix for p, m, fix in found), found


def test_substrate_charts_are_addressed_as_helm_expects(gke):
    releases = {r.name: r for r in gke.records if r.type == "kubernetes:helm.sh/v3:Release"}
    kai = releases["gke-usc1-kai-scheduler"].inputs
    assert kai["chart"] == "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler" and "repositoryOpts" not in kai
    assert kai["name"] == "kai-scheduler" and kai["createNamespace"] is True      # `helm ls` names, namespaces made
    dra = releases["gke-usc1-dra-driver-nvidia-gpu"].inputs
    assert dra["chart"] == "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu" and dra["version"] == "0.4.1"
    assert dra["values"]["nvidiaDriverRoot"] == "/home/kubernetes/bin/nvidia"     # where the COS installer puts it
    assert releases["gke-usc1-kserve-llmisvc-crd"].inputs["chart"] == "oci://ghcr.io/kserve/charts/kserve-llmisvc-crd"
    assert releases["gke-usc1-keda"].inputs["repositoryOpts"] == {"repo": "https://kedacore.github.io/charts"}
    files = {r.name: r.inputs["file"] for r in gke.records if r.type == "kubernetes:yaml/v2:ConfigFile"}
    assert files["gke-usc1-gateway-api-crds"].endswith("/gateway-api/releases/download/v1.6.1/standard-install.yaml")
    assert not [r for r in gke.records if r.type == "kubernetes:helm.sh/v4:Chart"]
