"""Issue 47: the pull-request gate tells the whole truth. The comment's headline names every replica
change by kind, every traffic move and every reason the gate fails (with its fix), never a bold
figure for a cost change unpriced capacity makes unknown; the SARIF log carries the same reasons.
The scenarios are the user trial's (shared docs, user-trial-2026-11-26.md §2-3)."""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from jsonschema import Draft4Validator

from modelplane.cli import main

ROOT = Path(__file__).resolve().parents[1]
DEV = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
PROD = (ROOT / "stacks" / "Pulumi.prod.yaml").read_text()
SARIF_SCHEMA = json.loads((ROOT / "schemas" / "sarif" / "sarif-schema-2.1.0.json").read_text())


def plan(*args):
    return CliRunner().invoke(main, ["plan", *map(str, args)])


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    """The base plans of dev and prod, computed once for every scenario here."""
    folder = tmp_path_factory.mktemp("bases")
    for stack in ("dev", "prod"):
        (folder / f"{stack}.json").write_text(plan(stack, "--json").stdout)
    return folder


def headline(text: str) -> str:
    """The comment above its first folded block: what a reviewer reads without unfolding anything."""
    return text.split("<details>")[0]


def branch(tmp_path, stack: str, text: str) -> Path:
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(text)
    return path


def test_a_topology_change_names_the_surge_the_roll_and_the_traffic_move(tmp_path, bases):
    """Trial §2: prod deepseek-r1 decode {tensor 8, data 2} -> {tensor 8}: #0 surges, #1 rolls, and
    `reasoning` leaves eks-use1. The summary used to say `replicas: none changed` with no traffic."""
    changed = PROD.replace("workers: {count: 1, topology: {tensor: 8, data: 2, dataLocal: 1}}",
                           "workers: {count: 1, topology: {tensor: 8}}")
    assert changed != PROD
    result = plan("prod", "--config-file", branch(tmp_path, "prod", changed), "--previous", bases / "prod.json",
                  "--format", "markdown")
    assert result.exit_code == 0, result.output
    head = headline(result.stdout)
    summary = head.splitlines()[3]
    assert "replicas: 1 surged, 1 rolled ·" in summary and "traffic: 1 service shifts" in summary, summary
    assert "**Traffic moves**" in head
    assert "- `chat/reasoning`: eks-use1 50.0% -> 0.0%, gke-usc1 50.0% -> 100.0%" in head
    # the spread it gives up (issue 44): advisory, in the headline and unfolded, with the cost of keeping it
    assert "· spread: 1 service leaves a region (advisory) ·" in summary, summary
    assert "**Spread given up** (advisory)" in head
    assert ("- `chat/reasoning`: no replica left in us-east-1 and on aws (clouds aws+gcp -> gcp, regions "
            "us-central1+us-east-1 -> us-central1): chat/deepseek-r1#0 left eks-use1; keeping it there would cost $") \
        in head, head
    assert "The gate fails" not in head
    assert "| `++` | surged | chat/deepseek-r1#0 |" in result.stdout and "| `-+` | rolled | chat/deepseek-r1#1 |" \
        in result.stdout


def test_a_protected_pool_replace_fails_the_gate_in_the_headline_and_in_sarif(tmp_path, bases):
    """Trial §2: the dev l4 pool's class 1x -> 4x without modelplane:unprotect. Exit 1 came only from
    the refusal, which the headline did not name (`policy: no mandatory violations`) and SARIF lacked."""
    changed = DEV.replace("class: gke-l4-1x-g2", "class: gke-l4-4x-g2")
    stack = branch(tmp_path, "dev", changed)
    args = ["dev", "--config-file", stack, "--previous", bases / "dev.json"]
    result = plan(*args, "--format", "markdown")
    assert result.exit_code == 1
    head = headline(result.stdout)
    assert "**The gate fails (exit 1)**: 1 reason" in head, head
    assert ("- `protected-change`: dev-gke-l4: replace of protected gcp:container/nodePool:NodePool dev-gke-l4: "
            "`up` refuses it — fix: list it in modelplane:unprotect in this change") in head
    assert "replicas: 2 restarted by a node pool replace" in head and "**1 other reason to fail**" in head
    log = json.loads(plan(*args, "--format", "sarif").stdout)
    assert not list(Draft4Validator(SARIF_SCHEMA).iter_errors(log))
    run = log["runs"][0]
    found = {r["ruleId"]: r for r in run["results"]}
    refused = found["protected-change"]
    assert refused["level"] == "error" and "Fix: list it in modelplane:unprotect in this change" in \
        refused["message"]["text"]
    pool_line = next(i for i, line in enumerate(changed.splitlines(), 1) if "{name: l4, class:" in line)
    assert refused["locations"][0]["physicalLocation"]["region"]["startLine"] == pool_line
    assert "no-outage" in found             # the verdict only --previous sees reaches SARIF too
    # its fix fits a pool replace (more replicas would restart together just the same)
    assert "Fix: a node pool replace restarts all the replicas on it at once" in found["no-outage"]["message"]["text"]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert rules["protected-change"]["defaultConfiguration"]["level"] == "error"


def test_a_move_to_an_unpriced_region_has_no_headline_figure(tmp_path, bases):
    """Trial §3 step 21: the headline led with a bold saving although the new region is unpriced."""
    stack = branch(tmp_path, "dev", DEV.replace("us-central1", "us-east4"))
    result = plan("dev", "--config-file", stack, "--previous", bases / "dev.json", "--format", "markdown")
    summary = result.stdout.splitlines()[3]
    assert "cost: not known (4 unpriced nodes; the priced part alone -$" in summary, summary
    assert "**-$" not in summary and "**+$" not in summary
    stack_row = next(line for line in result.stdout.splitlines() if line.startswith("| **stack dev**"))
    assert "unpriced (4 nodes)" in stack_row and "not known" in stack_row and "**" not in stack_row.split("|")[-2]


def test_no_change_says_so_instead_of_plus_zero(bases):
    result = plan("dev", "--previous", bases / "dev.json", "--format", "markdown")
    summary = result.stdout.splitlines()[3]
    assert summary.startswith("no resource changes · replicas: none changed · cost unchanged ·"), summary
    assert "+$0.00" not in result.stdout.split("#### Cost")[0]


def test_a_broken_trace_is_a_reason_the_gate_names(tmp_path):
    result = plan("prod", "--trace", "reasoning.inference.example.com", "--down", "eks-use1", "--down", "gke-usc1",
                  "--format", "markdown")
    assert result.exit_code == 1
    assert "- `trace-broken`: reasoning.inference.example.com: 100.0% of reasoning.inference.example.com breaks" \
        in headline(result.stdout), headline(result.stdout)


def test_the_reports_change_view_says_why_it_fails_and_puts_replicas_and_cost_before_resources(tmp_path, bases):
    from bs4 import BeautifulSoup

    stack = branch(tmp_path, "dev", DEV.replace("class: gke-l4-1x-g2", "class: gke-l4-4x-g2"))
    result = plan("dev", "--config-file", stack, "--previous", bases / "dev.json", "--report", tmp_path / "r.html")
    assert result.exit_code == 1
    page = BeautifulSoup((tmp_path / "r.html").read_text(), "html.parser")
    (refused,) = page.select("#gate-fails li[data-policy=protected-change]")
    assert "replace of protected gcp:container/nodePool:NodePool dev-gke-l4" in refused.text and "unprotect" in refused.text
    assert page.select_one("#change-summary").text == "replicas: 2 restarted by a node pool replace"
    order = [t["id"] for t in page.select("#changes table")]
    assert order.index("cost-delta") < order.index("resource-changes"), order


def test_old_prices_are_named_with_the_refresh_command_wherever_prices_are_shown(bases):
    """Trial F8: 6 of 8 prod pools' prices are older than 90 days on day one."""
    from modelplane.analysis.cost import stale

    doc = json.loads((bases / "prod.json").read_text())
    old = stale(doc["cost"])
    if not old:
        pytest.skip("no shipped prod price is older than 90 days today")
    regions = sorted({c["region"] for c in doc["clusters"] if c["cluster"] in {p["cluster"] for p in old}})
    command = f"`modelplane prices refresh --regions {','.join(regions)}`"
    assert command in plan("prod", "--format", "markdown").stdout
    assert command in " ".join(plan("prod").stdout.split())
    listing = CliRunner().invoke(main, ["prices", "--stack", "prod"], terminal_width=200).stdout
    assert "`modelplane prices refresh --regions " in listing
    assert "…" not in listing       # the source column folds, never cut


def test_a_sized_deployment_moved_by_its_cluster_selector_says_so(tmp_path):
    """Trial §3 step 19: the move's reason said `sizing chose another configuration` when the
    cause was a clusterSelector edit."""
    text = (ROOT / "stacks" / "Pulumi.example-slo.yaml").read_text()
    start, end = text.index("    - name: slo-gke\n"), text.index("\n  modelplane:deployments:")
    second = text[start:end].replace("slo-gke", "slo-gke2").replace("us-central1", "us-east4") \
        .replace("a3h-usc1", "a3h-use4").replace("a3u-usc1", "a3u-use4")
    base = text[:end] + "\n" + second.rstrip("\n") + text[end:]
    stack = branch(tmp_path, "example-slo", base)
    (tmp_path / "base.json").write_text(plan("example-slo", "--config-file", stack, "--json").stdout)
    there = {p["replica"] for p in json.loads((tmp_path / "base.json").read_text())["placements"]
             if p["deployment"] == "chat/qwen3-32b" and p["cluster"] == "slo-gke"}
    assert there
    stack.write_text(base.replace("      slo: {ttftMs: 1000, itlMs: 20}\n", "      slo: {ttftMs: 1000, itlMs: 20}\n"
                                  "      clusterSelector: {matchLabels: {modelplane.ai/region: us-east4}}\n", 1))
    doc = json.loads(plan("example-slo", "--config-file", stack, "--previous", tmp_path / "base.json", "--json").stdout)
    moved = {r["replica"]: r["reason"] for r in doc["replicaChanges"]
             if r["deployment"] == "chat/qwen3-32b" and r.get("from", "").startswith("slo-gke ")}
    assert moved == {i: "cluster slo-gke no longer passes the filter, so sizing chose again" for i in there}, moved
