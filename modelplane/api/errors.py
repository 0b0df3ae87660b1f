"""Turn pydantic errors into Problems: YAML path, plain message, a fix, a line when known."""
from __future__ import annotations

import typing

from pydantic import BaseModel, ValidationError

from ..errors import Problem, did_you_mean


def format_path(parts) -> str:
    out = ""
    for part in parts:
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


_FIXES = {
    "missing": lambda e, leaf: (f"required field '{leaf}' is missing", f"add '{leaf}'"),
    "int_parsing": lambda e, leaf: (f"expected a whole number, got {e['input']!r}", "write a number such as 2"),
    "int_type": lambda e, leaf: (f"expected a whole number, got {e['input']!r}", "write a number such as 2"),
    "int_from_float": lambda e, leaf: (f"expected a whole number, got {e['input']!r}", "drop the fraction"),
    "bool_parsing": lambda e, leaf: (f"expected true or false, got {e['input']!r}", "write true or false"),
    "bool_type": lambda e, leaf: (f"expected true or false, got {e['input']!r}", "write true or false"),
    "string_type": lambda e, leaf: (f"expected text, got {e['input']!r}", "quote the value"),
    "list_type": lambda e, leaf: (f"expected a list, got {type(e['input']).__name__}", "write a YAML list (- item)"),
    "dict_type": lambda e, leaf: (f"expected a mapping, got {type(e['input']).__name__}", "write a YAML mapping (key: value)"),
    "model_type": lambda e, leaf: (f"expected a mapping, got {type(e['input']).__name__}", "write a YAML mapping (key: value)"),
    "greater_than_equal": lambda e, leaf: (f"must be at least {e['ctx']['ge']}, got {e['input']!r}", f"use a value >= {e['ctx']['ge']}"),
    "greater_than": lambda e, leaf: (f"must be greater than {e['ctx']['gt']}, got {e['input']!r}", f"use a value > {e['ctx']['gt']}"),
    "less_than_equal": lambda e, leaf: (f"must be at most {e['ctx']['le']}, got {e['input']!r}", f"use a value <= {e['ctx']['le']}"),
    "too_short": lambda e, leaf: (f"needs at least {e['ctx']['min_length']} item(s)", "add the missing entries"),
    "string_pattern_mismatch": lambda e, leaf: (f"{e['input']!r} does not match {e['ctx']['pattern']}", "correct the value's format"),
}


def problem_from_error(err: dict, root: type[BaseModel], file: str, rename, locate) -> Problem:
    """`rename` maps the model's location to the YAML path shown; `locate` gives its line."""
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("function-"))))
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
        message = f"{err['input']!r} is not allowed; expected {expected}"
        fix = f"did you mean '{guess}'?" if guess else f"use one of {expected}"
    elif kind == "modelplane":
        message, fix = err["ctx"]["message"], err["ctx"]["fix"]
    elif kind in _FIXES:
        message, fix = _FIXES[kind](err, leaf)
    else:
        message, fix = err["msg"], "correct the value"
    return Problem(file, format_path(path), message, fix, locate(path))


def problems_from(exc: ValidationError, root: type[BaseModel], file: str, locate, rename=tuple) -> list[Problem]:
    return [problem_from_error(e, root, file, rename, locate) for e in exc.errors()]


