"""Cloud review 2026-11-26 G1/G6: EFA network interfaces follow each network card's limit."""
import pytest

from modelplane.api import load_catalog
from modelplane.api.catalog import EksProvisioning, NetworkCard, NetworkCards
from modelplane.render.eks import efa_layout


def test_a_one_interface_card_gets_its_interface_at_device_index_0():
    """EC2 rejects a device index beyond a card's limit ("The specified number '2' for the device
    index exceeds the maximum number of network interfaces supported by the network card",
    eksctl-io/eksctl#7520); AWS ParallelCluster sets `device_index=0 if
    network_card.maximum_network_interfaces() == 1 else 1` (aws/aws-parallelcluster#6930, queues_stack.py)."""
    eks = EksProvisioning(instance_type="x.large", efa_interfaces=3, network_cards=NetworkCards(
        source="test", cards=[NetworkCard(max_interfaces=2, interface_type="efa"), NetworkCard(max_interfaces=1),
                              NetworkCard(max_interfaces=2, interface_type="efa")]))
    assert efa_layout(eks) == [(0, "efa"), (0, "efa-only"), (1, "efa")]


def test_p6e_gb200_renders_17_cards_even_efa_odd_efa_only_at_device_0():
    """aws/aws-parallelcluster#6930: "The maximum network cards is 17"; "all even indices need an
    `efa` interface type and all odd indices need an `efa-only` interface type"."""
    eks = load_catalog().classes["eks-gb200-4x-p6e"].provisioning.eks
    assert efa_layout(eks) == [(0, "efa")] + [(1, "efa") if i % 2 == 0 else (0, "efa-only") for i in range(1, 17)]
    assert "provisioning.eks.networkCards" in load_catalog().classes["eks-gb200-4x-p6e"].unconfirmed


def test_classes_without_card_facts_keep_the_two_interface_layout():
    eks = load_catalog().classes["eks-h100-8x-p5"].provisioning.eks
    assert efa_layout(eks) == [(0, "efa")] + [(1, "efa-only")] * 31


def test_card_facts_must_match_the_interface_count():
    with pytest.raises(ValueError, match="networkCards lists 1 cards, efaInterfaces is 2"):
        EksProvisioning(instance_type="x.large", efa_interfaces=2,
                        network_cards=NetworkCards(source="s", cards=[NetworkCard(max_interfaces=1)]))


# ---- G2 / G4: the MoE fabric rule (scheduler/filter.py all_to_all_problem) ---------------------

from modelplane.scheduler.filter import all_to_all_problem  # noqa: E402
from modelplane.scheduler.model import Pool, Role  # noqa: E402

R1_EXPERTS = 609.0     # DeepSeek-R1's routed experts, GiB (catalog/models.yaml)


def r1(expert: bool, data: int = 2):
    return Role("decode", "true", 1, 2, 8, 641.0, 8, expert_gib=R1_EXPERTS, expert_gpus=16, expert=expert,
                topology=(8, 1, data, 1) + ((1,) if expert else ()))


def pool(fabric: str, domain: int = 0):
    return Pool("p", "c", 8, 4, fabric=fabric, domain_nodes=domain)


def test_moe_dp_across_nodes_is_refused_on_tcpxo_with_or_without_expert():
    """G4: vLLM data_parallel_deployment.md @ 01e4fce0: "expert layers form a tensor parallel group of
    size DP x TP", so TP8xDP2 without EP moves the same per-layer traffic across nodes."""
    assert "expert parallelism over 2 nodes" in all_to_all_problem(r1(True), pool("gpudirect-tcpxo"))
    assert "one DP x TP group across nodes" in all_to_all_problem(r1(False), pool("gpudirect-tcpxo"))
    dense = Role("decode", "true", 1, 2, 8, 131.5, 16, topology=(16, 1, 1, 1))
    assert all_to_all_problem(dense, pool("gpudirect-tcpxo")) is None


def test_expert_parallelism_across_nodes_on_efa_passes_the_all_to_all_rule():
    """G2: EFA counts as RDMA with vLLM's default all-to-all; DeepEP backends and images without the
    aws-ofi-nccl plugin are refused through the role's refused_fabrics (tests/test_efa_nccl.py)."""
    assert all_to_all_problem(r1(True), pool("efa")) is None
    assert all_to_all_problem(r1(False), pool("efa")) is None
    assert all_to_all_problem(r1(True), pool("roce")) is None
    assert all_to_all_problem(r1(True), pool("efa", domain=18)) is None    # one NVLink domain carries it


def test_nvlink_domain_classes_carry_the_computedomain_driver_floor():
    """G9: NVIDIA/dra-driver-nvidia-gpu v0.4.1 docs/prerequisites.md L13, L21: ComputeDomains need
    driver 570.158.01 or later."""
    assert load_catalog().classes["gke-gb200-4x-a4x"].provisioning.gke.min_driver == "570.158.01"


def test_p6e_keeps_its_instance_store_and_secondary_bandwidth_unconfirmed():
    """G6/G7: tsaol/aws-gpu data/p6e-gb200_instances.js (instances.vantage.sh-derived, 2026-01-21):
    1600 Gbps EFAv4 and 22.5 TB NVMe per p6e-gb200.36xlarge; secondary, so unconfirmed."""
    cls = load_catalog().classes["eks-gb200-4x-p6e"]
    assert cls.capabilities.network.bandwidth_gbps == 1600
    assert cls.provisioning.eks.instance_store_gb == 22500
    assert {"capabilities.network", "provisioning.eks.instanceStoreGb"} <= set(cls.unconfirmed)


# ---- the catalog's KV facts against the models' own config.json (issue 46, point 4) ----------

@pytest.mark.parametrize("uri,layers,heads,kv_heads,head_dim,kv_lora", [
    # ai-dynamo/aiconfigurator@095f58a5 aic-core/src/aiconfigurator_core/model_configs/<org>--<name>_config.json
    ("hf://deepseek-ai/DeepSeek-R1", 61, 128, None, None, 512 + 64),
    ("hf://moonshotai/Kimi-K2-Instruct", 61, 64, None, None, 512 + 64),
    ("hf://Qwen/Qwen3-32B", 64, 64, 8, 128, None),
    ("hf://Qwen/Qwen3-8B", 36, 32, 8, 128, None),
    ("hf://openai/gpt-oss-20b", 24, 64, 8, 64, None),
    # aiconfigurator@f577ab84 src/aiconfigurator/model_configs/meta-llama--Llama-3.3-70B-Instruct_config.json
    ("hf://meta-llama/Llama-3.3-70B-Instruct", 80, 64, 8, 8192 // 64, None),
])
def test_kv_facts_read_from_the_models_config_json_are_confirmed(uri, layers, heads, kv_heads, head_dim, kv_lora):
    facts = load_catalog().models[uri]
    assert (facts.layers, facts.attention_heads, facts.kv_heads, facts.head_dim, facts.kv_lora_rank) == \
        (layers, heads, kv_heads, head_dim, kv_lora)
    assert not {"kv", "attentionHeads"} & set(facts.unconfirmed)


# ---- G12: P6e Capacity Blocks are bought per UltraServer -------------------------------------

def _p6e_pool(max_nodes: int):
    from modelplane.api.rules import ultraserver_fit
    return ultraserver_fit(load_catalog().classes["eks-gb200-4x-p6e"], max_nodes, "us-east-1")


def test_p6e_is_sold_as_the_two_ultraserver_types_ec2_names():
    """EC2's API release of 2025-07-09 (aws-sdk-js-v3 clients/client-ec2/CHANGELOG.md 3.844.0): "Customers
    can now purchase u-p6e-gb200x72 and u-p6e-gb200x36 UltraServers"; the name counts GPUs, four per
    p6e-gb200.36xlarge, so 9 and 18 instances (derived, hence still under `unconfirmed`)."""
    cls = load_catalog().classes["eks-gb200-4x-p6e"]
    servers = cls.provisioning.eks.capacity_blocks.ultra_servers
    assert {(t.type, t.nodes) for t in servers.types} == {("u-p6e-gb200x36", 9), ("u-p6e-gb200x72", 18)}
    assert all(t.nodes * cls.capabilities.gpu.count == int(t.type.rsplit("x", 1)[1]) for t in servers.types)
    assert "provisioning.eks.capacityBlocks" in cls.unconfirmed


def test_the_offering_query_is_per_ultraserver_for_p6e_and_per_instance_elsewhere():
    """AWS CLI `ec2 describe-capacity-block-offerings`: `--ultraserver-type`, `--ultraserver-count` beside
    `--instance-type`, `--instance-count` (EC2 API DescribeCapacityBlockOfferings UltraserverType, UltraserverCount)."""
    from modelplane.api.rules import offering_query
    catalog = load_catalog()
    p6e = catalog.classes["eks-gb200-4x-p6e"].provisioning.eks
    assert offering_query(p6e, "us-east-1", 18) == ("aws ec2 describe-capacity-block-offerings --ultraserver-type "
                                                    "u-p6e-gb200x72 --ultraserver-count 1 --capacity-duration-hours 24 "
                                                    "--region us-east-1")
    assert "--ultraserver-type u-p6e-gb200x36 " in offering_query(p6e, "us-east-1", 4)
    p5 = catalog.classes["eks-h100-8x-p5"].provisioning.eks
    assert "--instance-type p5.48xlarge --instance-count 2 " in offering_query(p5, "us-east-2", 2)


@pytest.mark.parametrize("max_nodes,expected", [
    (9, None), (18, None),
    (12, "a u-p6e-gb200x72 block leaves 6 paid nodes idle"),
    (4, "a u-p6e-gb200x36 block leaves 5 paid nodes idle"),
])
def test_a_p6e_pool_not_sized_to_an_ultraserver_is_named(max_nodes, expected):
    """Cloud review G12: "treat a pool size other than 9 or 18 as suspicious"."""
    note = _p6e_pool(max_nodes)
    if expected is None:
        assert note is None
    else:
        assert expected in note and "size maxNodes to 9 or 18" in note and "--ultraserver-type" in note


def test_the_plan_warns_on_a_p6e_pool_of_12_nodes(tmp_path):
    """The note reaches the gate as the advisory capacity-block-region, naming the pool."""
    import yaml
    from pathlib import Path
    from modelplane.engine import offline
    from modelplane.policy import evaluate

    doc = yaml.safe_load((Path(__file__).resolve().parents[1] / "stacks" / "Pulumi.infra-eks-us-east-1.yaml").read_text())
    cluster = doc["config"]["modelplane:clusters"][0]
    cluster["nodePools"].append({"name": "gb200", "class": "eks-gb200-4x-p6e", "minNodes": 1, "maxNodes": 12,
                                 "subnetIds": ["subnet-0a11c0ffee0000001"],
                                 "capacity": {"type": "capacity-block", "reservation": "cr-0123456789abcdef0"}})
    path = tmp_path / "Pulumi.eks.yaml"
    path.write_text(yaml.safe_dump(doc))
    run = offline.run("eks", path)
    notes = [v for v in evaluate(run) if v["policy"] == "capacity-block-region"]
    assert len(notes) == 1 and notes[0]["level"] == "advisory"
    assert "eks-use1/gb200" in notes[0]["message"] and "leaves 6 paid nodes idle" in notes[0]["message"]
