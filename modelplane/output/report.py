"""Turn an offline run into the plan document (design section 7), manifests and tables."""
from __future__ import annotations

import json
from collections import Counter
from datetime import date
from pathlib import Path

import yaml

from ..api.previous import API_VERSION
from ..analysis.changes import (cost_delta, digests, disrupted, encoder, floatless, replica_changes,
                                resource_changes, spread_lost, traffic_delta)
from ..analysis.disruptions import disruptions, transitions, up_order
from ..engine.records import SIG_KEY, OfflineRun, is_unknown
from ..render.names import DEPLOYMENT, REPLICA
from ..render.stack import detection_window

K8S_SKIP = ("kubernetes:helm.sh/",)



UNKNOWN = "(known after apply)"


# libyaml's emitter when PyYAML has it: the same YAML text, several times faster.
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
REDACTED = "(secret)"


def _ints(value, secret: bool = False):
    """Mock inputs carry numbers as floats (written back as integers where whole), unknown values
    for outputs of resources not yet created (written as a marker, as `pulumi preview` does) and
    secrets (written as a marker: their values never reach a file)."""
    cls = value.__class__
    if cls is str:                  # the common cases first, by exact class; leaves inline below
        return REDACTED if secret else value
    if cls is dict:
        if SIG_KEY in value:
            return _ints(value.get("value"), True)
        if secret:
            return {k: _ints(v, True) for k, v in value.items()}
        out = {}
        for k, v in value.items():
            c = v.__class__
            out[k] = v if c is str or c is bool or c is int or v is None else _ints(v)
        return out
    if cls is list:
        if secret:
            return [_ints(v, True) for v in value]
        return [v if v.__class__ is str else _ints(v) for v in value]
    if cls is bool or cls is int or value is None:
        return value
    if cls is float:
        return int(value) if value.is_integer() else value
    if is_unknown(value):
        return UNKNOWN
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        if SIG_KEY in value:
            return _ints(value.get("value"), True)
        return {k: _ints(v, secret) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v, secret) for v in value]
    if secret and isinstance(value, str):
        return REDACTED
    return value


def _cluster_of(run: OfflineRun) -> dict[str, str]:
    """urn -> cluster name, from the k8s provider or the InferenceCluster ancestor."""
    by_urn = {r.urn: r for r in run.records}
    providers = {r.urn: r.name[:-4] for r in run.records if r.type == "pulumi:providers:kubernetes"}
    out = {}
    for r in run.records:
        prov = r.provider.rsplit("::", 1)[0] if r.provider else ""
        if prov in providers:
            out[r.urn] = providers[prov]
            continue
        node = r
        while node is not None:
            if node.type == "modelplane:index:InferenceCluster":
                out[r.urn] = node.name
                break
            node = by_urn.get(node.parent)
    return out


def is_manifest(r) -> bool:
    """A Kubernetes object to apply as it is (not a Helm release, manifest file or patch)."""
    return (r.custom and r.type.startswith("kubernetes:") and not r.type.startswith(K8S_SKIP)
            and not r.type.endswith("Patch"))


def type_file(type_token: str) -> str:
    """A resource type as a file-name prefix: gcp:container/nodePool:NodePool -> gcp.container.NodePool,
    kubernetes:helm.sh/v3:Release -> kubernetes.helm.sh.v3.Release."""
    pkg, module, cls = type_token.split(":")
    module = module.replace("/", ".") if pkg == "kubernetes" else module.split("/")[0]
    return f"{pkg}.{module}.{cls}"


def _replica_of(r) -> tuple[str, int] | None:
    """The deployment and replica a Kubernetes object belongs to, from its labels."""
    meta = r.inputs.get("metadata") if r.custom and r.type.startswith("kubernetes:") else None
    labels = (meta or {}).get("labels") or {} if isinstance(meta, dict) else {}
    if DEPLOYMENT in labels and REPLICA in labels and isinstance(labels[REPLICA], str):
        return f"{meta.get('namespace')}/{labels[DEPLOYMENT]}", int(labels[REPLICA])
    return None


def document(run: OfflineRun, violations: list[dict]) -> dict:
    clusters = _cluster_of(run)
    # dependsOn names a resource's dependencies by name; a URN carries the name after its last "::".
    names = {r.urn: r.name for r in run.records if r.type != "pulumi:pulumi:Stack"}
    # dependency URNs -> their names, one list for every resource with those dependencies (at 100 x
    # 2,000, 5,817 lists for 26,341 resources)
    named: dict[tuple, list] = {}
    same: dict = {}         # equal inputs, one digest and fieldDigests dict (changes.digests)
    resources = Floatless()
    for r in run.records:
        if r.type == "pulumi:pulumi:Stack":
            continue
        item = {"type": r.type, "name": r.name}
        if r.urn in clusters:
            item["cluster"] = clusters[r.urn]
        if r.import_id:
            item["import"] = r.import_id
        if r.protect:
            item["protect"] = True
        if r.delete_before_replace:
            item["deleteBeforeReplace"] = True
        if r.replace_on_changes:
            item["replaceOnChanges"] = list(r.replace_on_changes)
        if r.retain_on_delete:
            item["retainOnDelete"] = True
        # keyed by URN: a dependency may share the resource's name (a Helm release on its same-named
        # PodIdentityAssociation) and must still show
        on = tuple(r.dependencies)
        deps = named.get(on)
        if deps is None:
            deps = named[on] = sorted({names[d] for d in on if d in names})
        if r.urn in on:
            deps = sorted({names[d] for d in on if d in names and d != r.urn})
        if deps:
            item["dependsOn"] = deps
        owner = _replica_of(r)
        if owner:
            item["deployment"], item["replica"] = owner
        # what the next plan compares against (`plan --previous`): digests, never the values
        plain = r.urn in run.plain          # the inputs as given: no float (changes.floatless)
        item["digest"], item["fieldDigests"] = digests(manifest_of(run, r), same, plain)
        resources.append(item)
    resources.sort(key=lambda i: (i.get("cluster", ""), i["type"], i["name"]))
    plan = run.result.plan
    placements = [p.to_json() for p in plan.placements]
    cost = cost_of(run, placements)
    doc = {
        "apiVersion": API_VERSION,
        "kind": "Plan",
        "stack": run.stack,
        "placements": placements,
        "unplaced": [u.to_json() for u in plan.unplaced],
        # per deployment: the model facts the rules used (and their source), KV cache per placed role
        "models": {key: row for key, row in sorted(run.result.models.items())},
        "fill": {"phase": plan.phase, "changed": [{"deployment": d, "replica": i, "fastPath": a, "exact": b}
                                                  for d, i, a, b in plan.changed]},
        "progress": plan.progress,
        "envelope": envelopes(run, placements),
        "idlePrefill": idle_prefill_of(run, placements),
        "scaleOrder": scale_orders(run),
        "transitions": (moved := transitions(run.result.plan, run.result.previous)),
        "upOrder": up_order(moved),
        "disruptions": disruptions(run.result.plan, run.result.previous, None, _specs(run), *_dns_view(run)),
        "services": (served := services(run)),
        "modelNames": models_by_hostname(served),    # per hostname: the model names it routes, by service
        "cost": cost,
        "sizing": sizing_of(run, placements, cost),
        "clusters": clusters_of(run),
        "resources": resources,
        "policy": {"violations": violations},
    }
    if run.result.catalog.overrides:       # the user's classes, models and prices that replace built-ins
        doc["catalog"] = {"overrides": run.result.catalog.overrides}
    return doc


def refusal(stack: str, problems) -> dict:
    """The document `plan --format json` prints for refused input: every problem, nothing planned."""
    return {"apiVersion": API_VERSION, "kind": "Plan", "stack": stack, "refused": True,
            "problems": [{k: v for k, v in (("file", p.file), ("line", p.line), ("path", p.path),
                                             ("message", p.message), ("fix", p.fix), ("rule", p.rule)) if v is not None}
                         for p in problems]}


def sizing_of(run: OfflineRun, placements: list[dict], cost: dict) -> list[dict]:
    """Per deployment sized from an SLO: objective, traffic, choice, prediction, what is served
    and what it costs, the alternatives and the frontier (sizing/report.py)."""
    if not run.result.sizing:
        return []
    from ..sizing.report import row

    by_d, placed = {c["deployment"]: c for c in cost["deployments"]}, _by_deployment(placements)
    return [row(s, c, placed.get(key, []), run.result.inventories, by_d.get(key))
            for key, (s, c) in sorted(run.result.sizing.items())]


def _by_deployment(placements: list[dict]) -> dict[str, list[dict]]:
    """Placements per deployment key, in the plan's order (read once, not once per deployment)."""
    out: dict[str, list[dict]] = {}
    for p in placements:
        out.setdefault(p["deployment"], []).append(p)
    return out


_FLEET_RUNS: dict[tuple[str, str], list] = {}


def fleet_runs(run: OfflineRun, path: Path | None) -> list[OfflineRun]:
    """An infra stack's users: each apps stack whose fleet names it (engine/references.py
    fleet_users), planned offline as it stands: what runs on the infra stack's pools. Once per
    process: the change view and the gate read the same plans. None for an apps stack."""
    from ..engine.direct import run as plan_stack
    from ..engine.references import fleet_users

    if run.result.spec.deployments:
        return []
    key = (run.stack, str(path))
    if key not in _FLEET_RUNS:
        _FLEET_RUNS[key] = [plan_stack(name, file) for name, file in fleet_users(run.stack, path)]
    return _FLEET_RUNS[key]


def changes_against(run: OfflineRun, doc: dict, previous: dict, path: Path | None = None) -> dict:
    """The change view of `doc` (this run's plan document) against a previous plan document:
    `changes` per resource (None when the previous plan carries no digests), `replicaChanges` and
    `costDelta`. A previous plan without a cost section is priced at today's prices. An infra
    stack's plan (`path`: its file) names, on a replaced node pool, the replicas of the apps stacks
    that run there (C6), and their disruptions."""
    from ..analysis.changes import POOL_TYPES
    from ..analysis.disruptions import fleet_disruptions

    from ..analysis.changes import own_pools

    plan = run.result.plan
    migrating = own_pools(previous.get("resources"), doc["resources"])
    if migrating and not run.result.spec.per_replica_pools:
        from ..api.loader import NAMESPACE, display_path
        from ..errors import InputError, Problem

        raise InputError([Problem(display_path(path) if path else f"Pulumi.{run.stack}.yaml",
                                  f"config.{NAMESPACE}:perReplicaPools",
                                  "the previous plan runs these KServe deployments on each replica's own "
                                  f"InferencePool ({'; '.join(migrating)}); naming the shared pool now makes KServe "
                                  "delete those pools while the routes still point at them",
                                  "move in two `up`s: first with modelplane:perReplicaPools: true (the shared pools, "
                                  "pickers and routes to them are created; KServe keeps its own), then without it "
                                  "(docs/changes.md)")])
    before_cost = previous.get("cost") or cost_of(run, previous.get("placements") or [])
    moves = {(m.deployment, m.replica): m.why for m in plan.moves}
    changes = resource_changes(previous.get("resources"), doc["resources"])
    disrupted(changes, previous.get("placements") or [])
    apps = []
    if any(c["action"] == "replace" and c["type"] in POOL_TYPES for c in changes or []):
        users = fleet_runs(run, path)
        disrupted(changes, [p.to_json() for u in users for p in u.result.plan.placements])
        apps = [(u.stack, u.result.plan, _specs(u)) for u in users]
    return {"changes": changes,
            "replicaChanges": replica_changes(previous, doc, dict(plan.desired), moves, run.result.spec.repack,
                                              {(t["deployment"], t["replica"]): t for t in doc["transitions"]}),
            "disruptions": disruptions(plan, run.result.previous, changes, _specs(run), *_dns_view(run))
            + fleet_disruptions(changes, apps),
            "trafficDelta": traffic_delta(previous.get("services"), doc["services"],
                                          run.result.spec.dns.ttl if run.result.spec.dns else None),
            "spread": spread_lost(previous, doc, _groups(run), before_cost, doc["cost"]),
            "costDelta": cost_delta(before_cost, doc["cost"])}


def _groups(run: OfflineRun) -> dict[str, list[str]]:
    """service -> the deployments it routes to; a deployment behind no service stands alone."""
    spec = run.result.spec
    out = {svc.key: sorted({e.key(svc.namespace) for e in svc.endpoints if e.deployment is not None})
           for svc in spec.services}
    behind = {d for deps in out.values() for d in deps}
    out.update({d.key: [d.key] for d in spec.deployments if d.key not in behind})
    return {k: v for k, v in out.items() if v}


def envelopes(run: OfflineRun, placements: list[dict]) -> list[dict]:
    """Per deployment with autoscaled GPU roles: GPUs at minimum and reserved maximum, and the free
    GPUs its pools have left after the plan (its headroom)."""
    from ..engine.fleet import envelope

    out = []
    free, placed = run.result.plan.free, _by_deployment(placements)
    for md in sorted(run.result.spec.deployments, key=lambda d: d.key):
        row = envelope(md, placed.get(md.key, []))
        if row:
            row["headroom"] = {where: free.get(tuple(where.split("/", 1)), 0) for where in row["pools"]}
            out.append(row)
    return out


def idle_prefill_of(run: OfflineRun, placements: list[dict]) -> list[dict]:
    """Native disaggregated replicas whose prefill GPUs no request reaches (fleet.idle_prefill)."""
    from ..engine.fleet import idle_prefill

    placed = _by_deployment(placements)
    return [row for md in sorted(run.result.spec.deployments, key=lambda d: d.key)
            for row in idle_prefill(md, placed.get(md.key, []))]


def _dns_view(run) -> tuple[dict, int | None, dict]:
    """The services' routes, the DNS detection window (None: no DNS) and each service's per-replica
    records (render/stack.py split_records), for the disruption view."""
    dns = run.result.spec.dns
    return run.result.routes, (detection_window(dns) if dns is not None else None), run.result.splits


def _specs(run: OfflineRun) -> dict:
    return {d.key: d for d in run.result.spec.deployments}


def scale_orders(run: OfflineRun) -> list[dict]:
    """InPlace replicas that change size where they run: the order `up` changes their roles in,
    each role's workload awaited Ready (`pulumi.com/waitFor`) before the next starts."""
    from ..render.order import scale_order

    specs = {md.key: md for md in run.result.spec.deployments}
    before = {(p.deployment, p.replica): p for p in run.result.previous}
    out = []
    for p in run.result.plan.placements:
        order = scale_order(specs[p.deployment], p, before.get((p.deployment, p.replica)))
        if order:
            was = before[(p.deployment, p.replica)].roles["decode"].workers
            out.append({"deployment": p.deployment, "replica": p.replica, "cluster": p.cluster,
                        "decode": {"from": was, "to": p.roles["decode"].workers}, "order": order, "awaited": True})
    return out


def cost_of(run: OfflineRun, placements: list[dict]) -> dict:
    from ..analysis.cost import fleet_cost
    from ..engine.fleet import minimum_workers

    spec = run.result.spec
    # Idle nodes are charged to the plan that sees the usage: the apps plan for fleet clusters.
    inventories = {n: inv for n, inv in run.result.inventories.items() if n not in run.lost}
    # Prices' age is counted on the day of the plan: the same plan on the same day gives the same document.
    return fleet_cost(placements, inventories, {d.key: minimum_workers(d) for d in spec.deployments}, set(inventories),
                      date.today())


def repack_of(run: OfflineRun):
    """What a from-scratch exact plan of this run's inputs would move and gain (`plan --repack`)."""
    from ..engine.fleet import cluster_from_inventory, demand_from
    from ..scheduler.repack import repack

    catalog = run.result.catalog
    clusters = [cluster_from_inventory(inv) for n, inv in run.result.inventories.items() if n not in run.lost]
    return repack([demand_from(d, catalog) for d in run.result.spec.deployments], clusters, run.result.plan)


def clusters_of(run: OfflineRun) -> list[dict]:
    """Every cluster the plan could place on, with its GPU pools (the report draws these)."""
    out = []
    for name, inv in sorted(run.result.inventories.items()):
        if name in run.lost:
            continue
        out.append({"cluster": name, "cloud": inv.get("cloud"), "region": inv.get("region"),
                    "pools": [{"name": p["name"], "class": p["class"], "capacityType": p.get("capacityType"),
                               **{k: int(p[k]) for k in ("gpusPerNode", "minNodes", "maxNodes")}}
                              for p in inv.get("pools", [])]})
    return out


def models_by_hostname(services: list[dict]) -> dict[str, dict[str, str]]:
    """hostname -> {model name clients send: service}: what each hostname answers to (a shared one
    routes by that name; any other name gets 404)."""
    out: dict[str, dict[str, str]] = {}
    for s in services:
        if s["hostname"]:
            out.setdefault(s["hostname"], {})[s["model"]] = s["service"]
    return {h: dict(sorted(m.items())) for h, m in sorted(out.items())}


def services(run: OfflineRun) -> list[dict]:
    """Per service: where its traffic goes. Shares are per mille of the service's requests; DNS
    weights are the clusters' shares in whole percent."""
    from ..api.rules import served_model
    from ..render.stack import gateway_record

    from ..render.stack import shared_weights
    from ..render.drain import DRAIN_TYPE
    from ..analysis.services import shared_hostnames

    spec = run.result.spec
    providers = {p.name: p for p in spec.providers}
    shared = shared_hostnames(spec.services)
    # (hostname, cluster) -> the seconds its drain waits when the cluster's record goes (render/drain.py)
    drains = {(r.inputs["hostname"], r.inputs["cluster"]): int(r.inputs["seconds"]) for r in run.records
              if r.type == DRAIN_TYPE}
    out = []
    for svc in sorted(spec.services, key=lambda s: s.key):
        routes = run.result.routes[svc.key]
        # A shared hostname's records carry all its services together (render/stack.py shared_records).
        weights = shared_weights([(s, run.result.routes[s.key]) for s in shared[svc.hostname]]) \
            if svc.hostname in shared else routes.dns
        entry = {"service": svc.key, "hostname": svc.hostname, "model": served_model(svc, providers),
                 "routedBy": "model" if svc.hostname in shared else "hostname",
                 "status": "degraded" if routes.degraded else "ok", "missing": routes.missing,
                 "endpoints": [{"target": e["target"], "weight": e["weight"], "share": e["units"],
                                "clusters": e["clusters"]} for e in routes.endpoints],
                 "clusters": routes.clusters, "dns": []}
        if routes.fallback:
            entry["fallback"] = {"provider": routes.fallback, "standby": routes.standby}
        split = run.result.splits.get(svc.key, {})
        # Standby clusters of a fallback: weight-0 records (Route 53 only; without DNS, for your own).
        standby = {} if svc.hostname in shared or (spec.dns is not None and spec.dns.kind != "route53") else \
            {c: 0 for c in routes.standby if c not in weights}
        for cluster, weight in sorted({**weights, **standby}.items()):
            gateway = run.result.inventories[cluster].get("gateway") or {}
            record = {"cluster": cluster, "weight": weight,
                      "gateway": f"{gateway.get('namespace')}/{gateway.get('name')}"}
            if spec.dns is not None and svc.hostname:
                record["target"] = gateway_record(spec.dns.zone.domain, cluster) if spec.dns.kind == "route53" \
                    else "gateway address (A)"
                if cluster in split:      # one record per replica, each with its own check (review N11)
                    record["replicas"] = [{"replica": f"{key}#{i}", "weight": w}
                                          for (key, i), w in sorted(split[cluster].items())]
                if (svc.hostname, cluster) in drains:
                    record["drainSeconds"] = drains[(svc.hostname, cluster)]
            entry["dns"].append(record)
        out.append(entry)
    return out


def manifest(r) -> dict:
    """A recorded resource's inputs as written to a file: whole numbers, secrets redacted."""
    return _ints(r.inputs)


def manifest_of(run: OfflineRun, r) -> dict:
    """`manifest(r)`; inputs the direct engine recorded as given (plain JSON with integers,
    engine/direct.py) are that already: no second pass over them."""
    return r.inputs if r.urn in run.plain else _ints(r.inputs)


def to_json(doc: dict) -> str:
    """`json.dumps(doc, indent=2, ensure_ascii=False)` and a newline, byte for byte. The json
    module encodes indented text in Python generators (its C encoder takes no indent), most of a
    large plan's JSON time; this writes the same text in one recursion with the C string encoder."""
    return "".join(_pieces(doc))


class Later:
    """A top-level document value made when it is written (`write_json`) or settled (`settle`):
    the gate's verdicts, which arrive from the other core while the rest is written."""

    __slots__ = ("make",)

    def __init__(self, make):
        self.make = make


def settle(doc: dict) -> None:
    """Every `Later` value of `doc` made now, in place."""
    for key, value in doc.items():
        if value.__class__ is Later:
            doc[key] = value.make()


def write_json(doc: dict, write, utf8: bool = False) -> None:
    """`to_json(doc)` passed to `write` in pieces, one per top-level list item: a large plan's text
    (tens of MiB) is never held whole, nor its nested copies. `utf8`: `write` takes that text's
    UTF-8 bytes (a binary stream): orjson's bytes for the resources go as they come, never
    decoded and encoded again (a sixth of writing a large plan)."""
    if utf8:
        for piece in _pieces(doc, True):
            write(piece if piece.__class__ is bytes else piece.encode())
        return
    for piece in _pieces(doc):
        write(piece)


def _pieces(doc, utf8: bool = False):
    if doc.__class__ is not dict or not doc or any(k.__class__ is not str for k in doc):
        yield _item(doc, "\n") + "\n"
        return
    lead = "{\n  "
    for key, value in doc.items():
        if value.__class__ is Later:
            value = doc[key] = value.make()
        yield lead + _STR(key) + ": "
        lead = ",\n  "
        if (value.__class__ is list or value.__class__ is Floatless) and value:
            first, after, item = "[\n    ", ",\n    ", _item
            if value.__class__ is Floatless and _INDENT is not None:      # orjson's, as bytes where asked
                first, after, item = (b"[\n    ", b",\n    ", _floatless_bytes) if utf8 else \
                    (first, after, _floatless_item)
            for x in value:
                yield first + item(x, "\n    ")
                first = after
            yield "\n  ]"
        else:
            yield _item(value, "\n  ")
    yield "\n}\n"


class Floatless(list):
    """A top-level list whose items hold no float, by how they are made: the document's resources
    (names, flags, a replica's index, digests). orjson writes its items (`floatless`: json's text,
    a fifth of the time); any other list is written by the json module's rules."""

    __slots__ = ()


_INDENT = floatless(indent=True)
_INDENT_BYTES = floatless(indent=True, utf8=True)


def _floatless_item(value, nl: str) -> str:
    try:
        return _INDENT(value).replace("\n", nl)
    except TypeError:               # orjson.JSONEncodeError: an odd key or value; json then
        return _item(value, nl)


def _floatless_bytes(value, nl: str) -> bytes:
    """`_floatless_item`'s text as UTF-8."""
    try:
        return _INDENT_BYTES(value).replace(b"\n", nl.encode())
    except TypeError:
        return _item(value, nl).encode()


def _item(value, nl: str) -> str:
    """One value's indented text at the depth `nl` gives. What `_indented` leaves to the json
    module is encoded by it at depth 0 and moved: a JSON text holds no raw newline but its
    indentation's, so prefixing each line gives json.dumps' own text for the deeper place."""
    try:
        return _indented(value, nl)
    except _Unusual:
        return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", nl)


class _Unusual(Exception):
    """A value `_indented` leaves to the json module (subclasses, non-str keys, NaN, other types)."""


_STR = json.encoder.encode_basestring       # the C function json.dumps uses with ensure_ascii=False
_INF = float("inf")


_SCALARS = frozenset((str, int, float, bool, type(None)))
_FLAT: dict[str, object] = {}


def _flat(v, inner: str, nl: str, opening: str, closing: str) -> str:
    """A container of scalars only, in one call to json's C encoder: its item separator carries the
    newline and indent, so the text is json.dumps(indent=2)'s for that depth."""
    encode = _FLAT.get(inner)
    if encode is None:
        encode = _FLAT[inner] = encoder(ensure_ascii=False, allow_nan=False, separators=("," + inner, ": "))
    try:
        text = encode(v)
    except ValueError:              # NaN or an infinity
        raise _Unusual from None
    return opening + inner + text[1:-1] + nl + closing


def _indented(v, nl: str) -> str:
    cls = v.__class__
    if cls is str:
        return _STR(v)
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if cls is int:
        return int.__repr__(v)
    if cls is float:
        if v != v or v == _INF or v == -_INF:
            raise _Unusual
        return float.__repr__(v)
    inner = nl + "  "
    if cls is dict:
        if not v:
            return "{}"
        flat = True
        for k, x in v.items():
            if k.__class__ is not str:
                raise _Unusual
            if x.__class__ not in _SCALARS:
                flat = False
        if flat:
            return _flat(v, inner, nl, "{", "}")
        parts = [f"{_STR(k)}: {_indented(x, inner)}" for k, x in v.items()]
        return "{" + inner + ("," + inner).join(parts) + nl + "}"
    if cls is list or cls is tuple:
        if not v:
            return "[]"
        for x in v:
            if x.__class__ not in _SCALARS:
                break
        else:
            return _flat(v, inner, nl, "[", "]")
        return "[" + inner + ("," + inner).join([_indented(x, inner) for x in v]) + nl + "]"
    raise _Unusual


def _safe(name: str) -> str:
    return name.replace("/", "__").replace(":", "_")


def write_out(run: OfflineRun, out: Path) -> int:
    """Kubernetes objects as DIR/<cluster>/<namespace>/<kind>-<name>.yaml (<kind>.<group>-<name>.yaml
    where two API groups have the same kind and name there, as the P/D InferencePool and its v1alpha2
    twin); every other resource's inputs (cloud resources, Helm releases, manifest files, patches) as
    YAML in DIR/cloud/<type>--<name>.pulumi, one file per resource (a suffix kubectl and schema
    validators skip)."""
    clusters = _cluster_of(run)
    files = []
    for r in sorted(run.records, key=lambda r: (r.type, r.name)):
        if r.type.startswith(("pulumi:", "modelplane:")) or not (r.custom or r.inputs):
            continue
        inputs = manifest(r)
        if is_manifest(r):
            meta = inputs.get("metadata", {})
            folder = out / clusters.get(r.urn, "_") / (meta.get("namespace") or "_cluster")
            group = inputs["apiVersion"].rpartition("/")[0] or "core"
            files.append(((folder, inputs["kind"].lower(), meta.get("name")), group, inputs))
        else:
            files.append(((out / "cloud" / f"{type_file(r.type)}--{_safe(r.name)}.pulumi",), None,
                          {"type": r.type, "name": r.name, "inputs": inputs}))
    shared = Counter(key for key, _, _ in files)
    for key, group, body in files:
        if len(key) == 1:
            path = key[0]
        else:
            folder, kind, name = key
            path = folder / (f"{kind}.{group}-{name}.yaml" if shared[key] > 1 else f"{kind}-{name}.yaml")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.dump(body, Dumper=_DUMPER, sort_keys=True, width=120))
    return len(files)


def what_if(without, before: dict, doc: dict, cost_before: dict) -> dict:
    """`plan --without`: the replicas that move, those lost, and the stack's cost and GPUs before
    and after, as the CLI prints them (the report draws this section from it). `before`:
    (deployment, replica) -> cluster in the plan with every cluster."""
    moves = [{"deployment": p["deployment"], "replica": p["replica"], "from": before.get((p["deployment"], p["replica"])),
              "to": p["cluster"]} for p in doc["placements"]
             if before.get((p["deployment"], p["replica"])) != p["cluster"]]
    lost = [{"deployment": u["deployment"], "replica": u["replica"], "from": before[(u["deployment"], u["replica"])]}
            for u in doc["unplaced"] if (u["deployment"], u["replica"]) in before]
    def head(c):
        return {"hourly": c["stack"]["hourly"], "gpus": c["stack"]["gpus"]}
    return {"without": list(without), "moves": moves, "lost": lost,
            "cost": {"before": head(cost_before), "after": head(doc["cost"])}}
