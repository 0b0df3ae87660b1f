"""Replace changed replicas without losing them (pure): make before break.

A retained replica whose roles or worker topology changed keeps running at its recorded shape
through Retain and Fill (core.py), so new replicas are placed around it. Then, per such replica
(by name and index: the order rolls run in, each may use nodes an earlier one freed):

1. **surge**: the new shape is placed on capacity that is free while the old replica still holds
   its GPUs. `up` creates it (on its own cluster it takes the other name slot, `<name>-<i>-b`),
   awaits it Ready (`pulumi.com/waitFor`), switches the routes and DNS records that depend on it,
   and deletes the old one at the end, as Pulumi deletes everything a program no longer declares.
2. **roll**: no room beside it: on its own cluster its old nodes are released and the new shape
   bound there. `up` replaces it in place (`replaceOnChanges` + `deleteBeforeReplace`), one
   replica at a time: each roll waits for the one before it (`step`), so a deployment with more
   than one replica keeps the others serving.
3. **kept**: not even that fits: it stays at its recorded shape (it is what runs) until room
   appears; a replica whose roles changed cannot stay and is **removed** (unplaced) instead.
"""
from __future__ import annotations

from collections import Counter

from .model import Move, Transition
from .score import _best, _bind


def topology_text(t: tuple) -> str:
    """A recorded topology as a person reads it: `tensor 8, data 2`, `tensor 8, data 8, dataLocal 8, expert`."""
    if not t:
        return "?"
    axes = [f"{a} {n}" for a, n in zip(("tensor", "pipeline", "data", "dataLocal"), t) if n > 1 or a == "tensor"]
    return ", ".join(axes + (["expert"] if t[4:] == (1,) else []))


def _gpus(p, pools, rp) -> int:
    return rp.need(pools[(p.cluster, rp.pool)].gpus_per_node)


def _charge(p, free, pools, sign: int = 1) -> None:
    for rp in p.roles.values():
        free[(p.cluster, rp.pool)] -= sign * _gpus(p, pools, rp)


def replace_changed(stale, kept, filled, eligible, free, held: Counter, moves: list, pools) -> list[Transition]:
    """`stale`: (demand, index, old placement, why, keepable) per replica to replace, each charged
    in `free` (GPUs) at its old shape and present in `kept`; `pools`: the scheduler's Pool per
    (cluster, pool). Updates kept, free, held and moves; returns what happens to each."""
    out, step = [], 0
    # In name and index order, the order the rolls run in: a roll may use nodes an earlier one freed.
    for d, idx, old, why, keepable in sorted(stale, key=lambda s: (s[0].key, s[1])):
        mine = {**kept[d.key], **filled[d.key]}
        counts = Counter(p.cluster for i, p in mine.items() if i != idx)
        keys = [b for c, per in eligible[d.key].items() if (b := _best(d, c, per, free, counts[c]))]
        if keys:
            key = min(keys)
            kept[d.key][idx] = _bind(d, idx, key[-2], key[-1], free, pools, 1 - old.slot if key[-2] == old.cluster else 0)
            for rp in old.roles.values():
                held[(old.cluster, rp.pool)] += _gpus(old, pools, rp)
            moves.append(Move(d.key, idx, old.cluster, why))
            out.append(Transition(d.key, idx, "surge", old.cluster, key[-2], why))
            continue
        _charge(old, free, pools, -1)
        per = eligible[d.key].get(old.cluster)
        key = _best(d, old.cluster, per, free, counts[old.cluster]) if per else None
        if key is not None:
            step += 1
            kept[d.key][idx] = _bind(d, idx, old.cluster, key[-1], free, pools, old.slot)
            moves.append(Move(d.key, idx, old.cluster, why))
            out.append(Transition(d.key, idx, "roll", old.cluster, old.cluster,
                                  why + "; no room to run the new shape beside it", step))
            continue
        _charge(old, free, pools)
        if keepable:
            out.append(Transition(d.key, idx, "kept", old.cluster, old.cluster,
                                  why + "; no room to surge or roll it, so it keeps its recorded shape"))
            continue
        del kept[d.key][idx]
        for rp in old.roles.values():
            held[(old.cluster, rp.pool)] += _gpus(old, pools, rp)
        moves.append(Move(d.key, idx, old.cluster, why))
        out.append(Transition(d.key, idx, "removed", old.cluster, None,
                              why + "; no room to surge or roll it"))
    return out


SERVING_DOWN = ("lost",)     # gone with its cluster or pool: not serving from the start of `up`


def serving(before: int, placed: int, desired: int, transitions) -> dict:
    """What a plan's change does to one deployment's serving replicas: `before` the previous plan
    placed, the fewest that serve at any point of `up` (`during`: rolls take one down at a time,
    replicas lost with their cluster or pool are down from the start, and at the end only what
    this plan places serves), and why. A disruption when `during` is below both `before` and the
    replicas it asks for (a scale-down is not one)."""
    down = sum(1 for t in transitions if t.how in SERVING_DOWN)
    rolling = any(t.how == "roll" for t in transitions)
    during = max(0, min(before - down - int(rolling), placed))
    causes = [f"#{t.replica} {t.how}: {t.why}" for t in sorted(transitions, key=lambda t: t.replica)
              if t.how in ("lost", "roll", "removed")]
    return {"servingBefore": before, "servingDuring": during, "replicas": desired, "causes": causes,
            "disrupted": during < min(before, desired)}
