"""What `modelplane plan` prints: rich tables and lines built from the plan document and the run."""
from __future__ import annotations

import json
from pathlib import Path

from rich.table import Table

from ..scheduler.traffic import delivered


def placement_table(doc: dict) -> Table:
    table = Table(title=f"placements ({doc['stack']})", title_justify="left")
    for col in ("deployment", "replica", "cluster", "decode / unified", "prefill", "GPUs", "KV GiB/GPU"):
        table.add_column(col)
    kv = {(key, r["replica"], r["role"]): r for key, m in (doc.get("models") or {}).items() for r in m["kvCache"]}
    for p in doc["placements"]:
        roles = p["roles"]

        def cell(r):
            return f"{r['pool']}  {r['workers']}w x {r['nodes'] // r['workers']}n x {r['gpusPerNode']}g" if r else "-"
        gpus = sum(r["nodes"] * r["gpusPerNode"] for r in roles.values())
        table.add_row(p["deployment"], str(p["replica"]), p["cluster"], cell(roles.get("decode")),
                      cell(roles.get("prefill")), str(gpus), kv_cell(kv, p, roles))
    return table



def kv_cell(kv: dict, p: dict, roles: dict) -> str:
    """KV cache GiB per GPU of a replica's roles (decode first), `!` where under the floor; `-` unknown."""
    out = []
    for role in sorted(roles, key=lambda r: r != "decode"):
        row = kv.get((p["deployment"], p["replica"], role))
        if row is not None:
            low = row["kvCacheGiB"] <= 0 or ("floorGiB" in row and row["kvCacheGiB"] < row["floorGiB"])
            out.append(f"{row['kvCacheGiB']:g}{'!' if low else ''}")
    return " / ".join(out) or "-"


def cluster_table(run) -> Table:
    """The clusters this stack creates or adopts, with their GPU pools (what it exports)."""
    table = Table(title=f"clusters ({run.stack})", title_justify="left")
    for col in ("cluster", "source", "region", "pool", "class", "nodes", "GPUs/node", "capacity", "fabric", "notes"):
        table.add_column(col)
    for c in sorted(run.result.spec.clusters, key=lambda c: c.name):
        for p in run.result.inventories[c.name]["pools"]:
            fabric = p["fabric"]
            shown = fabric["effective"] if fabric["effective"] == fabric["declared"] else \
                f"{fabric['effective']} ({fabric['declared']} not wired)"
            table.add_row(c.name, c.source, c.region, p["name"], p["class"], f"{p['minNodes']}-{p['maxNodes']}",
                          str(p["gpusPerNode"]), p["capacityType"], shown, "; ".join(pool_notes(p)))
    return table



def pool_notes(pool: dict) -> list[str]:
    """What a platform engineer should know about a pool before serving on it."""
    notes = []
    if pool["capacityType"] == "flex-start":
        notes.append("flex-start VMs live at most 7 days")
    if pool["fabric"].get("via") == "gke-dranet":
        notes.append("RDMA NICs via GKE DRANET")
    if pool["fabric"].get("gpudirect"):
        g = pool["fabric"]["gpudirect"]
        notes.append(f"GPUDirect-{g['kind'].upper()} over {g['nics']} GPU NICs, NCCL_NET={g['ncclNet']} "
                     f"(release {g['released']})")
    if pool["fabric"].get("via") == "efa-device-plugin":
        notes.append(f"{pool['fabric']['efaInterfaces']} EFA interfaces per pod")
    if pool["fabric"].get("note"):
        notes.append(pool["fabric"]["note"])
    if pool.get("capacityBlockNote"):
        notes.append(pool["capacityBlockNote"])
    return notes



def summary(out, doc: dict, desired: dict[str, int]) -> None:
    placed = {}
    for p in doc["placements"]:
        placed[p["deployment"]] = placed.get(p["deployment"], 0) + 1
    short = {row["deployment"] for row in doc.get("progress") or [] if row["stuck"]}
    for key in sorted(desired):
        n, want = placed.get(key, 0), desired[key]
        mark = "[green]ok[/green]" if n == want and key not in short else "[yellow]partial[/yellow]"
        out.print(f"  {mark} {key}: {n}/{want} replicas placed")
    for row in doc.get("progress") or []:
        stuck = row["stuck"]
        if stuck and row["placed"]:
            out.print(f"  [yellow]rollout[/yellow] {row['deployment']}: {row['placed']}/{row['target']} GPU workers "
                      f"({row['percent']:g}%); stuck at replica {stuck['replica']}"
                      + (f" ({stuck['role']})" if stuck["role"] else "") + f": {stuck['reason']}: {stuck['detail']}")
    for row in doc.get("envelope") or []:
        head = ", ".join(f"{k} {v} GPU{'s' if v != 1 else ''} free" for k, v in row["headroom"].items())
        out.print(f"  envelope {row['deployment']}: {row['gpus']['min']}-{row['gpus']['max']} GPUs reserved "
                  f"(asks {row['target']['min']}-{row['target']['max']})" + (f"; headroom {head}" if head else ""),
                  markup=False)
    for row in doc.get("idlePrefill") or []:
        out.print(f"  [yellow]idle prefill[/yellow] {row['deployment']}#{row['replica']} on "
                  f"{row['cluster']}/{row['pool']}: {row['gpus']} GPUs get no traffic (native backend: no P/D "
                  "router in front of decode; use backend: kserve or drop prefill)")
    # A what-if prints its own moves and losses; these are what `up` does to a real change.
    for t in [] if doc.get("whatIf") else doc.get("transitions") or []:
        out.print("  " + transition_text(t), markup=False)
    for i, step in enumerate([] if doc.get("whatIf") else doc.get("upOrder") or [], 1):
        out.print(f"  order of `up` {i}. {step}", markup=False)
    for row in doc.get("scaleOrder") or []:
        out.print(f"  scale {row['deployment']}#{row['replica']} on {row['cluster']}: decode {row['decode']['from']} -> "
                  f"{row['decode']['to']} workers; changes {' -> '.join(row['order'])} in that order, each role's "
                  "workload awaited Ready before the next", markup=False)
    fill = doc.get("fill") or {}
    if fill.get("phase", "fast path") != "fast path":
        out.print(f"  fill: {fill['phase']}" + (f", {len(fill['changed'])} replicas placed differently from the fast "
                                                "path (--explain DEPLOYMENT shows which)" if fill["changed"] else ""),
                  markup=False)
    seen = set()
    for u in doc["unplaced"]:
        key = (u["deployment"], tuple(json.dumps(r, sort_keys=True) for r in u["reasons"]))
        replicas = [x["replica"] for x in doc["unplaced"] if x["deployment"] == u["deployment"]]
        if key in seen:
            continue
        seen.add(key)
        out.print(f"  [red]unplaced[/red] {u['deployment']} replicas {replicas}:")
        for r in u["reasons"]:
            where = r["cluster"] + (f"/{r['pool']}" if r["pool"] else "")
            out.print(f"      {r['reason']:<16} {where:<24} {r['detail']}")
    for r in doc["resources"]:
        if r.get("import"):
            out.print(f"  import {r['type'].rsplit(':', 1)[-1]} {r['import']} on {r.get('cluster', '-')}: the first "
                      "`up` takes it over (its pods are replaced only where the rendered template differs)",
                      markup=False)
    counts = {}
    for r in doc["resources"]:
        counts[r["type"]] = counts.get(r["type"], 0) + 1
    out.print("resources: " + ", ".join(f"{n} {t}" for t, n in sorted(counts.items())))



def transition_text(t: dict) -> str:
    """One replica that changes shape, pool or cluster, and how `up` does it (scheduler/surge.py)."""
    frm = f"{t['from'].get('shape', '?')} on {t['from']['cluster']}"
    to = f"{t['to']['shape']} on {t['to']['cluster']}" + (" (name slot b)" if t["to"].get("slot") else "") \
        if t["to"] else "not placed"
    head = f"{t['how']} {t['deployment']}#{t['replica']}"
    if t["how"] == "surge":
        return f"{head}: {frm} -> {to}: created beside it and awaited Ready, the old deleted at the end of `up` ({t['why']})"
    if t["how"] == "roll":
        return f"{head} (step {t['step']}): {frm} -> {to}: replaced in place, old first, one at a time ({t['why']})"
    if t["how"] == "kept":
        return f"{head} at {frm}: {t['why']}"
    return f"{head}: {frm} -> {to}: {t['why']}"


def cost_table(doc: dict) -> Table:
    """$/hour and $/month per deployment and cluster: `min` runs at minimum, `max` is the
    autoscaling envelope the plan reserves; idle nodes are minNodes no replica uses; stranded
    GPUs are those of partly used nodes no worker takes (billed with the node)."""
    from ..analysis.cost import money_span

    cost = doc["cost"]
    table = Table(title=f"cost ({doc['stack']}, {cost['currency']}, {cost['hoursPerMonth']} h/month)", title_justify="left")
    for col in ("", "name", "GPUs", "nodes", "$/hour", "$/month"):
        table.add_column(col, justify="right" if col in ("GPUs", "nodes", "$/hour", "$/month") else "left")

    def span(s):
        return str(s["min"]) if s["min"] == s["max"] else f"{s['min']}–{s['max']}"

    def row(kind, name, r):
        note = f" (+{r['unpricedNodes']} unpriced)" if r.get("unpricedNodes") else ""
        hourly, monthly = money_span(r["hourly"]) + note, money_span(r["monthly"])
        if r.get("unpricedNodes") and r["hourly"]["max"] == 0:     # nothing priced: never "$0.00"
            n = r['unpricedNodes']
            hourly, monthly = f"unpriced ({n} node{'s' if n != 1 else ''})", "unpriced"
        table.add_row(kind, name, span(r["gpus"]), span(r["nodes"]), hourly, monthly)
    for d in cost["deployments"]:
        row("deployment", d["deployment"], d)
    for i in cost["idle"]["pools"]:
        row("idle", f"{i['cluster']}/{i['pool']} ({i.get('capacityType', 'on-demand')})", i)
    for i in cost.get("stranded", {}).get("pools", []):
        row("stranded", f"{i['cluster']}/{i['pool']}", i)
    for c in cost["clusters"]:
        row("cluster", c["cluster"], c)
    row("stack", doc["stack"], cost["stack"])
    return table


def idle_paid(out, doc: dict) -> None:
    """Idle paid capacity named, and what moving replicas on bought nodes of the same GPU onto it
    would save at most (analysis.cost._movable)."""
    from ..analysis.cost import HOURS_PER_MONTH, money, money_span

    for i in doc["cost"]["idle"]["pools"]:
        m = i.get("movable")
        gpus = i["gpus"]["min"]
        line = (f"  idle paid {i['cluster']}/{i['pool']} ({i.get('capacityType', 'on-demand')}): {i['nodes']['min']} "
                f"minNodes ({gpus} GPU{'s' if gpus != 1 else ''}) no replica uses, {money_span(i['hourly'])}/h paid "
                f"whether used or not")
        if m:
            saves = f"{money(m['hourly'])}/h ({money(m['hourly'] * HOURS_PER_MONTH)}/month)" + \
                (" and unpriced nodes" if m.get("unpriced") else "")
            line += (f"; {m['nodes']} node(s) of the same GPU are bought on {', '.join(m['from'])}: moving their "
                     f"replicas onto it saves up to {saves} (`plan --repack` shows the moves)")
        out.print(line, markup=False)


def price_notes(out, doc: dict) -> None:
    """Where the prices come from, what is an upper bound or old, and what is not priced."""
    from ..analysis.cost import caveats, doubtful, money, stale_note

    cost = doc["cost"]
    for p in doubtful(cost):
        out.print(f"  price {p['cluster']}/{p['pool']} ({p['class']}, {p['capacityType']}): {money(p['hourly'])}/node-hour, "
                  f"{caveats(p)} (source {p['source']}, {p['asOf']})", markup=False)
    regions = {c["cluster"]: c.get("region") for c in doc.get("clusters") or []}
    note = stale_note(cost, regions)
    if note:
        out.print(f"  [yellow]old prices[/yellow]: {note}")
    for p in cost["unpriced"]:
        refresh = f"run `modelplane prices refresh --regions {regions[p['cluster']]}`, " if regions.get(p["cluster"]) else ""
        out.print(f"  [yellow]unpriced[/yellow] {p['cluster']}/{p['pool']} ({p['class']}, {p['capacityType']}): no list "
                  f"price; {refresh}set capacity.hourly on the pool or add the class to catalog/prices.yaml")


def cost_shift(out, before: dict, after: dict) -> None:
    """What-if: the stack's cost before and after losing the clusters."""
    from ..analysis.cost import money_span

    out.print(f"  cost {money_span(before['stack']['hourly'])}/h -> {money_span(after['stack']['hourly'])}/h, "
              f"GPUs {before['stack']['gpus']['max']} -> {after['stack']['gpus']['max']}")


def repack(out, doc: dict, stack_gpus: int | None = None) -> None:
    """`plan --repack`: the sticky plan against a from-scratch exact plan of the same inputs.
    `stack_gpus`: the cost table's total, which counts idle nodes' GPUs too; named when it differs."""
    r, g = doc["replicas"], doc["gpus"]
    idle = f"; the stack's {stack_gpus} GPUs include {stack_gpus - g['now']} on idle nodes" \
        if stack_gpus and stack_gpus > g["now"] else ""
    if not (doc["moves"] or doc["gained"] or doc["lost"]):
        out.print(f"re-pack: nothing to gain; a plan from scratch places the same {r['now']} replicas "
                  f"({g['now']} GPUs placed{idle}) where they are ({doc['phase']})", markup=False)
        for p in (doc.get("paid") or {}).get("idle", []):
            out.print(f"  idle paid {p['pool']} ({p['capacity']}): {p['idleNodes']['now']} nodes "
                      f"({p['idleGpus']['now']} GPUs) paid whether used or not; no replica placed elsewhere can "
                      f"use them (selectors, spot, shapes: `plan --explain DEPLOYMENT`)", markup=False)
        return
    out.print(f"re-pack (a plan from scratch, ignoring where replicas run now; {doc['phase']}):", markup=False)
    out.print(f"  replicas {r['now']} -> {r['repacked']} ({r['repacked'] - r['now']:+d}), GPUs {g['now']} -> "
              f"{g['repacked']} ({g['repacked'] - g['now']:+d}), {len(doc['moves'])} replica(s) would move", markup=False)
    paid_lines(out, doc.get("paid"))
    for m in doc["moves"]:
        out.print(f"  moves  {m['deployment']}#{m['replica']}: {m['from']} -> {m['to']}", markup=False)
    for m in doc["gained"]:
        out.print(f"  gains  {m['deployment']}: one more replica on {m['to']}", markup=False)
    for m in doc["lost"]:
        out.print(f"  drops  {m['deployment']}#{m['replica']} (on {m['from']})", markup=False)
    out.print("  nothing is applied; to re-pack, set modelplane:repack: true for one `up` (and unset it after)",
              markup=False)


def paid_lines(out, paid: dict | None) -> None:
    """`plan --repack`: paid capacity idle now and after, and what the nodes no longer bought save."""
    from ..analysis.cost import HOURS_PER_MONTH, money

    if not paid:
        return
    for p in paid["idle"]:
        n, g = p["idleNodes"], p["idleGpus"]
        out.print(f"  idle paid {p['pool']} ({p['capacity']}, paid whether used or not): {n['now']} nodes ({g['now']} GPUs) "
                  f"-> {n['repacked']} ({g['repacked']} GPUs)", markup=False)
    b, saves = paid["boughtNodes"], paid["savesHourly"]
    if b["now"] != b["repacked"]:
        what = ("an unpriced amount (a pool has no price)" if saves is None else
                f"{money(abs(saves))}/h ({money(abs(saves) * HOURS_PER_MONTH)}/month)")
        verb = "costs more by" if saves is not None and saves < 0 else "saves"
        out.print(f"  nodes bought beyond the paid ones {b['now']} -> {b['repacked']}: the re-pack {verb} {what}",
                  markup=False)


def print_violations(out, violations: list[dict], policy_file: Path) -> None:
    """Grouped by policy, mandatory first; one line per violation with the resource it names."""
    if not violations:
        out.print(f"policy: no violations ({policy_file.name})")
        return
    groups: dict[tuple[str, str], list[dict]] = {}
    for v in violations:
        groups.setdefault((v["level"], v["policy"]), []).append(v)
    for (level, name), items in sorted(groups.items(), key=lambda kv: (kv[0][0] != "mandatory", kv[0][1])):
        out.print(f"policy {name} ({level}, {len(items)}):", markup=False)
        for v in items:
            where = f"{v['file']}:{v['line']} " if v.get("file") and v.get("line") else ""
            out.print(f"  {where}{v.get('resource') or '-'}: {v['message']}", markup=False)
        # one line per fix: a policy's verdicts may have different fixes (Policy.fixes, a pool replace)
        for fix in dict.fromkeys(v["fix"] for v in items if v.get("fix")):
            out.print(f"  fix: {fix}", markup=False)


def catalog_notes(out, catalog) -> None:
    """The user's catalog entries that replace the package's own (a class of the same name)."""
    for o in catalog.overrides:
        out.print(f"  catalog: {o['kind']} {o['name']} from {o['file']} replaces the built-in one", markup=False)


def routing_table(doc: dict) -> Table:
    """Per service: each endpoint's weight, its share of requests and where that share goes."""
    table = Table(title=f"services ({doc['stack']})", title_justify="left")
    for col in ("service", "hostname / model", "endpoint", "weight", "share", "clusters (share)"):
        table.add_column(col)
    for s in doc["services"]:
        name = s["service"] + ("  [yellow]degraded[/yellow]" if s["status"] == "degraded" else "")
        head = f"{s['hostname'] or '-'}\nmodel: {s['model']}" + \
            ("\n(routed by model name)" if s.get("routedBy") == "model" else "")
        served = delivered({d["cluster"]: d["weight"] for d in s["dns"]}, s["endpoints"])
        for i, e in enumerate(s["endpoints"]):
            spread = ", ".join(f"{c} {u / 10:.1f}%" for c, u in served[i].items()) or "nothing placed"
            table.add_row(name if i == 0 else "", head if i == 0 else "", e["target"], str(e["weight"]),
                          f"{e['share'] / 10:.1f}%", spread)
    return table


def entry_points(out, doc: dict, dns_configured: bool) -> None:
    """Where each service enters: the clusters' gateways and their DNS weights."""
    for s in doc["services"]:
        if not s["dns"]:
            continue
        # a cluster whose record is one per replica (review N11) lists them
        parts = ", ".join(f"{d['cluster']} {d['weight']}%" + (" (a record per replica: " + ", ".join(
            f"{r['replica'].rpartition('/')[2]} {r['weight']}%" for r in d["replicas"]) + ")" if d.get("replicas") else "")
            for d in s["dns"])
        how = "weighted DNS records" if dns_configured and s["hostname"] else \
            "point your own load balancer or DNS at these gateways (stack output `gateways`) with these weights"
        out.print(f"  {s['service']}: {parts} ({how})")


def traffic_shift(out, before: list[dict], after: list[dict]) -> None:
    """What-if: how each service's cluster shares change."""
    old = {s["service"]: s["clusters"] for s in before}
    for s in after:
        was, now = old.get(s["service"], {}), s["clusters"]
        if was == now:
            continue
        moves = ", ".join(f"{c} {was.get(c, 0) / 10:.1f}% -> {now.get(c, 0) / 10:.1f}%" for c in sorted(set(was) | set(now)))
        state = " (degraded: " + ", ".join(s["missing"]) + " lost)" if s["status"] == "degraded" else ""
        out.print(f"  traffic {s['service']}: {moves}{state}")


def changes(out, doc: dict, previous: str) -> None:
    """`plan --previous`: what applying this plan changes, as `pulumi preview` marks it
    (+ create, ~ update, +- replace, - delete, = import), then replicas and cost."""
    from ..analysis.changes import SYMBOLS, cost_change, priced, serving_text, spread_text, summary, traffic_text

    res, reps, cost = doc["changes"], doc["replicaChanges"], doc["costDelta"]
    moved = cost["deployments"] or any(cost["stack"]["hourly"].values()) or cost["stack"].get("unpricedNodes")
    if res == [] and not reps and not moved and not doc.get("trafficDelta"):
        out.print(f"changes against {previous}: none (resources, replicas and cost as before)", markup=False)
        return
    if res is None:
        head = f"resources unknown ({previous} has no resource digests: a plan from an older modelplane)"
    else:
        head = ", ".join(f"{n} to {a}" for a, n in summary(res).items() if n) or "no resource changes"
    out.print(f"changes against {previous}: {head}", markup=False)
    for c in res or []:
        where = f" on {c['cluster']}" if c.get("cluster") else ""
        detail = ""
        if c.get("fields"):
            forced = set(c.get("forcedBy", ()))
            detail = ": " + ", ".join(f + (" (forces replacement)" if f in forced else "") for f in c["fields"])
        if c.get("deleteBeforeReplace"):
            detail += "; the old one is deleted first"
        if c.get("replicas"):
            detail += f"; its new nodes restart {', '.join(c['replicas'])} at once"
        if c.get("protected"):
            detail += ("; PROTECTED: `up` refuses it; list it in modelplane:unprotect "
                       + ("in this change" if c["action"] == "replace" else "and run `up` once before this change"))
        elif c.get("destructive"):
            detail += "; destructive: the old one is deleted"
        out.print(f"  {SYMBOLS[c['action']]:<2} {c['type']} {c['name']}{where}{detail}", markup=False)
    marks = {"added": "+", "removed": "-", "moved": "~", "resized": "~", "surged": "+-", "rolled": "+-", "kept": "="}
    for r in reps:
        move = (f" {r['from']} -> {r['to']}" if "from" in r and "to" in r and r["from"] != r["to"]
                else f" on {r.get('to') or r.get('from')}")
        out.print(f"  {marks[r['change']]:<2} replica {r['deployment']}#{r['replica']} {r['change']}{move}: {r['reason']}",
                  markup=False)
    for d in doc.get("disruptions") or []:
        where = f" (stack {d['stack']})" if d.get("stack") else ""
        out.print(f"  ! deployment {d['deployment']}{where}: {serving_text(d)}", markup=False)
    for t in doc.get("trafficDelta") or []:
        out.print(f"  traffic {t['service']}: {traffic_text(t)}", markup=False)
    for row in doc.get("spread") or []:
        out.print(f"  ! spread {row['service']}: {spread_text(row)}", markup=False)
    for d in cost["deployments"]:
        out.print(f"  cost {d['deployment']}: {cost_change(d)}", markup=False)
    stack = cost["stack"]
    if stack.get("priced") is not False and all(abs(v) < 0.005 for v in stack["hourly"].values()):
        out.print(f"  cost stack {doc['stack']}: {priced(stack['after'])}, unchanged", markup=False)   # no +$0.00 line
    else:
        out.print(f"  cost stack {doc['stack']}: {cost_change(stack)}", markup=False)


FRONTIER_ROWS = 8     # frontier points a table shows per sized deployment (the chosen one always)


def sizing(out, doc: dict) -> None:
    """Per sized deployment: objective and traffic, the configuration chosen with its prediction,
    what is served and its cost, then the chosen class's frontier with the chosen point marked."""
    from ..analysis.cost import money

    for row in doc.get("sizing") or []:
        slo, t = row["slo"], row["traffic"]
        lim = slo.get("limits") or slo
        head = (f"sizing {row['deployment']}: TTFT <= {slo['ttftMs']:g} ms, ITL <= {slo['itlMs']:g} ms at "
                f"{t['requestsPerSecond']:g} req/s ({t['inputTokens']} in / {t['outputTokens']} out tokens); chosen "
                f"within {lim['ttftMs']:g} / {lim['itlMs']:g} ms ({slo.get('margin', 0):.0%} margin)")
        c = row["choice"]
        if c is None:
            out.print(f"{head}: [red]no configuration meets it[/red]")
            for note in row["notes"]:
                out.print(f"    {note}", markup=False)
            continue
        topo = c["topology"]
        shape = (f"{c['prefill']['workers']} prefill x tp{c['prefill']['topology']['tensor']} + " if "prefill" in c else "") \
            + f"{c['workers']} {'decode' if 'prefill' in c else 'worker'} x tp{topo['tensor']}" \
            + (f" dp{topo['data']}" if topo["data"] > 1 else "") + (f" pp{topo['pipeline']}" if topo["pipeline"] > 1 else "")
        p, served, cost, est = row["predicted"], row["served"], row["cost"], row["estimator"]
        per_m = f", {money(cost['perMillionTokens'])} per million output tokens" if cost["perMillionTokens"] else ""
        out.print(head, markup=False)
        out.print(f"    chosen: {c['class']} {c['mode']} {shape}, {c['replicas']} replica{'s' if c['replicas'] != 1 else ''}; predicted TTFT "
                  f"{p['ttftMs']:g} ms, ITL {p['itlMs']:g} ms, {p['requestsPerSecond']:g} req/s, "
                  f"{p['tokensPerSecondPerGpu']:g} tok/s/GPU", markup=False)
        out.print(f"    serves {served['requestsPerSecond']:g} req/s with {served['replicas']}/{c['replicas']} replicas "
                  f"placed; {money(cost['hourly'])}/h{per_m} ({est['name']} {est['version']}, {est['database']}, "
                  f"{est['system']}; {len(row['alternatives'])} candidates)", markup=False)
        table = Table(title=f"frontier of {c['class']} ({row['deployment']})", title_justify="left")
        for col in ("", "tok/s/user", "tok/s/GPU", "$/M tok", "shape"):
            table.add_column(col, justify="left" if col in ("", "shape") else "right")
        points = row["frontier"]
        chosen = [f for f in points if f["chosen"]]
        rest = [f for f in points if not f["chosen"]]
        if len(rest) > FRONTIER_ROWS - 1:
            step = (len(rest) - 1) / (FRONTIER_ROWS - 2)
            rest = [rest[round(i * step)] for i in range(FRONTIER_ROWS - 1)]
        for f in sorted(rest + chosen, key=lambda f: (f["tokensPerSecondPerUser"], f["chosen"])):
            table.add_row("*" if f["chosen"] else "", f"{f['tokensPerSecondPerUser']:g}", f"{f['tokensPerSecondPerGpu']:g}",
                          money(f["perMillionTokens"]) if f["perMillionTokens"] is not None else "-", f["shape"])
        out.print(table)
