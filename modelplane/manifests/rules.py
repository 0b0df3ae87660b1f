"""A CRD's own checks beyond structure, as the API server runs them when an object is created:
the schema's defaults are applied, then every `x-kubernetes-validations` CEL rule is evaluated
with `self` bound to the value at the rule's node (rules of absent fields do not run)."""
from __future__ import annotations

import copy
import json
import re
from functools import lru_cache

import celpy
from celpy import celtypes

from ..scheduler.cel import environment

_ENV = environment()     # cel-python's one Environment: its parser from the user's cache when it is there
_OLD_SELF = re.compile(r"\boldSelf\b")


def _strings(fn):
    return lambda *args: fn(*map(str, args))


# The few functions of Kubernetes' CEL string library that the CRD rules use and cel-python lacks.
_K8S_FUNCTIONS = {
    "split": _strings(lambda s, sep: celtypes.ListType([celtypes.StringType(p) for p in s.split(sep)])),
    "lowerAscii": _strings(lambda s: celtypes.StringType(s.lower())),
    "upperAscii": _strings(lambda s: celtypes.StringType(s.upper())),
    "trim": _strings(lambda s: celtypes.StringType(s.strip())),
}


def _child(schema: dict, key) -> dict | None:
    """The schema of one field (or map value) of an object node."""
    props = schema.get("properties") or {}
    if key in props:
        return props[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def defaulted(schema: dict | None, value):
    """`value` with the schema's `default`s filled in where fields are absent (a copy)."""
    if not schema:
        return copy.deepcopy(value)
    if isinstance(value, dict):
        out = {k: defaulted(_child(schema, k), v) for k, v in value.items()}
        for key, sub in (schema.get("properties") or {}).items():
            if key not in out and "default" in sub:
                out[key] = defaulted(sub, copy.deepcopy(sub["default"]))
        return out
    if isinstance(value, list):
        items = schema.get("items") if isinstance(schema.get("items"), dict) else None
        return [defaulted(items, v) for v in value]
    return value


def to_cel(schema: dict | None, value):
    """A JSON value as CEL sees it, typed by its schema (`type: number` is a double even if whole)."""
    schema = schema or {}
    if value is None:
        return None
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, dict):
        return celtypes.MapType({celtypes.StringType(k): to_cel(_child(schema, k), v) for k, v in value.items()})
    if isinstance(value, list):
        items = schema.get("items") if isinstance(schema.get("items"), dict) else None
        return celtypes.ListType([to_cel(items, v) for v in value])
    if isinstance(value, (int, float)):
        return celtypes.DoubleType(value) if schema.get("type") == "number" else celtypes.IntType(value)
    return celtypes.StringType(str(value))


@lru_cache(maxsize=None)
def _program(rule: str):
    return _ENV.program(_ENV.compile(rule), functions=_K8S_FUNCTIONS)


def _path(path: str, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if re.fullmatch(r"[A-Za-z_$][\w$-]*", key) else f"{path}[{json.dumps(key)}]"


def _verdict(rule: dict, value, schema: dict) -> str | None:
    """None if `rule` holds for `value`, else what to report."""
    text = rule["rule"]
    if _OLD_SELF.search(text):
        if not rule.get("optionalOldSelf"):
            return None      # a transition rule: the API server runs it on updates only
        return f"cannot evaluate rule {text!r}: optionalOldSelf needs CEL optionals, which cel-python lacks"
    try:
        result = _program(text).evaluate({"self": to_cel(schema, value)})
    except celpy.CELEvalError as exc:
        result = exc
    if isinstance(result, celpy.CELEvalError):
        return f"rule {text!r} does not evaluate: {result.args[0] if result.args else result}"
    if result:
        return None
    return rule.get("message") or f"failed rule: {text}"


def violations(schema: dict, value, path: str = "") -> list[tuple[str, str]]:
    """(path, message) for every rule `value` breaks, outermost first; `value` already defaulted."""
    found = []
    for rule in schema.get("x-kubernetes-validations") or ():
        message = _verdict(rule, value, schema)
        if message:
            found.append(((path + rule.get("fieldPath", "")).lstrip(".") or "(root)", message))
    if isinstance(value, dict):
        for key, sub_value in value.items():
            sub = _child(schema, key)
            if sub and sub_value is not None:
                found += violations(sub, sub_value, _path(path, key))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            if item is not None:
                found += violations(schema["items"], item, _path(path, index))
    return found
