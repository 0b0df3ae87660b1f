"""The fleet report: one self-contained HTML page (inline CSS and SVG, no scripts, no network)
drawn from the plan document, answering where everything is, how full it is and what it costs.

Legible from 3 clusters to 50: cluster cards wrap in a grid; clusters with nothing placed and no
idle nodes collapse into one line; long tables stay tables.
"""
from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from ...analysis.changes import priced, serving_text, signed_money, spread_text, traffic_text
from ...analysis.cost import STALE_DAYS, caveats, doubtful, money, money_span, stale, stale_note
from ...scheduler.traffic import delivered
from .bars import colours, frontier_chart, pool_bar, progress_bar, share_bar, stable_colours

_ENV = Environment(loader=FileSystemLoader(Path(__file__).parent), autoescape=select_autoescape(["j2"]),
                   undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
_ENV.filters["money"] = money
_ENV.filters["money_span"] = money_span


def _span(s: dict) -> str:
    return str(s["min"]) if s["min"] == s["max"] else f"{s['min']}–{s['max']}"


_ENV.filters["span"] = _span


def _charge(row: dict, key: str = "hourly") -> str:
    """A cost figure that never passes nodes without a price off as free: "unpriced" when none
    of the row's nodes has a price, "$X + unpriced" when some have none."""
    if not row.get("unpricedNodes"):
        return money_span(row[key])
    return "unpriced" if row[key]["max"] == 0 else f"{money_span(row[key])} + unpriced"


_ENV.filters["charge"] = _charge
_ENV.filters["caveats"] = caveats
_ENV.filters["signed"] = signed_money
_ENV.filters["serving"] = serving_text
_ENV.filters["traffic"] = traffic_text
_ENV.filters["spread"] = spread_text


def _side(row: dict, side: str) -> str:
    """One side of a cost delta row per hour, its unpriced nodes named (never $0.00 for them)."""
    return priced(row[side], (row.get("unpricedNodes") or {}).get(side, 0)).removesuffix("/h")


def _delta(row: dict, key: str) -> str:
    """The change of a cost delta row; unknown (only the priced part shown) with unpriced nodes."""
    if row.get("priced") is False:
        return f"unknown ({signed_money(row[key])} priced)"
    return signed_money(row[key])


_ENV.filters["before"] = lambda row: _side(row, "before")
_ENV.filters["after"] = lambda row: _side(row, "after")
_ENV.filters["delta"] = _delta


def context(doc: dict) -> dict:
    """What the page shows, computed from the plan document only."""
    cost = doc["cost"]
    deployments = sorted({p["deployment"] for p in doc["placements"]} | {u["deployment"] for u in doc["unplaced"]})
    palette = colours(deployments)
    fill = {(f["cluster"], f["pool"]): f for f in cost["pools"]}
    prices = {(p["cluster"], p["pool"]): p for p in cost["prices"]}
    cluster_cost = {c["cluster"]: c for c in cost["clusters"]}
    cards, empty = [], []
    for c in doc["clusters"]:
        pools = []
        for pool in c["pools"]:
            f = fill.get((c["cluster"], pool["name"]))
            segs = [(d, v["min"], v["max"]) for d, v in f["deployments"].items()] if f else []
            idle = f["idle"]["max"] if f else 0
            placed = f["used"]["max"] if f else 0
            pools.append({**pool, "bar": pool_bar(c["cluster"], pool, segs, idle, palette), "placed": placed,
                          "idle": idle, "price": prices.get((c["cluster"], pool["name"]))})
        card = {**c, "pools": pools, "cost": cluster_cost.get(c["cluster"]),
                "replicas": sum(1 for p in doc["placements"] if p["cluster"] == c["cluster"])}
        (cards if card["replicas"] or any(p["idle"] for p in pools) else empty).append(card)
    cluster_palette = stable_colours([c["cluster"] for c in doc["clusters"]] +
                                     [c for s in doc["services"] for c in s["clusters"]])
    services = []
    for s in doc["services"]:
        # what each cluster serves once DNS picks it by its whole-percent weight (as --trace says)
        served = {c: sum(u.get(c, 0) for u in delivered({d["cluster"]: d["weight"] for d in s["dns"]},
                                                         s["endpoints"])) for c in s["clusters"]}
        services.append({**s, "clusters": served, "bar": share_bar(s["service"], served, cluster_palette)})
    unplaced: dict[str, dict] = {}
    for u in doc["unplaced"]:
        entry = unplaced.setdefault(u["deployment"], {"replicas": [], "reasons": u["reasons"]})
        entry["replicas"].append(u["replica"])
    placed = {d: sum(1 for p in doc["placements"] if p["deployment"] == d) for d in deployments}
    violations = doc["policy"]["violations"]
    rollout = [{**row, "bar": progress_bar(row["deployment"], row["placed"], row["target"], palette[row["deployment"]])}
               for row in doc.get("progress") or [] if row["stuck"] and row["deployment"] in palette]
    return {
        "rollout": rollout, "envelope": doc.get("envelope") or [],
        "stack": doc["stack"], "cost": cost, "cards": cards, "empty": empty, "services": services,
        "legend": [(d, palette[d], placed[d], placed[d] + len(unplaced.get(d, {}).get("replicas", [])))
                   for d in deployments],
        "unplaced": unplaced, "violations": violations,
        "mandatory": sum(1 for v in violations if v["level"] == "mandatory"),
        "replicas": {"placed": len(doc["placements"]), "wanted": len(doc["placements"]) + len(doc["unplaced"])},
        "cluster_palette": cluster_palette,
        "shaky": doubtful(cost), "stale": stale(cost), "stale_days": STALE_DAYS,
        "stale_note": stale_note(cost, {c["cluster"]: c.get("region") for c in doc["clusters"]}),
        "unpriced_pools": len(cost["unpriced"]), "whatif": doc.get("whatIf"),
        "change": _change_view(doc),
        "sizing": [{**row, "chart": frontier_chart(row)} for row in doc.get("sizing") or []],
    }


def _change_view(doc: dict) -> dict | None:
    """`plan --previous`: every reason the gate fails, replica changes by kind, traffic, the spread
    a service gives up (advisory) and cost deltas first; resource actions with their counts last (a region move has dozens)."""
    if "replicaChanges" not in doc:
        return None
    from ...analysis.changes import SYMBOLS, summary
    from ..comment import replica_counts
    from ...analysis.outcome import reasons

    return {"resources": doc["changes"], "counts": summary(doc["changes"]), "symbols": SYMBOLS,
            "failing": reasons(doc), "replica_counts": replica_counts(doc),
            "replicas": doc["replicaChanges"], "cost": doc["costDelta"], "disruptions": doc.get("disruptions") or [],
            "transitions": doc.get("transitions") or [], "traffic": doc.get("trafficDelta") or [],
            "spread": doc.get("spread") or [],
            "order": doc.get("upOrder") or []}


def render(doc: dict) -> str:
    """The report as one HTML string; the same plan gives the same bytes."""
    return _ENV.get_template("page.html.j2").render(**context(doc))
