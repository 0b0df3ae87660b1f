"""What a fleet costs: node prices per pool, and $/hour of the placed replicas, their autoscaling
envelope and the idle nodes a pool's minNodes keeps up.

Pure: reads the catalog's prices, cluster inventories and plain placement dicts (the plan's
JSON), so `modelplane plan`, the report and the policy pack compute the same figures.

A pool's node price, first that applies:
1. `capacity.hourly` on the pool in the stack config (a contracted or negotiated rate);
2. the catalog's list price for the class, the cluster's region and the pool's capacity type;
3. for `reservation`: the on-demand list price (GCE reservations and EC2 On-Demand Capacity
   Reservations bill reserved nodes at the on-demand rate unless a commitment discounts them);
4. an internal rate of a bring-your-own class (`region: "*"`);
5. the on-demand list price as an upper bound, marked `upperBound` (no rate for that capacity
   type: Spot, Flex-start and Capacity Blocks each have their own rate when the catalog has it);
otherwise the pool is unpriced and listed as such, never counted as free.

A price older than STALE_DAYS on the day of the plan is marked `stale` with its age.

Workers smaller than a node share the nodes of their pool (scheduler/model.py `need`): a role pays
for the GPUs it takes there (its slots; whole nodes for multi-node workers) as a share of a node,
and the GPUs of those nodes no role takes are listed as `stranded`, billed with the node, as the
idle `minNodes` are. So a stack's cost is its deployments' shares + stranded + idle.
"""
from __future__ import annotations

import math
from datetime import date

from ..scheduler.model import need

HOURS_PER_MONTH = 730
CURRENCY = "USD"
STALE_DAYS = 90   # list prices move (Spot daily); older than this, a plan says so


def pool_price(prices: dict, cls: str, region: str, capacity_type: str, contract: float | None = None) -> dict | None:
    """The price of one node of a pool, with where it comes from; None when nothing prices it."""
    if contract is not None:
        return {"hourly": contract, "basis": "contract", "source": "stack config (capacity.hourly)"}
    exact = prices.get((cls, region, capacity_type))
    if exact is not None:
        return _entry(exact, "list")
    on_demand = prices.get((cls, region, "on-demand"))
    if capacity_type == "reservation" and on_demand is not None:
        return _entry(on_demand, "on-demand rate (reserved nodes bill at it)")
    internal = next((p for (c, r, _), p in sorted(prices.items()) if c == cls and r == "*"), None)
    if internal is not None:
        return _entry(internal, "internal")
    if on_demand is not None:
        return {**_entry(on_demand, f"on-demand (no {capacity_type} list price; an upper bound)"), "upperBound": True}
    return None


def _entry(price, basis: str) -> dict:
    out = {"hourly": price.hourly, "basis": basis, "source": price.source, "asOf": price.as_of.isoformat()}
    if price.unconfirmed:
        out["unconfirmed"] = True
    return out


def _count(x: float) -> int | float:
    """A node count: whole where it is (a share of shared nodes keeps three decimals)."""
    return int(round(x)) if abs(x - round(x)) < 1e-9 else round(x, 3)


def _span_of(pair) -> dict:
    return {"min": _count(pair[0]), "max": _count(pair[1])}


def _span(lo: float, hi: float, digits: int = 4) -> dict:
    return {"min": round(lo, digits), "max": round(hi, digits)}


class _Sum:
    """Running totals of one row (replica, deployment, cluster, stack)."""

    __slots__ = ("gpus", "nodes", "hourly", "unpriced")

    def __init__(self):
        self.gpus, self.nodes, self.hourly, self.unpriced = [0, 0], [0, 0], [0.0, 0.0], 0

    def add(self, gpus, nodes, price, unpriced_nodes=0):
        for i in (0, 1):
            self.gpus[i] += gpus[i]
            self.nodes[i] += nodes[i]
            self.hourly[i] += nodes[i] * price if price is not None else 0.0
        self.unpriced += unpriced_nodes

    def merge(self, other: "_Sum"):
        for i in (0, 1):
            self.gpus[i] += other.gpus[i]
            self.nodes[i] += other.nodes[i]
            self.hourly[i] += other.hourly[i]
        self.unpriced += other.unpriced

    def json(self) -> dict:
        out = {"gpus": {"min": self.gpus[0], "max": self.gpus[1]}, "nodes": _span_of(self.nodes),
               "hourly": _span(*self.hourly), "monthly": _span(*(h * HOURS_PER_MONTH for h in self.hourly), digits=2)}
        if self.unpriced > 1e-9:       # shares of shared nodes add up; a part of a node counts as one
            out["unpricedNodes"] = math.ceil(self.unpriced - 1e-9)
        return out


def age(price: dict, today: date, max_days: int = STALE_DAYS) -> dict:
    """`ageDays` of a price entry on `today`, and `stale` when older than `max_days`."""
    if "asOf" not in price:
        return {}
    days = (today - date.fromisoformat(price["asOf"])).days
    return {"ageDays": days, **({"stale": True} if days > max_days else {})}


def fleet_cost(placements: list[dict], inventories: dict[str, dict], minimum_workers: dict[str, dict[str, int]],
               owned: set[str] | frozenset = frozenset(), today: date | None = None) -> dict:
    """Cost of a plan. `placements`: the plan's JSON placements; `minimum_workers`: per deployment
    and role, the workers that run at minimum (autoscaled roles at minReplicas); `owned`: clusters
    whose idle minNodes this plan charges (those whose usage it sees); `today`: the day prices'
    age is counted on (none: no age).

    Per replica, `min` is what runs at minimum and `max` the envelope the plan reserved."""
    pools = {(c, p["name"]): p for c, inv in inventories.items() for p in inv.get("pools", [])}
    took: dict[tuple[str, str], list[int]] = {}       # GPUs of the pool the placed roles take (slots, whole nodes)
    busy: dict[tuple[str, str], list[int]] = {}       # GPUs the placed workers use
    by_deployment: dict[tuple[str, str], dict[str, list[float]]] = {}
    replicas, deployments, clusters = [], {}, {}
    for p in sorted(placements, key=lambda p: (p["deployment"], int(p["replica"]))):
        row = _Sum()
        mins = minimum_workers.get(p["deployment"], {})
        for role, rp in sorted(p["roles"].items()):
            workers, slices = int(rp["workers"]), int(rp["nodes"])
            per_worker = slices // workers if workers else 1
            # a replica placed at a smaller step runs at most what it was placed with
            lo = min(mins.get(role, workers), workers) * per_worker if workers else 0
            gpn = int(rp["gpusPerNode"])
            pool = pools.get((p["cluster"], rp["pool"]), {})
            per_node = int(pool.get("gpusPerNode") or gpn)
            price = (pool.get("price") or {}).get("hourly")
            # Workers within a node share their pool's nodes: a role pays for the GPUs it takes
            # there (its slots; whole nodes for a multi-node worker) as a share of nodes.
            gpus_taken = (need(lo, gpn, per_worker, per_node), need(slices, gpn, per_worker, per_node))
            share = (gpus_taken[0] / per_node, gpus_taken[1] / per_node)
            row.add((lo * gpn, slices * gpn), share, price, share[0] if price is None else 0)
            key = (p["cluster"], rp["pool"])
            for acc, add in ((took.setdefault(key, [0, 0]), gpus_taken), (busy.setdefault(key, [0, 0]), (lo * gpn, slices * gpn)),
                             (by_deployment.setdefault(key, {}).setdefault(p["deployment"], [0, 0]), share)):
                acc[0], acc[1] = acc[0] + add[0], acc[1] + add[1]
        replicas.append({"deployment": p["deployment"], "replica": int(p["replica"]), "cluster": p["cluster"], **row.json()})
        deployments.setdefault(p["deployment"], _Sum()).merge(row)
        clusters.setdefault(p["cluster"], _Sum()).merge(row)

    def nodes_of(key) -> tuple[int, int]:
        per_node = int(pools[key].get("gpusPerNode") or 1)
        lo, hi = took.get(key, (0, 0))
        return -(-lo // per_node), -(-hi // per_node)

    idle_rows, stack, idle_total, stranded_rows, stranded_total = [], _Sum(), _Sum(), [], _Sum()
    for (cluster, name), pool in sorted(pools.items()):
        # the rest of the nodes shared workers occupy: GPUs no role takes, billed with the node
        per_node = int(pool.get("gpusPerNode") or 1)
        nodes = nodes_of((cluster, name))
        left = tuple(n * per_node - t for n, t in zip(nodes, took.get((cluster, name), (0, 0))))
        if not any(left):
            continue
        price = (pool.get("price") or {}).get("hourly")
        row = _Sum()
        row.add(left, (left[0] / per_node, left[1] / per_node), price, left[0] / per_node if price is None else 0)
        stranded_rows.append({"cluster": cluster, "pool": name, **row.json()})
        clusters.setdefault(cluster, _Sum()).merge(row)
        stranded_total.merge(row)
    for (cluster, name), pool in sorted(pools.items()):
        if cluster not in owned:
            continue
        lo, hi = nodes_of((cluster, name))
        keep = int(pool.get("minNodes", 0))
        idle = (max(0, keep - lo), max(0, keep - hi))
        if not idle[0]:
            continue
        price = (pool.get("price") or {}).get("hourly")
        gpn = int(pool.get("gpusPerNode", 0))
        row = _Sum()
        row.add((idle[0] * gpn, idle[1] * gpn), idle, price, idle[0] if price is None else 0)
        idle_rows.append({"cluster": cluster, "pool": name, "capacityType": pool.get("capacityType", "on-demand"),
                          **row.json()})
        clusters.setdefault(cluster, _Sum()).merge(row)
        idle_total.merge(row)
    _movable(idle_rows, pools, nodes_of)
    for row in clusters.values():
        stack.merge(row)
    fill = []
    for (cluster, name), pool in sorted(pools.items()):
        lo, hi = nodes_of((cluster, name))
        keep = int(pool.get("minNodes", 0)) if cluster in owned else 0
        fill.append({"cluster": cluster, "pool": name, "maxNodes": int(pool.get("maxNodes", 0)),
                     "minNodes": int(pool.get("minNodes", 0)), "used": {"min": lo, "max": hi},
                     "idle": {"min": max(0, keep - lo), "max": max(0, keep - hi)},
                     "gpus": {"used": _span_of(busy.get((cluster, name), (0, 0))),
                              "stranded": _span_of(tuple(n * int(pool.get("gpusPerNode") or 1) - b for n, b in
                                                         zip((lo, hi), busy.get((cluster, name), (0, 0)))))},
                     "deployments": {d: _span_of(v) for d, v in sorted(by_deployment.get((cluster, name), {}).items())}})
    price_rows, unpriced = [], []
    for (cluster, name), pool in sorted(pools.items()):
        if (cluster, name) not in took and cluster not in owned:
            continue
        where = {"cluster": cluster, "pool": name, "class": pool.get("class"), "capacityType": pool.get("capacityType")}
        if pool.get("price"):
            # Fields in name order: an inventory read from another stack's state has lost its key order.
            price_rows.append({**where, **dict(sorted(pool["price"].items())),
                               **(age(pool["price"], today) if today else {})})
        else:
            unpriced.append(where)
    return {
        "currency": CURRENCY, "hoursPerMonth": HOURS_PER_MONTH,
        "stack": stack.json(), "idle": {**idle_total.json(), "pools": idle_rows},
        "stranded": {**stranded_total.json(), "pools": stranded_rows},
        "clusters": [{"cluster": c, **clusters[c].json()} for c in sorted(clusters)],
        "deployments": [{"deployment": d, **deployments[d].json()} for d in sorted(deployments)],
        "replicas": replicas, "pools": fill, "prices": price_rows, "unpriced": unpriced,
    }


def _gpu(pool: dict) -> tuple:
    return (((pool.get("capabilities") or {}).get("gpu") or {}).get("product"), int(pool.get("gpusPerNode") or 0))


def _movable(idle_rows: list[dict], pools: dict, nodes_of) -> None:
    """Per idle paid pool (minNodes no replica uses: paid whether used or not), the nodes bought
    beyond minNodes elsewhere with the same GPU and GPUs per node, up to its idle nodes, dearest
    first, and what they cost: what moving those replicas onto it would save at most (selectors,
    spot rules and shapes may forbid it; `plan --repack` plans it). Each bought node counts once."""
    bought = {k: hi - int(p.get("minNodes", 0)) for k, p in pools.items() for hi in (nodes_of(k)[1],)
              if hi > int(p.get("minNodes", 0))}
    for row in idle_rows:
        me = (row["cluster"], row["pool"])
        left, taken, hourly, unpriced = row["nodes"]["min"], [], 0.0, False
        like = sorted((k for k in bought if k != me and _gpu(pools[k]) == _gpu(pools[me]) and _gpu(pools[me])[0]),
                      key=lambda k: (-((pools[k].get("price") or {}).get("hourly") or 0), k))
        for k in like:
            n = min(left, bought[k])
            if n <= 0:
                continue
            price = (pools[k].get("price") or {}).get("hourly")
            hourly += n * (price or 0)
            unpriced = unpriced or price is None
            bought[k] -= n
            left -= n
            taken.append(f"{k[0]}/{k[1]}")
        if taken:
            row["movable"] = {"nodes": row["nodes"]["min"] - left, "from": taken, "hourly": round(hourly, 2),
                              **({"unpriced": True} if unpriced else {})}


def doubtful(cost: dict) -> list[dict]:
    """Prices a reader should question: unconfirmed, or an on-demand upper bound for another type."""
    return [p for p in cost["prices"] if p.get("unconfirmed") or p.get("upperBound")]


def stale(cost: dict) -> list[dict]:
    """Prices older than STALE_DAYS on the day of the plan, oldest first."""
    return sorted((p for p in cost["prices"] if p.get("stale")), key=lambda p: (-p["ageDays"], p["cluster"], p["pool"]))


def stale_note(cost: dict, regions: dict[str, str | None]) -> str | None:
    """The one sentence every view (text, comment, report) gives old prices: how many, the oldest,
    and the refresh command for the regions of the pools they price (`regions`: cluster -> region)."""
    old = stale(cost)
    if not old:
        return None
    where = sorted({regions[p["cluster"]] for p in old if regions.get(p["cluster"])})
    command = "modelplane prices refresh" + (f" --regions {','.join(where)}" if where else "")
    return (f"{len(old)} of {len(cost['prices'])} pools' prices are older than {STALE_DAYS} days (oldest "
            f"{old[0]['asOf']}, {old[0]['ageDays']} days, {old[0]['cluster']}/{old[0]['pool']}); `{command}` reads "
            "current ones (cloud credentials needed)")


def caveats(price: dict) -> str:
    """Why a price is doubtful, in words: its basis and marks."""
    marks = [price["basis"]]
    if price.get("stale"):
        marks.append(f"{price['ageDays']} days old")
    if price.get("unconfirmed"):
        marks.append("unconfirmed")
    return "; ".join(marks)


def money(value: float) -> str:
    """Dollars as a person reads them: cents below $100, whole dollars above."""
    return f"${value:,.2f}" if value < 100 else f"${value:,.0f}"


def money_span(span: dict) -> str:
    lo, hi = span["min"], span["max"]
    return money(lo) if abs(hi - lo) < 0.005 else f"{money(lo)}–{money(hi)}"
