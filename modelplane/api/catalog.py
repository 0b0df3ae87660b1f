"""InferenceClass: a tested GPU hardware recipe (capabilities, DRA identity, provisioning)."""
from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field, model_validator

from ..scheduler.model import MULTI_NODE_FABRICS, RDMA_FABRICS  # noqa: F401  (the one definition)
from .base import Model, Name, invalid

Fabric = Literal["none", "tcp", "gpudirect-tcpx", "gpudirect-tcpxo", "roce", "efa", "infiniband"]


class Gpu(Model):
    vendor: Literal["nvidia", "amd"]
    product: str
    architecture: str
    memory_gib: int = Field(alias="memoryGiB", ge=1)  # the vendor's nominal figure
    count: int = Field(ge=1, le=16)                   # GPUs per node
    features: list[str] = []


class NvlinkDomain(Model):
    """GPUs of several nodes on one NVLink fabric (GB200 NVL72: 72 GPUs in 18 nodes). modelplane
    keeps a node pool of such a class inside one domain (rule pool-domain), so a multi-node worker
    placed on the pool never leaves it; its pods share memory over NVLink through an IMEX channel
    of a DRA ComputeDomain."""

    gpus: int = Field(ge=2, le=1024)
    nodes: int = Field(ge=2, le=256)


class Interconnect(Model):
    type: Literal["nvswitch", "nvlink", "pcie", "xgmi", "none"]
    bandwidth_gbs: int | None = Field(default=None, alias="bandwidthGBs", ge=0)  # per GPU, both directions summed
    nvlink_domain: NvlinkDomain | None = None   # absent: NVLink ends at the node


class Network(Model):
    fabric: Fabric
    bandwidth_gbps: int = Field(alias="bandwidthGbps", ge=0)


class Capabilities(Model):
    gpu: Gpu
    interconnect: Interconnect
    network: Network
    arch: Literal["arm64"] | None = None   # the CPU architecture when it is not amd64 (Grace: arm64)


class Device(Model):
    """What the DRA driver publishes for this GPU; claim selectors are derived from it."""

    driver: Literal["gpu.nvidia.com", "gpu.amd.com"]
    attributes: dict[str, str | int | bool] = {}
    match_attributes: list[str] = []   # which attributes go into claim selectors
    memory_mib: int = Field(alias="memoryMiB", ge=1)  # usable memory as the driver reports it

    @model_validator(mode="after")
    def _match_known(self):
        missing = [a for a in self.match_attributes if a not in self.attributes]
        if missing:
            raise invalid(f"matchAttributes names {missing} which are not in attributes",
                          "add them to device.attributes or remove them from matchAttributes")
        return self


CapacityType = Literal["on-demand", "spot", "reservation", "flex-start", "capacity-block"]
LOCAL_SSD_GIB = 375   # one GCE local SSD disk


class GkeAccelerator(Model):
    type: str
    count: int = Field(ge=1, le=16)


class GkeProvisioning(Model):
    machine_type: str
    accelerator: GkeAccelerator
    gpu_driver: Literal["DEFAULT", "LATEST", "INSTALLATION_DISABLED"] = "DEFAULT"
    min_driver: str | None = None        # Ubuntu driver floor from the GKE docs (COS handles it)
    image_type: str = "COS_CONTAINERD"
    disk_size_gb: int = Field(default=200, ge=10)
    disk_type: str = "pd-balanced"
    placement: Literal["none", "compact"] = "none"
    gpudirect: Literal["none", "tcpx", "tcpxo", "rdma"] = "none"
    # How Compute Engine sells this machine (G1: A3 Mega/Ultra and A4 have no on-demand capacity
    # without a reservation; Spot, Flex-start or a reservation only).
    capacity_types: list[CapacityType] = ["on-demand", "spot", "reservation", "flex-start"]
    local_ssd_count: int | None = Field(default=None, ge=1, le=32)   # local SSDs used as ephemeral storage
    # A4X: the HIGH_THROUGHPUT workload policy's accelerator topology ("1x72": one NVL72 domain),
    # the node pool's placement policy (Cluster Toolkit examples/gke-a4x, modules/compute/resource-policy).
    accelerator_topology: str | None = Field(default=None, pattern=r"^[0-9]+x[0-9]+$")

    def node_disk_gib(self) -> int:
        """Ephemeral storage a pod on this node can fill (local SSD, else the boot disk)."""
        if self.local_ssd_count:
            return self.local_ssd_count * LOCAL_SSD_GIB
        return self.disk_size_gb * 1000**3 // 1024**3


class UltraServerType(Model):
    """One EC2 UltraServer type sold as a Capacity Block, and the instances it holds."""

    type: str = Field(pattern=r"^u-[a-z0-9-]+$")
    nodes: int = Field(ge=1)


class UltraServers(Model):
    """The UltraServer types an instance type is sold in (it is sold in no other way), with the source."""

    types: list[UltraServerType] = Field(min_length=1)
    source: str = Field(min_length=1)


class CapacityBlocks(Model):
    """Where EC2 sells this instance type as a Capacity Block for ML (a fact with its source)."""

    regions: list[str]
    source: str = Field(min_length=1)
    as_of: date                          # when the source was read
    # Set where blocks are bought per UltraServer: DescribeCapacityBlockOfferings then takes
    # UltraserverType and UltraserverCount instead of InstanceType and InstanceCount.
    ultra_servers: UltraServers | None = None


class NetworkCard(Model):
    """One network card of an EC2 instance type: how many interfaces it takes
    (DescribeInstanceTypes NetworkInfo.NetworkCards[].MaximumNetworkInterfaces) and the EFA
    interface type EC2 asks for on it."""

    max_interfaces: int = Field(ge=1, le=16)
    interface_type: Literal["efa", "efa-only"] = "efa-only"


class NetworkCards(Model):
    """The instance type's EFA network cards, in card index order, with where the facts come from."""

    cards: list[NetworkCard] = Field(min_length=1, max_length=32)
    source: str = Field(min_length=1)


class EksProvisioning(Model):
    instance_type: str
    ami_type: Literal["AL2023_x86_64_NVIDIA", "BOTTLEROCKET_x86_64_NVIDIA",
                      "AL2023_ARM_64_NVIDIA", "BOTTLEROCKET_ARM_64_NVIDIA"] = "AL2023_x86_64_NVIDIA"
    disk_size_gb: int = Field(default=200, ge=10)
    efa_interfaces: int = Field(default=0, ge=0, le=32)
    capacity_types: list[CapacityType] = ["on-demand", "spot", "reservation", "capacity-block"]
    instance_store_gb: int | None = Field(default=None, ge=1)   # local NVMe (EC2 reports GB), RAID0 at boot
    capacity_blocks: CapacityBlocks | None = None   # absent: no region is known to sell it as a Capacity Block
    # Per-card facts where cards differ (P6e-GB200: odd cards take one interface); absent: every
    # card takes two, card 0 `efa`, the others `efa-only` at device index 1.
    network_cards: NetworkCards | None = None

    @model_validator(mode="after")
    def _cards_match(self):
        if self.network_cards and len(self.network_cards.cards) != self.efa_interfaces:
            raise invalid(f"networkCards lists {len(self.network_cards.cards)} cards, efaInterfaces is "
                          f"{self.efa_interfaces}", "one EFA interface per card: make them equal")
        return self

    def node_disk_gib(self) -> int:
        """Ephemeral storage a pod on this node can fill (instance store in RAID0, else the root volume)."""
        return (self.instance_store_gb or self.disk_size_gb) * 1000**3 // 1024**3


class Provisioning(Model):
    gke: GkeProvisioning | None = None
    eks: EksProvisioning | None = None


# The GPU systems NVIDIA AIConfigurator 0.12.0 has performance data or specs for
# (aiconfigurator_core/systems/*.yaml of the aiconfigurator-core 0.12.0 wheel).
EstimatorSystem = Literal["a100_pcie", "a100_sxm", "a30", "b200_sxm", "b300_sxm", "b60", "gb200", "gb300", "h100_pcie",
                          "h100_sxm", "h200_sxm", "l4", "l40s", "rtx_pro_6000_server"]


class Sizing(Model):
    """Which of the estimator's GPU systems stands for this class when sizing from an SLO (docs/sizing.md)."""

    system: EstimatorSystem


class InferenceClass(Model):
    name: Name
    description: str = ""
    capabilities: Capabilities
    device: Device
    provisioning: Provisioning | None = None   # absent: bring-your-own clusters only
    sizing: Sizing | None = None   # absent: the class is never a candidate when a deployment sizes from an SLO
    unconfirmed: list[str] = []   # facts not yet checked against a primary cloud source

    @model_validator(mode="after")
    def _consistent(self):
        gke = self.provisioning.gke if self.provisioning else None
        if gke and gke.accelerator.count != self.capabilities.gpu.count:
            raise invalid(
                f"provisioning.gke.accelerator.count is {gke.accelerator.count} but "
                f"capabilities.gpu.count is {self.capabilities.gpu.count}",
                f"{gke.machine_type} comes with a fixed GPU count: make both equal")
        domain = self.capabilities.interconnect.nvlink_domain
        if domain and domain.gpus != domain.nodes * self.capabilities.gpu.count:
            raise invalid(f"capabilities.interconnect.nvlinkDomain has {domain.gpus} GPUs, but {domain.nodes} nodes of "
                          f"{self.capabilities.gpu.count} GPUs hold {domain.nodes * self.capabilities.gpu.count}",
                          "make gpus equal nodes x gpu.count")
        return self

    @property
    def domain_nodes(self) -> int:
        """Nodes of one NVLink domain (0: NVLink ends at the node)."""
        domain = self.capabilities.interconnect.nvlink_domain
        return domain.nodes if domain else 0

    def clouds(self) -> list[str]:
        p = self.provisioning
        return [c for c, block in (("gke", p and p.gke), ("eks", p and p.eks)) if block]


class MoeFacts(Model):
    """A mixture-of-experts checkpoint's routed experts, from its published config.json: every
    expert is a gated MLP (gate, up and down projections: 3 x hidden x expertIntermediateSize
    parameters), in every layer but the first `denseLayers`."""

    layers: int = Field(ge=1, le=1000)                       # num_hidden_layers
    dense_layers: int = Field(default=0, ge=0, le=1000)      # first_k_dense_replace: layers with a dense MLP
    routed_experts: int = Field(ge=2, le=100_000)            # n_routed_experts / num_local_experts
    hidden_size: int = Field(ge=1)
    expert_intermediate_size: int = Field(ge=1)              # moe_intermediate_size / intermediate_size
    bytes_per_param: float = Field(gt=0, le=8, allow_inf_nan=False)   # the experts' dtype (FP8: 1, MXFP4: 0.53)
    source: str = Field(min_length=1)

    @model_validator(mode="after")
    def _layers(self):
        if self.dense_layers >= self.layers:
            raise invalid(f"denseLayers ({self.dense_layers}) leaves no MoE layer of {self.layers}",
                          "denseLayers counts the first layers with a dense MLP (first_k_dense_replace)")
        return self

    @property
    def expert_params(self) -> int:
        return (self.layers - self.dense_layers) * self.routed_experts * 3 * self.hidden_size * self.expert_intermediate_size

    @property
    def expert_gib(self) -> float:
        return self.expert_params * self.bytes_per_param / 1024**3


class ModelFacts(Model):
    """What the catalog knows of a model checkpoint (catalog/models.yaml). `moe`: a mixture of
    experts (absent: a dense model, every data-parallel rank holds all of it)."""

    uri: str
    size_gib: float = Field(alias="sizeGiB", gt=0, allow_inf_nan=False)
    gated: bool = False
    source: str = ""
    moe: MoeFacts | None = None
    attention_heads: int | None = Field(default=None, ge=1, le=4096)   # config.json num_attention_heads
    # What one token's KV cache takes (config.json num_hidden_layers, num_key_value_heads, head_dim;
    # for multi-head latent attention kv_lora_rank + qk_rope_head_dim): the KV headroom check.
    layers: int | None = Field(default=None, ge=1, le=1000)
    kv_heads: int | None = Field(default=None, ge=1, le=4096)
    head_dim: int | None = Field(default=None, ge=1, le=65536)
    kv_lora_rank: int | None = Field(default=None, ge=1, le=65536)
    unconfirmed: list[str] = []

    @model_validator(mode="after")
    def _experts_inside(self):
        if self.moe and self.moe.expert_gib >= self.size_gib:
            raise invalid(f"moe describes {self.moe.expert_gib:.0f} GiB of routed experts, not less than sizeGiB "
                          f"({self.size_gib:g})", "check the moe facts against the model's config.json, and sizeGiB")
        return self

    @property
    def expert_share(self) -> float:
        """The routed experts' share of the checkpoint's bytes (0: dense)."""
        return self.moe.expert_gib / self.size_gib if self.moe else 0.0


PricedCapacity = Literal["on-demand", "spot", "reservation", "flex-start", "capacity-block", "internal"]


class Price(Model):
    """A list price of one node of a class: per hour, in USD, in one region and capacity type.

    `region: "*"` is a rate that holds everywhere (an owner's internal rate for bring-your-own
    hardware). `unconfirmed: true` marks a figure no primary pricing page confirmed."""

    class_: Name = Field(alias="class")
    region: str = Field(min_length=1)
    capacity_type: PricedCapacity
    hourly: float = Field(gt=0, allow_inf_nan=False)
    source: str = Field(min_length=1)
    as_of: date = Field(strict=False)   # a YAML date, or its ISO text
    unconfirmed: bool = False


class GpuDirectRelease(Model):
    """One release of Google's GPUDirect stack: the NCCL plugin installer, the daemon and the NCCL
    settings that go together, and the GKE minors it is paired with."""

    from_gke: str | None = Field(default=None, pattern=r"^1\.\d+$")   # this minor and later; None: every minor
    released: date
    installer: str = Field(min_length=1)    # the substrate.yaml entry of the NCCL plugin installer
    daemon_image: str = Field(min_length=1)
    nccl_env: dict[str, str]
    source: str = Field(min_length=1)


class GpuDirectRecipe(Model):
    """GPUDirect-TCPX or -TCPXO on GKE: the GPU NICs, the plugin NCCL must load, the engine images
    that can load it, and the releases per GKE minor (catalog/gpudirect.yaml says where each comes from)."""

    nics: int = Field(ge=1, le=16)          # GPU NICs per node, each on its own VPC
    nccl_net: str = Field(min_length=1)     # the plugin's registered name: engines pin NCCL_NET to it
    min_glibc: str | None = None            # the C library the plugin needs in the workload
    kserve_image: str | None = None         # the engine image KServe runs here when the deployment names none
    refused_images: dict[str, str] = {}     # image repository -> why it cannot load the plugin
    releases: list[GpuDirectRelease] = Field(min_length=1)
    min_gke_version: dict[str, str] = {}    # lowest GKE patch per minor ("1.32": "1.32.11-gke.1174000")
    source: str = Field(min_length=1)
    as_of: date

    def release_for(self, version: str | None) -> GpuDirectRelease:
        """The release Google pairs with a GKE version: the one with the highest `fromGke` at or
        below its minor (unknown version: the newest)."""
        def minor(v: str) -> tuple[int, int]:
            major, rest = v.split(".")[:2]
            return int(major), int(rest)
        ordered = sorted(self.releases, key=lambda r: minor(r.from_gke) if r.from_gke else (0, 0), reverse=True)
        if version is None:
            return ordered[0]
        return next((r for r in ordered if r.from_gke is None or minor(r.from_gke) <= minor(version)), ordered[-1])


class NetPlugin(Model):
    """The NCCL net plugin a wired fabric's multi-node engines must load, by the name it registers, and
    what the engine may run with it (catalog/netplugins.yaml says where each fact comes from)."""

    nccl_net: str = Field(min_length=1)     # the plugin's registered name: engines pin NCCL_NET to it
    nccl_env: dict[str, str] = {}           # more settings the plugin's owner publishes for workloads
    kserve_image: str | None = None         # the engine image KServe runs here when the deployment names none
    refused_images: dict[str, str] = {}     # image repository -> why it does not carry the plugin
    refused_backends: dict[str, str] = {}    # vLLM all-to-all backend (prefix) -> why it cannot run here
    env_script: str | None = None           # a script of NCCL settings the engine sources before it starts
    host_paths: dict[str, str] = {}         # node path -> where the engine mounts it (the plugin's files)
    installers: dict[str, str] = {}         # node arch (amd64, arm64) -> substrate.yaml entry installing it
    unconfirmed: list[str] = []             # facts no primary source confirmed, each with its reason
    source: str = Field(min_length=1)
    as_of: date


class CatalogFile(Model):
    classes: list[InferenceClass] = []
    gpudirect: dict[Literal["tcpx", "tcpxo"], GpuDirectRecipe] = {}
    net_plugins: dict[Literal["efa", "gib"], NetPlugin] = {}
    models: list[ModelFacts] = []
    prices: list[Price] = []
    sources: dict[str, dict] = {}   # YAML anchors for a source and date that many prices share
