"""The fleet report, read as a person reads it: bars, labels and numbers against the plan; and
drawn by a real headless browser (Debian's chromium, which `make test` installs when missing)."""
import shutil
import subprocess
from collections import defaultdict

import pytest
from bs4 import BeautifulSoup

from modelplane import report
from modelplane.fleetreport import render


@pytest.fixture(scope="module")
def prod_doc(prod):
    return report.document(prod, [{"policy": "image-pinned", "level": "advisory", "message": "not pinned",
                                   "resource": "x"}])


@pytest.fixture(scope="module")
def page(prod_doc):
    return BeautifulSoup(render(prod_doc), "html.parser")


def segments(page, kind):
    out = defaultdict(int)
    for rect in page.select(f'svg.bar rect[data-kind="{kind}"]'):
        out[(rect["data-cluster"], rect["data-pool"], rect.get("data-deployment"))] += int(rect["data-nodes"])
    return dict(out)


def test_every_pool_is_one_bar_whose_segments_add_up_to_its_size(page, prod_doc):
    for c in prod_doc["clusters"]:
        for pool in c["pools"]:
            rects = page.select(f'svg.bar rect[data-cluster="{c["cluster"]}"][data-pool="{pool["name"]}"]')
            assert sum(int(r["data-nodes"]) for r in rects) == pool["maxNodes"], (c["cluster"], pool["name"])


def test_the_bars_show_the_nodes_each_deployment_was_placed_on(page, prod_doc):
    want = defaultdict(int)
    for p in prod_doc["placements"]:
        for rp in p["roles"].values():
            want[(p["cluster"], rp["pool"], p["deployment"])] += rp["nodes"]
    got = segments(page, "used")
    for key, n in segments(page, "envelope").items():
        got[key] = got.get(key, 0) + n
    assert got == dict(want)


def test_idle_nodes_are_drawn_where_the_cost_counts_them(page, prod_doc):
    idle = {(i["cluster"], i["pool"], None): i["nodes"]["max"] for i in prod_doc["cost"]["idle"]["pools"]}
    assert segments(page, "idle") == {k: v for k, v in idle.items() if v}
    assert segments(page, "idle") == {("gke-usc1", "l4", None): 1}


def test_the_labels_and_tiles_say_the_plans_numbers(page, prod_doc):
    cost = prod_doc["cost"]
    assert page.select_one("#tile-replicas b").text == f"{len(prod_doc['placements'])}/{len(prod_doc['placements'])}"
    assert page.select_one("#tile-hourly b").text == "$812"
    assert page.select_one("#tile-gpus b").text == str(cost["stack"]["gpus"]["max"])
    card = page.select_one('section.card[data-cluster="gke-usc1"]')
    assert "h200 4/8 nodes placed" in card.text and "$80.00/node-h" in card.text
    row = page.select_one('#cost tr[data-row="deployment"][data-name="chat/deepseek-r1"]')
    assert [td.text for td in row.select("td")][2:] == ["64", "8", "$573", "$418,436"]
    assert page.select_one('#violations tr[data-policy="image-pinned"]').select("td")[0].text == "advisory"


def test_services_show_their_traffic_split(page, prod_doc):
    for s in prod_doc["services"]:
        rects = page.select(f'tr[data-service="{s["service"]}"] svg rect')
        assert {r["data-cluster"]: int(r["data-share"]) for r in rects if r["data-cluster"] != "-"} == s["clusters"]


def test_the_page_is_self_contained_and_deterministic(prod_doc):
    html = render(prod_doc)
    assert html == render(prod_doc)
    soup = BeautifulSoup(html, "html.parser")
    assert not soup.select("script, link, img, iframe")
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "") or "source" in html


def test_unplaced_replicas_are_listed_with_their_reasons(prod):
    doc = report.document(prod, [])
    doc = {**doc, "unplaced": [{"deployment": "chat/x", "replica": 0, "reasons": [
        {"cluster": "eks-use1", "pool": "h200", "reason": "capacity", "detail": "decode needs 2 nodes, 0/4 free"}]}]}
    page = BeautifulSoup(render(doc), "html.parser")
    row = page.select_one('#unplaced tr[data-deployment="chat/x"]')
    assert "decode needs 2 nodes, 0/4 free" in row.text
    assert page.select_one("#tile-replicas b").text == f"{len(doc['placements'])}/{len(doc['placements']) + 1}"


def test_fifty_clusters_stay_legible(tmp_path):
    """A 50-cluster fleet: cards wrap in a grid, clusters with nothing on them collapse to one line."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import stackgen
    from modelplane import offline

    path = stackgen.write(tmp_path / "Pulumi.fleet50.yaml", clusters=50, replicas=20)
    run = offline.run("fleet50", path)
    doc = report.document(run, [])
    page = BeautifulSoup(render(doc), "html.parser")
    used = {p["cluster"] for p in doc["placements"]}
    assert {c["data-cluster"] for c in page.select("section.card")} == used
    empty = page.select_one("#empty-clusters summary")
    assert empty.text.startswith(f"{50 - len(used)} clusters with nothing placed")
    assert len(render(doc)) < 400_000


def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (`make test` installs it with apt-get)")
def test_a_real_browser_draws_the_prod_report(prod_doc, tmp_path):
    from PIL import Image

    html, png = tmp_path / "prod.html", tmp_path / "prod.png"
    html.write_text(render(prod_doc))
    subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1400,1500", f"--screenshot={png}", html.as_uri()],
                   check=True, capture_output=True, timeout=120)
    image = Image.open(png).convert("RGB")
    assert image.size == (1400, 1500)
    colours = image.getcolors(maxcolors=1 << 20)
    white = next((n for n, c in colours if c == (255, 255, 255)), 0)
    assert white < 0.95 * 1400 * 1500               # something is drawn
    # the deployments' bar colours are on the page, as the palette says
    from modelplane.fleetreport.bars import PALETTE
    present = {c for _, c in colours}
    bar = tuple(int(PALETTE[0][i:i + 2], 16) for i in (1, 3, 5))
    assert bar in present


def test_rollouts_and_envelopes_are_drawn_with_their_numbers():
    from modelplane import offline

    doc = report.document(offline.run("example-inplace"), [])
    page = BeautifulSoup(render(doc), "html.parser")
    row = page.select_one('#rollout tr[data-deployment="ml/deepseek"]')
    placed = row.select_one('rect[data-kind="placed"]')
    missing = row.select_one('rect[data-kind="missing"]')
    assert (int(placed["data-workers"]), int(missing["data-workers"])) == (8, 2)
    assert abs(float(placed["width"]) / (float(placed["width"]) + float(missing["width"])) - 0.8) < 1e-6
    assert "8/10 (80%)" in row.text and "runs 3 of 4 decode and 5 of 6 prefill workers" in row.text
    env = report.document(offline.run("example-5p3d"), [])
    page = BeautifulSoup(render(env), "html.parser")
    assert "88–96" in page.select_one('#envelope tr[data-deployment="ml/kimi-native"]').text
