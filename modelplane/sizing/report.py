"""The plan document's `sizing` rows (pure): per sized deployment its objective, traffic, the
configuration chosen, what the estimator predicts for it, what the plan placed and serves, what
it costs, the alternatives and the throughput/latency frontier of the chosen class."""
from __future__ import annotations

from .candidates import Candidate, Sizing, topology

FRONTIER_POINTS = 24          # at most this many frontier points per deployment (evenly by user speed)


def _topology(t) -> dict:
    return {"tensor": t.tensor, "pipeline": t.pipeline, "data": t.data, "dataLocal": t.data_local}


def _round(x: float, digits: int = 3) -> float:
    return round(float(x), digits)


def class_prices(inventories: dict) -> dict[str, float]:
    """class -> the cheapest $/GPU-hour of its pools in the fleet (priced pools only)."""
    out: dict[str, float] = {}
    for inv in inventories.values():
        for p in inv.get("pools", []):
            hourly = (p.get("price") or {}).get("hourly")
            if hourly is not None:
                per_gpu = hourly / int(p["gpusPerNode"])
                out[p["class"]] = min(out.get(p["class"], per_gpu), per_gpu)
    return out


def per_million(hourly: float | None, tokens_per_second: float) -> float | None:
    """$ per million output tokens at `hourly` $/h producing `tokens_per_second`."""
    if hourly is None or tokens_per_second <= 0:
        return None
    return _round(hourly / (tokens_per_second * 3600) * 1e6, 4)


def predicted(c: Candidate, osl: int) -> dict:
    return {"ttftMs": _round(c.point[0]), "itlMs": _round(c.point[1]), "requestsPerSecond": _round(c.rps, 4),
            "tokensPerSecondPerGpu": _round(c.point[2] * osl / c.gpus, 2)}


def choice(c: Candidate) -> dict:
    out = {"class": c.cls, "mode": c.mode, "topology": _topology(c.decode.topology), "workers": c.decode.workers,
           "replicas": c.replicas}
    if c.prefill is not None:
        out["prefill"] = {"workers": c.prefill.workers, "topology": _topology(c.prefill.topology)}
    return out


def _alternative(c: Candidate, osl: int, prices: dict, chosen: bool) -> dict:
    hourly = prices[c.cls] * c.gpus * c.replicas if c.cls in prices else None
    return {"class": c.cls, "mode": c.mode, "shape": c.shape.label(), "replicas": c.replicas,
            "gpus": c.gpus * c.replicas, "predicted": predicted(c, osl),
            "hourly": _round(hourly, 2) if hourly is not None else None,
            "perMillionTokens": per_million(hourly, c.rps * osl), "chosen": chosen}


def slo_json(slo) -> dict:
    """The objective, its margin and the limits the chosen configuration's prediction stays within."""
    from ..api.deployment import SLO_MARGIN

    ttft, itl = slo.limits()
    return {"ttftMs": slo.ttft_ms, "itlMs": slo.itl_ms, "margin": SLO_MARGIN if slo.margin is None else slo.margin,
            "limits": {"ttftMs": round(ttft, 4), "itlMs": round(itl, 4)}}


def frontier(c: Candidate, gpus_per_node: int, osl: int, price_per_gpu: float | None, ttft_ms: float) -> list[dict]:
    """Per-user speed (tokens/s) against throughput per GPU over every expressible shape of the
    chosen class's profile, at points within the TTFT objective: the points no other beats on
    both, slowest user speed first."""
    pts = []
    for shape in c.found.workload.shapes:
        if topology(shape.decode, gpus_per_node) is None or (shape.prefill and topology(shape.prefill, gpus_per_node) is None):
            continue
        for ttft, itl, rps in shape.points:
            if ttft <= ttft_ms:
                pts.append((1000.0 / itl, rps * osl / shape.gpus, shape.label()))
    pts.sort(key=lambda p: (-p[0], -p[1], p[2]))
    front, best = [], -1.0
    for speed, tput, label in pts:              # fastest users first: keep each new best throughput
        if tput > best + 1e-9:
            front.append((speed, tput, label))
            best = tput
    front.reverse()
    if len(front) > FRONTIER_POINTS:
        step = (len(front) - 1) / (FRONTIER_POINTS - 1)
        front = [front[round(i * step)] for i in range(FRONTIER_POINTS)]
    mine = (1000.0 / c.point[1], c.point[2] * osl / c.gpus)
    rows = [{"shape": label, "tokensPerSecondPerUser": _round(speed, 2), "tokensPerSecondPerGpu": _round(tput, 2),
             "perMillionTokens": per_million(price_per_gpu, tput) if price_per_gpu else None, "chosen": False}
            for speed, tput, label in front]
    rows.append({"shape": c.shape.label(), "tokensPerSecondPerUser": _round(mine[0], 2),
                 "tokensPerSecondPerGpu": _round(mine[1], 2),
                 "perMillionTokens": per_million(price_per_gpu, mine[1]) if price_per_gpu else None, "chosen": True})
    return rows


def row(s: Sizing, c: Candidate | None, placements: list, inventories: dict, cost: dict | None) -> dict:
    """One `sizing` entry. `placements`: the deployment's placements (plan JSON); `cost`: its row of
    the plan's cost section (None when nothing is placed)."""
    md = s.md
    osl = md.traffic.output_tokens
    prices = class_prices(inventories)
    out = {"deployment": md.key,
           "slo": slo_json(md.slo),
           "traffic": {"requestsPerSecond": md.traffic.requests_per_second, "inputTokens": md.traffic.input_tokens,
                       "outputTokens": osl}}
    if c is None:
        return {**out, "choice": None, "predicted": None, "served": {"replicas": 0, "requestsPerSecond": 0.0},
                "cost": None, "estimator": None, "alternatives": [], "frontier": [], "notes": s.notes}
    placed = len(placements)
    hourly = cost["hourly"]["max"] if cost else 0.0
    served = placed * c.point[2]
    gpn = next((int(p["gpusPerNode"]) for inv in inventories.values() for p in inv.get("pools", [])
                if p["class"] == c.cls), 8)
    f = c.found
    out.update({
        "choice": choice(c),
        "predicted": predicted(c, osl),
        "served": {"replicas": placed, "requestsPerSecond": _round(served, 4)},
        "cost": {"hourly": _round(hourly, 2), "perMillionTokens": per_million(hourly, served * osl) if placed else None},
        "estimator": {"name": f.estimator.name, "version": f.estimator.version,
                      "database": f"{f.system.backend} {f.system.database_version}", "system": f.system.system,
                      "model": f.estimator_model, "profiled": f.workload.created.isoformat()},
        "alternatives": [_alternative(a, osl, prices, a is c) for a in s.candidates],
        "frontier": frontier(c, gpn, osl, prices.get(c.cls), md.slo.limits()[0]),
        "notes": s.notes,
    })
    return out
