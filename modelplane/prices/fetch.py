"""Glue: call the clouds' price APIs through their official clients and hand the documented
responses to the pure parsers. Credentials are found the way each SDK finds them."""
from __future__ import annotations

from datetime import datetime, timezone

from . import ec2, gce

EXTRA = "pip install 'modelplane[prices]' (google-cloud-billing, boto3)"


class PriceSourceError(Exception):
    """A price API could not be read (no client, no credentials, refused); nothing is written."""


def classes_of(catalog, cloud: str) -> dict[str, str]:
    """class -> machine type (gcp) or instance type (aws), for the catalog's classes of that cloud."""
    out = {}
    for name, cls in catalog.classes.items():
        p = cls.provisioning
        if cloud == "gcp" and p and p.gke:
            out[name] = p.gke.machine_type
        elif cloud == "aws" and p and p.eks:
            out[name] = p.eks.instance_type
    return out


def ultraservers_of(catalog) -> dict[str, dict[str, int]]:
    """instance type -> {UltraServer type: nodes}, for instance types EC2 sells only per UltraServer."""
    out = {}
    for cls in catalog.classes.values():
        eks = cls.provisioning.eks if cls.provisioning else None
        servers = eks.capacity_blocks.ultra_servers if eks and eks.capacity_blocks else None
        if servers:
            out[eks.instance_type] = {t.type: t.nodes for t in servers.types}
    return out


def gcp_skus(client=None) -> list[dict]:
    """Every Compute Engine SKU, as the API's JSON (camelCase), all pages."""
    import warnings

    # google-api-core warns on import about Python versions it will drop later; not the user's concern here
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"google\.")
    try:
        from google.auth.exceptions import DefaultCredentialsError
        from google.cloud import billing_v1
        from google.protobuf.json_format import MessageToDict
    except ImportError as exc:
        raise PriceSourceError(f"the Google Cloud Billing client is not installed ({exc.name}): {EXTRA}") from exc
    from google.api_core import exceptions as api

    try:
        client = client or billing_v1.CloudCatalogClient()
        # the pager follows nextPageToken until the last page
        return [MessageToDict(billing_v1.Sku.pb(sku)) for sku in client.list_skus(parent=gce.SERVICE)]
    except DefaultCredentialsError as exc:
        raise PriceSourceError("no Google credentials: run `gcloud auth application-default login` or set "
                               "GOOGLE_APPLICATION_CREDENTIALS to a service account key file") from exc
    except api.GoogleAPICallError as exc:
        raise PriceSourceError(f"Cloud Billing Catalog API refused the request: {exc.message or exc}") from exc


def _aws_call(fn):
    try:
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
    except ImportError as exc:
        raise PriceSourceError(f"boto3 is not installed: {EXTRA}") from exc
    try:
        return fn()
    except NoCredentialsError as exc:
        raise PriceSourceError("no AWS credentials: run `aws configure` (or `aws sso login`) or set "
                               "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY") from exc
    except ClientError as exc:
        err = exc.response.get("Error", {})
        raise PriceSourceError(f"AWS refused {exc.operation_name}: {err.get('Code')}: {err.get('Message')}") from exc
    except BotoCoreError as exc:
        raise PriceSourceError(f"AWS: {exc}") from exc


def _pages(client, operation: str, key: str, **kwargs) -> list:
    out = []
    for page in client.get_paginator(operation).paginate(**kwargs):
        out += page.get(key, [])
    return out


def aws_prices(types: list[str], region: str, pricing=None, ec2_client=None,
               ultra: dict[str, dict[str, int]] | None = None) -> tuple[list[str], list[dict], list[dict]]:
    """The Price List products, Spot price history and Capacity Block offerings of `types` in `region`;
    a type in `ultra` is sold only per UltraServer, so its offerings are asked for per UltraServer type."""
    def run():
        import boto3

        p = pricing or boto3.client("pricing", region_name="us-east-1")   # the Price List's own endpoint
        e = ec2_client or boto3.client("ec2", region_name=region)
        products = []
        for itype in sorted(types):
            filters = [{"Type": "TERM_MATCH", "Field": k, "Value": v}
                       for k, v in (("instanceType", itype), ("regionCode", region), *sorted(ec2.LINUX.items()))]
            products += _pages(p, "get_products", "PriceList", ServiceCode="AmazonEC2", Filters=filters)
        history = _pages(e, "describe_spot_price_history", "SpotPriceHistory", InstanceTypes=sorted(types),
                         ProductDescriptions=["Linux/UNIX"], StartTime=datetime.now(timezone.utc))
        from botocore.exceptions import ClientError

        blocks = []
        asks = [{"UltraserverType": u, "UltraserverCount": 1} for t in sorted(types) for u in sorted((ultra or {}).get(t, {}))]
        asks += [{"InstanceType": t, "InstanceCount": 1} for t in sorted(types) if t not in (ultra or {})]
        for ask in asks:
            try:
                blocks += _pages(e, "describe_capacity_block_offerings", "CapacityBlockOfferings", **ask,
                                 CapacityDurationHours=24)
            except ClientError as exc:
                # Capacity Blocks exist for a few types and regions; EC2 refuses the others by name
                if exc.response.get("Error", {}).get("Code") not in ("InvalidParameterValue", "Unsupported"):
                    raise
        return products, history, blocks
    return _aws_call(run)


def refresh(catalog, clouds: list[str], regions: dict[str, list[str]], as_of: str,
            gcp_client=None, aws_clients=None) -> tuple[list[dict], list[str]]:
    """Rows for every class of `clouds` in their `regions`, and what could not be priced.
    `aws_clients`: region -> (pricing client, ec2 client), for tests and callers with sessions."""
    rows, missing = [], []
    if "gcp" in clouds:
        skus = gcp_skus(gcp_client)
        try:
            got, why = gce.prices(skus, classes_of(catalog, "gcp"), regions.get("gcp", []), as_of)
        except gce.SkuError as exc:
            raise PriceSourceError(f"Cloud Billing Catalog: {exc}") from exc
        rows, missing = rows + got, missing + why
    if "aws" in clouds:
        classes = classes_of(catalog, "aws")
        for region in sorted(regions.get("aws", [])):
            pricing, ec2_client = (aws_clients or {}).get(region, (None, None))
            ultra = ultraservers_of(catalog)
            products, history, blocks = aws_prices(sorted(set(classes.values())), region, pricing, ec2_client, ultra)
            try:
                for part in (ec2.on_demand(products, classes, region, as_of), ec2.spot(history, classes, region, as_of),
                             ec2.capacity_block(blocks, classes, region, as_of, ultra)):
                    rows += part
            except (KeyError, TypeError, ValueError) as exc:     # a response not shaped as documented
                raise PriceSourceError(f"AWS {region}: unexpected price response ({type(exc).__name__}: {exc})") from exc
            have = {(r["class"], r["capacityType"]) for r in rows if r["region"] == region}
            missing += [f"{c} {region} {t}: no rate in the response" for c in sorted(classes)
                        for t in ("on-demand", "spot", "capacity-block") if (c, t) not in have]
    return rows, missing
