"""`plan --format markdown`: the plan as a pull-request comment. One summary line (resources
created, updated, replaced and deleted; replicas added, moved and removed; the monthly cost change
with unpriced capacity called out), the resource changes folded away, then replicas with their
reasons, cost per deployment and for the stack, and policy verdicts, mandatory first."""
from __future__ import annotations

from .changes import ACTIONS, SYMBOLS, signed_money, summary
from .cost import money_span
from .errors import Problem

MARKS = {"added": "+", "removed": "-", "moved": "~", "resized": "~"}


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
    pools = doc["cost"].get("unpriced") or []
    if not pools:
        return []
    where = ", ".join(f"{p['cluster']}/{p['pool']} ({p['class']}, {p['capacityType']})" for p in pools)
    return [f"> **Unpriced:** {_plural(len(pools), 'pool')} have no price, so their nodes are not in these "
            f"figures: {where}. Set `capacity.hourly` on the pool, or `modelplane prices refresh --regions ...`.", ""]


def _summary(doc: dict, previous: str | None) -> str:
    violations = doc["policy"]["violations"]
    mandatory = sum(v["level"] == "mandatory" for v in violations)
    gate = (f"**{_plural(mandatory, 'mandatory violation')}**" if mandatory else "no mandatory violations") + \
        (f", {len(violations) - mandatory} advisory" if len(violations) > mandatory else "")
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
    reps = doc.get("replicaChanges") or []
    n = {c: sum(r["change"] == c for r in reps) for c in ("added", "moved", "resized", "removed")}
    moved = ", ".join(f"{n[c]} {c}" for c in ("added", "moved", "removed", "resized") if n[c]) or "none changed"
    delta = doc["costDelta"]["stack"]
    return (f"{head} · replicas: {moved} · **{signed_money(delta['monthly'])}/month** "
            f"({signed_money(delta['hourly'])}/h){unpriced} · policy: {gate}")


def _resources(doc: dict) -> list[str]:
    res = doc.get("changes") or []
    if not res:
        return []
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
        rows.append([f"`{SYMBOLS[c['action']]}`", c["action"], c["type"], c["name"], c.get("cluster", "-"),
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
        rows = [[d["deployment"], f"{money_span(d['before'])}/h", f"{money_span(d['after'])}/h",
                 f"{signed_money(d['hourly'])}/h", f"{signed_money(d['monthly'])}/month"] for d in delta["deployments"]]
        s = delta["stack"]
        rows.append([f"**stack {doc['stack']}**", f"{money_span(s['before'])}/h", f"{money_span(s['after'])}/h",
                     f"{signed_money(s['hourly'])}/h", f"**{signed_money(s['monthly'])}/month**"])
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
    lines = [marker(doc["stack"]), title, "", _summary(doc, previous), ""]
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

