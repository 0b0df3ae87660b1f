"""The tests of `modelplane prices refresh` that drive Google's real CloudCatalogClient (REST
transport, a fake HTTP session answering from the recorded pages). Run in a process of their own
by tests/test_prices.py: Google's client and Pulumi's provider register the same protobuf symbol."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_prices import FIXTURES, all_skus, load  # noqa: E402

from modelplane.prices import fetch, gce  # noqa: E402

billing_v1 = pytest.importorskip("google.cloud.billing_v1", reason="pip install -r requirements-prices.txt")


@pytest.fixture(scope="module")
def catalog():
    from modelplane.api import load_catalog
    return load_catalog()


class FakeSession:
    """Stands in for the REST transport's AuthorizedSession: answers ListSkus pages by pageToken."""

    def __init__(self, pages):
        self.pages, self.calls = pages, []

    def get(self, url, timeout=None, headers=None, params=None):
        import requests

        params = dict(params or [])                  # the transport passes a list of (name, value)
        self.calls.append((url, params))
        response = requests.Response()
        response.status_code = 200
        response._content = json.dumps(self.pages[params.get("pageToken", "")]).encode()
        return response


@pytest.fixture
def gcp_client():
    from google.auth.credentials import AnonymousCredentials

    page1, page2 = load("gcp-skus-page1.json"), load("gcp-skus-page2.json")
    client = billing_v1.CloudCatalogClient(credentials=AnonymousCredentials(), transport="rest")
    fake = FakeSession({"": page1, page1["nextPageToken"]: page2})
    client._transport._session.get = fake.get     # the transport's own session object answers from the fixtures
    client.fake = fake
    return client


def test_refresh_reads_every_page_through_the_google_client(gcp_client, catalog):
    rows, missing = fetch.refresh(catalog, ["gcp"], {"gcp": ["us-central1", "europe-west4"]}, "2026-11-23",
                                  gcp_client=gcp_client)
    session = gcp_client.fake
    assert len(session.calls) == 2 and session.calls[1][1]["pageToken"] == load("gcp-skus-page1.json")["nextPageToken"]
    assert all(url.endswith("/v1/services/6F81-5844-456A/skus") for url, _ in session.calls)
    got = {(r["class"], r["region"], r["capacityType"]): r for r in rows}
    assert set(got) == {("gke-h100-8x-a3high", "us-central1", t) for t in ("on-demand", "spot", "flex-start")} | \
        {("gke-b200-8x-a4", "us-central1", "on-demand"), ("gke-h100-8x-a3mega", "us-central1", "on-demand"),
         ("gke-h100-8x-a3mega", "europe-west4", "on-demand"), ("gke-h100-8x-a3mega", "europe-west4", "spot")}
    row = got[("gke-h100-8x-a3high", "us-central1", "on-demand")]
    assert row["hourly"] == round(gce.machine_price(all_skus(), gce.MACHINES["a3-highgpu-8g"], "us-central1",
                                                    "on-demand")[0], 4)
    assert row["asOf"] == "2026-11-23" and row["source"].startswith("https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus (")
    assert any(m.startswith("gke-h100-8x-a3high europe-west4 on-demand: no OnDemand RAM SKU") for m in missing)
    assert 'gke-h200-8x-a3ultra us-central1 spot: no Preemptible GPU SKU "H200 141GB GPU attached to Spot Preemptible VMs ' \
        'running in..." in us-central1 (gpu)' in missing


def test_a_broken_price_file_is_named_not_a_traceback(tmp_path, gcp_client, monkeypatch):
    from click.testing import CliRunner

    from modelplane.cli import main

    bad = tmp_path / "prices.yaml"
    bad.write_text("prices: [ {class: x\n")
    monkeypatch.setattr(fetch, "gcp_skus", lambda client=None: all_skus())
    result = CliRunner().invoke(main, ["prices", "refresh", "--cloud", "gcp", "--regions", "us-central1", "--out", str(bad)])
    assert result.exit_code == 2 and f"{bad}: not a price file" in result.output and "nothing written" in result.output
    assert bad.read_text() == "prices: [ {class: x\n"


def test_a_sku_in_an_unknown_unit_is_refused_by_name(gcp_client, catalog):
    skus = all_skus()
    ram = next(s for s in skus if s["description"] == "A3 Instance Ram running in Americas")
    ram["pricingInfo"][0]["pricingExpression"]["usageUnit"] = "GiBy.d"
    with pytest.raises(gce.SkuError, match=f"SKU {ram['skuId']} \\(A3 Instance Ram running in Americas\\): usage unit 'GiBy.d'"):
        gce.machine_price(skus, gce.MACHINES["a3-highgpu-8g"], "us-central1", "on-demand")
    # through refresh it is a PriceSourceError: the CLI prints it and writes nothing
    import unittest.mock as mock
    with mock.patch.object(fetch, "gcp_skus", return_value=skus), pytest.raises(fetch.PriceSourceError, match="GiBy.d"):
        fetch.refresh(catalog, ["gcp"], {"gcp": ["us-central1"]}, "2026-11-23")


def test_without_credentials_a_clear_message_and_nothing_written(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from modelplane.cli import main

    out = tmp_path / "prices.yaml"
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for cloud, says in (("gcp", "no Google credentials"), ("aws", "no AWS credentials")):
        result = CliRunner().invoke(main, ["prices", "refresh", "--cloud", cloud, "--regions", "us-east-1",
                                           "--out", str(out)])
        assert result.exit_code == 3, result.output       # the price API could not answer
        assert says in result.output and "nothing written" in result.output
        assert "Traceback" not in result.output
    assert not out.exists()
