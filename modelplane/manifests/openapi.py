"""Kubernetes schemas (CRD structural schemas, OpenAPI v3 components) as JSON Schema 2020-12."""
from __future__ import annotations

import re

_BRANCHES = ("allOf", "anyOf", "oneOf")


def _python_regex(pattern) -> bool:
    """Go's RE2 syntax is nearly Python's; a pattern Python cannot compile is dropped, not fatal."""
    try:
        re.compile(pattern)
    except (re.error, TypeError):
        return False
    return True


def to_json_schema(node, strict: bool = True, branch: bool = False):
    """One schema node, converted recursively.

    strict: objects with declared properties reject undeclared ones, because the API server
    silently prunes them from custom resources (a typo would vanish) and rejects them from
    built-in kinds. `branch` marks an allOf/anyOf/oneOf/not member: it only adds constraints to
    its parent's object, so it must not forbid the parent's fields.
    """
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in ("properties", "patternProperties") and isinstance(value, dict):
            out[key] = {name: to_json_schema(sub, strict) for name, sub in value.items()}
        elif key in _BRANCHES and isinstance(value, list):
            out[key] = [to_json_schema(sub, strict, branch=True) for sub in value]
        elif key == "not":
            out[key] = to_json_schema(value, strict, branch=True)
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = to_json_schema(value, strict)
        elif key == "pattern" and not _python_regex(value):
            continue
        elif key == "x-kubernetes-validations":
            continue            # CEL, checked by rules.py
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string") or node.get("format") == "int-or-string":
        out.pop("type", None)
        if not any(k in out for k in _BRANCHES):
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("nullable"):                      # OpenAPI 3.0's "null allowed too"
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(out.get(bound), bool):      # OpenAPI 3.0's boolean form
            exclusive = out.pop(bound)
            if exclusive and limit in out:
                out[bound] = out.pop(limit)
    if node.get("x-kubernetes-embedded-resource") and "properties" in out:
        for name, kind in (("apiVersion", "string"), ("kind", "string"), ("metadata", "object")):
            out["properties"].setdefault(name, {"type": kind})
    if (strict and not branch and "properties" in out and "additionalProperties" not in out
            and not node.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out
