"""GPU nodes for a loopback cluster, shaped like the stack's pools: KWOK nodes and DRA devices.

For every pool of an `existing` cluster in the stack, `maxNodes` nodes (the scheduler plans with
them) of the pool's InferenceClass:
- the Node: modelplane's pool label and the pool's own labels, the GPU taint modelplane tolerates
  (api/cluster.py GPU_TAINT) and the pool's taints, allocatable CPU/memory of a GPU machine, and
  KWOK's annotation so KWOK keeps it Ready and runs its pods;
- one ResourceSlice per node, as the NVIDIA DRA driver's kubelet plugin publishes it (driver
  gpu.nvidia.com, pool = node name, one device per GPU named gpu-<i> with the class's device
  attributes, `type: gpu`, `index`, `uuid`, and capacity `memory` in MiB): the devices the
  scheduler's DRA plugin allocates our claims from;
- the DeviceClass the driver's chart installs for its driver (selector on the driver name);
- two untainted CPU nodes, the cluster's system pool (not in the stack, as on GKE/EKS), where what
  tolerates no GPU taint runs: endpoint pickers, Envoy proxies.
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}


def device_class(driver: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": driver},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}}


def node(name: str, pool, cls) -> dict:
    from modelplane.api.cluster import GPU_TAINT, POOL_LABEL
    gpus = cls.capabilities.gpu.count
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok",
              "kubernetes.io/arch": "arm64" if "gb200" in cls.name or "gh200" in cls.name else "amd64",
              POOL_LABEL: pool.name, **{k: str(v) for k, v in pool.labels.items()}}
    taints = [dict(GPU_TAINT)] + [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.taints]
    capacity = {"cpu": str(24 * gpus), "memory": f"{240 * gpus}Gi", "pods": "110",
                "ephemeral-storage": "2000Gi"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "annotations": dict(KWOK_ANNOTATION)},
            "spec": {"taints": taints},
            "status": {"capacity": capacity, "allocatable": capacity}}


def system_node(name: str) -> dict:
    capacity = {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "200Gi"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": dict(KWOK_ANNOTATION),
                         "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok",
                                    "kubernetes.io/arch": "amd64", "modelplane.ai/e2e-system": "true"}},
            "spec": {}, "status": {"capacity": capacity, "allocatable": capacity}}


def resource_slice(node_name: str, cls) -> dict:
    dev = cls.device
    gpus = cls.capabilities.gpu.count
    devices = []
    for i in range(gpus):
        uid = hashlib.sha256(f"{node_name}/{i}".encode()).hexdigest()
        attrs = {"type": {"string": "gpu"}, "index": {"int": i},
                 "uuid": {"string": f"GPU-{uid[:8]}-{uid[8:12]}-{uid[12:16]}-{uid[16:20]}-{uid[20:32]}"},
                 "productName": {"string": f"NVIDIA {cls.capabilities.gpu.product}"}}
        for k, v in dev.attributes.items():
            attrs[k] = {"int": v} if isinstance(v, int) and not isinstance(v, bool) else (
                {"bool": v} if isinstance(v, bool) else {"string": str(v)} if k != "cudaComputeCapability"
                else {"version": str(v)})
        devices.append({"name": f"gpu-{i}", "attributes": attrs,
                        "capacity": {"memory": {"value": f"{dev.memory_mib}Mi"}}})
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-{dev.driver}"},
            "spec": {"driver": dev.driver, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


def objects_for(stack_file: Path, cluster: str) -> list[dict]:
    """The nodes, slices and device classes for one cluster of a stack file (its pools as written)."""
    import yaml

    from modelplane.api import load_catalog
    from modelplane.api.cluster import NodePool
    config = yaml.safe_load(stack_file.read_text())["config"]
    found = [c for c in config["modelplane:clusters"] if c["name"] == cluster]
    if not found:
        raise SystemExit(f"e2e nodes: {stack_file} has no cluster {cluster!r}")
    catalog = load_catalog()
    out, drivers = [], set()
    for pool in (NodePool.model_validate(p) for p in found[0]["nodePools"]):
        cls = catalog.classes[pool.class_]
        drivers.add(cls.device.driver)
        for i in range(pool.max_nodes):
            name = f"{cluster}-{pool.name}-{i}"
            out += [node(name, pool, cls), resource_slice(name, cls)]
    system = [system_node(f"{cluster}-system-{i}") for i in range(2)]
    return [device_class(d) for d in sorted(drivers)] + system + out
