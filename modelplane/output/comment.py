"""`plan --format markdown`: the plan as a pull-request comment. The headline says everything a
reviewer needs without unfolding anything: resources created, updated, replaced and deleted; every
replica change by kind (added, surged, rolled, moved, resized, kept, removed, restarted by a pool
replace); the monthly cost change (or that it is not known, with unpriced capacity); how many
services' traffic shifts; how many services leave a region (advisory); and, when the gate fails, every reason with its fix (outcome.py). Then
each traffic move, each region or cloud a service's last replica leaves (advisory, with the cost
of keeping it there), the resource changes folded away, replicas with their reasons, serving during
the change, cost per deployment and for the stack, and policy verdicts, mandatory first."""
from __future__ import annotations

from ..analysis import outcome
from ..analysis.changes import ACTIONS, SYMBOLS, priced, signed_money, spread_text, summary, traffic_text
from ..analysis.cost import money_span
from ..errors import Problem

MARKS = {"added": "+", "removed": "-", "moved": "~", "resized": "~", "surged": "++", "rolled": "-+", "kept": "="}


def cell(text) -> str:
    """Text safe inside a Markdown table cell (GitHub-flavoured: pipes escaped, no HTML tags, one line)."""
    return str(text).replace("<", "&lt;").replace("|", "\\|").replace("\n", " ")


def table(head: list[str], rows: list[list]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + \
        ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]


def marker(stack: str) -> str:
    """The comment's first line, invisible on GitHub: a CI job finds its earlier comment by it and edits it."""
    return f"<!-- modelplane plan {stack} -->"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _unpriced(doc: dict) -> list[str]:
    """Notes under the cost table: prices that are old (with the refresh command), pools with none."""
    from ..analysis.cost import stale_note

    note = stale_note(doc["cost"], {c["cluster"]: c.get("region") for c in doc.get("clusters") or []})
    old = [f"> **Old prices:** {cell(note)}.", ""] if note else []
    pools = doc["cost"].get("unpriced") or []
    if not pools:
        return old
    where = ", ".join(f"{p['cluster']}/{p['pool']} ({p['class']}, {p['capacityType']})" for p in pools)
    return old + [f"> **Unpriced:** {_plural(len(pools), 'pool')} have no price, so their nodes are not in these "
                  f"figures: {where}. Set `capacity.hourly` on the pool, or `modelplane prices refresh --regions ...`.", ""]


def _gate(doc: dict) -> str:
    violations = doc["policy"]["violations"]
    mandatory = sum(v["level"] == "mandatory" for v in violations)
    gate = (f"**{_plural(mandatory, 'mandatory violation')}**" if mandatory else "no mandatory violations") + \
        (f", {len(violations) - mandatory} advisory" if len(violations) > mandatory else "")
    others = len(outcome.reasons(doc)) - mandatory
    return gate + (f" · **{_plural(others, 'other reason')} to fail**" if others else "")


# Every kind of replica change, in the order a reviewer reads them (changes.replica_changes).
KINDS = ("added", "surged", "rolled", "moved", "resized", "kept", "removed")


def replica_counts(doc: dict) -> str:
    """Every replica change by kind, as the comment's and the report's headlines say it."""
    reps = doc.get("replicaChanges") or []
    parts = [f"{sum(r['change'] == k for r in reps)} {k}" for k in KINDS if any(r["change"] == k for r in reps)]
    restarted = {r for c in doc.get("changes") or [] for r in c.get("replicas") or []}
    if restarted:       # a node pool replaced under running replicas (changes.disrupted)
        parts.append(f"{len(restarted)} restarted by a node pool replace")
    return ", ".join(parts) or "none changed"


def _cost_headline(delta: dict) -> str:
    """The stack's cost change; not a figure when unpriced nodes make it unknown, nor when nothing changes."""
    if delta.get("priced") is False:
        u = delta["unpricedNodes"]
        return (f"cost: not known ({_plural(max(u['before'], u['after']), 'unpriced node')}; the priced part "
                f"alone {signed_money(delta['monthly'])}/month)")
    if abs(delta["hourly"]["min"]) < 0.005 and abs(delta["hourly"]["max"]) < 0.005:
        return "cost unchanged"
    return f"**{signed_money(delta['monthly'])}/month** ({signed_money(delta['hourly'])}/h)"


def _summary(doc: dict, previous: str | None) -> str:
    gate = _gate(doc)
    unpriced = " (+ unpriced capacity)" if doc["cost"].get("unpriced") else ""
    if previous is None:
        placed, desired = len(doc["placements"]), len(doc["placements"]) + len(doc["unplaced"])
        stack = doc["cost"]["stack"]
        return (f"{_plural(len(doc['resources']), 'resource')} · {placed}/{desired} replicas placed · "
                f"{money_span(stack['hourly'])}/h, {money_span(stack['monthly'])}/month{unpriced} · policy: {gate}")
    res = doc.get("changes")
    if res is None:
        head = "resource changes unknown (the previous plan has no digests)"
    else:
        counts = summary(res)
        head = ", ".join(f"{counts[a]} to {a}" for a in ACTIONS if counts.get(a)) or "no resource changes"
    traffic = doc.get("trafficDelta") or []
    moves = f" · traffic: {_plural(len(traffic), 'service')} shift" + ("s" if len(traffic) == 1 else "") \
        if traffic else ""
    spread = sorted({r["service"] for r in doc.get("spread") or []})
    if spread:
        moves += f" · spread: {_plural(len(spread), 'service')} leave" + ("s" if len(spread) == 1 else "") \
            + " a region (advisory)"
    return (f"{head} · replicas: {replica_counts(doc)} · {_cost_headline(doc['costDelta']['stack'])}"
            f"{moves} · policy: {gate}")


def _failing(doc: dict) -> list[str]:
    """Every reason the gate fails, each with its fix, in the open: a reviewer needs no folded block."""
    found = outcome.reasons(doc)
    if not found:
        return []
    items = [f"- `{r['policy']}`: " + cell((f"{r['resource']}: " if r.get("resource") else "") + r["message"]) +
             (f" — fix: {cell(r['fix'])}" if r.get("fix") else "") for r in found]
    return [f"**The gate fails (exit 1)**: {_plural(len(found), 'reason')}", "", *items, ""]


def _traffic(doc: dict) -> list[str]:
    """Each service whose clusters' shares move (changes.traffic_delta), one line each, unfolded."""
    rows = doc.get("trafficDelta") or []
    return ["**Traffic moves**", "", *[f"- `{r['service']}`: {cell(traffic_text(r))}" for r in rows], ""] if rows else []


def _spread(doc: dict) -> list[str]:
    """Each region (and cloud) a service's last replica leaves (changes.spread_lost), unfolded:
    advisory, with what keeping it there would cost."""
    rows = doc.get("spread") or []
    return ["**Spread given up** (advisory)", "", *[f"- `{r['service']}`: {cell(spread_text(r))}" for r in rows], ""] \
        if rows else []


def _resources(doc: dict) -> list[str]:
    res = doc.get("changes") or []
    if not res:
        return []
    first = {(r["type"], r["name"]) for r in doc["resources"] if r.get("deleteBeforeReplace")}
    rows = []
    for c in res:
        forced = set(c.get("forcedBy", ()))
        fields = ", ".join(f + (" (forces replacement)" if f in forced else "") for f in c.get("fields") or [])
        if c.get("deleteBeforeReplace"):
            fields += ("; " if fields else "") + "old one deleted first"
        if c.get("replicas"):
            fields += ("; " if fields else "") + f"restarts {', '.join(c['replicas'])}"
        if c.get("protected"):
            fields += ("; " if fields else "") + "**protected: `up` refuses it** (modelplane:unprotect)"
        elif c.get("destructive"):
            fields += ("; " if fields else "") + "destructive"
        # How the engine replaces it: the old one deleted first when the resource says so (its
        # deleteBeforeReplace option), else the new one created beside it (changes.py decides replace vs update).
        action = c["action"] + (" (delete first)" if c["action"] == "replace" and (c["type"], c["name"]) in first
                                else "")
        rows.append([f"`{SYMBOLS[c['action']]}`", action, c["type"], c["name"], c.get("cluster", "-"),
                     fields or "-"])
    return ["<details><summary>" + f"{_plural(len(res), 'resource change')}" + "</summary>", "",
            *table(["", "action", "type", "name", "cluster", "fields"], rows), "", "</details>", ""]


def _replicas(doc: dict, previous: str | None) -> list[str]:
    if previous is not None:
        reps = doc.get("replicaChanges") or []
        if not reps:
            return []
        rows = [[f"`{MARKS.get(r['change'], '~')}`", r["change"], f"{r['deployment']}#{r['replica']}",
                 r.get("from", "-"), r.get("to", "-"), r.get("reason", "")] for r in reps]
        return ["#### Replicas", "", *table(["", "change", "replica", "from", "to", "reason"], rows), ""]
    placed: dict[str, int] = {}
    for p in doc["placements"]:
        placed[p["deployment"]] = placed.get(p["deployment"], 0) + 1
    unplaced: dict[str, list] = {}
    for u in doc["unplaced"]:
        unplaced.setdefault(u["deployment"], []).append(u)
    rows = []
    for key in sorted(set(placed) | set(unplaced)):
        missing = unplaced.get(key, [])
        reasons = "; ".join(sorted({f"{r['reason']} {r['cluster']}{'/' + r['pool'] if r.get('pool') else ''}: "
                                    f"{r['detail']}" for u in missing for r in u["reasons"]})) or "-"
        rows.append([key, f"{placed.get(key, 0)}/{placed.get(key, 0) + len(missing)}", reasons])
    return ["#### Replicas", "", *table(["deployment", "placed", "why not placed"], rows), ""] if rows else []


def _cost(doc: dict, previous: str | None) -> list[str]:
    cost = doc["cost"]
    if previous is not None:
        delta = doc["costDelta"]
        def row(name, d, bold=False):
            u = d.get("unpricedNodes") or {}
            sides = [priced(d["before"], u.get("before", 0)), priced(d["after"], u.get("after", 0))]
            if d.get("priced") is False:      # unpriced nodes: the change is not known, never a saving
                n = max(u.get("before", 0), u.get("after", 0))
                return [name, *sides, "not known", f"{_plural(n, 'unpriced node')}; priced part "
                        f"{signed_money(d['monthly'])}/month"]
            month = f"{signed_money(d['monthly'])}/month"
            return [name, *sides, f"{signed_money(d['hourly'])}/h", f"**{month}**" if bold else month]
        rows = [row(d["deployment"], d) for d in delta["deployments"]]
        rows.append(row(f"**stack {doc['stack']}**", delta["stack"], bold=True))
        return ["#### Cost", "", *table(["", "before", "after", "change", "per month"], rows), "", *_unpriced(doc)]

    def figures(r):
        if r.get("unpricedNodes") and r["hourly"]["max"] == 0:
            return "unpriced", "unpriced"
        note = f" (+{r['unpricedNodes']} unpriced nodes)" if r.get("unpricedNodes") else ""
        return money_span(r["hourly"]) + note, money_span(r["monthly"])
    rows = [[d["deployment"], *map(str, (d["gpus"]["max"], d["nodes"]["max"])), *figures(d)] for d in cost["deployments"]]
    rows += [[f"idle {i['cluster']}/{i['pool']}", str(i["gpus"]["max"]), str(i["nodes"]["max"]), *figures(i)]
             for i in cost["idle"]["pools"]]
    s = cost["stack"]
    rows.append([f"**stack {doc['stack']}**", str(s["gpus"]["max"]), str(s["nodes"]["max"]), *figures(s)])
    return ["#### Cost", "", *table(["", "GPUs", "nodes", "$/hour", "$/month"], rows), "", *_unpriced(doc)]


def _policy(violations: list[dict], policy_file: str) -> list[str]:
    if not violations:
        return ["#### Policy", "", f"No violations (`{policy_file}`).", ""]
    ordered = sorted(violations, key=lambda v: (v["level"] != "mandatory", v["policy"], v.get("resource") or ""))
    rows = [[f"**{v['level']}**" if v["level"] == "mandatory" else v["level"], f"`{v['policy']}`",
             f"{v['file']}:{v['line']}" if v.get("file") and v.get("line") else "-",
             (f"{v['resource']}: " if v.get("resource") else "") + v["message"], v.get("fix", "")] for v in ordered]
    return ["#### Policy", "", *table(["level", "policy", "where", "message", "fix"], rows), ""]


def _disruptions(doc: dict) -> list[str]:
    """Deployments that serve fewer replicas while `up` applies the change (docs/changes.md)."""
    rows = [[f"**{d['deployment']}**" if not d.get("servingDuring") else d["deployment"],
             f"{d['servingDuring']}/{d['servingBefore']}" + (" (outage)" if not d.get("servingDuring") else ""),
             d.get("cause", ""), "yes" if d.get("allowed") else "-"] for d in doc.get("disruptions") or []]
    if not rows:
        return []
    return ["#### Serving during the change", "",
            *table(["deployment", "serving", "cause", "allowDisruption"], rows), ""]


def render(doc: dict, previous: str | None, policy_file: str) -> str:
    """The comment for a plan document (`previous`: the file it was planned against, if any)."""
    title = f"### modelplane plan `{doc['stack']}`" + (f" against `{previous}`" if previous else "")
    lines = [marker(doc["stack"]), title, "", _summary(doc, previous), "", *_failing(doc), *_traffic(doc), *_spread(doc)]
    lines += _resources(doc) + _replicas(doc, previous) + _disruptions(doc) + _cost(doc, previous)
    lines += _policy(doc["policy"]["violations"], policy_file)
    return "\n".join(lines).rstrip("\n") + "\n"


def refused(stack: str, problems: list[Problem]) -> str:
    """The comment when the input is refused: nothing was planned; every problem with its place and fix."""
    rows = [[f"{p.file}:{p.line}" if p.line else p.file, p.path, p.message + (f" [{p.rule}]" if p.rule else ""), p.fix]
            for p in problems]
    return "\n".join([marker(stack), f"### modelplane plan `{stack}`: invalid input, nothing planned", "",
                      f"**{_plural(len(problems), 'problem')}** to fix:", "",
                      *table(["where", "field", "problem", "fix"], rows)]) + "\n"

