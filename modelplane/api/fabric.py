"""Which node-to-node fabric a pool's pods really get, and what wires it.

A class declares the fabric its hardware has (`capabilities.network.fabric`). Pods only use it
when the pool and the pods are wired for it; otherwise they talk over the primary NIC (TCP).
The scheduler scores the *effective* fabric, the renderers add the wiring, and the
`fabric-wired` policy checks that every multi-node or disaggregated replica got it.

- GKE A3 Ultra / A4 / A4X (GPUDirect RDMA over RoCE): GKE managed DRANET, and Google's gIB NCCL
  plugin installed on the nodes and pinned in multi-node engines (catalog/netplugins.yaml). The cluster runs Dataplane
  V2, the node pool sets `network_config.accelerator_network_profile: auto` (GKE creates the RDMA
  VPC and subnets) and the label `cloud.google.com/gke-networking-dra-driver=true`; pods claim
  the RDMA NICs through DRA (device class `mrdma.google.com`, allocation mode All). Recipe:
  Cluster Toolkit `modules/compute/gke-node-pool` (main.tf, resource-claim-template.yaml.tftpl),
  docs.cloud.google.com/kubernetes-engine/docs/how-to/allocate-network-resources-dra.
- GKE A3 High / A3 Mega (GPUDirect-TCPX / TCPXO): one extra VPC and subnet per GPU NIC (4 / 8),
  the node pool's `additional_node_network_configs`, GKE multi-networking (a Network and a
  GKENetworkParamSet per VPC), the NCCL plugin installer and the NRI device injector DaemonSets,
  and in every multi-node pod the networks annotation, the tcpx(o)-daemon sidecar, the library and
  device mounts and NCCL's settings (catalog/gpudirect.yaml; Cluster Toolkit gke-node-pool
  gpu_direct.tf, container-engine-accelerators gpudirect-tcpx(o)). A recipe missing from the
  catalog, or a control plane below the recipe's GKE floor, leaves the pool at TCP.
  Engines pin NCCL to the plugin (NCCL_NET), so one that cannot load it stops instead of talking
  TCP; a multi-node worker whose engine image is known not to load it is not placed there.
- EKS with EFA: the launch template attaches the EFA interfaces, the EFA device plugin
  (aws/eks-charts aws-efa-k8s-device-plugin) advertises them as `vpc.amazonaws.com/efa`, and pods
  request all of a node's interfaces (docs.aws.amazon.com/eks/latest/userguide/device-management-efa.html).
  EFA's OS-bypass traffic stays within one subnet (AWS ParallelCluster efa-v3: "with other instances
  in the same subnet"), so a node group over several subnets is TCP between nodes, and eksctl
  refuses EFA groups with more than one subnet (eksctl@99984adb pkg/apis/eksctl.io/v1alpha5/
  validation.go L882-885). NCCL reaches EFA only through the aws-ofi-nccl plugin, so multi-node
  engines pin NCCL_NET to it (catalog/netplugins.yaml) and images known not to carry it are refused.
- Existing clusters: the owner built the fabric the class declares.
"""
from __future__ import annotations

from dataclasses import dataclass

from .catalog import MULTI_NODE_FABRICS, GpuDirectRecipe, GpuDirectRelease, InferenceClass, NetPlugin

GKE_DRANET_LABEL = "cloud.google.com/gke-networking-dra-driver"
RDMA_DEVICE_CLASS = "mrdma.google.com"
EFA_RESOURCE = "vpc.amazonaws.com/efa"


@dataclass(frozen=True)
class FabricWiring:
    declared: str                 # what the hardware has
    effective: str                # what pods get
    via: str                      # gke-dranet | gke-gpudirect-tcpx(o) | efa-device-plugin | cluster-owner | none
    note: str = ""                # why a declared fabric is not wired
    nic_device_class: str | None = None   # DRA device class pods claim the NICs from
    efa_interfaces: int = 0       # EFA devices a pod takes (all of the node's)
    gpudirect: str | None = None  # tcpx | tcpxo: pods carry the GPUDirect networks and daemon
    recipe: GpuDirectRecipe | None = None
    release: GpuDirectRelease | None = None   # the recipe's release for the cluster's GKE minor
    plugin: NetPlugin | None = None   # the NCCL net plugin multi-node engines pin (catalog/netplugins.yaml)
    plugin_name: str = ""             # its catalog key (efa | gib)

    @property
    def wired(self) -> bool:
        return self.declared == self.effective

    def to_json(self) -> dict:
        out = {"declared": self.declared, "effective": self.effective, "via": self.via}
        if self.note:
            out["note"] = self.note
        if self.nic_device_class:
            out["nicDeviceClass"] = self.nic_device_class
        if self.efa_interfaces:
            out["efaInterfaces"] = self.efa_interfaces
        if self.gpudirect and self.recipe and self.release:
            # What pods need matches what the infra stack installed, so it travels with the pool.
            rel = self.release
            out["gpudirect"] = {"kind": self.gpudirect, **engine_facts(self.recipe), "released": rel.released.isoformat(),
                                "daemonImage": rel.daemon_image, "ncclEnv": dict(rel.nccl_env)}
        if self.plugin and self.wired:
            out["netPlugin"] = {"name": self.plugin_name, **plugin_facts(self.plugin)}
        return out


def plugin_facts(plugin: NetPlugin) -> dict:
    """What a fabric's NCCL net plugin asks of a multi-node engine (the pool's fabric.netPlugin)."""
    out = {"ncclNet": plugin.nccl_net}
    for key, attr in (("ncclEnv", "nccl_env"), ("kserveImage", "kserve_image"), ("refusedImages", "refused_images"),
                      ("refusedBackends", "refused_backends"), ("envScript", "env_script"),
                      ("hostPaths", "host_paths")):
        value = getattr(plugin, attr)
        if value:
            out[key] = dict(value) if isinstance(value, dict) else value
    return out


def all2all_backend(engine) -> str | None:
    """The vLLM all-to-all backend an engine asks for: `--all2all-backend` in its args (newer vLLM)
    or VLLM_ALL2ALL_BACKEND in its env; None: vLLM's default (NCCL collectives)."""
    args = list(engine.args)
    for i, arg in enumerate(args):
        if arg == "--all2all-backend" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--all2all-backend="):
            return arg.split("=", 1)[1]
    return next((e.value for e in engine.env if e.name == "VLLM_ALL2ALL_BACKEND" and e.value), None)


def all2all_refusal(plugin: dict, backend: str | None) -> str | None:
    """Why a fabric's multi-node workers cannot run `backend` (`plugin`: plugin_facts), or None."""
    if not backend:
        return None
    why = next((w for prefix, w in sorted((plugin.get("refusedBackends") or {}).items())
                if backend.startswith(prefix)), None)
    return f"all-to-all backend {backend} cannot run across nodes here: {why}" if why else None


def engine_facts(recipe: GpuDirectRecipe) -> dict:
    """What a GPUDirect pool asks of the engine: its plugin, and the images that can (not) load it."""
    out = {"nics": recipe.nics, "ncclNet": recipe.nccl_net}
    if recipe.kserve_image:
        out["kserveImage"] = recipe.kserve_image
    if recipe.refused_images:
        out["refusedImages"] = dict(recipe.refused_images)
    return out


def gke_version_key(version: str) -> tuple[int, ...]:
    """1.32.11-gke.1174000 -> (1, 32, 11, 1174000); a bare minor sorts below its every patch."""
    head, _, build = version.partition("-gke.")
    parts = [int(p) for p in head.split(".")]
    return (*parts, *([0] * (3 - len(parts))), int(build) if build else -1)


def gpudirect_version_gap(recipe: GpuDirectRecipe, version: str) -> str | None:
    """The GKE floor `version` misses for this recipe, or None. A minor older than every listed
    one misses the oldest floor; a bare minor ("1.32") is not known to reach a listed patch floor."""
    if not recipe.min_gke_version:
        return None
    minor = ".".join(version.split(".")[:2])
    floor = recipe.min_gke_version.get(minor)
    if floor is None:
        oldest = min(recipe.min_gke_version.values(), key=gke_version_key)
        return oldest if gke_version_key(version) < gke_version_key(oldest) else None
    return floor if gke_version_key(version) < gke_version_key(floor) else None


def fabric_wiring(cls: InferenceClass, source: str, gpudirect: dict[str, GpuDirectRecipe] | None = None,
                  version: str | None = None, subnets: int = 1,
                  plugins: dict[str, NetPlugin] | None = None) -> FabricWiring:
    """The wiring a pool of `cls` gets on a `gke`, `eks` or `existing` cluster. `gpudirect`: the
    catalog's TCPX/TCPXO recipes; `version`: the GKE control-plane version; `subnets`: how many
    subnets an EKS node group spans; `plugins`: the catalog's NCCL net plugins by fabric."""
    declared = cls.capabilities.network.fabric
    if declared not in MULTI_NODE_FABRICS:
        return FabricWiring(declared, declared, "none")
    if source == "existing":
        return FabricWiring(declared, declared, "cluster-owner")
    if source == "gke":
        gke = cls.provisioning.gke
        if gke.gpudirect == "rdma":
            return FabricWiring(declared, declared, "gke-dranet", nic_device_class=RDMA_DEVICE_CLASS,
                                plugin=(plugins or {}).get("gib"), plugin_name="gib")
        kind = gke.gpudirect
        recipe = (gpudirect or {}).get(kind)
        if recipe is None:
            return FabricWiring(declared, "tcp", "none",
                                note=f"the catalog has no gpudirect.{kind} recipe (catalog/gpudirect.yaml)")
        floor = gpudirect_version_gap(recipe, version) if version else None
        if floor:
            return FabricWiring(declared, "tcp", "none",
                                note=f"GPUDirect-{kind.upper()} needs GKE {floor} or later; gke.version is {version}")
        return FabricWiring(declared, declared, f"gke-gpudirect-{kind}", gpudirect=kind, recipe=recipe,
                            release=recipe.release_for(version))
    eks = cls.provisioning.eks
    if declared == "efa" and eks.efa_interfaces and subnets > 1:
        return FabricWiring(declared, "tcp", "none",
                            note=f"EFA traffic stays within one subnet and this node group spans {subnets}; "
                                 "give the pool one subnet (subnetIds) to wire it")
    if declared == "efa" and eks.efa_interfaces:
        return FabricWiring(declared, declared, "efa-device-plugin", efa_interfaces=eks.efa_interfaces,
                            plugin=(plugins or {}).get("efa"), plugin_name="efa")
    return FabricWiring(declared, "tcp", "none", note="the class attaches no EFA interfaces")


def carries(fabric: dict, multi_node: bool, disaggregated: bool) -> bool:
    """Whether a role's pods need their pool's fabric wiring (`fabric`: the inventory's). Every
    multi-node worker does. Single-node pods of a disaggregated replica only on RDMA fabrics (RoCE
    NIC claims, EFA): NIXL moves the KV cache over RDMA NICs itself (UCX, libfabric) and never loads
    NCCL's net plugins, which is all GPUDirect-TCPX(O) is (their NICs are device networks, one pod
    per node)."""
    return multi_node or (disaggregated and not fabric.get("gpudirect"))


def image_refusal(gpudirect: dict, image: str | None, kserve_default: str | None = None) -> str | None:
    """Why an engine image cannot load a pool's NCCL plugin (`gpudirect`: the pool's fabric.gpudirect
    or fabric.netPlugin, or engine_facts / plugin_facts), or None. `image` None: KServe's presets choose it, and the
    pool replaces their `kserve_default` with its kserveImage where it has one."""
    if image is None:
        image = gpudirect.get("kserveImage") or kserve_default
    if image is None:
        return None
    repository = image.split("@")[0]
    if ":" in repository.rsplit("/", 1)[-1]:
        repository = repository.rsplit(":", 1)[0]
    why = (gpudirect.get("refusedImages") or {}).get(repository)
    if why is None:
        return None
    fix = (f"; use {gpudirect['kserveImage']}" if gpudirect.get("kserveImage") else
           "; set engine.image to one that carries it")
    return f"image {image} cannot load the {gpudirect['ncclNet']} NCCL plugin: {why}{fix}"
