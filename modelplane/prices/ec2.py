"""EC2 instance prices from AWS's documented responses (pure).

- On-demand: the Price List Query API (`pricing.get_products`, service AmazonEC2) returns each
  product as a JSON string: `product.attributes` (instanceType, regionCode, operatingSystem,
  tenancy, preInstalledSw, capacitystatus, licenseModel, marketoption) and
  `terms.OnDemand.<offer>.priceDimensions.<dim>.pricePerUnit.USD` per `unit` "Hrs". The same
  instance also has rows for other systems, tenancies, reservations and a `marketoption`
  CapacityBlock row at 0.00, so only Linux, shared, no pre-installed software, used capacity,
  no license, on-demand market rows are read.
- Spot: `ec2.describe_spot_price_history` items (AvailabilityZone, InstanceType,
  ProductDescription, SpotPrice, Timestamp); the latest price of each zone, and the highest of
  those, since a pool may get nodes in any of its zones.
- Capacity Blocks: `ec2.describe_capacity_block_offerings` items (InstanceType, InstanceCount,
  CapacityBlockDurationHours, UpfrontFee, CurrencyCode); a block's node-hour is its upfront fee
  over instances x hours, and the cheapest offering is the one a buyer takes. An UltraServer
  offering (UltraserverType, UltraserverCount) counts the catalog's nodes per UltraServer.
"""
from __future__ import annotations

import json

LINUX = {"operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used",
         "licenseModel": "No License required", "marketoption": "OnDemand"}


def on_demand(price_list: list[str], classes: dict[str, str], region: str, as_of: str) -> list[dict]:
    """Rows for `classes` (class -> instance type) from `get_products` PriceList strings."""
    by_type = {}
    for text in price_list:
        item = json.loads(text)
        attrs = item.get("product", {}).get("attributes", {})
        if attrs.get("regionCode") != region or any(attrs.get(k, v) != v for k, v in LINUX.items()):
            continue
        for offer in item.get("terms", {}).get("OnDemand", {}).values():
            for dim in offer.get("priceDimensions", {}).values():
                usd = float(dim.get("pricePerUnit", {}).get("USD") or 0)
                if dim.get("unit") == "Hrs" and usd > 0:
                    by_type[attrs["instanceType"]] = (usd, item["product"].get("sku", "?"))
    rows = []
    for cls, itype in sorted(classes.items()):
        if itype in by_type:
            usd, sku = by_type[itype]
            rows.append({"class": cls, "region": region, "capacityType": "on-demand", "hourly": round(usd, 4),
                         "source": f"https://api.pricing.us-east-1.amazonaws.com GetProducts AmazonEC2 {region} (SKU {sku}, Linux, shared)",
                         "asOf": as_of})
    return rows


def spot(history: list[dict], classes: dict[str, str], region: str, as_of: str) -> list[dict]:
    """Rows from `describe_spot_price_history` items: the highest of each zone's latest price."""
    latest: dict[tuple[str, str], tuple] = {}
    for h in history:
        if h.get("ProductDescription") != "Linux/UNIX":
            continue
        key = (h["InstanceType"], h["AvailabilityZone"])
        stamp = h["Timestamp"]   # a datetime from boto3; compared as such
        if key not in latest or stamp > latest[key][0]:
            latest[key] = (stamp, float(h["SpotPrice"]))
    rows = []
    for cls, itype in sorted(classes.items()):
        zones = {z: p for (t, z), (_, p) in latest.items() if t == itype}
        if zones:
            rows.append({"class": cls, "region": region, "capacityType": "spot", "hourly": round(max(zones.values()), 4),
                         "source": f"https://ec2.{region}.amazonaws.com DescribeSpotPriceHistory (Linux/UNIX, highest of {', '.join(sorted(zones))})",
                         "asOf": as_of})
    return rows


def capacity_block(offerings: list[dict], classes: dict[str, str], region: str, as_of: str,
                   ultra: dict[str, dict[str, int]] | None = None) -> list[dict]:
    """Rows from `describe_capacity_block_offerings`: upfront fee per node-hour, cheapest offering.
    `ultra`: instance type -> {UltraServer type: nodes} for types sold per UltraServer."""
    server = {u: (itype, nodes) for itype, types in (ultra or {}).items() for u, nodes in types.items()}
    best: dict[str, tuple[float, dict, str]] = {}
    for o in offerings:
        if o.get("CurrencyCode", "USD") != "USD":
            continue
        if o.get("UltraserverType") in server:
            itype, nodes = server[o["UltraserverType"]]
            count = int(o.get("UltraserverCount", 1)) * nodes
            what = f"{o.get('UltraserverCount', 1)} x {o['UltraserverType']} ({count} instances)"
        else:
            itype, count = o["InstanceType"], int(o["InstanceCount"])
            what = str(count)
        hours = int(o["CapacityBlockDurationHours"])
        if hours <= 0 or count <= 0:
            continue
        per_node_hour = float(o["UpfrontFee"]) / (hours * count)
        if itype not in best or per_node_hour < best[itype][0]:
            best[itype] = (per_node_hour, o, what)
    rows = []
    for cls, itype in sorted(classes.items()):
        if itype in best:
            rate, o, what = best[itype]
            rows.append({"class": cls, "region": region, "capacityType": "capacity-block", "hourly": round(rate, 4),
                         "source": f"https://ec2.{region}.amazonaws.com DescribeCapacityBlockOfferings ({o.get('AvailabilityZone', region)}: "
                                   f"{o['UpfrontFee']} USD upfront for {what} x {o['CapacityBlockDurationHours']} h)",
                         "asOf": as_of})
    return rows
