"""What a plan changes against a previous plan (`plan --previous`), as `pulumi preview` shows it.

Per resource: create, update, replace (a changed input the provider cannot update in place, see
`immutable.py`, or one under the resource's own `replaceOnChanges`; `deleteBeforeReplace` when
the old one goes first), delete, or import; per replica: added, moved, resized or removed, with the
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
POOL_TYPES = ("gcp:container/nodePool:NodePool", "aws:eks/nodeGroup:NodeGroup")
SYMBOLS = {"create": "+", "import": "=", "update": "~", "replace": "+-", "delete": "-"}


def _hash(value) -> str:
    return _sha(_text(value))


def encoder(**options):
    """`json.JSONEncoder(**options).encode` with json's C encoder made once: `encode` makes it
    anew on every call, which costs as much as encoding a small value. No circular check: a plan
    holds no cycles."""
    e = json.JSONEncoder(**options)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None or e.indent is not None:
        return e.encode
    strings = json.encoder.encode_basestring_ascii if e.ensure_ascii else json.encoder.encode_basestring
    c = make(None, e.default, strings, None, e.key_separator, e.item_separator, e.sort_keys, e.skipkeys, e.allow_nan)
    return lambda value: "".join(c(value, 0))


# what json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str) does
_ENCODE = encoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)

try:
    import orjson
except ImportError:                 # a dependency; without it the json module writes the same text
    orjson = None


def floatless(indent: bool = False, utf8: bool = False):
    """orjson's encoder for values that hold no float: text, integers within 64 bits, booleans,
    None, lists and dicts with text keys. For those its text is json's byte for byte (compact and
    sorted, or indented by two), every code point and integer checked (tests/test_json_text.py),
    at a fifth of the time; a float it would write otherwise (1e16, not 1e+16), so callers pass
    only values that cannot hold one. `utf8`: the text's UTF-8 bytes, as orjson makes them.
    None without orjson."""
    if orjson is None:
        return None
    dumps, option = orjson.dumps, orjson.OPT_INDENT_2 if indent else orjson.OPT_SORT_KEYS
    if utf8:
        return lambda value: dumps(value, option=option)
    return lambda value: dumps(value, option=option).decode()


# plain inputs (engine/direct.py `wire`: exact str, bool, None, int within 2**53, dict, list) hold no float
_PLAIN = floatless() or _ENCODE
# the same text as UTF-8 bytes, which is what the digest hashes: None without orjson
_PLAIN_BYTES = floatless(utf8=True)


def _text(value) -> str:
    return _ENCODE(value)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# what _ENCODE gives a str (json's C encoder writes one with this very function), without the call
_STR = json.encoder.encode_basestring

# A field's text -> its digest: a fleet's resources repeat most of their fields (at 100 x 2,000,
# 214,273 field digests of 28,134 texts), and a lookup costs less than the hash.
_FIELDS: dict[str, str] = {}
_KEPT = 1 << 17             # texts kept; a larger plan starts afresh


def _field(text: str) -> str:
    """A field's digest, kept (`digests` looks it up inline first)."""
    if len(_FIELDS) >= _KEPT:
        _FIELDS.clear()
    found = _FIELDS[text] = _sha(text)[:12]
    return found


def _joined(parts: dict[str, str]) -> str:
    """The text `_text` gives a dict with str keys, from its values' texts: each field is
    serialized once and serves its own digest and the whole resource's."""
    return "{" + ",".join([_STR(k) + ":" + parts[k] for k in sorted(parts)]) + "}"


def digests(inputs: dict, same: dict | None = None, plain: bool = False) -> tuple[str, dict[str, str]]:
    """A resource's inputs as one digest and a digest per field, two levels deep
    (`nodeConfig.machineType`, `spec.selector`): enough to name what changed. `same`: a dict the
    caller keeps over one document's resources; equal inputs then share one answer (at 100 x 2,000,
    26,341 resources have 9,733 digests), so its fieldDigests dict is written once. `plain`: the
    inputs are plain JSON with integers (no float; `floatless`), the same text written faster."""
    whole = None
    if plain and same is not None and _PLAIN_BYTES is not None:
        try:
            whole = _PLAIN_BYTES(inputs)    # the text `_joined` would make below, in one call, as UTF-8
        except TypeError:                   # orjson.JSONEncodeError: a key that is not text
            whole = None
        found = same.get(whole)
        if found is not None:           # equal inputs met before: no field walk (most of a fleet)
            return found
    fields, texts, kept = {}, {}, _FIELDS
    encode = _PLAIN if plain else _ENCODE
    for key, value in inputs.items():
        if key.__class__ is not str:
            return _digests(inputs)         # json's own key conversion and ordering
        if isinstance(value, dict) and value:
            inner = {}
            for sub, v in value.items():
                if sub.__class__ is not str:
                    return _digests(inputs)
                inner[sub] = t = _STR(v) if v.__class__ is str else encode(v)
                fields[f"{key}.{sub}"] = kept.get(t) or _field(t)
            if whole is None:
                texts[key] = _joined(inner)
        else:
            texts[key] = t = _STR(value) if value.__class__ is str else encode(value)
            fields[key] = kept.get(t) or _field(t)
    if whole is not None:               # the whole text is known: hashed as it is, kept under it
        found = same[whole] = (hashlib.sha256(whole).hexdigest()[:16], dict(sorted(fields.items())))
        return found
    t = _joined(texts)
    if same is None:
        return _sha(t)[:16], dict(sorted(fields.items()))
    found = same.get(t)
    if found is None:
        found = same[t] = (_sha(t)[:16], dict(sorted(fields.items())))
    return found


def _digests(inputs: dict) -> tuple[str, dict[str, str]]:
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
        if either[key].get("deployment"):
            entry["deployment"], entry["replica"] = either[key]["deployment"], either[key]["replica"]
        if was is None:
            out.append({"action": "import" if either[key].get("import") else "create", **entry})
        elif now is None:
            out.append({"action": "delete", **entry, **_guard(was, was.get("protect"))})
        elif was["digest"] != now["digest"]:
            a, b = was.get("fieldDigests", {}), now.get("fieldDigests", {})
            fields = sorted(f for f in set(a) | set(b) if a.get(f) != b.get(f))
            forced = sorted({*forces_replacement(key[0], fields), *_own(fields, now.get("replaceOnChanges") or ())})
            out.append({"action": "replace" if forced else "update", **entry, "fields": fields,
                        **({"forcedBy": forced} if forced else {}),
                        **({"deleteBeforeReplace": True} if forced and now.get("deleteBeforeReplace") else {}),
                        **(_guard(was, was.get("protect") and now.get("protect")) if forced else {})})
    return out


def _own(fields: list[str], paths) -> list[str]:
    """Changed fields under the resource's own `replaceOnChanges` paths: the engine replaces on any
    changed property path within one (pulumi/pulumi@v3.259.0 pkg/resource/deploy/step_generator.go
    L3122-3176, `Contains` at L3150). A path deeper than the digests' two levels counts its field."""
    return [f for f in fields for p in paths if f == p or f.startswith(f"{p}.") or p.startswith(f"{f}.")]


CLUSTER_TYPES = ("gcp:container/cluster:Cluster", "aws:eks/cluster:Cluster")


def _guard(was: dict, refused) -> dict:
    """A delete or replace Pulumi refuses (`refused`: a delete of a resource its state protects, a
    replace of one both state and program protect; pulumi/pulumi pkg/resource/deploy/step.go
    DeleteStep and step_generator.go: unprotecting and replacing may share one update), or of a
    cluster or node pool (destructive: what runs there goes)."""
    if refused:
        return {"protected": True, "destructive": True}
    return {"destructive": True} if was["type"] in (*CLUSTER_TYPES, *POOL_TYPES) or was.get("protect") else {}


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


def own_pools(before: list[dict] | None, after: list[dict]) -> list[str]:
    """`<cluster>: <deployment>` where the previous plan ran a deployment's KServe replicas on their
    own pools (no shared InferencePool `<name>-pool` of it there: an install from before the shared
    pools) and this plan gives it one. KServe deletes a replica's own pool as soon as its service
    names the shared one (kserve@v0.20.0 pkg/controller/v1alpha2/llmisvc/scheduler.go L188-199),
    while the old routes still point at it: the move takes two `up`s (docs/changes.md)."""
    def where(resources, kind):
        out = set()
        for r in resources or []:
            cluster, ns, k, name = (r["name"].split("/") + ["", "", "", ""])[:4]
            if r["type"].endswith(f":{kind}") and k == kind.lower():
                out.add((cluster, f"{ns}/{name.removesuffix('-pool')}" if kind == "InferencePool" else r.get("deployment")))
        return out
    ran = where(before, "LLMInferenceService") - where(before, "InferencePool")
    return sorted(f"{c}: {d}" for c, d in ran & where(after, "InferencePool") if d)


def _pools(p: dict) -> dict[str, str]:
    return {role: r["pool"] for role, r in sorted(p["roles"].items())}


def _shape(p: dict) -> dict[str, tuple[int, int]]:
    return {role: (int(r["workers"]), int(r["nodes"])) for role, r in sorted(p["roles"].items())}


def _resized(a: tuple[int, int], b: tuple[int, int]) -> str:
    """Workers, and nodes per worker where those changed too: `1 -> 2 workers`, `1x2 -> 1x1 workers x nodes`."""
    per = [n // w if w else 0 for w, n in (a, b)]
    if per[0] == per[1]:
        return f"{a[0]} -> {b[0]} workers"
    return f"{a[0]}x{per[0]} -> {b[0]}x{per[1]} workers x nodes"


_REPLACED = {"surge": ("surged", "the new one is created beside it and awaited Ready; the old one is deleted at "
                                 "the end of `up`"),
             "roll": ("rolled", "replaced in place, the old one deleted first, step {step} of the one-at-a-time order"),
             "kept": ("kept", "")}


def _where(p: dict) -> str:
    return p["cluster"] + " (" + ", ".join(f"{role} {pool}" for role, pool in _pools(p).items()) + ")"


def replica_changes(before: dict, after: dict, desired: dict[str, int], moves: dict[tuple[str, int], str],
                    repack: bool = False, transitions: dict | None = None) -> list[dict]:
    """Replicas added, moved (another cluster or pool), resized (other workers on the same pools),
    surged, rolled or kept (a new shape: see scheduler/surge.py) or removed between two plan
    documents, each with its reason. `desired`: replicas per deployment now; `moves`: why the
    scheduler did not keep a previous replica where it was; `transitions`: the plan document's
    transitions by (deployment, replica)."""
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
        t = (transitions or {}).get(key)
        if t is not None and t["how"] in _REPLACED:
            change, detail = _REPLACED[t["how"]]
            to = t["to"] or {}
            out.append({"change": change, **entry, "from": f"{t['from']['cluster']} ({t['from'].get('shape', '?')})",
                        "to": f"{to.get('cluster')} ({to.get('shape', '?')})",
                        "reason": t["why"] + (f"; {detail.format(step=t.get('step'))}" if detail else "")})
            continue
        if (was["cluster"], _pools(was)) != (now["cluster"], _pools(now)):
            why = moves.get(key, "re-pack" if repack else "placed again")
            out.append({"change": "moved", **entry, "from": _where(was), "to": _where(now), "reason": why})
        elif _shape(was) != _shape(now):
            a, b = _shape(was), _shape(now)
            why = ", ".join(f"{role} {_resized(a.get(role, (0, 0)), b.get(role, (0, 0)))}"
                            for role in sorted(set(a) | set(b)) if a.get(role) != b.get(role))
            out.append({"change": "resized", **entry, "from": was["cluster"], "to": now["cluster"], "reason": why})
    return out


def _minus(a: dict, b: dict, digits: int) -> dict:
    return {"min": round(a["min"] - b["min"], digits), "max": round(a["max"] - b["max"], digits)}


_ZERO = {"hourly": {"min": 0.0, "max": 0.0}, "monthly": {"min": 0.0, "max": 0.0}}


def _delta(a: dict, b: dict) -> dict:
    """`a` (after) less `b` (before). Unpriced nodes are never $0: a side with any carries them in
    `unpricedNodes` ({before, after}) and the money is then only the priced part (`priced: false`)."""
    out = {"hourly": _minus(a["hourly"], b["hourly"], 4), "monthly": _minus(a["monthly"], b["monthly"], 2),
           "before": b["hourly"], "after": a["hourly"]}
    lo, hi = int(b.get("unpricedNodes", 0)), int(a.get("unpricedNodes", 0))
    if lo or hi:
        out["unpricedNodes"] = {"before": lo, "after": hi}
        out["priced"] = False
    return out


def cost_delta(before: dict, after: dict) -> dict:
    """The cost of `after` less that of `before` ($/hour and $/month, at minimum and at the
    autoscaling maximum), per deployment whose cost changed and for the stack (idle nodes included)."""
    old = {d["deployment"]: d for d in before.get("deployments", [])}
    new = {d["deployment"]: d for d in after.get("deployments", [])}
    rows = []
    for name in sorted(set(old) | set(new)):
        row = {"deployment": name, **_delta(new.get(name, _ZERO), old.get(name, _ZERO))}
        if row["hourly"]["min"] or row["hourly"]["max"] or row.get("unpricedNodes"):
            rows.append(row)
    return {"deployments": rows, "stack": _delta(after.get("stack", _ZERO), before.get("stack", _ZERO))}


def traffic_delta(before: list[dict] | None, after: list[dict], ttl: int | None = None) -> list[dict] | None:
    """Per service whose cluster shares move: each cluster's share (per mille) before and after;
    None when the previous plan has no services section. Of the clusters whose DNS record of the
    service had weight and goes in the `up` that deletes their routes (render/rollout.py):
    `drained`, those whose record the previous plan drains (`dns[].drainSeconds`: the routes go
    that long after the record), and `undrained`, the others: requests from resolvers that cached
    the record within `ttl` seconds find no route."""
    if before is None:
        return None
    old = {s["service"]: s for s in before}
    out = []
    for s in after:
        prev = old.get(s["service"], {})
        was, now = prev.get("clusters", {}), s["clusters"]
        if was != now:
            row = {"service": s["service"], "before": dict(sorted(was.items())), "after": dict(sorted(now.items())),
                   **({"status": s["status"], "missing": s["missing"]} if s["status"] == "degraded" else {})}
            kept = {r["cluster"] for r in s.get("dns") or []}
            left = [r for r in prev.get("dns") or [] if r.get("weight") and r["cluster"] not in kept]
            drained = {r["cluster"]: r["drainSeconds"] for r in left if r.get("drainSeconds")}
            gone = sorted(r["cluster"] for r in left if r["cluster"] not in drained)
            if drained and s.get("hostname"):
                row["drained"] = {"clusters": sorted(drained), "seconds": max(drained.values())}
            if gone and s.get("hostname") and ttl:
                row["undrained"] = {"clusters": gone, "ttl": ttl}
            out.append(row)
    return out


def spread_lost(before: dict, after: dict, groups: dict[str, list[str]], before_cost: dict,
                after_cost: dict) -> list[dict]:
    """Per service (`groups`: service -> its deployments; a deployment behind none stands alone)
    that still has replicas: each region it had a replica in before and has none in now (and
    whether its cloud is gone too), the replicas that left, what they cost there before and where
    they run now, and the paid nodes (minNodes) idle there now: the cost of keeping the spread."""
    where = {c["cluster"]: (c.get("cloud") or "", c.get("region") or "")
             for doc in (before, after) for c in doc.get("clusters") or []}
    was = before.get("placements") or []
    hourly = [{(r["deployment"], int(r["replica"])): r["hourly"]["max"] for r in cost.get("replicas") or []}
              for cost in (before_cost, after_cost)]
    idle = {}
    for row in (after_cost.get("idle") or {}).get("pools") or []:
        idle.setdefault(row["cluster"], []).append(row)
    out = []
    for name, deps in sorted(groups.items()):
        b = [p for p in was if p["deployment"] in deps and p["cluster"] in where]
        a = [p for p in after["placements"] if p["deployment"] in deps and p["cluster"] in where]
        if not b or not a:
            continue
        spread = [sorted({where[p["cluster"]][i] for p in ps} - {""}) for ps in (b, a) for i in (0, 1)]
        for region in sorted(set(spread[1]) - set(spread[3])):
            gone = [p for p in b if where[p["cluster"]][1] == region]
            cloud = where[gone[0]["cluster"]][0]
            keys = [(p["deployment"], int(p["replica"])) for p in gone]
            clusters = sorted({p["cluster"] for p in gone})
            there, now = (round(sum(h.get(k, 0.0) for k in keys), 2) for h in hourly)
            paid = [{"pool": f"{r['cluster']}/{r['pool']}", "nodes": r["nodes"]["max"], "hourly": round(r["hourly"]["max"], 2)}
                    for c in clusters for r in idle.get(c, [])]
            # keeping them there: not paying for where they run now, and paying there only beyond the idle paid nodes
            keep = round(now - max(0.0, there - sum(r["hourly"] for r in paid)), 2)
            out.append({"service": name, "region": region, "cloud": cloud, "cloudLost": cloud not in spread[2],
                        "before": {"clouds": spread[0], "regions": spread[1]},
                        "after": {"clouds": spread[2], "regions": spread[3]},
                        "replicas": [f"{d}#{i}" for d, i in keys], "clusters": clusters,
                        "hourlyThere": there, "hourlyNow": now, "idlePaidThere": paid, "keepingSavesHourly": keep})
    return out


def spread_text(row: dict) -> str:
    """A lost spread as the change list shows it, with the cost of keeping it."""
    gone = f"{row['region']}" + (f" and on {row['cloud']}" if row["cloudLost"] else "")
    idle = row["idlePaidThere"]
    pools = ", ".join(f"{r['pool']} {_nodes(r['nodes'])} {money(r['hourly'])}/h" for r in idle)
    paid = f"; paid nodes idle there now: {pools}" if idle else ""
    one = len(row["replicas"]) == 1
    keep = row["keepingSavesHourly"]
    verdict = (f"keeping {'it' if one else 'them'} there would cost {money(keep)}/h less" if keep > 0.005 else
               f"keeping {'it' if one else 'them'} there would cost {money(-keep)}/h more" if keep < -0.005 else
               f"keeping {'it' if one else 'them'} there would cost the same")
    return (f"no replica left in {gone} (clouds {'+'.join(row['before']['clouds'])} -> {'+'.join(row['after']['clouds'])}, "
            f"regions {'+'.join(row['before']['regions'])} -> {'+'.join(row['after']['regions'])}): "
            f"{', '.join(row['replicas'])} left {', '.join(row['clusters'])}; {verdict} ({money(row['hourlyThere'])}/h "
            f"there before, {money(row['hourlyNow'])}/h where {'it runs' if one else 'they run'} now{paid})")


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


def _nodes(n: int) -> str:
    return f"{n} node{'s' if n != 1 else ''}"


def priced(span: dict, unpriced: int = 0) -> str:
    """An hourly cost as a person reads it, its unpriced nodes named: `$199/h`, `$338/h + 8
    unpriced nodes`, `unpriced (8 nodes)`; never `$0.00/h` for capacity nothing prices."""
    from .cost import money_span

    if unpriced and span["max"] == 0:
        return f"unpriced ({_nodes(unpriced)})"
    return f"{money_span(span)}/h" + (f" + {unpriced} unpriced node{'s' if unpriced != 1 else ''}" if unpriced else "")


def cost_change(row: dict) -> str:
    """One row of a cost delta: before -> after and the change; with unpriced nodes on either side
    the change is not known, and only the priced part of it is shown."""
    u = row.get("unpricedNodes") or {}
    text = f"{priced(row['before'], u.get('before', 0))} -> {priced(row['after'], u.get('after', 0))}"
    if row.get("priced") is False:
        return (f"{text} (change not known: {_nodes(max(u.get('before', 0), u.get('after', 0)))} unpriced; "
                f"priced part {signed_money(row['hourly'])}/h)")
    return f"{text} ({signed_money(row['hourly'])}/h, {signed_money(row['monthly'])}/month)"


def serving_text(row: dict) -> str:
    """A disruption as the change list shows it: `serving during change: 0/2 (outage): why`."""
    mark = " (outage)" if row["servingDuring"] == 0 else ""
    allowed = " [allowDisruption]" if row.get("allowed") else ""
    return f"serving during change: {row['servingDuring']}/{row['servingBefore']}{mark}{allowed}: {row['cause']}"


def traffic_text(row: dict) -> str:
    """A service's traffic delta: each cluster's share before -> after."""
    clusters = sorted(set(row["before"]) | set(row["after"]))
    moves = ", ".join(f"{c} {row['before'].get(c, 0) / 10:.1f}% -> {row['after'].get(c, 0) / 10:.1f}%" for c in clusters)
    moves += f" (degraded: {', '.join(row['missing'])} lost)" if row.get("status") == "degraded" else ""
    if row.get("drained"):
        moves += "; " + drained_text(row["drained"])
    if row.get("undrained"):
        moves += "; " + undrained_text(row["undrained"])
    return moves


def drained_text(d: dict) -> str:
    """How a cluster's last share of a service leaves DNS before its routes go."""
    names = ", ".join(d["clusters"])
    return (f"DNS drained over {d['seconds']} s: {names} leaves the name's DNS answers first, and its routes "
            f"there go {d['seconds']} s later (the record's TTL, plus a margin), so clients that resolved it "
            f"still find a route; this `up` takes that much longer")


def undrained_text(u: dict) -> str:
    """Why a cluster's last share of a service drops requests for about a TTL, and the fix."""
    names = ", ".join(u["clusters"])
    return (f"DNS not drained: {names} leaves the name's DNS answers in the same `up` that deletes its routes there "
            f"(a Route 53 record goes seconds before them), so clients that resolved it in the last {u['ttl']} s (the "
            f"record's TTL, plus the DNS provider's propagation) get no route there; fix: lower dns.ttl (e.g. 5) in an "
            f"`up` before this one and wait the old TTL, or accept the window; with dns.drain (the default) each "
            f"record an `up` made already has its drain, and a move then waits the TTL (docs/routing.md)")
