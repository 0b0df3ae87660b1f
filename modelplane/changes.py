"""What a plan changes against a previous plan (`plan --previous`), as `pulumi preview` shows it.

Per resource: create, update, replace (a changed input the provider cannot update in place, see
`immutable.py`), delete, or import; per replica: added, moved, resized or removed, with the
reason; and the cost delta per deployment and for the stack.

Pure: reads plan documents. Resources are compared by the digests every plan document carries
(`digest` of a resource's inputs and `fieldDigests` of its fields two levels deep), so a plan file
stays small and never holds an input value. Secret values are redacted before hashing: a plan
never sees them, so a changed secret is not reported.
"""
from __future__ import annotations

import hashlib
import json

from .cost import money
from .immutable import forces_replacement

ACTIONS = ("create", "import", "update", "replace", "delete")
SYMBOLS = {"create": "+", "import": "=", "update": "~", "replace": "+-", "delete": "-"}


def _hash(value) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def digests(inputs: dict) -> tuple[str, dict[str, str]]:
    """A resource's inputs as one digest and a digest per field, two levels deep
    (`nodeConfig.machineType`, `spec.selector`): enough to name what changed."""
    fields = {}
    for key, value in inputs.items():
        if isinstance(value, dict) and value:
            for sub, inner in value.items():
                fields[f"{key}.{sub}"] = _hash(inner)[:12]
        else:
            fields[key] = _hash(value)[:12]
    return _hash(inputs)[:16], dict(sorted(fields.items()))


def resource_changes(before: list[dict] | None, after: list[dict]) -> list[dict] | None:
    """Per resource (by type and name) what applying `after` over `before` does; unchanged ones
    are left out. None when `before` carries no digests (a plan from before they existed)."""
    if not before or any("digest" not in r for r in before):
        return None
    old = {(r["type"], r["name"]): r for r in before}
    new = {(r["type"], r["name"]): r for r in after}
    out = []
    either = {**old, **new}
    for key in sorted(either, key=lambda k: (either[k].get("cluster", ""), *k)):
        was, now = old.get(key), new.get(key)
        entry = {"type": key[0], "name": key[1]}
        if either[key].get("cluster"):
            entry["cluster"] = either[key]["cluster"]
        if was is None:
            out.append({"action": "import" if either[key].get("import") else "create", **entry})
        elif now is None:
            out.append({"action": "delete", **entry})
        elif was["digest"] != now["digest"]:
            a, b = was.get("fieldDigests", {}), now.get("fieldDigests", {})
            fields = sorted(f for f in set(a) | set(b) if a.get(f) != b.get(f))
            forced = forces_replacement(key[0], fields)
            out.append({"action": "replace" if forced else "update", **entry, "fields": fields,
                        **({"forcedBy": forced} if forced else {})})
    return out


POOL_TYPES = ("gcp:container/nodePool:NodePool", "aws:eks/nodeGroup:NodeGroup")


def disrupted(changes: list[dict] | None, placements: list[dict]) -> None:
    """Name, on each replaced node pool, the running replicas whose nodes it replaces
    (`replicas`). Pools are named `<cluster>-<pool>`, as the components name them."""
    for c in changes or []:
        if c["action"] != "replace" or c["type"] not in POOL_TYPES or not c.get("cluster"):
            continue
        pool = c["name"].removeprefix(f"{c['cluster']}-")
        hit = sorted({(p["deployment"], int(p["replica"])) for p in placements if p["cluster"] == c["cluster"]
                      and any(r["pool"] == pool for r in p["roles"].values())})
        if hit:
            c["replicas"] = [f"{d}#{i}" for d, i in hit]


def _pools(p: dict) -> dict[str, str]:
    return {role: r["pool"] for role, r in sorted(p["roles"].items())}


def _shape(p: dict) -> dict[str, tuple[int, int]]:
    return {role: (int(r["workers"]), int(r["nodes"])) for role, r in sorted(p["roles"].items())}


def _where(p: dict) -> str:
    return p["cluster"] + " (" + ", ".join(f"{role} {pool}" for role, pool in _pools(p).items()) + ")"


def replica_changes(before: dict, after: dict, desired: dict[str, int], moves: dict[tuple[str, int], str],
                    repack: bool = False) -> list[dict]:
    """Replicas added, moved (another cluster or pool), resized (other workers on the same pools) or
    removed between two plan documents, each with its reason. `desired`: replicas per deployment now;
    `moves`: why the scheduler did not keep a previous replica where it was."""
    old = {(p["deployment"], int(p["replica"])): p for p in before.get("placements") or []}
    new = {(p["deployment"], int(p["replica"])): p for p in after["placements"]}
    was_unplaced = {(u["deployment"], int(u["replica"])) for u in before.get("unplaced") or []}
    now_unplaced = {(u["deployment"], int(u["replica"])): u for u in after["unplaced"]}
    known = {d for d, _ in old} | {d for d, _ in was_unplaced}
    counts: dict[str, int] = {}
    for d, i in [*old, *was_unplaced]:
        counts[d] = max(counts.get(d, 0), i + 1)
    out = []
    for key in sorted(set(old) | set(new)):
        d, i = key
        entry = {"deployment": d, "replica": i}
        if key not in old:
            why = ("new deployment" if d not in known else "was unplaced, now fits" if key in was_unplaced
                   else f"scale-up {counts.get(d, 0)} -> {desired.get(d, 0)} replicas" if i >= counts.get(d, 0)
                   else "placed")
            out.append({"change": "added", **entry, "to": new[key]["cluster"], "reason": why})
            continue
        was = old[key]
        if key not in new:
            if d not in desired:
                why = "deployment removed"
            elif i >= desired[d]:
                why = f"scale-down {counts.get(d, 0)} -> {desired[d]} replicas"
            else:
                why = moves.get(key, "re-pack" if repack else "not kept")
                if key in now_unplaced and now_unplaced[key]["reasons"]:
                    first = now_unplaced[key]["reasons"][0]
                    why += f"; now unplaced ({first['reason']}: {first['detail']})"
            out.append({"change": "removed", **entry, "from": was["cluster"], "reason": why})
            continue
        now = new[key]
        if (was["cluster"], _pools(was)) != (now["cluster"], _pools(now)):
            why = moves.get(key, "re-pack" if repack else "placed again")
            out.append({"change": "moved", **entry, "from": _where(was), "to": _where(now), "reason": why})
        elif _shape(was) != _shape(now):
            a, b = _shape(was), _shape(now)
            why = ", ".join(f"{role} {a.get(role, (0, 0))[0]} -> {b.get(role, (0, 0))[0]} workers"
                            for role in sorted(set(a) | set(b)) if a.get(role) != b.get(role))
            out.append({"change": "resized", **entry, "from": was["cluster"], "to": now["cluster"], "reason": why})
    return out


def _minus(a: dict, b: dict, digits: int) -> dict:
    return {"min": round(a["min"] - b["min"], digits), "max": round(a["max"] - b["max"], digits)}


_ZERO = {"hourly": {"min": 0.0, "max": 0.0}, "monthly": {"min": 0.0, "max": 0.0}}


def cost_delta(before: dict, after: dict) -> dict:
    """The cost of `after` less that of `before` ($/hour and $/month, at minimum and at the
    autoscaling maximum), per deployment whose cost changed and for the stack (idle nodes included)."""
    old = {d["deployment"]: d for d in before.get("deployments", [])}
    new = {d["deployment"]: d for d in after.get("deployments", [])}
    rows = []
    for name in sorted(set(old) | set(new)):
        a, b = new.get(name, _ZERO), old.get(name, _ZERO)
        row = {"deployment": name, "hourly": _minus(a["hourly"], b["hourly"], 4),
               "monthly": _minus(a["monthly"], b["monthly"], 2),
               "before": b["hourly"], "after": a["hourly"]}
        if row["hourly"]["min"] or row["hourly"]["max"]:
            rows.append(row)
    stack_a, stack_b = after.get("stack", _ZERO), before.get("stack", _ZERO)
    return {"deployments": rows,
            "stack": {"hourly": _minus(stack_a["hourly"], stack_b["hourly"], 4),
                      "monthly": _minus(stack_a["monthly"], stack_b["monthly"], 2),
                      "before": stack_b["hourly"], "after": stack_a["hourly"]}}


def summary(changes: list[dict] | None) -> dict[str, int] | None:
    """How many resources each action touches (None when unknown)."""
    if changes is None:
        return None
    return {a: sum(1 for c in changes if c["action"] == a) for a in ACTIONS}


def signed_money(span: dict) -> str:
    """A cost change as a person reads it: +$12.00, -$419, or a span +$1.20–+$4.80."""
    def one(v):
        return ("+" if v >= 0 else "-") + money(abs(v))
    lo, hi = span["min"], span["max"]
    return one(lo) if abs(hi - lo) < 0.005 else f"{one(lo)}–{one(hi)}"
