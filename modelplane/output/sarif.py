"""`plan --format sarif`: input problems and policy verdicts as a SARIF 2.1.0 log, each result with
its rule, level, message and the file and line it points at, for CI annotations (GitHub code
scanning uploads it as is). The format: OASIS SARIF 2.1.0 (errata01); the tests validate every
log against its schema, kept in schemas/sarif/ (schemas/SOURCES.md)."""
from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from .. import __version__
from ..errors import Problem
from ..analysis.outcome import RULES as GATE_RULES

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INPUT_RULE = "input"
LEVELS = {"mandatory": "error", "advisory": "warning", "disabled": "none"}


def _git_root(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _location(file: str | None, line: int | None, root: Path) -> list[dict]:
    """The result's location: relative to the repository (%SRCROOT%) when the file is inside it,
    else an absolute file URI; none for what is not a file (an option such as --explain)."""
    if not file or file.startswith(("-", "(")):
        return []
    path = Path(file) if Path(file).is_absolute() else root / file
    base = _git_root(root.resolve()) or root.resolve()
    try:
        artifact = {"uri": quote(path.resolve().relative_to(base).as_posix()), "uriBaseId": "%SRCROOT%"}
    except ValueError:
        artifact = {"uri": path.resolve().as_uri()}
    physical = {"artifactLocation": artifact}
    if line:
        physical["region"] = {"startLine": line}
    return [{"physicalLocation": physical}]


def log(problems: list[Problem], violations: list[dict], root: Path) -> dict:
    """A SARIF log of one run of modelplane: `problems` (invalid input, nothing planned) or the
    plan's policy `violations` and the other reasons it fails the gate (outcome.py: changes `up`
    refuses, broken traces), with the file and line `origins.locate` found; `root`: the project
    folder the files are named relative to."""
    from ..policy import POLICIES

    rules: dict[str, dict] = {}

    def rule(rule_id: str) -> None:
        if rule_id not in rules:
            p = POLICIES.get(rule_id)
            gate = GATE_RULES.get(rule_id)
            about = p.description if p else gate[0] if gate else \
                "Invalid input: modelplane plans nothing until it is fixed."
            entry = {"id": rule_id, "shortDescription": {"text": about}}
            if p is not None or gate:
                entry["help"] = {"text": f"Fix: {p.fix if p else gate[1]}"}
                entry["defaultConfiguration"] = {"level": LEVELS.get(p.level, "warning") if p else "error"}
            rules[rule_id] = entry

    results = []
    for p in problems:
        rule_id = p.rule or INPUT_RULE
        rule(rule_id)
        text = f"{p.path + ': ' if p.path else ''}{p.message}. Fix: {p.fix}"
        results.append({"ruleId": rule_id, "level": "error", "message": {"text": text},
                        "locations": _location(p.file, p.line, root)})
    for v in violations:
        rule(v["policy"])
        where = f" ({v['resource']})" if v.get("resource") else ""
        text = f"{v['message']}{where}" + (f". Fix: {v['fix']}" if v.get("fix") else "")
        results.append({"ruleId": v["policy"], "level": LEVELS.get(v["level"], "warning"), "message": {"text": text},
                        "locations": _location(v.get("file"), v.get("line"), root)})
    order = sorted(rules)
    for r in results:      # ruleIndex once every rule is known: rules are listed in name order
        r["ruleIndex"] = order.index(r["ruleId"])
        if not r["locations"]:
            del r["locations"]
    return {"$schema": SCHEMA, "version": "2.1.0",
            "runs": [{"tool": {"driver": {"name": "modelplane", "version": __version__,
                                          "rules": [rules[k] for k in order]}},
                      "results": results}]}
