"""Compute Engine machine prices composed from Cloud Billing Catalog SKUs (pure).

A GPU machine has no single SKU: Compute Engine bills it by component, each its own SKU with a
description naming the family or GPU (the SKU list of service 6F81-5844-456A):
- GPUs: "Nvidia H100 80GB GPU running in Americas" (Spot: "... GPU attached to Spot Preemptible
  VMs running in ..."), per GPU-hour;
- vCPUs and memory of the family: "A3 Instance Core running in ...", "A3 Instance Ram running in
  ..." (Spot: "Spot Preemptible A3 Instance Core ..."), per vCPU-hour and GiB-hour;
- bundled local SSD: "SSD backed Local Storage" (Spot: "... attached to Spot Preemptible VMs"),
  per GiB-month;
- some families instead sell a whole-machine slice per GPU ("A4 Nvidia B200 (1 gpu slice)
  running in ..."), which covers the vCPUs and memory of that slice.
A SKU applies to a region when `serviceRegions` lists it; the description's geography is ignored.
"""
from __future__ import annotations

from dataclasses import dataclass

SERVICE = "services/6F81-5844-456A"   # Compute Engine in the Cloud Billing Catalog
HOURS_PER_MONTH = 730                  # Google's month for per-month SKUs (GiBy.mo)
GIB_PER_LOCAL_SSD = 375


@dataclass(frozen=True)
class Machine:
    """What one machine type is billed for. `gpu` names the GPU SKU ("Nvidia H100 80GB"), or the
    names it goes by; `family` the core/RAM SKUs ("A3"), None when the GPU SKU is a whole-machine slice."""

    gpus: int
    gpu: str | tuple[str, ...]
    family: str | None
    vcpus: int = 0
    memory_gib: float = 0
    local_ssd_gib: int = 0


# Shapes from Compute Engine's accelerator-optimized machine tables
# (docs.cloud.google.com/compute/docs/accelerator-optimized-machines, updated 2026-04-13).
# A2 Ultra bills the A2 core and RAM SKUs. A3 Mega bills its own: "A3Plus Instance Core/Ram" and
# a GPU SKU named "Nvidia H100 80GB Mega" in some regions and "Nvidia H100 80GB Plus" in others
# ("Nvidia H100 Mega 80GB" on DWS). Wording read in public SKU-matching code (skypilot-org/skypilot
# sky/catalog/data_fetchers/fetch_gcp.py: "H100-MEGA has two different descriptions in SKUs in
# different regions"; cloudpilot-ai instanceprice familyMatchers a3plus) and SKU exports (2026),
# not in a live list; a machine whose SKUs are missing is reported unpriced, never priced at A3 High's.
MACHINES = {
    "a2-ultragpu-8g": Machine(8, "Nvidia Tesla A100 80GB", "A2", 96, 1360, 3000),
    "a3-highgpu-8g": Machine(8, "Nvidia H100 80GB", "A3", 208, 1872, 6000),
    "a3-megagpu-8g": Machine(8, ("Nvidia H100 80GB Mega", "Nvidia H100 80GB Plus", "Nvidia H100 Mega 80GB"), "A3Plus",
                             208, 1872, 6000),
    "g2-standard-4": Machine(1, "Nvidia L4", "G2", 4, 16),
    "g2-standard-48": Machine(4, "Nvidia L4", "G2", 48, 192),
    # A3 Ultra bills its own "A3Ultra Instance Core/Ram" and "H200 141GB GPU" SKUs: wording read in
    # public SKU-matching code and a public SKU export (2026-07), not in a live list.
    "a3-ultragpu-8g": Machine(8, "H200 141GB", "A3Ultra", 224, 2952, 12000),
    # Sold per GPU slice (the SKU covers its share of vCPUs and memory); local SSD billed apart.
    "a4-highgpu-8g": Machine(8, "A4 Nvidia B200 (1 gpu slice)", None, local_ssd_gib=12000),
}

# Per capacity type: the usage type, the text before a family's name, before and after a GPU's
# name, and the local SSD SKU (usage type, description). Flex-start is billed on the "DWS Defined
# Duration" SKUs ("Nvidia Tesla A100 80GB GPU attached to DWS Defined Duration VMs running in
# ...", "DWS Defined Duration A2 ..." for vCPUs and memory: wording read in public SKU-matching
# code, not in a live list); no DWS local SSD SKU is known, so Flex-start machines are charged
# the on-demand local SSD rate.
_WORDING = {
    "on-demand": ("OnDemand", "", "", " running in ", ("OnDemand", "SSD backed Local Storage")),
    "spot": ("Preemptible", "Spot Preemptible ", "", " attached to Spot Preemptible VMs running in ",
             ("Preemptible", "SSD backed Local Storage attached to Spot Preemptible VMs")),
    "flex-start": ("OnDemand", "DWS Defined Duration ", "", " attached to DWS Defined Duration VMs running in ",
                   ("OnDemand", "SSD backed Local Storage")),
}


class SkuError(ValueError):
    """A SKU the composition needs is present but cannot be read (unit, currency, shape)."""


def unit_price(sku: dict) -> tuple[float, str]:
    """The SKU's current list rate in USD and its usage unit ("h", "GiBy.h", "GiBy.mo").

    The first tier with a non-zero price: some SKUs open with a free tier."""
    info = (sku.get("pricingInfo") or [{}])[0]
    expr = info.get("pricingExpression") or {}
    for tier in expr.get("tieredRates") or []:
        price = tier.get("unitPrice") or {}
        if price.get("currencyCode", "USD") != "USD":
            raise SkuError(f"SKU {sku.get('skuId')}: priced in {price['currencyCode']}, not USD")
        value = int(price.get("units") or 0) + int(price.get("nanos") or 0) / 1e9
        if value > 0:
            return value, expr.get("usageUnit", "")
    raise SkuError(f"SKU {sku.get('skuId')} ({sku.get('description')}): no non-zero rate in pricingInfo")


def _hourly(sku: dict, amount: float, unit: str) -> float:
    """`amount` of the SKU's unit for one hour: vCPUs or GPUs (h), GiB (GiBy.h, GiBy.mo)."""
    rate, usage_unit = unit_price(sku)
    if usage_unit == "GiBy.mo":
        rate /= HOURS_PER_MONTH
    elif usage_unit not in ("h", "GiBy.h"):
        raise SkuError(f"SKU {sku.get('skuId')} ({sku.get('description')}): usage unit {usage_unit!r} is not "
                       "per hour or per GiB-month")
    if unit == "GiB" and not usage_unit.startswith("GiBy"):
        raise SkuError(f"SKU {sku.get('skuId')}: expected a per-GiB rate, got {usage_unit!r}")
    return rate * amount


def _find(skus: list[dict], region: str, usage: str, group: str, wordings: tuple[str, ...]) -> dict | None:
    prefixes = tuple(w.lower() for w in wordings)
    hits = [s for s in skus
            if region in (s.get("serviceRegions") or [])
            and (s.get("category") or {}).get("usageType") == usage
            and (s.get("category") or {}).get("resourceGroup") == group
            and s.get("description", "").lower().startswith(prefixes)]
    # Should one wording match twice in a region, the lowest SKU id keeps the output deterministic.
    return min(hits, key=lambda s: s.get("skuId", "")) if hits else None


def components(machine: Machine, capacity_type: str) -> list[tuple]:
    """(component, usage type, resource group, description prefixes, amount, unit) the machine is billed for."""
    usage, pre, gpu_pre, gpu_tail, (ssd_usage, ssd) = _WORDING[capacity_type]
    names = (machine.gpu,) if isinstance(machine.gpu, str) else machine.gpu
    gpus = tuple(f"{gpu_pre}{name}{' GPU' if machine.family else ''}{gpu_tail}" for name in names)
    out = [("gpu", usage, "GPU", gpus, machine.gpus, "unit")]
    if machine.family:
        def family(what):
            wordings = (f"{pre}{machine.family} Instance {what} running in ",)
            # DWS vCPU and memory SKUs are written with or without "Instance": either matches
            return wordings + ((f"{pre}{machine.family} {what} running in ",) if capacity_type == "flex-start" else ())
        out += [("cpu", usage, "CPU", family("Core"), machine.vcpus, "unit"),
                ("ram", usage, "RAM", family("Ram"), machine.memory_gib, "GiB")]
    if machine.local_ssd_gib:
        out.append(("local-ssd", ssd_usage, "LocalSSD", (ssd,), machine.local_ssd_gib, "GiB"))
    return out


def machine_price(skus: list[dict], machine: Machine, region: str, capacity_type: str) -> tuple[float, list[str]] | str:
    """The machine's hourly price and the SKU ids it is composed of, or why it has none."""
    total, ids = 0.0, []
    for name, usage, group, wordings, amount, unit in components(machine, capacity_type):
        sku = _find(skus, region, usage, group, wordings)
        if sku is None:
            return f"no {usage} {group} SKU \"{wordings[0].strip()}...\" in {region} ({name})"
        total += _hourly(sku, amount, unit)
        ids.append(sku["skuId"])
    return total, ids


def prices(skus: list[dict], classes: dict[str, str], regions: list[str], as_of: str) -> tuple[list[dict], list[str]]:
    """Price rows for `classes` (class -> machine type) in `regions`, for on-demand, Spot and
    Flex-start; and a line per row that could not be composed. Rows carry their SKU ids as source."""
    rows, missing = [], []
    for cls, machine_type in sorted(classes.items()):
        machine = MACHINES.get(machine_type)
        if machine is None:
            missing.append(f"{cls}: machine type {machine_type} has no known SKU composition")
            continue
        for region in sorted(regions):
            for capacity_type in _WORDING:
                got = machine_price(skus, machine, region, capacity_type)
                if isinstance(got, str):
                    missing.append(f"{cls} {region} {capacity_type}: {got}")
                    continue
                hourly, ids = got
                rows.append({"class": cls, "region": region, "capacityType": capacity_type, "hourly": round(hourly, 4),
                             "source": f"https://cloudbilling.googleapis.com/v1/{SERVICE}/skus ({', '.join(ids)})", "asOf": as_of})
    return rows, missing
