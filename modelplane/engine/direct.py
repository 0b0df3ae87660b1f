"""The direct engine: the plan without the Pulumi SDK in the loop.

It builds the same resource graph the program builds (assemble.py) and resolves it the way a
preview under the offline mocks (offline.py) would: URNs, parents, provider references,
dependencies (a component stands for its resources, expressions depend on what they read),
inputs as the engine receives them (numbers as doubles, secrets and unknowns marked), and the
few inputs the SDK's typed classes add themselves. `tests/test_engines.py` holds both engines
to the same records on every example stack and on generated fleets.

Inputs that are plain JSON with integers (most of a fleet: no expression, secret, float or
tuple) are recorded as given, their integers not turned into doubles: every reader compares
them by value (an integer equals its double), the gate converts the levels it reads as the pack
does (policy/direct.py `lazy_props_of`), and the report writes them as given. Half the time of
recording a large fleet was that copy.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..api.loader import check_stack, display_path, stack_source
from .assemble import Remote, assemble
from .records import (_COMPUTED, OFFLINE_KUBECONFIG, ORGANIZATION, PROJECT, SECRET_OUTPUTS, SECRET_SIG, SIG_KEY,
                      UNKNOWN, UNKNOWN_SENTINELS, UNKNOWN_TEXT, OfflineRun, Record, _merge)
from .references import fleet_references
from ..render.graph import STACK_REFERENCE, Apply, Graph, Ref, Secret, StackOutput, key_of
from ..render.names import SecretValue
from ..scheduler import Placement

STACK_TYPE = "pulumi:pulumi:Stack"

# Inputs a typed SDK class sets on its own (pulumi-kubernetes Release, pulumi-aws Provider).
_SDK_ADDS = {
    "kubernetes:helm.sh/v3:Release": {"compat": "true"},
    "pulumi:providers:aws": {"skipCredentialsValidation": False, "skipRegionValidation": True},
}


def _plain(v) -> bool:
    """Plain JSON with integers a double holds exactly: no float, tuple, secret, expression,
    unknown's sentinel or other type, so recorded as given (module docstring)."""
    for x in (v.values() if v.__class__ is dict else v):
        c = x.__class__
        if c is str:
            if len(x) == 36 and x in UNKNOWN_SENTINELS:     # the length first: no hash of every text
                return False
        elif c is bool or x is None:
            continue
        elif c is int:
            if not -_EXACT <= x <= _EXACT:
                return False
        elif c is dict:
            if SIG_KEY in x or not _plain(x):
                return False
        elif c is not list or not _plain(x):
            return False
    return True


class _Value:
    """An evaluated expression: its plain value, whether it is known and secret, and the URNs of
    the resources it read."""

    __slots__ = ("value", "known", "secret", "deps")

    def __init__(self, value, known=True, secret=False, deps=frozenset()):
        self.value, self.known, self.secret, self.deps = value, known, secret, deps


_EXPRESSIONS = (Ref, Apply, Secret, SecretValue, StackOutput)
_EXPRESSION_TYPES = frozenset(_EXPRESSIONS)
_EXACT = 2 ** 53                # integers a double holds exactly: the report writes them back unchanged


class Resolver:
    """Records of one graph as the offline mocks would record them."""

    def __init__(self, graph: Graph, stack: str, references: dict, project: str = PROJECT,
                 secret_text: str = OFFLINE_KUBECONFIG):
        self.graph, self.stack, self.project, self.references = graph, stack, project, references
        self.secret_text = secret_text
        self.root = f"urn:pulumi:{stack}::{project}::{STACK_TYPE}::{project}-{stack}"
        self.urns: dict[str, str] = {}
        self.state: dict[str, dict] = {}
        self.children: dict[str, list[str]] = {}
        self.expansions: dict[str, frozenset[str]] = {}     # component key -> its resources' URNs so far
        self.grown = 0              # how many times an expansion was dropped (a component gained a child)
        self.finite = True          # no NaN or infinity wired (the gate then converts props on read)
        self.plain: set[str] = set()      # URNs whose inputs are recorded as given (`records`)
        self.protects: dict[str, bool] = {}   # a parent's key -> `protected` (options never change in `records`)
        self.shared: dict | None = None   # id of a value -> it wired, while outputs are (`records`)

    # -- names -----------------------------------------------------------------------------
    def urn(self, key: str) -> str:
        found = self.urns.get(key)
        if found is None:
            node = self.graph.nodes[key]
            parent = self.urn(node.parent) if node.parent else self.root
            parent_type = parent.split("::")[2].split("$")[-1]
            found = self.urns[key] = f"urn:pulumi:{self.stack}::{self.project}::{parent_type}${node.type}::{node.name}"
        return found

    def protected(self, key: str) -> bool:
        """The `protect` option as the SDK sends it: the node's own, else its parent's (a parent's
        answer kept: its children ask for it in turn)."""
        node = self.graph.nodes[key]
        if node.protect is not None:
            return node.protect
        if not node.parent:
            return False
        found = self.protects.get(node.parent)
        if found is None:
            found = self.protects[node.parent] = self.protected(node.parent)
        return found

    def reference_urn(self, key: str) -> str:
        name = key.split("::", 1)[1]
        return f"urn:pulumi:{self.stack}::{self.project}::{STACK_TYPE}${STACK_REFERENCE}::{name}"

    def expand(self, keys) -> set[str]:
        """URNs a dependency on these nodes means: a local component stands for its resources
        (those registered so far, as the SDK expands it)."""
        out: set[str] = set()
        for key in keys:
            out |= self._expanded(key)
        return out

    def _expanded(self, key: str) -> frozenset[str]:
        found = self.expansions.get(key)
        if found is None:
            node = self.graph.nodes.get(key)
            if node is None:
                found = frozenset((self.reference_urn(key),))
            elif node.custom or node.remote:
                found = frozenset((self.urn(key),))
            else:
                found = frozenset().union(*[self._expanded(k) for k in self.children.get(key, ())])
            self.expansions[key] = found
        return found

    def _adopt(self, node) -> None:
        """Register `node` as its parent's child; its ancestors' expansions grow by it."""
        self.children.setdefault(node.parent, []).append(node.key)
        key = node.parent
        while key:
            if self.expansions.pop(key, None) is not None:
                self.grown += 1
            parent = self.graph.nodes.get(key)
            key = parent.parent if parent is not None else None

    # -- values ----------------------------------------------------------------------------
    def evaluate(self, v) -> _Value:
        """An input as a plain value (markers inside it folded into known/secret/deps)."""
        if isinstance(v, Ref):
            node = self.graph.nodes[v.node]
            deps = frozenset((self.urn(v.node),))
            if v.path == "id":
                return _Value(f"{node.name}-id", deps=deps)
            value = self.state_of(v.node)
            for part in v.path.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            return _Value(value, known=value is not None, deps=deps)
        if isinstance(v, Secret):
            inner = self.evaluate(v.value)
            return _Value(inner.value, inner.known, True, inner.deps)
        if isinstance(v, SecretValue):
            return _Value(self.secret_text, secret=True)     # the key's value; a prefix is an Apply around it
        if isinstance(v, Apply):
            args = [self.evaluate(a) for a in v.args]
            known = all(a.known for a in args)
            return _Value(v.fn(*[a.value for a in args]) if known else None, known,
                          any(a.secret for a in args), frozenset().union(*[a.deps for a in args]))
        if isinstance(v, StackOutput):
            ref = self.reference_urn(v.node)
            stack = v.node.rsplit("/", 1)[-1]
            value = self.references.get(stack, {}).get(v.name)
            if v.item is not None:
                value = (value or {}).get(v.item)
            return _Value(value, secret=v.name in SECRET_OUTPUTS, deps=frozenset((ref,)))
        if isinstance(v, dict):
            parts = {k: self.evaluate(x) for k, x in v.items()}
            return _Value({k: p.value for k, p in parts.items()}, all(p.known for p in parts.values()),
                          any(p.secret for p in parts.values()), frozenset().union(*[p.deps for p in parts.values()]))
        if isinstance(v, (list, tuple)):
            parts = [self.evaluate(x) for x in v]
            return _Value([p.value for p in parts], all(p.known for p in parts), any(p.secret for p in parts),
                          frozenset().union(*[p.deps for p in parts]))
        return _Value(v)

    def wire(self, v, deps: set, unknown=UNKNOWN):
        """An input as the engine receives it: doubles, secrets wrapped where they occur."""
        t = type(v)
        if t is str or t is bool or v is None:
            return v
        if t is float:
            if v - v != 0.0:        # NaN or an infinity: the pack fails on it (policy/direct.py)
                self.finite = False
            return v
        if t is int:
            return float(v)
        if t is dict:
            shared = self.shared
            if shared is not None and id(v) in shared:
                return shared[id(v)]
            out = {}
            if shared is not None:
                shared[id(v)] = out
            for k, x in v.items():      # leaves inline: most of a graph's inputs are text and integers
                c = type(x)
                if c is str or c is bool or x is None:
                    out[k] = x
                elif c is int and -_EXACT <= x <= _EXACT:
                    out[k] = float(x)
                else:
                    out[k] = self.wire(x, deps, unknown)
            return out
        if t is list or t is tuple:
            out = []
            for x in v:
                c = type(x)
                out.append(x if c is str else float(x) if c is int and -_EXACT <= x <= _EXACT
                           else self.wire(x, deps, unknown))
            return out
        if t in _EXPRESSION_TYPES:
            e = self.evaluate(v)
            deps |= e.deps
            if not e.known:
                return unknown
            value = self.doubles(e.value)
            return {SIG_KEY: SECRET_SIG, "value": value} if e.secret else value
        return self.doubles(v)

    def doubles(self, value):
        """Numbers as the engine's protobuf Struct carries them (doubles); tuples as lists."""
        t = type(value)
        if t is int:
            return float(value)
        if t is float:
            if value - value != 0.0:
                self.finite = False
            return value
        if t is dict:
            return {k: self.doubles(v) for k, v in value.items()}
        if t is list or t is tuple:
            return [self.doubles(v) for v in value]
        if isinstance(value, int) and not isinstance(value, bool):     # an IntEnum, say
            return float(value)
        if isinstance(value, float) and value - value != 0.0:
            self.finite = False
        return value

    def state_of(self, key: str) -> dict:
        """What the mocks answer for a resource: its inputs (known, non-null) and computed outputs
        (worked out when an expression first reads the resource)."""
        found = self.state.get(key)
        if found is None:
            node = self.graph.nodes[key]
            plain = {}
            for k, v in node.inputs.items():
                e = self.evaluate(v)
                if e.known and e.value is not None:
                    plain[k] = e.value
            found = self.state[key] = _merge(plain, _COMPUTED.get(node.type, {}))
        return found

    # -- records ---------------------------------------------------------------------------
    def records(self) -> list[Record]:
        out = [Record(STACK_TYPE, f"{self.project}-{self.stack}", self.root, "", "", False)]
        # (dependsOn, expansions unchanged since) -> the URNs and their sorted tuple: a replica's
        # objects mostly name the same components
        expanded: dict[tuple, tuple[set, tuple]] = {}
        providers: dict[str, str] = {}          # a provider's key -> its reference, as the SDK sends it
        urns = self.urns
        for node in self.graph:
            parent = node.parent
            if parent:
                self._adopt(node)
            on = (tuple(node.depends_on), self.grown)
            deps, ordered = expanded.get(on) or (None, None)
            if deps is None:
                deps = self.expand(node.depends_on)
                ordered = tuple(sorted(deps))
                expanded[on] = (deps, ordered)
            urn = urns.get(node.key) or self.urn(node.key)
            provider = ""
            if node.provider and (node.custom or node.remote):
                provider = providers.get(node.provider)
                if provider is None:
                    provider = providers[node.provider] = \
                        f"{self.urn(node.provider)}::{self.graph.nodes[node.provider].name}-id"
            record = Record(node.type, node.name, urn, (urns.get(parent) or self.urn(parent)) if parent else self.root,
                            provider, node.custom, ignore_changes=tuple(node.ignore_changes), import_id=node.import_id,
                            protect=self.protected(node.key), delete_before_replace=node.delete_before_replace,
                            replace_on_changes=tuple(node.replace_on_changes), retain_on_delete=node.retain_on_delete)
            if node.custom or node.remote:
                inputs = {**node.inputs, **_SDK_ADDS.get(node.type, {})}
                if node.type.startswith("pulumi:providers:"):      # provider config travels as strings
                    inputs = {k: v if isinstance(v, (str, *_EXPRESSIONS)) else json.dumps(v) for k, v in inputs.items()}
                given = {k: v for k, v in inputs.items() if v is not None}
                if _plain(given):   # recorded as given (module docstring); the report writes it as is
                    record.inputs = given
                    self.plain.add(urn)
                else:
                    found: set[str] = set()
                    record.inputs = self.wire(given, found)
                    if not found <= deps:
                        ordered = tuple(sorted(deps | found))
            record.dependencies = ordered
            out.append(record)
        # Components register their outputs once their resources exist (a Gateway's address).
        # Their outputs share values: every deployment's names the inventories of its clusters,
        # which are the clusters' own (at 100 x 2,000, 40 deployments over 100 inventories). Each
        # value is wired once and the records share it: readers only read, and the SDK's copies
        # would be equal. Only values the graph holds are wired here, so no id is met twice for two values.
        by_key = {r.urn: r for r in out}
        self.shared = {}
        for node in self.graph:
            if not node.custom and not node.remote and node.outputs:
                by_key[self.urn(node.key)].outputs = self.wire(node.outputs, set(), UNKNOWN_TEXT)
        self.shared = None
        return out


def reference_key(stack: str) -> str:
    return key_of(STACK_REFERENCE, f"{ORGANIZATION}/{PROJECT}/{stack}")


def run(stack: str, config_file: Path | None = None, previous: list[dict] | None = None,
        exclude: tuple[str, ...] = (), checked=None) -> OfflineRun:
    """Validate, build the graph and record it as a preview would. Raises InputError on bad input.
    `checked`: what api.loader.check_stack already returned for this stack file."""
    path, catalog, spec = checked or check_stack(stack, config_file)
    references = {stack: {"placements": previous or []}, **fleet_references(spec, catalog, path)}
    # StackReferences are reads, not registrations: expressions name them, no node stands for them.
    remote = [Remote(infra, reference_key(infra), references[infra].get("inventory") or []) for infra in spec.fleet]
    prior = [] if spec.repack else [Placement.from_json(p) for p in (previous or [])]
    src = stack_source(path)
    built = assemble(spec, catalog, display_path(path), remote, prior, exclude=exclude,
                     locate=lambda p: src.line(("config", *p)))
    resolver = Resolver(built.graph, stack, references)
    records = resolver.records()
    return OfflineRun(stack, built.result, records, tuple(exclude), finite=resolver.finite,
                      plain=frozenset(resolver.plain))
