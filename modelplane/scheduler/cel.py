"""nodeSelector CEL over class capabilities, with cel-python: compiled once, cached per class.

cel-python is imported, and its parser built, on the first expression: a stack without
nodeSelectors never pays for them. Lark's analysis of the CEL grammar (~0.2 s) is kept in the
user's cache directory, so later runs load the parser instead of building it again.
"""
from __future__ import annotations

import os
import sys
from functools import lru_cache
from pathlib import Path

# celpy.Environment() sets this, and every run imported cel-python with modelplane.api until the
# parser was made lazy: the nesting the YAML and JSON readers accept depends on it, so it stays.
sys.setrecursionlimit(2500)


class CelError(ValueError):
    """An expression that does not compile, or does not evaluate to a bool."""


# Deeper nesting than any selector needs; cel-python's parser recurses per level.
MAX_DEPTH = 32
MAX_LENGTH = 4096
_OPERATORS = {"relation_ge": ">=", "relation_gt": ">", "relation_le": "<=", "relation_lt": "<",
              "relation_eq": "==", "relation_ne": "!=", "relation_in": "in", "addition_add": "+",
              "addition_sub": "-", "multiplication_mul": "*", "multiplication_div": "/",
              "multiplication_mod": "%", "conditionalor": "||", "conditionaland": "&&", "unary_neg": "-",
              "unary_not": "!"}


def _cache_file() -> Path | None:
    """Where Lark keeps the CEL parser's tables (None: no usable cache directory)."""
    import lark

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "modelplane"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder / f"cel-lark-{lark.__version__}-py{sys.version_info[0]}{sys.version_info[1]}.cache"


@lru_cache(maxsize=1)
def environment():
    """The one cel-python Environment, its Lark parser loaded from the cache when it can be.

    cel-python builds its (class-wide, shared) parser with its own grammar and options; only
    Lark's `cache` is added, for that one construction. Lark checks the cache against the grammar,
    the options and its own and Python's versions, rebuilds when they differ, and carries on
    without it when the file cannot be read or written."""
    import celpy
    from celpy import celparser

    real = getattr(celparser, "Lark", None)
    cache = _cache_file() if real is not None and celparser.CELParser.CEL_PARSER is None else None
    if cache is None:
        return celpy.Environment()

    def cached_lark(*args, **kwargs):
        return real(*args, **kwargs, cache=str(cache))

    celparser.Lark = cached_lark
    try:
        return celpy.Environment()
    finally:
        celparser.Lark = real


def _depth(expr: str) -> int:
    depth = deepest = 0
    for ch in expr:
        depth += ch in "([{"
        depth -= ch in ")]}"
        deepest = max(deepest, depth)
    return deepest


@lru_cache(maxsize=None)
def compile_expr(expr: str):
    if len(expr) > MAX_LENGTH:
        raise CelError(f"is longer than {MAX_LENGTH} characters")
    if _depth(expr) > MAX_DEPTH:
        raise CelError(f"nests brackets more than {MAX_DEPTH} levels deep")
    import celpy

    env = environment()
    try:
        return env.program(env.compile(expr))
    except celpy.CELParseError as exc:
        column = getattr(exc, "column", None)
        raise CelError(f"does not parse{f' (at column {column})' if column else ''}") from None
    except RecursionError:
        raise CelError("nests too deeply") from None


def _type_name(cls_name: str) -> str:
    return cls_name.removesuffix("Type").lower().replace("map", "mapping").replace("double", "number")


def explain(message: str) -> str:
    """cel-python's evaluation error in plain words, without its internals."""
    import re

    if message.startswith("undeclared reference to "):
        name = re.search(r"'([^']*)'", message)
        return (f"unknown name {name[1]!r}" if name else "unknown name") + \
            " (variables: gpu, interconnect, network, capabilities)"
    member = re.match(r"no such member in mapping: '([^']*)'", message)
    if member:
        return f"no field {member[1]!r} (fields: `modelplane classes` lists the capabilities)"
    overload = re.match(r"found no matching overload for Token\('RULE', '(\w+)'\) applied to '(.*)'", message)
    if overload:
        types = [_type_name(t) for t in re.findall(r"celtypes\.(\w+)'", overload[2])]
        op = _OPERATORS.get(overload[1], overload[1].split("_")[-1])
        return f"'{op}' cannot compare or combine {' and '.join(types) or 'these values'}"
    if "divide by zero" in message:
        return "divides by zero"
    if message.startswith("no such overload"):
        return "a function is called with arguments of the wrong type"
    return "cannot be evaluated"


def activation(capabilities: dict) -> dict:
    """Variables bound for an expression: each capability group, and `capabilities` itself."""
    import celpy

    doc = celpy.json_to_cel(capabilities)
    return {"capabilities": doc, **{k: v for k, v in doc.items()}}


class Matcher:
    """Evaluates each (expression, class) pair once."""

    def __init__(self):
        self._cache: dict[tuple[str, str], bool] = {}
        self._acts: dict[str, dict] = {}

    def matches(self, expr: str, class_name: str, capabilities: dict) -> bool:
        if not expr.strip():
            return True
        key = (expr, class_name)
        if key not in self._cache:
            import celpy
            from celpy import celtypes

            program = compile_expr(expr)
            act = self._acts.get(class_name)
            if act is None:
                act = self._acts[class_name] = activation(capabilities)
            try:
                result = program.evaluate(act)
            except celpy.CELEvalError as exc:
                raise CelError(f"on class {class_name!r}: {explain(str(exc.args[0]))}") from None
            except (RecursionError, ArithmeticError, TypeError, ValueError, KeyError):
                raise CelError(f"on class {class_name!r}: cannot be evaluated") from None
            if isinstance(result, celpy.CELEvalError):
                raise CelError(f"on class {class_name!r}: {explain(str(result.args[0]))}")
            if not isinstance(result, celtypes.BoolType):
                raise CelError(f"yields {_type_name(type(result).__name__)}, not true or false")
            self._cache[key] = bool(result)
        return self._cache[key]
