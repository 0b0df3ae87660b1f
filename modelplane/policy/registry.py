"""The policy catalogue: each rule once, with its name, default level and config.

`policies/__main__.py` turns these into a CrossGuard pack; `modelplane plan` runs that pack over
the recorded resources through the analyzer's gRPC protocol (gate.py). Rule bodies are plain
functions, so tests also call them directly.

A rule only reads the props it gets: by key (`[]`, `get`, `in`), index, iteration, `len`, truth
and comparison. It never changes them, asks a value's type or method beyond those, or decides on
a number's text. The pack hands it doubles and read-only proxies; the direct gate hands it most
props as recorded (integers, dicts, lists: policy/direct.py `raw_views`), and on those reads the
two agree (tests/test_policy_direct.py holds every rule to it).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

ADVISORY, MANDATORY, DISABLED = "advisory", "mandatory", "disabled"


@dataclass(frozen=True)
class Policy:
    name: str
    description: str
    level: str
    kind: str                         # "resource": check(type, props, config) -> [message]
    check: object                     # "stack": check(resources, config) -> [(message, urn | None)]
    config: dict = field(default_factory=dict)   # JSON schema properties of the policy's config
    fix: str = ""                     # what to change in the stack file (or the policy config) to pass
    fixes: tuple = ()                 # (words in a verdict's message, the fix for that case), before `fix`
    types: tuple = ()                 # a resource rule's types (`reads`); () every type

    def fix_for(self, message: str) -> str:
        """The fix for one verdict: the first case whose words its message holds, else the policy's."""
        return next((fix for words, fix in self.fixes if words in message), self.fix)

    def reads(self, resource_type: str) -> bool:
        """Whether this resource rule reads resources of this type (any other it passes)."""
        return not self.types or _reads(self.types)(resource_type)


POLICIES: dict[str, Policy] = {}


def policy(name: str, description: str, kind: str, level: str = MANDATORY, config: dict | None = None,
           fix: str = "", fixes: tuple = (), types: tuple = ()):
    """Register a rule. `types` (resource rules): the resource types it reads, a name ending in ':'
    standing for a provider's every type ("kubernetes:"); it passes every other type unread, under
    the pack and in the direct gate, which asks only the rules that read a resource's type."""
    def register(fn):
        check = fn
        if types:
            reads = _reads(types)

            def check(resource_type, props, config=None):
                return fn(resource_type, props, config) if reads(resource_type) else []
            check.__name__, check.__doc__, check.__wrapped__ = fn.__name__, fn.__doc__, fn
        POLICIES[name] = Policy(name, description, level, kind, check, config or {}, fix, fixes, types)
        return check
    return register


@functools.cache
def _reads(types: tuple):
    """A test of a resource type against `types` (exact names, and prefixes ending in ':')."""
    exact, prefixes = frozenset(t for t in types if not t.endswith(":")), tuple(t for t in types if t.endswith(":"))
    return lambda resource_type: resource_type in exact or resource_type.startswith(prefixes)
