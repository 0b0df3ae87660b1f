"""Cost: node prices per pool (list, contract, reservation, fallback, unpriced), the arithmetic of
replicas, autoscaling envelopes and idle minNodes, the plan document and the budget policy."""
import json
from datetime import date

import pytest

from modelplane.api.catalog import Price
from modelplane.analysis.cost import HOURS_PER_MONTH, fleet_cost, money, money_span, pool_price
from modelplane.errors import InputError
from modelplane.policy import PolicyConfigError, read_config
from modelplane.policy.stack import cost_budget


def price(cls, region, kind, hourly, unconfirmed=False):
    return Price.model_validate({"class": cls, "region": region, "capacityType": kind, "hourly": hourly,
                                 "source": "https://example.test/p", "asOf": "2025-03-06", "unconfirmed": unconfirmed})


PRICES = {(p.class_, p.region, p.capacity_type): p for p in [
    price("h100", "us-central1", "on-demand", 88.49), price("h100", "us-central1", "spot", 35.40),
    price("byo", "*", "internal", 12.0)]}


@pytest.mark.parametrize("cls, region, kind, contract, want", [
    ("h100", "us-central1", "spot", None, (35.40, "list")),
    ("h100", "us-central1", "on-demand", 70.0, (70.0, "contract")),
    ("h100", "us-central1", "reservation", None, (88.49, "on-demand rate (reserved nodes bill at it)")),
    ("h100", "us-central1", "flex-start", None, (88.49, "on-demand (no flex-start list price; an upper bound)")),
    ("byo", "ams1", "on-demand", None, (12.0, "internal")),
    ("h100", "europe-west4", "on-demand", None, None),
])
def test_a_pool_is_priced_by_the_first_rule_that_applies(cls, region, kind, contract, want):
    got = pool_price(PRICES, cls, region, kind, contract)
    assert (got and (got["hourly"], got["basis"])) == want or got == want


def inv(name, pools):
    return {"name": name, "pools": [{"name": n, "class": c, "minNodes": lo, "maxNodes": hi, "gpusPerNode": g,
                                     "capacityType": "on-demand", "price": {"hourly": h, "basis": "list"} if h else None}
                                    for n, c, lo, hi, g, h in pools]}


def placement(d, i, cluster, **roles):
    return {"deployment": d, "replica": i, "cluster": cluster,
            "roles": {r: {"pool": pool, "nodes": nodes, "gpusPerNode": g, "workers": workers}
                      for r, (pool, nodes, g, workers) in roles.items()}}


def test_replicas_envelope_and_idle_nodes_add_up():
    inventories = {"a": inv("a", [("h100", "h100", 0, 4, 8, 10.0), ("l4", "l4", 3, 8, 1, 1.0)])}
    placements = [
        # decode autoscales 1..3 workers of 1 node; prefill has 1 fixed worker of 1 node
        placement("ns/big", 0, "a", decode=("h100", 3, 8, 3), prefill=("h100", 1, 8, 1)),
        placement("ns/small", 0, "a", decode=("l4", 1, 1, 1)),
    ]
    cost = fleet_cost(placements, inventories, {"ns/big": {"decode": 1, "prefill": 1}}, {"a"})
    big = next(r for r in cost["replicas"] if r["deployment"] == "ns/big")
    assert big["nodes"] == {"min": 2, "max": 4} and big["gpus"] == {"min": 16, "max": 32}
    assert big["hourly"] == {"min": 20.0, "max": 40.0}
    # l4 keeps 3 nodes up and one is used: two are idle at both ends of the envelope
    assert cost["idle"]["pools"] == [{"cluster": "a", "pool": "l4", "capacityType": "on-demand", "gpus": {"min": 2, "max": 2},
                                      "nodes": {"min": 2, "max": 2}, "hourly": {"min": 2.0, "max": 2.0},
                                      "monthly": {"min": 2.0 * HOURS_PER_MONTH, "max": 2.0 * HOURS_PER_MONTH}}]
    assert cost["stack"]["hourly"] == {"min": 23.0, "max": 43.0}
    assert cost["stack"]["monthly"] == {"min": 23.0 * HOURS_PER_MONTH, "max": 43.0 * HOURS_PER_MONTH}
    pools = {p["pool"]: p for p in cost["pools"]}
    assert pools["h100"]["used"] == {"min": 2, "max": 4} and pools["h100"]["deployments"] == {"ns/big": {"min": 2, "max": 4}}
    assert pools["l4"]["idle"] == {"min": 2, "max": 2}


def test_workers_smaller_than_a_node_share_it_and_the_rest_is_stranded():
    """The user trial's F5: two 1-GPU replicas on 4-GPU L4 nodes take one node, not two; each pays
    for its GPU, and the node's two other GPUs are listed as stranded, billed with it."""
    inventories = {"a": inv("a", [("l4", "l4", 0, 4, 4, 8.0)])}
    placements = [placement("ns/m", i, "a", decode=("l4", 1, 1, 1)) for i in range(2)]
    cost = fleet_cost(placements, inventories, {}, {"a"})
    assert [r["hourly"]["max"] for r in cost["replicas"]] == [2.0, 2.0]
    assert cost["deployments"][0]["nodes"] == {"min": 0.5, "max": 0.5} and cost["deployments"][0]["gpus"]["max"] == 2
    assert cost["stranded"]["pools"] == [{"cluster": "a", "pool": "l4", "gpus": {"min": 2, "max": 2},
                                          "nodes": {"min": 0.5, "max": 0.5}, "hourly": {"min": 4.0, "max": 4.0},
                                          "monthly": {"min": 4.0 * HOURS_PER_MONTH, "max": 4.0 * HOURS_PER_MONTH}}]
    assert cost["stack"]["hourly"] == {"min": 8.0, "max": 8.0} and cost["stack"]["nodes"] == {"min": 1, "max": 1}
    pool = cost["pools"][0]
    assert pool["used"] == {"min": 1, "max": 1} and pool["gpus"] == {"used": {"min": 2, "max": 2},
                                                                   "stranded": {"min": 2, "max": 2}}
    # a 3-GPU worker takes a 4-GPU slot: it pays for the slot, and a multi-node worker for whole nodes
    odd = fleet_cost([placement("ns/o", 0, "a", decode=("l4", 1, 3, 1)), placement("ns/w", 0, "a", decode=("l4", 2, 2, 1))],
                     inventories, {}, {"a"})
    assert [r["hourly"]["max"] for r in odd["replicas"]] == [8.0, 16.0] and odd["stranded"]["pools"] == []


def test_an_envelope_can_use_idle_nodes_up():
    """A pool's minNodes counts once: nodes the envelope fills are not idle at the maximum."""
    inventories = {"a": inv("a", [("l4", "l4", 3, 8, 1, 1.0)])}
    cost = fleet_cost([placement("ns/m", 0, "a", decode=("l4", 4, 1, 4))], inventories, {"ns/m": {"decode": 1}}, {"a"})
    assert cost["idle"]["pools"][0]["nodes"] == {"min": 2, "max": 0}
    assert cost["stack"]["hourly"] == {"min": 3.0, "max": 4.0}


def test_unpriced_pools_are_listed_and_never_free():
    inventories = {"a": inv("a", [("h200", "h200", 0, 4, 8, None)])}
    cost = fleet_cost([placement("ns/m", 0, "a", decode=("h200", 2, 8, 2))], inventories, {}, {"a"})
    assert cost["stack"]["unpricedNodes"] == 2 and cost["stack"]["hourly"] == {"min": 0.0, "max": 0.0}
    assert cost["unpriced"] == [{"cluster": "a", "pool": "h200", "class": "h200", "capacityType": "on-demand"}]


def test_idle_nodes_of_clusters_the_plan_does_not_own_are_not_charged():
    inventories = {"a": inv("a", [("l4", "l4", 3, 8, 1, 1.0)])}
    assert fleet_cost([], inventories, {}, set())["stack"]["hourly"] == {"min": 0.0, "max": 0.0}


def test_money_reads_like_money():
    assert (money(0.7068), money(573.2), money(592511.65)) == ("$0.71", "$573", "$592,512")
    assert money_span({"min": 1.0, "max": 1.0}) == "$1.00" and money_span({"min": 1, "max": 2}) == "$1.00–$2.00"


def test_every_catalog_price_names_a_class_a_source_and_a_date(catalog):
    assert len(catalog.prices) >= 15
    for (cls, region, kind), p in catalog.prices.items():
        assert cls in catalog.classes and p.source.startswith("https://") and p.as_of <= date(2026, 11, 22)
        assert region == "*" or cls.split("-")[0] in ("gke", "eks")


def test_a_price_for_an_unknown_class_is_an_input_error(tmp_path):
    from modelplane.api import load_catalog

    (tmp_path / "prices.yaml").write_text("prices:\n  - {class: gke-h100-8x-a3hgih, region: us-central1, "
                                          "capacityType: spot, hourly: 1, source: x, asOf: 2025-01-01}\n")
    (tmp_path / "c.yaml").write_text((catalog_dir() / "gke-a3.yaml").read_text())
    with pytest.raises(InputError) as exc:
        load_catalog(tmp_path)
    text = exc.value.render()
    assert "prices.yaml:2: prices[0].class: no class 'gke-h100-8x-a3hgih'" in text and "gke-h100-8x-a3high" in text


def catalog_dir():
    from modelplane.api.project import data_dir
    return data_dir("catalog")


def test_the_plan_document_carries_cost_with_sources(prod):
    from modelplane.output import report

    doc = report.document(prod, [])
    cost = doc["cost"]
    assert {d["deployment"] for d in cost["deployments"]} == {p["deployment"] for p in doc["placements"]}
    total = sum(r["hourly"]["max"] for r in cost["replicas"]) + cost["idle"]["hourly"]["max"]
    assert cost["stack"]["hourly"]["max"] == pytest.approx(total, abs=1e-3)
    # the contracted rate on the a3-ultra reservation in stacks/Pulumi.infra-gke-us-central1.yaml
    h200 = next(p for p in cost["prices"] if (p["cluster"], p["pool"]) == ("gke-usc1", "h200"))
    assert (h200["hourly"], h200["basis"]) == (80.0, "contract")
    assert all(p["source"] and (p["basis"] == "contract" or p["asOf"]) for p in cost["prices"])
    json.dumps(doc)


def test_the_cli_prints_cost_and_what_a_cluster_loss_does_to_it():
    from click.testing import CliRunner

    from modelplane.cli import main

    assert "cost (prod, USD, 730 h/month)" in CliRunner().invoke(main, ["plan", "prod"]).output
    result = CliRunner().invoke(main, ["plan", "prod", "--without", "gke-usc1"])
    assert "cost $812/h -> $458/h, GPUs 109 -> 76" in result.output
    assert "cost (prod" not in result.output          # a what-if prints what changes, not the whole plan


# --- the budget policy -------------------------------------------------------------------------

class R:
    def __init__(self, resource_type, props, urn="u"):
        self.resource_type, self.props, self.urn = resource_type, props, urn


def deployment_resource(ns, name, placements, inventories, autoscaling=()):
    spec = {"name": name, "namespace": ns, "model": {"uri": "hf://o/m"}, "replicas": len(placements),
            "engine": {"image": "ghcr.io/llm-d/llm-d-cuda:v0.8.0"}, "workers": {"count": 1, "topology": {"tensor": 8}},
            "autoscaling": list(autoscaling)}
    return R("modelplane:index:ModelDeployment", {"spec": spec, "placements": placements, "clusters": inventories})


def test_cost_budget_checks_the_stack_and_each_namespace():
    inventories = {"a": inv("a", [("h100", "h100", 0, 4, 8, 88.49)])}
    res = [deployment_resource("chat", "m", [placement("chat/m", i, "a", decode=("h100", 1, 8, 1)) for i in range(2)],
                               inventories)]
    assert cost_budget(res, {}) == []
    assert cost_budget(res, {"maxHourlyCost": 200}) == []
    [(msg, _)] = cost_budget(res, {"maxHourlyCost": 100})
    assert msg == "the stack may cost $177/hour at its autoscaling maximum ($177 at minimum); the budget is $100/hour"
    [(msg, _)] = cost_budget(res, {"namespaces": {"chat": 90}})
    assert msg == "namespace chat may cost $177/hour (chat/m $177); its budget is $90.00/hour"


def test_cost_budget_counts_idle_nodes_of_the_clusters_this_stack_builds():
    cluster = R("modelplane:index:InferenceCluster", {"inventory": inv("a", [("h100", "h100", 2, 4, 8, 88.49)])})
    [(msg, _)] = cost_budget([cluster], {"maxHourlyCost": 100})
    assert "may cost $177/hour" in msg


@pytest.mark.parametrize("setting, error", [
    ({"maxHourlyCost": -5}, "cost-budget.maxHourlyCost: -5 is not a number >= 0"),
    ({"maxHourlyCost": "lots"}, "cost-budget.maxHourlyCost: 'lots' is not a number >= 0"),
    ({"maxHourlyCosts": 5}, "cost-budget: unknown setting 'maxHourlyCosts' (settings: maxHourlyCost, namespaces)"),
    ({"namespaces": {"chat": "ten"}}, "cost-budget.namespaces.chat: 'ten' is not a number >= 0"),
])
def test_a_bad_budget_config_is_refused_with_the_setting_named(tmp_path, setting, error):
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"cost-budget": {"enforcementLevel": "mandatory", **setting}}))
    with pytest.raises(PolicyConfigError) as exc:
        read_config(path)
    assert str(exc.value) == f"{path}: {error}"


def test_production_sets_a_budget():
    from modelplane.policy import default_config

    assert read_config(default_config(True))["cost-budget"] == {"enforcementLevel": "mandatory", "maxHourlyCost": 1500}


def test_a_replica_placed_at_a_smaller_step_costs_no_more_at_minimum_than_at_maximum():
    from helpers import planned
    from modelplane.output import report

    run = planned("example-inplace")
    row = next(r for r in report.cost_of(run, [p.to_json() for p in run.result.plan.placements])["deployments"]
               if r["deployment"] == "ml/deepseek")
    assert row["gpus"] == {"min": 64, "max": 64} and row["nodes"] == {"min": 8, "max": 8}


def test_every_capacity_type_has_its_own_rate_and_only_a_missing_one_is_an_upper_bound():
    prices = {**PRICES, **{(p.class_, p.region, p.capacity_type): p for p in [
        price("h100", "us-central1", "flex-start", 49.20), price("h100", "us-central1", "capacity-block", 41.10)]}}
    for kind, want in (("spot", 35.40), ("flex-start", 49.20), ("capacity-block", 41.10), ("on-demand", 88.49)):
        got = pool_price(prices, "h100", "us-central1", kind)
        assert (got["hourly"], got["basis"]) == (want, "list") and "upperBound" not in got
    bound = pool_price(PRICES, "h100", "us-central1", "capacity-block")
    assert bound["upperBound"] is True and bound["hourly"] == 88.49


def test_a_price_older_than_the_threshold_is_flagged_with_its_age():
    from modelplane.analysis.cost import STALE_DAYS, stale

    pools = inv("a", [("h100", "h100", 1, 1, 8, 10.0), ("l4", "l4", 1, 1, 1, 1.0)])
    pools["pools"][0]["price"] = {"hourly": 10.0, "basis": "list", "source": "https://x", "asOf": "2026-01-01"}
    pools["pools"][1]["price"] = {"hourly": 1.0, "basis": "list", "source": "https://x", "asOf": "2026-11-01"}
    cost = fleet_cost([], {"a": pools}, {}, {"a"}, today=date(2026, 11, 23))
    ages = {p["pool"]: (p["ageDays"], p.get("stale", False)) for p in cost["prices"]}
    assert ages == {"h100": (326, True), "l4": (22, False)} and STALE_DAYS < 326
    assert [p["pool"] for p in stale(cost)] == ["h100"]
    assert "ageDays" not in fleet_cost([], {"a": pools}, {}, {"a"})["prices"][0]     # no day, no age


def test_idle_paid_capacity_is_named_with_what_moving_onto_it_saves():
    """The trial's B1 placement: 4 reserved nodes (minNodes) idle while 4 spot nodes of the same
    GPU are bought. The idle row names the capacity type and the spot nodes whose replicas could
    move onto it, and what that saves at most; the text says it."""
    import io

    from rich.console import Console

    from modelplane.output.tables import idle_paid

    h100 = {"gpu": {"product": "H100"}}
    pools = [{"name": "h100", "class": "a3", "minNodes": 4, "maxNodes": 8, "gpusPerNode": 8, "capacityType": "reservation",
              "capabilities": h100, "price": {"hourly": 60.0}},
             {"name": "h100-spot", "class": "a3", "minNodes": 0, "maxNodes": 4, "gpusPerNode": 8, "capacityType": "spot",
              "capabilities": h100, "price": {"hourly": 53.09}},
             {"name": "l4", "class": "g2", "minNodes": 0, "maxNodes": 4, "gpusPerNode": 1, "capacityType": "spot",
              "capabilities": {"gpu": {"product": "L4"}}, "price": {"hourly": 1.0}}]
    placements = [placement("chat/llama", i, "gke-usc1", decode=("h100-spot", 1, 8, 1)) for i in range(4)]
    placements.append(placement("ml/small", 0, "gke-usc1", decode=("l4", 1, 1, 1)))
    cost = fleet_cost(placements, {"gke-usc1": {"name": "gke-usc1", "pools": pools}}, {}, {"gke-usc1"})
    idle = cost["idle"]["pools"]
    assert [(i["pool"], i["capacityType"], i["nodes"]["min"], i["hourly"]["min"]) for i in idle] == \
        [("h100", "reservation", 4, 240.0)]
    assert idle[0]["movable"] == {"nodes": 4, "from": ["gke-usc1/h100-spot"], "hourly": 212.36}
    text = io.StringIO()
    idle_paid(Console(file=text, width=300), {"cost": cost})
    assert ("idle paid gke-usc1/h100 (reservation): 4 minNodes (32 GPUs) no replica uses, $240/h paid whether used "
            "or not; 4 node(s) of the same GPU are bought on gke-usc1/h100-spot: moving their replicas onto it saves "
            "up to $212/h ($155,023/month)") in text.getvalue()
