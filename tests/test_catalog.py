"""Catalog facts spot-checked against gpu-sku-facts.md."""
import pytest

# (class, machine/instance, accelerator type (GKE), GPUs, nominal GB, fabric, Gbps, EFA interfaces)
FACTS = [
    ("gke-l4-1x-g2", "g2-standard-4", "nvidia-l4", 1, 24, "tcp", 10, None),
    ("gke-l4-4x-g2", "g2-standard-48", "nvidia-l4", 4, 24, "tcp", 50, None),
    ("gke-a100-80gb-8x-a2", "a2-ultragpu-8g", "nvidia-a100-80gb", 8, 80, "tcp", 100, None),
    ("gke-h100-8x-a3high", "a3-highgpu-8g", "nvidia-h100-80gb", 8, 80, "gpudirect-tcpx", 1000, None),
    ("gke-h100-8x-a3mega", "a3-megagpu-8g", "nvidia-h100-mega-80gb", 8, 80, "gpudirect-tcpxo", 1800, None),
    ("gke-h200-8x-a3ultra", "a3-ultragpu-8g", "nvidia-h200-141gb", 8, 141, "roce", 3600, None),
    ("gke-b200-8x-a4", "a4-highgpu-8g", "nvidia-b200", 8, 180, "roce", 3600, None),
    ("eks-l40s-4x-g6e", "g6e.12xlarge", None, 4, 48, "efa", 100, 1),
    ("eks-l40s-8x-g6e", "g6e.48xlarge", None, 8, 48, "efa", 400, 4),
    ("eks-a100-80gb-8x-p4de", "p4de.24xlarge", None, 8, 80, "efa", 400, 4),
    ("eks-h100-8x-p5", "p5.48xlarge", None, 8, 80, "efa", 3200, 32),
    ("eks-h200-8x-p5e", "p5e.48xlarge", None, 8, 141, "efa", 3200, 32),
    ("eks-h200-8x-p5en", "p5en.48xlarge", None, 8, 141, "efa", 3200, 16),
    ("eks-b200-8x-p6", "p6-b200.48xlarge", None, 8, 180, "efa", 3200, 8),
]


@pytest.mark.parametrize("name,machine,accel,gpus,gb,fabric,gbps,efa", FACTS)
def test_class_facts(catalog, name, machine, accel, gpus, gb, fabric, gbps, efa):
    c = catalog.classes[name]
    caps = c.capabilities
    assert (caps.gpu.count, caps.gpu.memory_gib) == (gpus, gb)
    assert (caps.network.fabric, caps.network.bandwidth_gbps) == (fabric, gbps)
    if accel:
        gke = c.provisioning.gke
        assert (gke.machine_type, gke.accelerator.type, gke.accelerator.count) == (machine, accel, gpus)
    else:
        eks = c.provisioning.eks
        assert (eks.instance_type, eks.efa_interfaces, eks.ami_type) == (machine, efa, "AL2023_x86_64_NVIDIA")


def test_driver_floors_pick_latest_for_new_gpus(catalog):
    assert catalog.classes["gke-b200-8x-a4"].provisioning.gke.gpu_driver == "LATEST"
    assert catalog.classes["gke-b200-8x-a4"].provisioning.gke.min_driver == "570"
    assert catalog.classes["gke-l4-1x-g2"].provisioning.gke.gpu_driver == "DEFAULT"


def test_multi_node_gke_classes_use_compact_placement(catalog):
    for name in ("gke-h100-8x-a3high", "gke-h100-8x-a3mega", "gke-h200-8x-a3ultra", "gke-b200-8x-a4"):
        assert catalog.classes[name].provisioning.gke.placement == "compact"


def test_device_identity_uses_driver_vocabulary(catalog):
    archs = {"Kepler", "Maxwell", "Pascal", "Volta", "Turing", "Ampere", "Ada Lovelace", "Hopper", "Blackwell"}
    for c in catalog.classes.values():
        if c.device.driver == "gpu.nvidia.com":
            assert c.device.attributes["architecture"] in archs, c.name
            assert "index" not in c.device.attributes and "minor" not in c.device.attributes
    # usable memory below the nominal figure, as the driver reports it
    assert catalog.classes["gke-h100-8x-a3high"].device.memory_mib == 81559
    assert catalog.classes["gke-h200-8x-a3ultra"].device.memory_mib == 143771


def test_byo_classes_have_no_provisioning(catalog):
    for name in ("l4-1x", "h100-8x", "h200-8x", "mi300x-8x"):
        assert catalog.classes[name].provisioning is None
    assert catalog.classes["mi300x-8x"].device.driver == "gpu.amd.com"


def test_gb200_nvl72_classes_are_arm_hosts_in_one_72_gpu_nvlink_domain(catalog):
    a4x, p6e = catalog.classes["gke-gb200-4x-a4x"], catalog.classes["eks-gb200-4x-p6e"]
    for c in (a4x, p6e):
        caps = c.capabilities
        assert (caps.gpu.product, caps.gpu.count, caps.gpu.memory_gib, caps.arch) == ("GB200", 4, 186, "arm64")
        assert (caps.interconnect.nvlink_domain.gpus, caps.interconnect.nvlink_domain.nodes) == (72, 18)
        assert c.domain_nodes == 18 and c.device.attributes["architecture"] == "Blackwell"
    gke = a4x.provisioning.gke
    assert (gke.machine_type, gke.accelerator.type, gke.accelerator_topology) == ("a4x-highgpu-4g", "nvidia-gb200", "1x72")
    assert gke.capacity_types == ["reservation"] and gke.gpudirect == "rdma"     # G1: no Spot, no Flex-start
    eks = p6e.provisioning.eks
    assert (eks.instance_type, eks.ami_type, eks.capacity_types) == ("p6e-gb200.36xlarge", "AL2023_ARM_64_NVIDIA",
                                                                     ["capacity-block"])


def test_moe_models_split_their_checkpoint_into_routed_experts_and_the_rest(catalog):
    """Routed experts = MoE layers x experts x 3 x hidden x expert intermediate x bytes (config.json)."""
    r1 = catalog.models["hf://deepseek-ai/DeepSeek-R1"]
    assert r1.moe.expert_params == 58 * 256 * 3 * 7168 * 2048
    assert (round(r1.moe.expert_gib), round(r1.size_gib - r1.moe.expert_gib)) == (609, 32)
    assert round(catalog.models["hf://moonshotai/Kimi-K2-Instruct"].moe.expert_gib) == 945
    assert catalog.models["hf://meta-llama/Llama-3.3-70B-Instruct"].moe is None        # dense
    for facts in catalog.models.values():
        assert facts.moe is None or 0 < facts.expert_share < 1
