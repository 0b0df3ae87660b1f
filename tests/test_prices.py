"""`modelplane prices refresh` on recorded API responses, through the official clients: Google's
CloudCatalogClient over its REST transport with a fake HTTP session, and boto3 with botocore's
Stubber. The fixtures are in tests/fixtures/prices (see its README)."""
import json
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from modelplane.prices import ec2, fetch, gce, pricefile

FIXTURES = Path(__file__).parent / "fixtures" / "prices"
boto3 = pytest.importorskip("boto3", reason="pip install -r requirements-prices.txt")


def load(name):
    return json.loads((FIXTURES / name).read_text())


def all_skus():
    return load("gcp-skus-page1.json")["skus"] + load("gcp-skus-page2.json")["skus"]


def rate(description):
    sku = next(s for s in all_skus() if s["description"] == description)
    price = sku["pricingInfo"][0]["pricingExpression"]["tieredRates"][-1]["unitPrice"]
    return int(price["units"]) + price["nanos"] / 1e9


def test_a3_high_is_priced_from_its_gpu_vcpu_memory_and_local_ssd_skus():
    hourly, ids = gce.machine_price(all_skus(), gce.MACHINES["a3-highgpu-8g"], "us-central1", "on-demand")
    want = (8 * rate("Nvidia H100 80GB GPU running in Americas") + 208 * rate("A3 Instance Core running in Americas")
            + 1872 * rate("A3 Instance Ram running in Americas") + 6000 * rate("SSD backed Local Storage") / 730)
    assert hourly == pytest.approx(want)
    assert len(ids) == 4
    described = {s["skuId"]: s["description"] for s in all_skus()}
    # not the Mega GPU, not the commitment, not another family
    assert sorted(described[i] for i in ids) == ["A3 Instance Core running in Americas", "A3 Instance Ram running in Americas",
                                                 "Nvidia H100 80GB GPU running in Americas", "SSD backed Local Storage"]


def test_spot_and_flex_start_use_their_own_skus():
    skus, a3 = all_skus(), gce.MACHINES["a3-highgpu-8g"]
    spot, _ = gce.machine_price(skus, a3, "us-central1", "spot")
    assert spot == pytest.approx(
        8 * rate("Nvidia H100 80GB GPU attached to Spot Preemptible VMs running in Americas")
        + 208 * rate("Spot Preemptible A3 Instance Core running in Americas")
        + 1872 * rate("Spot Preemptible A3 Instance Ram running in Americas")
        + 6000 * rate("SSD backed Local Storage attached to Spot Preemptible VMs") / 730)
    flex, _ = gce.machine_price(skus, a3, "us-central1", "flex-start")
    assert flex == pytest.approx(
        8 * rate("Nvidia H100 80GB GPU attached to DWS Defined Duration VMs running in Americas")
        + 208 * rate("DWS Defined Duration A3 Instance Core running in Americas")     # both wordings match
        + 1872 * rate("DWS Defined Duration A3 Ram running in Americas")
        + 6000 * rate("SSD backed Local Storage") / 730)
    on_demand, _ = gce.machine_price(skus, a3, "us-central1", "on-demand")
    assert len({round(spot, 4), round(flex, 4), round(on_demand, 4)}) == 3 and max(spot, flex) < on_demand


def test_a_whole_machine_slice_sku_prices_a4_per_gpu():
    hourly, ids = gce.machine_price(all_skus(), gce.MACHINES["a4-highgpu-8g"], "us-east4", "on-demand")
    assert hourly == pytest.approx(8 * rate("A4 Nvidia B200 (1 gpu slice) running in Americas")
                                   + 12000 * rate("SSD backed Local Storage") / 730)
    assert len(ids) == 2


def test_a_missing_component_leaves_the_machine_unpriced_and_says_which():
    got = gce.machine_price(all_skus(), gce.MACHINES["a3-highgpu-8g"], "europe-west4", "on-demand")
    assert got == 'no OnDemand RAM SKU "A3 Instance Ram running in..." in europe-west4 (ram)'


def stubbed(region="us-east-1"):
    from botocore.stub import ANY, Stubber

    pricing = boto3.client("pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    ec2_client = boto3.client("ec2", region_name=region, aws_access_key_id="x", aws_secret_access_key="x")
    ps, es = Stubber(pricing), Stubber(ec2_client)
    p1, p2 = load("aws-products-p5-page1.json"), load("aws-products-p5-page2.json")
    ps.add_response("get_products", p1, {"ServiceCode": "AmazonEC2", "Filters": ANY})
    ps.add_response("get_products", p2, {"ServiceCode": "AmazonEC2", "Filters": ANY, "NextToken": p1["NextToken"]})
    ps.add_response("get_products", load("aws-products-p5en.json"), {"ServiceCode": "AmazonEC2", "Filters": ANY})

    def dated(page):
        for h in page["SpotPriceHistory"]:
            h["Timestamp"] = datetime.fromisoformat(h["Timestamp"])
        return page
    s1 = dated(load("aws-spot-page1.json"))
    spot = {"InstanceTypes": ["p5.48xlarge", "p5en.48xlarge"], "ProductDescriptions": ["Linux/UNIX"], "StartTime": ANY}
    es.add_response("describe_spot_price_history", s1, spot)
    es.add_response("describe_spot_price_history", dated(load("aws-spot-page2.json")), {**spot, "NextToken": s1["NextToken"]})
    blocks = {"InstanceCount": 1, "CapacityDurationHours": 24}
    es.add_client_error("describe_capacity_block_offerings", "InvalidParameterValue",
                        "Capacity Blocks are not offered for p5.48xlarge in us-east-1",
                        expected_params={**blocks, "InstanceType": "p5.48xlarge"})
    offers = load("aws-capacity-blocks-p5en.json")
    for o in offers["CapacityBlockOfferings"]:
        for k in ("StartDate", "EndDate"):
            o[k] = datetime.fromisoformat(o[k])
    es.add_response("describe_capacity_block_offerings", offers, {**blocks, "InstanceType": "p5en.48xlarge"})
    ps.activate(), es.activate()
    return pricing, ec2_client, ps, es


def test_aws_on_demand_spot_and_capacity_block_through_boto3(catalog):
    pricing, ec2_client, ps, es = stubbed()
    only = {"eks-h100-8x-p5": "p5.48xlarge", "eks-h200-8x-p5en": "p5en.48xlarge"}
    products, history, blocks = fetch.aws_prices(sorted(only.values()), "us-east-1", pricing, ec2_client)
    ps.assert_no_pending_responses(), es.assert_no_pending_responses()
    rows = ec2.on_demand(products, only, "us-east-1", "2026-11-23")
    # the Linux on-demand row, not the CapacityBlock row at 0.00 nor Windows (page 2)
    assert [(r["class"], r["hourly"]) for r in rows] == [("eks-h100-8x-p5", 55.04), ("eks-h200-8x-p5en", 63.296)]
    assert "SKU 3D4V8UAYEMB38GU2" in rows[0]["source"]
    spot = ec2.spot(history, only, "us-east-1", "2026-11-23")
    # each zone's latest Linux/UNIX price, the highest of them
    assert [(r["class"], r["hourly"]) for r in spot] == [("eks-h100-8x-p5", 33.002), ("eks-h200-8x-p5en", 36.87)]
    assert "us-east-1a, us-east-1b" in spot[0]["source"]
    cb = ec2.capacity_block(blocks, only, "us-east-1", "2026-11-23")
    # the cheapest offering's upfront fee per node-hour: 1185.60 / (1 x 24)
    assert [(r["class"], r["hourly"]) for r in cb] == [("eks-h200-8x-p5en", 49.4)]


def test_a_capacity_block_fee_is_per_instance_and_hour():
    offer = {"InstanceType": "p5.48xlarge", "InstanceCount": 4, "CapacityBlockDurationHours": 168,
             "UpfrontFee": "26430.72", "CurrencyCode": "USD", "AvailabilityZone": "us-east-2a"}
    [row] = ec2.capacity_block([offer], {"eks-h100-8x-p5": "p5.48xlarge"}, "us-east-2", "2026-11-23")
    assert row["hourly"] == round(26430.72 / (4 * 168), 4) and row["capacityType"] == "capacity-block"


def test_the_refreshed_rows_merge_into_the_price_file(tmp_path, catalog):
    path = tmp_path / "prices.yaml"
    path.write_text("# where prices come from\nprices:\n"
                    "  - {class: gke-h100-8x-a3high, region: us-central1, capacityType: spot, hourly: 35.3957, "
                    "source: old, asOf: 2025-03-06}\n"
                    "  - {class: h100-8x, region: '*', capacityType: internal, hourly: 20, source: owner, asOf: 2026-01-01}\n")
    new = [{"class": "gke-h100-8x-a3high", "region": "us-central1", "capacityType": "spot", "hourly": 53.0936,
            "source": "https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus (A, B)", "asOf": "2026-11-23"}]
    pricefile.write(path, new)
    text = path.read_text()
    assert text.startswith("# where prices come from\nprices:\n")
    rows = yaml.safe_load(text)["prices"]
    assert [(r["class"], r["hourly"], str(r["asOf"])) for r in rows] == [
        ("gke-h100-8x-a3high", 53.0936, "2026-11-23"), ("h100-8x", 20, "2026-01-01")]
    pricefile.write(path, new)
    assert path.read_text() == text          # deterministic
    from modelplane.api import load_catalog
    load_catalog(extra=None)                 # the shipped file still loads


def test_prices_lists_what_a_stack_pays_with_age_and_marks():
    from click.testing import CliRunner

    from modelplane.cli import main

    result = CliRunner().invoke(main, ["prices", "--stack", "prod"], terminal_width=400)
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line for line in result.output.splitlines() if line.startswith("│ ")}
    assert "upper bound" in rows["gke-usc1/h100"] and "flex-start" in rows["gke-usc1/h100"]
    assert "upper bound" in rows["eks-use1/l40s"] and "spot" in rows["eks-use1/l40s"]
    assert "upper bound" not in rows["eks-use1/h100"]
    assert "contract" in rows["gke-usc1/h200"]
    # the g6e row is a dated Price List quote now (2026-11-24 review F12): confirmed
    assert "2026-09-29" in rows["eks-use1/l40s"] and "unconfirmed" not in rows["eks-use1/l40s"]
    # the Cyclenerd build's A3 Mega rows use A3 High's vCPU/memory SKUs (F11): marked
    assert "unconfirmed" in rows["gke-euw4/h100"] and "(> 90 d)" in rows["gke-euw4/h100"]
    assert "modelplane prices refresh" in result.output


def test_refresh_end_to_end_for_aws_writes_a_valid_price_file(catalog, tmp_path):
    from types import SimpleNamespace

    from modelplane.api.catalog import CatalogFile

    two = SimpleNamespace(classes={k: catalog.classes[k] for k in ("eks-h100-8x-p5", "eks-h200-8x-p5en")})
    pricing, ec2_client, ps, es = stubbed()
    rows, missing = fetch.refresh(two, ["aws"], {"aws": ["us-east-1"]}, "2026-11-23",
                                  aws_clients={"us-east-1": (pricing, ec2_client)})
    ps.assert_no_pending_responses(), es.assert_no_pending_responses()
    assert {(r["class"], r["capacityType"]): r["hourly"] for r in rows} == {
        ("eks-h100-8x-p5", "on-demand"): 55.04, ("eks-h200-8x-p5en", "on-demand"): 63.296,
        ("eks-h100-8x-p5", "spot"): 33.002, ("eks-h200-8x-p5en", "spot"): 36.87,
        ("eks-h200-8x-p5en", "capacity-block"): 49.4}
    assert missing == ["eks-h100-8x-p5 us-east-1 capacity-block: no rate in the response"]
    path = tmp_path / "prices.yaml"
    pricefile.write(path, rows)
    parsed = CatalogFile.model_validate(yaml.safe_load(path.read_text()))
    assert len(parsed.prices) == 5 and all(p.source.startswith("https://") and str(p.as_of) == "2026-11-23"
                                           for p in parsed.prices)


def test_the_google_client_path_in_a_process_of_its_own():
    """Google's client (also reached by a refresh without credentials) and Pulumi's provider both register the protobuf `google.rpc.Status` (from
    different .proto files), so one interpreter cannot hold both: the tests that drive the real
    CloudCatalogClient run in their own pytest process (tests/isolated/prices_google_client.py)."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("google.cloud.billing_v1") is None:
        pytest.skip("pip install -r requirements-prices.txt")
    here = Path(__file__).parent
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                          str(here / "isolated" / "prices_google_client.py")],
                         capture_output=True, text=True, cwd=here.parent)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "4 passed" in run.stdout, run.stdout


def test_an_ultraserver_offering_is_priced_per_instance_of_the_ultraserver():
    """Cloud review G12: P6e-GB200 is sold only per UltraServer. EC2 CapacityBlockOffering carries
    UltraserverType and UltraserverCount (botocore ec2 service model); the node-hour counts the catalog's
    instances per UltraServer (u-p6e-gb200x72: 18)."""
    offer = {"InstanceType": "p6e-gb200.36xlarge", "UltraserverType": "u-p6e-gb200x72", "UltraserverCount": 1,
             "CapacityBlockDurationHours": 24, "UpfrontFee": "18285.70", "CurrencyCode": "USD",
             "AvailabilityZone": "us-east-1-dfw-2a"}
    ultra = {"p6e-gb200.36xlarge": {"u-p6e-gb200x36": 9, "u-p6e-gb200x72": 18}}
    [row] = ec2.capacity_block([offer], {"eks-gb200-4x-p6e": "p6e-gb200.36xlarge"}, "us-east-1", "2026-11-27", ultra)
    assert row["hourly"] == round(18285.70 / (18 * 24), 4)
    assert "1 x u-p6e-gb200x72 (18 instances) x 24 h" in row["source"]


def test_prices_refresh_asks_for_p6e_offerings_per_ultraserver_type(catalog):
    """The request takes UltraserverType and UltraserverCount instead of InstanceType and InstanceCount
    (EC2 API DescribeCapacityBlockOfferings); the Stubber checks the parameters against botocore's model."""
    from botocore.stub import ANY, Stubber

    assert fetch.ultraservers_of(catalog) == {"p6e-gb200.36xlarge": {"u-p6e-gb200x36": 9, "u-p6e-gb200x72": 18}}
    ec2_client = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    pricing = boto3.client("pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    ps, es = Stubber(pricing), Stubber(ec2_client)
    ps.add_response("get_products", {"PriceList": []}, {"ServiceCode": "AmazonEC2", "Filters": ANY})
    es.add_response("describe_spot_price_history", {"SpotPriceHistory": []},
                    {"InstanceTypes": ["p6e-gb200.36xlarge"], "ProductDescriptions": ["Linux/UNIX"], "StartTime": ANY})
    for u in ("u-p6e-gb200x36", "u-p6e-gb200x72"):
        es.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": []},
                        {"UltraserverType": u, "UltraserverCount": 1, "CapacityDurationHours": 24})
    ps.activate(), es.activate()
    fetch.aws_prices(["p6e-gb200.36xlarge"], "us-east-1", pricing, ec2_client, fetch.ultraservers_of(catalog))
    ps.assert_no_pending_responses(), es.assert_no_pending_responses()
