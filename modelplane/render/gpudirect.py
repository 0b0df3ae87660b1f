"""GPUDirect-TCPX (A3 High) and GPUDirect-TCPXO (A3 Mega) on GKE: the GPU networks' names and
ranges, their multi-networking objects, and what every pod of a multi-node worker carries.

Recipe: GoogleCloudPlatform/container-engine-accelerators gpudirect-tcpx/nccl-test-latest.yaml (@98c85a6e;
IPC_LOCK on the workload container) and gpudirect-tcpxo/nccl-test-latest.yaml (@992db812) (annotations,
daemon, mounts), gpudirect-tcpxo/best-practice.md (the daemon as a native sidecar, its startup probe); Cluster Toolkit@1047080 modules/network/multivpc
and modules/scheduler/gke-cluster/templates (the VPCs, GKENetworkParamSet and Network objects,
named vpc1..vpcN as the samples' annotations expect). Versions and NCCL settings: catalog/gpudirect.yaml,
through the pool's `fabric.gpudirect` in the inventory (what the infra stack installed).
"""
from __future__ import annotations

import ipaddress
import json

from .names import MANAGED_BY, meta

# The GPU VPCs' address space, one /20 per VPC (Cluster Toolkit examples/gke-a3-megagpu: multivpc
# global_ip_address_range 192.168.0.0/16, subnetwork_cidr_suffix 20, mtu 8244).
GPU_NETWORK_RANGE = "192.168.0.0/16"
GPU_SUBNET_PREFIX = 20
GPU_NETWORK_MTU = 8244
LIB_DIR = "/usr/local/nvidia/lib64"                  # where pods see the host's NVIDIA and NCCL plugin libraries
HOST_LIB_DIR = "/home/kubernetes/bin/nvidia/lib64"   # where the installer puts them on COS
DAEMON = {"tcpx": "tcpx-daemon", "tcpxo": "tcpxo-daemon"}
TCPX_SOCKET_DIR = "/run/tcpx"
INTERFACES_ANNOTATION = "networking.gke.io/interfaces"
HEALTH_FILE = "/run/health-check"                    # best-practice.md: no underscore in the name


def vpc_name(cluster: str, i: int) -> str:
    """The GCE VPC of GPU NIC `i` (0-based) of a cluster."""
    return f"{cluster}-gpunet-{i}"


def subnet_name(cluster: str, i: int) -> str:
    return f"{vpc_name(cluster, i)}-subnet"


def network_name(i: int) -> str:
    """The Kubernetes Network object of GPU NIC `i` (0-based): vpc1, vpc2, ..."""
    return f"vpc{i + 1}"


def subnet_range(i: int) -> str:
    return str(list(ipaddress.ip_network(GPU_NETWORK_RANGE).subnets(new_prefix=GPU_SUBNET_PREFIX))[i])


def network_objects(cluster: str, nics: int) -> list[dict]:
    """A GKENetworkParamSet (the VPC and subnet, NICs as net devices) and a Device Network per GPU NIC."""
    out = []
    for i in range(nics):
        name = network_name(i)
        out.append({"apiVersion": "networking.gke.io/v1", "kind": "GKENetworkParamSet",
                    "metadata": meta(name, None, MANAGED_BY),
                    "spec": {"vpc": vpc_name(cluster, i), "vpcSubnet": subnet_name(cluster, i),
                             "deviceMode": "NetDevice"}})
        out.append({"apiVersion": "networking.gke.io/v1", "kind": "Network", "metadata": meta(name, None, MANAGED_BY),
                    "spec": {"type": "Device", "parametersRef": {"group": "networking.gke.io",
                                                                 "kind": "GKENetworkParamSet", "name": name}}})
    return out


def _device_list(kind: str) -> str:
    paths = [f"/dev/nvidia{i}" for i in range(8)] + ["/dev/nvidiactl", "/dev/nvidia-uvm"]
    if kind == "tcpxo":
        paths.append("/dev/dmabuf_import_helper")
    return "".join(f"- path: {p}\n" for p in paths)


def annotations(kind: str, nics: int) -> dict:
    """The daemon's devices (injected by the NRI device injector) and the pod's networks."""
    interfaces = [{"interfaceName": "eth0", "network": "default"}]
    interfaces += [{"interfaceName": f"eth{i + 1}", "network": network_name(i)} for i in range(nics)]
    return {f"devices.gke.io/container.{DAEMON[kind]}": _device_list(kind),
            "networking.gke.io/default-interface": "eth0",
            INTERFACES_ANNOTATION: json.dumps(interfaces)}


def _host(name: str, path: str) -> dict:
    return {"name": name, "hostPath": {"path": path}}


def volumes(kind: str) -> list[dict]:
    out = [_host("gpudirect-libraries", HOST_LIB_DIR), _host("gpudirect-sys", "/sys"),
           _host("gpudirect-proc-sys", "/proc/sys")]
    if kind == "tcpx":
        out.append({"name": "tcpx-socket", "emptyDir": {}})
    else:
        out.append(_host("aperture-devices", "/dev/aperture_devices"))
    return out


def daemon(kind: str, image: str) -> dict:
    """The receive-datapath manager (TCPX) or TCPXO daemon, as a native sidecar: it starts before
    the engine and ends with the pod (best-practice.md "Automatic Sidecar Termination")."""
    mounts = [{"name": "gpudirect-libraries", "mountPath": LIB_DIR},
              {"name": "gpudirect-sys", "mountPath": "/hostsysfs"},
              {"name": "gpudirect-proc-sys", "mountPath": "/hostprocsysfs"}]
    env = [{"name": "LD_LIBRARY_PATH", "value": LIB_DIR}]
    out = {"name": DAEMON[kind], "image": image, "imagePullPolicy": "Always", "restartPolicy": "Always"}
    if kind == "tcpx":   # the escaped quotes are the upstream manifests' literal argument
        out["command"] = ["/tcpgpudmarxd/build/app/tcpgpudmarxd", "--gpu_nic_preset", "a3vm", "--gpu_shmem_type",
                          "fd", "--uds_path", TCPX_SOCKET_DIR, "--setup_param", '\\"--verbose 128 2 0 \\"']
        out["securityContext"] = {"capabilities": {"add": ["NET_ADMIN"]}}
        mounts.append({"name": "tcpx-socket", "mountPath": TCPX_SOCKET_DIR})
    else:
        out["command"] = ["/bin/sh", "-c"]
        out["args"] = ["set -ex\nchmod 755 /fts/entrypoint_rxdm_container.sh\n"
                       "/fts/entrypoint_rxdm_container.sh --num_hops=2\n"]
        out["securityContext"] = {"capabilities": {"add": ["NET_ADMIN", "NET_BIND_SERVICE"]}}
        env.append({"name": "HEALTH_CHECK_LOG_FILE", "value": HEALTH_FILE})
        out["startupProbe"] = {"exec": {"command": ["cat", HEALTH_FILE]}, "initialDelaySeconds": 1,
                               "periodSeconds": 5, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 6}
    out["env"] = env
    out["volumeMounts"] = mounts
    return out


# NCCL prints nothing, not even why it left the plugin, unless NCCL_DEBUG is set; WARN is what
# Google's TCPXO releases set. A deployment may raise these (INFO shows "Using network <plugin>").
DEBUG_DEFAULTS = {"NCCL_DEBUG": "WARN"}
DEBUG_VARS = ("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS")


def engine_env(gpudirect: dict, env, lib_dir: str | None = LIB_DIR) -> list[dict]:
    """The engine's env on a GPUDirect pool: NCCL pinned to the plugin (NCCL_NET: a plugin that does
    not load stops NCCL instead of leaving it on TCP sockets), the release's NCCL settings (they
    replace same-named entries of `env`), NCCL_DEBUG unless `env` sets it. The image's
    LD_LIBRARY_PATH is kept: NCCL finds the plugin there because every known engine image lists
    LIB_DIR (docs/cloud-recipes.md); an LD_LIBRARY_PATH the deployment sets gets LIB_DIR first.
    Other fabrics' net plugins (`fabric.netPlugin`) pass `lib_dir` None: the image carries them."""
    nccl = {"NCCL_NET": gpudirect["ncclNet"], **gpudirect.get("ncclEnv", {})}
    forced = {k: v for k, v in nccl.items() if k not in DEBUG_VARS}
    mine = [e for e in env if e["name"] not in forced]
    names = {e["name"] for e in mine}
    out = []
    for e in mine:
        if lib_dir and e["name"] == "LD_LIBRARY_PATH" and "value" in e and lib_dir not in e["value"].split(":"):
            e = {**e, "value": f"{lib_dir}:{e['value']}" if e["value"] else lib_dir}
        out.append(e)
    out += [{"name": k, "value": v} for k, v in forced.items()]
    defaults = {**DEBUG_DEFAULTS, **{k: v for k, v in nccl.items() if k in DEBUG_VARS}}
    out += [{"name": k, "value": v} for k, v in defaults.items() if k not in names]
    return out


def engine_mounts(kind: str) -> list[dict]:
    out = [{"name": "gpudirect-libraries", "mountPath": LIB_DIR}]
    if kind == "tcpx":   # the plugin talks to the daemon over a Unix socket it looks for in /tmp
        out.append({"name": "tcpx-socket", "mountPath": "/tmp"})
    else:
        out.append({"name": "aperture-devices", "mountPath": "/dev/aperture_devices"})
    return out
