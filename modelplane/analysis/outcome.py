"""Why `plan` exits 1, as one list: the mandatory policy verdicts, the changes `up` would refuse
(a protected cluster or node pool deleted or replaced, docs/changes.md) and the `--trace` shares
that break. The exit status, the comment's headline (comment.py) and the SARIF log (sarif.py) all
read it, so none of them can name fewer reasons than the others.

Pure: reads a plan document."""
from __future__ import annotations

# The rule ids of the reasons that are not policies (SARIF names every result's rule).
REFUSED_RULE, TRACE_RULE = "protected-change", "trace-broken"
RULES = {REFUSED_RULE: ("A change `up` refuses: a protected cluster or node pool deleted or replaced.",
                        "list it in modelplane:unprotect (in this change for a replace; for a delete, "
                        "and run `up` once before this change), or keep the resource as it is"),
         TRACE_RULE: ("A share of a traced hostname does not reach GPU pods or a provider.",
                      "follow the first broken link the trace names")}


def refusal(change: dict) -> dict:
    """A change `up` refuses, as a verdict-like entry (policy, level, resource, message, fix)."""
    how = "in this change" if change["action"] == "replace" else "and run `up` once before this change"
    return {"policy": REFUSED_RULE, "level": "mandatory", "resource": change["name"],
            "message": f"{change['action']} of protected {change['type']} {change['name']}: `up` refuses it",
            "fix": f"list it in modelplane:unprotect {how}"}


def refusals(doc: dict) -> list[dict]:
    return [refusal(c) for c in doc.get("changes") or [] if c.get("protected")]


def broken_traces(doc: dict) -> list[dict]:
    out = []
    for t in doc.get("trace") or []:
        if t["reaches"]["broken"]:
            first = next(h["broken"] for h in t["hops"] if h.get("broken") and h["share"])
            out.append({"policy": TRACE_RULE, "level": "mandatory", "resource": t["host"],
                        "message": f"{t['reaches']['broken'] / 10:.1f}% of {t['host']} breaks: {first}",
                        "fix": RULES[TRACE_RULE][1]})
    return out


def reasons(doc: dict) -> list[dict]:
    """Every reason the plan of `doc` fails the gate (exit 1), mandatory verdicts first; empty when
    it passes."""
    mandatory = [v for v in doc["policy"]["violations"] if v["level"] == "mandatory"]
    return mandatory + refusals(doc) + broken_traces(doc)
