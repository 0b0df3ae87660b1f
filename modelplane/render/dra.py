"""DRA: one ResourceClaimTemplate per GPU role, with selectors that match the real device.

Selectors use only what the driver publishes, under its own domain: the class's chosen identity
attributes, and a memory band of +-5% around the usable memory the driver reports (drivers report
less than the nominal figure: an H100 80GB shows about 81559 MiB). The claim binds the GPU the
class describes, never rejects it for being a few MiB short, and never takes a bigger sibling
(an H200 is also Hopper).
"""
from __future__ import annotations

import json

from ..api.rules import CHANNEL_DEVICE_CLASS  # noqa: F401  (the one definition; renderers import it from here)
from .names import meta

CLAIM_NAME = "gpus"
NIC_CLAIM_NAME = "nics"
MEMORY_HEADROOM = 0.95


def memory_band_gi(memory_mib: int) -> tuple[int, int]:
    """(floor, ceiling) in GiB around the reported usable memory."""
    return int(memory_mib * MEMORY_HEADROOM) // 1024, -(-int(memory_mib * (2 - MEMORY_HEADROOM)) // 1024)


def selector(device: dict) -> str:
    """The CEL expression a device must satisfy, derived from the class's device facts."""
    driver = device["driver"]
    attrs = device.get("attributes", {})
    terms = []
    for name in device.get("matchAttributes", []):
        terms.append(f"device.attributes[{json.dumps(driver)}].{name} == {json.dumps(attrs[name])}")
    low, high = memory_band_gi(device["memoryMiB"])
    memory = f"device.capacity[{json.dumps(driver)}].memory"
    terms.append(f'{memory}.compareTo(quantity("{low}Gi")) >= 0')
    terms.append(f'{memory}.compareTo(quantity("{high}Gi")) <= 0')
    return " && ".join(terms)


def _template(name: str, namespace: str, lbls: dict, request: dict) -> dict:
    """A ResourceClaimTemplate with one device request; its claims carry the same labels."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": meta(name, namespace, lbls),
        "spec": {"metadata": {"labels": dict(lbls)}, "spec": {"devices": {"requests": [request]}}},
    }


def claim_template(name: str, namespace: str, lbls: dict, device: dict, count: int) -> dict:
    return _template(name, namespace, lbls, {
        "name": CLAIM_NAME,
        "exactly": {
            "deviceClassName": device["driver"],
            "allocationMode": "ExactCount",
            "count": count,
            "selectors": [{"cel": {"expression": selector(device)}}],
        },
    })


def nic_claim_template(name: str, namespace: str, lbls: dict, device_class: str) -> dict:
    """All RDMA NICs of the node (GKE managed DRANET publishes them under `device_class`); one pod
    per node takes them all, as Cluster Toolkit's default-rdma template does."""
    return _template(name, namespace, lbls, {
        "name": NIC_CLAIM_NAME,
        "exactly": {"deviceClassName": device_class, "allocationMode": "All"},
    })


# NVIDIA DRA driver v0.4.1 ComputeDomain (resource.nvidia.com/v1beta1, CRD in schemas/): the
# controller creates the ResourceClaimTemplate named in spec.channel, whose claims allocate an IMEX
# channel from CHANNEL_DEVICE_CLASS (deployments/helm/dra-driver-nvidia-gpu/templates/
# deviceclass-compute-domain-default-channel.yaml); pods that hold one share GPU memory with the
# other pods of the domain over multi-node NVLink.
CHANNEL_CLAIM_NAME = "imex"


def compute_domain(name: str, namespace: str, lbls: dict, claim_template: str) -> dict:
    """One ComputeDomain per GPU role of a replica (the driver's docs: each workload its own).
    numNodes 0: with the driver's default IMEXDaemonsWithDNSNames gate the daemons start as pods
    land and the field only feeds status (the CRD's description of numNodes)."""
    return {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
            "metadata": meta(name, namespace, lbls),
            "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": claim_template}}}}
