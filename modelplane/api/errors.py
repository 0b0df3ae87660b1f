"""Turn pydantic errors into Problems: YAML path, plain message, a fix, a line when known."""
from __future__ import annotations

import typing

from pydantic import BaseModel, ValidationError

from ..errors import Problem, did_you_mean


def format_path(parts) -> str:
    out = ""
    for part in parts:
        if not isinstance(part, (int, str)) or isinstance(part, bool):
            part = "~" if part is None else str(part).lower()     # a YAML key that is not text
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _model_in(annotation):
    """The pydantic model inside an annotation like `list[X] | None`, if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found:
            return found
    return None


def _fields_at(model: type[BaseModel], loc: tuple) -> list[str] | None:
    """Allowed YAML keys of the object at `loc` below `model` (None if not a model)."""
    current = model
    for part in loc:
        if isinstance(part, int):
            continue
        by_alias = {(f.alias or n): f for n, f in current.model_fields.items()}
        field = by_alias.get(part)
        if field is None:
            return None
        current = _model_in(field.annotation)
        if current is None:
            return None
    return [f.alias or n for n, f in current.model_fields.items()]


def shown(value) -> str:
    """A value as the user wrote it in YAML; long or secret-looking text is described, not echoed."""
    from .secrets import looks_secret

    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "nothing (null)"
    if isinstance(value, (int, float)):
        text = repr(value).replace("inf", ".inf").replace("nan", ".nan")
        return text if len(text) <= 24 else f"a {len(text)}-digit number"
    if isinstance(value, str):
        if "\n" in value or len(value) > 120 or looks_secret(value):
            return f"text of {len(value)} characters (not shown)"
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "a value of another kind"


# The models' patterns in words (a regular expression is not a message).
_PATTERNS = {
    r"^[A-Za-z][A-Za-z0-9_-]*$": "the name of a secret config key (a letter, then letters, digits, '_' or '-')",
    r"^(hf|s3|gs|pvc|oci|https?)://\S+$": "a model URI such as hf://org/model (hf, s3, gs, pvc, oci or https)",
    r"^1\.\d+(\.\d+(-gke\.\d+)?)?$": "a Kubernetes version such as \"1.34\" (quoted)",
    r"^1\.\d+$": "a Kubernetes minor version such as \"1.34\" (quoted)",
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$": "a DNS label (lowercase letters, digits and '-')",
    r"^[A-Za-z_][A-Za-z0-9_]*$": "an environment variable name (letters, digits and '_')",
    r"^[A-Za-z0-9][A-Za-z0-9._/-]*$": "a model name (letters, digits, '.', '_', '/' and '-')",
    r"^[A-Za-z0-9][A-Za-z0-9._/:-]*$": "a model name (letters, digits, '.', '_', '/', ':' and '-')",
}


def _number(e, leaf):
    return f"expected a whole number, got {shown(e['input'])}", "write a whole number such as 2, unquoted"


_FIXES = {
    "missing": lambda e, leaf: (f"required field '{leaf}' is missing", f"add '{leaf}'"),
    "int_parsing": _number,
    "int_type": _number,
    "int_from_float": _number,
    "float_type": lambda e, leaf: (f"expected a number, got {shown(e['input'])}", "write a number such as 1.5, unquoted"),
    "float_parsing": lambda e, leaf: (f"expected a number, got {shown(e['input'])}", "write a number such as 1.5, unquoted"),
    "finite_number": lambda e, leaf: (f"expected a finite number, got {shown(e['input'])}", "write a number such as 1.5"),
    "bool_parsing": lambda e, leaf: (f"expected true or false, got {shown(e['input'])}", "write true or false"),
    "bool_type": lambda e, leaf: (f"expected true or false, got {shown(e['input'])}", "write true or false, unquoted"),
    "string_type": lambda e, leaf: (f"expected text, got {shown(e['input'])}", "quote the value"),
    "list_type": lambda e, leaf: (f"expected a list, got {shown(e['input'])}", "write a YAML list (- item)"),
    "dict_type": lambda e, leaf: (f"expected a mapping, got {shown(e['input'])}", "write a YAML mapping (key: value)"),
    "model_type": lambda e, leaf: (f"expected a mapping, got {shown(e['input'])}", "write a YAML mapping (key: value)"),
    "model_attributes_type": lambda e, leaf: (f"expected a mapping, got {shown(e['input'])}",
                                              "write a YAML mapping (key: value)"),
    "greater_than_equal": lambda e, leaf: (f"must be at least {e['ctx']['ge']}, got {shown(e['input'])}", f"use a value >= {e['ctx']['ge']}"),
    "greater_than": lambda e, leaf: (f"must be greater than {e['ctx']['gt']}, got {shown(e['input'])}", f"use a value > {e['ctx']['gt']}"),
    "less_than_equal": lambda e, leaf: (f"must be at most {e['ctx']['le']}, got {shown(e['input'])}", f"use a value <= {e['ctx']['le']}"),
    "less_than": lambda e, leaf: (f"must be less than {e['ctx']['lt']}, got {shown(e['input'])}", f"use a value < {e['ctx']['lt']}"),
    "too_short": lambda e, leaf: (f"needs at least {e['ctx']['min_length']} item(s)", "add the missing entries"),
    "too_long": lambda e, leaf: (f"holds more than {e['ctx']['max_length']} item(s)", "remove entries"),
    "string_too_long": lambda e, leaf: (f"is longer than {e['ctx']['max_length']} characters", "shorten it"),
    "string_too_short": lambda e, leaf: ("is empty" if e['ctx']['min_length'] == 1 else
                                         f"is shorter than {e['ctx']['min_length']} characters", "write a value"),
    "string_pattern_mismatch": lambda e, leaf: (f"{shown(e['input'])} is not {_PATTERNS.get(e['ctx']['pattern'], 'in the expected format')}",
                                                "correct the value's format" if e['ctx']['pattern'] not in _PATTERNS
                                                else f"write {_PATTERNS[e['ctx']['pattern']]}"),
    "recursion_loop": lambda e, leaf: ("refers to itself (a recursive alias)", "write the values out"),
    "invalid_key": lambda e, leaf: (f"key {shown(e['input'])} is not text", "write the key as text (name: value)"),
}

def problem_from_error(err: dict, root: type[BaseModel], file: str, rename, locate) -> Problem:
    """`rename` maps the model's location to the YAML path shown; `locate` gives its line."""
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("function-"))))
    if err["type"] == "invalid_key":    # the location holds the key's repr: point at its mapping
        loc = loc[:-1]
    path = rename(loc)
    leaf = str(loc[-1]) if loc else ""
    kind = err["type"]
    if kind == "extra_forbidden":
        allowed = _fields_at(root, loc[:-1]) or []
        guess = did_you_mean(leaf, allowed)
        message = f"unknown field '{leaf}'"
        fix = f"did you mean '{guess}'?" if guess else f"remove it; allowed here: {', '.join(sorted(allowed))}"
    elif kind == "literal_error":
        expected = err["ctx"]["expected"]
        guess = did_you_mean(str(err["input"]), [s.strip(" '") for s in expected.replace(" or ", ",").split(",")])
        message = f"{shown(err['input'])} is not allowed; expected {expected}"
        fix = f"did you mean '{guess}'?" if guess else f"use one of {expected}"
    elif kind == "modelplane":
        message, fix = err["ctx"]["message"], err["ctx"]["fix"]
    elif kind in _FIXES:
        message, fix = _FIXES[kind](err, leaf)
    else:   # a kind without its own words: pydantic's sentence, never its input repr
        message, fix = err["msg"], "correct the value"
    return Problem(file, format_path(path) or "(file)", message, fix, locate(path))


def problems_from(exc: ValidationError, root: type[BaseModel], file: str, locate, rename=tuple) -> list[Problem]:
    return [problem_from_error(e, root, file, rename, locate) for e in exc.errors()]


