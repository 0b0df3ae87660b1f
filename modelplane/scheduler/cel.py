"""nodeSelector CEL over class capabilities, with cel-python: compiled once, cached per class."""
from __future__ import annotations

from functools import lru_cache

import celpy
from celpy import celtypes

_ENV = celpy.Environment()


class CelError(ValueError):
    """An expression that does not compile, or does not evaluate to a bool."""


@lru_cache(maxsize=None)
def compile_expr(expr: str):
    try:
        return _ENV.program(_ENV.compile(expr))
    except celpy.CELParseError as exc:
        raise CelError(f"does not parse: {str(exc).splitlines()[0]}") from None


def activation(capabilities: dict) -> dict:
    """Variables bound for an expression: each capability group, and `capabilities` itself."""
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
            program = compile_expr(expr)
            act = self._acts.get(class_name)
            if act is None:
                act = self._acts[class_name] = activation(capabilities)
            try:
                result = program.evaluate(act)
            except celpy.CELEvalError as exc:
                raise CelError(f"cannot evaluate against class {class_name!r}: {exc.args[0]}") from None
            if isinstance(result, celpy.CELEvalError):
                raise CelError(f"cannot evaluate against class {class_name!r}: {result.args[0]}")
            if not isinstance(result, celtypes.BoolType):
                raise CelError(f"evaluates to {type(result).__name__}, not a bool")
            self._cache[key] = bool(result)
        return self._cache[key]
