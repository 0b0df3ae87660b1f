"""nodeSelector CEL over class capabilities (and the pool and cluster), clusterSelector CEL over
the cluster, with cel-python: compiled once, each outcome kept per expression and the values of
the variables it names (shared by every Matcher, and across runs in the user's cache).

cel-python is imported, and its parser built, on the first expression: a stack without
nodeSelectors never pays for them. The parser Lark builds from the CEL grammar (~0.2 s) is kept
in the user's cache directory, so later runs load it instead of building it again.
"""
from __future__ import annotations

import sys
import threading
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
    """Where the CEL parser is kept, named for what it is built from: cel-python's grammar and
    parser code, Lark's and Python's versions (None: no usable cache directory)."""
    import hashlib

    import lark
    from celpy import celparser

    from ..usercache import cache_dir

    folder = cache_dir()
    if folder is None:
        return None
    try:
        source = Path(celparser.__file__)
        key = hashlib.sha256(source.read_bytes() + (source.parent / "cel.lark").read_bytes()
                             + f"{lark.__version__} {sys.version_info[:2]}".encode()).hexdigest()[:16]
    except (OSError, TypeError):
        return None
    return folder / f"cel-parser-{key}.pickle"


def _load_parser(path: Path):
    """The parser kept at `path`, or None (absent, unreadable, or not a parser)."""
    import lark

    try:
        with path.open("rb") as f:
            parser = lark.Lark.load(f)
    except Exception:  # noqa: BLE001  (any failure: build it again)
        return None
    return parser if isinstance(parser, lark.Lark) else None


def _save_parser(parser, path: Path) -> None:
    """Keep `parser` at `path` as Lark.save would, except that rule names keep their type.

    Lark saves a rule's name as text while the parser it builds names trees with the grammar's
    Token('RULE', name), and cel-python's error messages show that name: the Tokens are put back
    so a parser loaded from here builds the same trees and the same messages."""
    import pickle

    from lark.grammar import Rule
    from lark.lexer import TerminalDef

    from ..usercache import write_whole

    names = {str(r.origin.name): r.origin.name for r in parser.rules if type(r.origin.name) is not str}

    def restore(value):
        if isinstance(value, dict):
            if value.get("__type__") == "NonTerminal" and value.get("name") in names:
                return {**value, "name": names[value["name"]]}
            return {k: restore(v) for k, v in value.items()}
        if isinstance(value, list):
            return [restore(v) for v in value]
        return value

    try:
        data, memo = parser.memo_serialize([TerminalDef, Rule])
        kept = pickle.dumps({"data": restore(data), "memo": restore(memo)}, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001  (no cache: the next run builds the parser again)
        return
    write_whole(path, kept)


_LOCK = threading.Lock()     # one thread builds or loads the parser; another waits and uses it


@lru_cache(maxsize=1)
def environment():
    """The one cel-python Environment. Its parser (class-wide in cel-python) is loaded from the
    user's cache when it is there, else cel-python builds it with its own grammar and options
    (~0.2 s of Lark's grammar analysis) and it is kept for the next run."""
    import celpy
    from celpy.celparser import CELParser

    with _LOCK:
        path = _cache_file() if CELParser.CEL_PARSER is None else None
        loaded = None
        if path is not None:
            loaded = CELParser.CEL_PARSER = _load_parser(path)
        limit = sys.getrecursionlimit()
        env = celpy.Environment()
        sys.setrecursionlimit(limit)    # as the import set it (above), or as it has been set since
        if path is not None and loaded is None:     # built just now: keep it (over a broken file too)
            _save_parser(CELParser.CEL_PARSER, path)
    return env


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


# The fix of a clusterSelector.cel that does not compile, is not a bool, or fails on a cluster
# (a label read without checking it is there): the loader's and the plan's.
CLUSTER_CEL_FIX = ('write a boolean CEL expression over the cluster, e.g. cluster.cloud == "gcp" && "team" in '
                   'cluster.labels && cluster.labels["team"] == "chat" (fields: cluster.name, cluster.labels, '
                   'cluster.region, cluster.cloud)')
NODE_VARIABLES = "gpu, interconnect, network, capabilities, pool, cluster"
CLUSTER_VARIABLES = "cluster"


def explain(message: str, variables: str = NODE_VARIABLES) -> str:
    """cel-python's evaluation error in plain words, without its internals."""
    import re

    if message.startswith("undeclared reference to "):
        name = re.search(r"'([^']*)'", message)
        return (f"unknown name {name[1]!r}" if name else "unknown name") + f" (variables: {variables})"
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


def activation(capabilities: dict, context: dict | None = None) -> dict:
    """Variables bound for an expression: each capability group, `capabilities` itself, and the
    pool and cluster (`place`) when the expression reads them."""
    import celpy

    doc = celpy.json_to_cel(capabilities)
    return {"capabilities": doc, **{k: v for k, v in doc.items()}, **celpy.json_to_cel(context or {})}


def uses_place(expr: str) -> bool:
    """Whether an expression reads `pool.` or `cluster.` (then it is decided per pool, not per class)."""
    import re

    text = re.sub(r"\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'", '""', expr)
    return re.search(r"\b(?:pool|cluster)\s*\.", text) is not None


def place(pool, cluster) -> dict:
    """What a selector sees of where a pool is: `pool.name`, `pool.capacity` (on-demand, spot,
    reservation, capacity-block, flex-start), `pool.labels`, `pool.minNodes`; `cluster.name`,
    `cluster.labels`, `cluster.region`, `cluster.cloud`."""
    return {"pool": {"name": pool.name, "capacity": pool.capacity, "labels": dict(pool.labels),
                     "minNodes": pool.paid_nodes},
            "cluster": cluster_place(cluster.name, cluster.labels, cluster.region, cluster.cloud)}


def cluster_place(name: str, labels, region: str = "", cloud: str = "") -> dict:
    """What a selector sees of a cluster: `cluster.name`, `cluster.labels`, `cluster.region`,
    `cluster.cloud` (gcp, aws)."""
    return {"name": name, "labels": dict(labels), "region": region or "", "cloud": cloud or ""}


# What an expression gave on the values it reads, for every Matcher of the process: the loader
# checks each nodeSelector on every catalog class, the scheduler on the classes of the pools, once
# per stack of a fleet, and classes share GPU, network or interconnect blocks. An outcome is True,
# False or (whole, message): a CelError's text, without its subject unless `whole`.
_OUTCOMES: dict[tuple, bool | tuple[bool, str]] = {}
_OUTCOMES_MAX = 1 << 16


@lru_cache(maxsize=None)
def _identifiers(expr: str) -> frozenset[str]:
    """Every identifier in the expression's syntax tree (variables, fields, macro variables): a
    variable it does not name cannot change what it gives (CEL has no dynamic variable lookup)."""
    kept = _kept()["names"].get(expr)
    if kept is not None:
        return frozenset(kept)
    from lark import Token

    tree = compile_expr(expr).ast
    names = frozenset(str(t) for t in tree.scan_values(lambda v: isinstance(v, Token) and v.type == "IDENT"))
    _keep("names", expr, sorted(names))
    return names


def check_syntax(expr: str) -> None:
    """CelError if `expr` does not compile: without cel-python when it compiled in an earlier run."""
    if expr not in _kept()["names"]:
        _identifiers(expr)


# Outcomes and identifiers kept across runs in the user's cache directory, so a plan whose
# selectors were all seen before imports neither cel-python nor Lark (~0.1 s) and evaluates
# nothing. Named for what they depend on: this module's code and cel-python's files; a missing,
# unreadable or foreign file only means evaluating again.
_KEEP_MAX = 1024      # entries of each kind: the file stays a few hundred KiB, read in a few ms
_store: dict = {}


def _kept_file() -> Path | None:
    import hashlib
    from importlib.util import find_spec

    from ..usercache import cache_dir

    folder = cache_dir()
    specs = [find_spec("celpy"), find_spec("lark")]
    if folder is None or not all(s is not None and s.origin for s in specs):
        return None
    try:
        digest = hashlib.sha256(Path(__file__).read_bytes() + f"{sys.version_info[:2]}".encode())
        for spec in specs:
            where = Path(spec.origin).parent
            for f in sorted(where.glob("*.py")) + sorted(where.glob("*.lark")):
                st = f.stat()
                digest.update(f"{f} {st.st_size} {st.st_mtime_ns}".encode())
    except OSError:
        return None
    return folder / f"cel-outcomes-{digest.hexdigest()[:16]}.json"


def _kept() -> dict:
    """{"names": {expr: [identifier]}, "outcomes": {(expr, variables, values): outcome}}, read once."""
    if not _store:
        import json

        _store.update(names={}, outcomes={}, file=None, new=0)
        path = _store["file"] = _kept_file()
        try:
            doc = json.loads(path.read_text()) if path is not None else {}
            _store["names"] = {str(k): [str(n) for n in v] for k, v in doc.get("names", {}).items()}
            outcomes = {(e, v, tuple((n, r) for n, r in values)): o if isinstance(o, bool) else (o[0], o[1])
                        for e, v, values, o in doc.get("outcomes", [])}
            if not all(isinstance(o, bool) or (isinstance(o[0], bool) and isinstance(o[1], str))
                       for o in outcomes.values()):
                raise ValueError("not an outcome")
            _store["outcomes"] = outcomes
        except Exception:  # noqa: BLE001  (absent or not ours: start empty)
            _store.update(names={}, outcomes={})
    return _store


def _keep(kind: str, key, value) -> None:
    store = _kept()
    if len(store[kind]) >= _KEEP_MAX:
        store[kind].clear()
    store[kind][key] = value
    if not store["new"]:
        import atexit
        atexit.register(_save)
    store["new"] += 1


def _save() -> None:
    """Write what this run added, whole or not at all (another run may be reading the file)."""
    import json

    from ..usercache import write_whole

    path = _store.get("file")
    if path is None or not _store.get("new"):
        return
    try:
        doc = {"names": _store["names"],
               "outcomes": [[e, v, [list(x) for x in values], o if isinstance(o, bool) else list(o)]
                            for (e, v, values), o in _store["outcomes"].items()]}
        text = json.dumps(doc, sort_keys=True)
    except Exception:  # noqa: BLE001  (no cache: the next run evaluates again)
        return
    write_whole(path, text.encode())


def _read_values(expr: str, source: dict) -> tuple:
    """The values of the variables `expr` names, as text that tells 1, 1.0 and true apart and keeps
    key order (a macro walks a map in its order)."""
    names = _identifiers(expr)
    return tuple((name, repr(source[name]) if name in source else None) for name in sorted(names))


def _outcome(expr: str, act: dict, variables: str) -> bool | tuple[bool, str]:
    import celpy
    from celpy import celtypes

    program = compile_expr(expr)
    try:
        result = program.evaluate(act)
    except celpy.CELEvalError as exc:
        return (False, explain(str(exc.args[0]), variables))
    except (RecursionError, ArithmeticError, TypeError, ValueError, KeyError):
        return (False, "cannot be evaluated")
    if isinstance(result, celpy.CELEvalError):
        return (False, explain(str(result.args[0]), variables))
    if not isinstance(result, celtypes.BoolType):
        return (True, f"yields {_type_name(type(result).__name__)}, not true or false")
    return bool(result)


class Matcher:
    """Evaluates each (expression, class) pair once."""

    def __init__(self):
        self._cache: dict[tuple[str, str], bool] = {}
        self._acts: dict[str, dict] = {}

    def matches(self, expr: str, class_name: str, capabilities: dict, context: dict | None = None) -> bool:
        """`context`: place(pool, cluster), for an expression that reads them (uses_place)."""
        if not expr.strip():
            return True
        at = class_name if context is None else (class_name, context["cluster"]["name"], context["pool"]["name"])
        return self._evaluate(expr, at, lambda: activation(capabilities, context), f"on class {class_name!r}",
                              NODE_VARIABLES, {"capabilities": capabilities, **capabilities, **(context or {})})

    def selects(self, expr: str, cluster: dict) -> bool:
        """A clusterSelector.cel on one cluster (`cluster`: cluster_place); it sees `cluster` only."""
        if not expr.strip():
            return True

        def act():
            import celpy
            return {"cluster": celpy.json_to_cel(cluster)}
        return self._evaluate(expr, ("cluster", cluster["name"]), act, f"on cluster {cluster['name']!r}",
                              CLUSTER_VARIABLES, {"cluster": cluster})

    def _evaluate(self, expr: str, at, make_act, subject: str, variables: str, source: dict) -> bool:
        key = (expr, at)
        if key not in self._cache:
            shared = (expr, variables, _read_values(expr, source))
            outcome = _OUTCOMES.get(shared)
            if outcome is None:
                outcome = _kept()["outcomes"].get(shared)
            if outcome is None:
                act = self._acts.get(at)
                if act is None:
                    act = self._acts[at] = make_act()
                outcome = _outcome(expr, act, variables)
                _keep("outcomes", shared, outcome)
            if len(_OUTCOMES) >= _OUTCOMES_MAX:
                _OUTCOMES.clear()
            _OUTCOMES[shared] = outcome
            if not isinstance(outcome, bool):
                raise CelError(outcome[1] if outcome[0] else f"{subject}: {outcome[1]}")
            self._cache[key] = outcome
        return self._cache[key]

    def why(self, expr: str, class_name: str, capabilities: dict, context: dict | None = None) -> str:
        """Why `expr` is false for a class (and pool): its first top-level `&&` clause that is false
        (the whole expression when it has one clause) and the values of the fields it reads."""
        return self._why(expr, lambda c: self.matches(c, class_name, capabilities, context),
                         {**capabilities, **(context or {})})

    def why_cluster(self, expr: str, cluster: dict) -> str:
        """Why a clusterSelector.cel is false on a cluster, as `why` says it for a class."""
        return self._why(expr, lambda c: self.selects(c, cluster), {"cluster": cluster})

    @staticmethod
    def _why(expr: str, holds, doc: dict) -> str:
        clauses = _conjuncts(expr)
        failed = expr.strip()
        if len(clauses) > 1:
            try:
                failed = next((c for c in clauses if not holds(c)), failed)
            except CelError:       # a clause alone need not compile (a macro split across &&): name the whole
                pass
        values = [f"{path} = {_shown(_lookup(doc, path))}" for path in _fields(failed)]
        return f"{failed} is false" + (f" ({', '.join(values)})" if values else "")


def _conjuncts(expr: str) -> list[str]:
    """The expression's top-level `&&` clauses (outside brackets and string literals)."""
    out, depth, quote, start, i = [], 0, None, 0, 0
    while i < len(expr):
        ch = expr[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif expr.startswith("&&", i) and depth == 0:
            out.append(expr[start:i].strip())
            start = i + 2
            i += 1
        i += 1
    return [c for c in (*out, expr[start:].strip()) if c]


def _fields(expr: str) -> list[str]:
    """The capability fields an expression reads (gpu.memoryGiB, network.fabric, ...), in order."""
    import re

    text = re.sub(r"\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'", '""', expr)    # not inside string literals
    found = re.findall(r"\b(?:capabilities\.)?((?:gpu|interconnect|network|pool|cluster)(?:\.[A-Za-z_]\w*)+)", text)
    return list(dict.fromkeys(found))


def _lookup(capabilities: dict, path: str):
    value = capabilities
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _shown(value) -> str:
    import json

    return "absent" if value is None else json.dumps(value)

