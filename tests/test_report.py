"""The fleet report, read as a person reads it: bars, labels and numbers against the plan; and
drawn by a real headless browser (chromium; optional: skipped with a reason when it is not installed)."""
import shutil
import subprocess
from collections import defaultdict

import pytest
from bs4 import BeautifulSoup

from modelplane.output import report
from modelplane.output.fleetreport import render


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
    assert [td.text for td in row.select("td")][2:] == ["64", "8", "$573", "$418,424"]
    assert page.select_one('#violations tr[data-policy="image-pinned"]').select("td")[0].text == "advisory"


def test_services_show_their_traffic_split(page, prod_doc):
    for s in prod_doc["services"]:
        rects = page.select(f'tr[data-service="{s["service"]}"] svg rect')
        # what DNS's whole-percent weights send to each cluster (as --trace follows it)
        assert {r["data-cluster"]: int(r["data-share"]) for r in rects if r["data-cluster"] != "-"} == \
            {d["cluster"]: d["weight"] * 10 for d in s["dns"]}


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
    from modelplane.engine import direct

    path = stackgen.write(tmp_path / "Pulumi.fleet50.yaml", clusters=50, replicas=20)
    run = direct.run("fleet50", path)        # plan's default engine (the Pulumi engine's records: test_engines)
    doc = report.document(run, [])
    page = BeautifulSoup(render(doc), "html.parser")
    used = {p["cluster"] for p in doc["placements"]}
    assert {c["data-cluster"] for c in page.select("section.card")} == used
    empty = page.select_one("#empty-clusters summary")
    assert empty.text.startswith(f"{50 - len(used)} clusters with nothing placed")
    assert len(render(doc)) < 400_000


NO_BROWSER = ("no chromium on PATH: the browser check is optional (install chromium to run it; `make test` installs it "
              "with apt-get when run as root on Debian)")


def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_one_gpu_total_on_the_page_and_upper_bounds_marked(page, prod_doc):
    # one figure, in the top tile and in the cost table's stack row (no "(top)" placeholder)
    total = str(prod_doc["cost"]["stack"]["gpus"]["max"])
    assert [t.select_one("b").text for t in page.select('[data-total="gpus"]')] == [total, total]
    stack_row = page.select_one('#cost tr[data-row="stack"]')
    assert [td.text for td in stack_row.select("td")][2] == total and "(top)" not in stack_row.text
    # the A3 High Flex-start pool has no rate of its own: charged at on-demand, said so where it is drawn and in the notes
    card = page.select_one('section.card[data-cluster="gke-usc1"]')
    assert "flex-start · $88.49/node-h (upper bound)" in card.text
    bounds = [li.text for li in page.select('#price-notes li[data-price="upper-bound"]')]
    assert any(t.startswith("gke-usc1/h100 (gke-h100-8x-a3high, flex-start)") and "an upper bound" in t for t in bounds)
    assert "$88.49/node-h (upper bound)" not in page.select_one('section.card[data-cluster="gke-euw4"]').text


def test_unpriced_never_shows_as_free(lab_doc):
    page = BeautifulSoup(render(lab_doc), "html.parser")
    n = len(lab_doc["cost"]["unpriced"])
    assert n and lab_doc["cost"]["stack"]["hourly"]["max"] == 0
    assert page.select_one("#tile-hourly b").text == "unpriced"
    assert f"{n} pools unpriced, not counted" in page.select_one("#tile-hourly").text
    assert page.select_one("#tile-monthly b").text == "unpriced"
    assert "$0.00" not in page.text
    partly = {**lab_doc, "cost": {**lab_doc["cost"], "stack": {**lab_doc["cost"]["stack"],
                                                                "hourly": {"min": 10.0, "max": 12.0}}}}
    assert BeautifulSoup(render(partly), "html.parser").select_one("#tile-hourly b").text == "$10.00–$12.00 + unpriced"


@pytest.fixture(scope="module")
def lab_doc():
    from helpers import planned

    return report.document(planned("lab"), [])


@pytest.fixture(scope="module")
def whatif():
    """`plan prod --without eks-use1 --report`: the CLI's printout and the page, from one run."""
    from click.testing import CliRunner

    from modelplane.cli import main

    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "w.html"
        result = CliRunner().invoke(main, ["plan", "prod", "--without", "eks-use1", "--report", str(html)])
        return result.output, BeautifulSoup(html.read_text(), "html.parser")


def test_a_what_if_report_is_titled_so_and_shows_what_the_cli_prints(whatif):
    printed, page = whatif
    assert page.title.text == "modelplane what-if: prod without eks-use1"
    assert page.select_one("#title").text == "What-if: prod without eks-use1"
    lines = [" ".join(line.split()) for line in printed.splitlines()]
    moves = [li.text for li in page.select('#whatif li[data-kind="move"]')]
    lost = [li.text for li in page.select('#whatif li[data-kind="lost"]')]
    assert moves and moves == [line for line in lines if line.startswith("moves ")]
    assert lost and lost == [line for line in lines if line.startswith("lost ")]
    [cost_line] = [line for line in lines if line.startswith("cost $")]        # "cost $A/h -> $B/h, GPUs x -> y"
    money_part, gpu_part = cost_line.split(", GPUs ")
    assert page.select_one('#whatif li[data-kind="cost"]').text == money_part
    assert page.select_one('[data-total="gpus"] b').text == gpu_part.replace("->", "→")


def test_cluster_colours_are_stable_across_reports_and_never_grey(page, whatif):
    from modelplane.output.fleetreport.bars import FREE, IDLE

    def colours(p):
        return {r["data-cluster"]: r["fill"] for r in p.select('tr[data-service] svg rect') if r["data-cluster"] != "-"}
    full, without = colours(page), colours(whatif[1])
    assert set(without) < set(full) and all(full[c] == without[c] for c in without)

    def rgb(h):
        return tuple(int(h[i:i + 2], 16) for i in (1, 3, 5))
    for colour in full.values():
        r, g, b = rgb(colour)
        assert max(r, g, b) - min(r, g, b) > 40, colour                        # not a grey
        assert sum(abs(x - y) for x, y in zip(rgb(colour), rgb(IDLE))) > 90 and colour != FREE


@pytest.mark.skipif(chromium() is None, reason=NO_BROWSER)
def test_the_report_is_readable_800_pixels_wide(prod_doc, whatif, tmp_path):
    """Drawn by the browser at 800 px: nothing wider than the window (measured by a probe added to a
    copy of the page; the report itself has no script)."""
    import re

    for name, html in (("prod", render(prod_doc)), ("whatif", str(whatif[1]))):
        probe = tmp_path / f"{name}.html"
        probe.write_text(html.replace("</body>", '<script>document.body.setAttribute("data-scroll-width", '
                                      'document.documentElement.scrollWidth)</script></body>'))
        dom = subprocess.run([chromium(), "--headless", f"--user-data-dir={tmp_path / 'profile'}", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                              "--window-size=800,1000", "--dump-dom", probe.as_uri()],
                             check=True, capture_output=True, text=True, timeout=120).stdout
        width = int(re.search(r'data-scroll-width="(\d+)"', dom).group(1))
        assert width <= 800, (name, width)
    png = tmp_path / "prod-800.png"
    subprocess.run([chromium(), "--headless", f"--user-data-dir={tmp_path / 'profile'}", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=800,1500", f"--screenshot={png}", (tmp_path / "prod.html").as_uri()],
                   check=True, capture_output=True, timeout=120)
    from PIL import Image

    image = Image.open(png).convert("RGB")
    assert image.size == (800, 1500)
    white = next((n for n, c in image.getcolors(maxcolors=1 << 20) if c == (255, 255, 255)), 0)
    assert white < 0.95 * 800 * 1500


@pytest.mark.skipif(chromium() is None, reason=NO_BROWSER)
def test_a_real_browser_draws_the_prod_report(prod_doc, tmp_path):
    from PIL import Image

    html, png = tmp_path / "prod.html", tmp_path / "prod.png"
    html.write_text(render(prod_doc))
    subprocess.run([chromium(), "--headless", f"--user-data-dir={tmp_path / 'profile'}", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1400,1500", f"--screenshot={png}", html.as_uri()],
                   check=True, capture_output=True, timeout=120)
    image = Image.open(png).convert("RGB")
    assert image.size == (1400, 1500)
    colours = image.getcolors(maxcolors=1 << 20)
    white = next((n for n, c in colours if c == (255, 255, 255)), 0)
    assert white < 0.95 * 1400 * 1500               # something is drawn
    # the deployments' bar colours are on the page, as the palette says
    from modelplane.output.fleetreport.bars import PALETTE
    present = {c for _, c in colours}
    bar = tuple(int(PALETTE[0][i:i + 2], 16) for i in (1, 3, 5))
    assert bar in present


def test_rollouts_and_envelopes_are_drawn_with_their_numbers():
    from helpers import planned

    doc = report.document(planned("example-inplace"), [])
    page = BeautifulSoup(render(doc), "html.parser")
    row = page.select_one('#rollout tr[data-deployment="ml/deepseek"]')
    placed = row.select_one('rect[data-kind="placed"]')
    missing = row.select_one('rect[data-kind="missing"]')
    assert (int(placed["data-workers"]), int(missing["data-workers"])) == (8, 2)
    assert abs(float(placed["width"]) / (float(placed["width"]) + float(missing["width"])) - 0.8) < 1e-6
    assert "8/10 (80%)" in row.text and "runs 3 of 4 decode and 5 of 6 prefill workers" in row.text
    env = report.document(planned("example-5p3d"), [])
    page = BeautifulSoup(render(env), "html.parser")
    assert "88–96" in page.select_one('#envelope tr[data-deployment="ml/kimi-native"]').text
