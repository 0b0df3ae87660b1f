"""Every resource the program registers, as a pure value: a graph of nodes.

A `Node` is one resource exactly as the Pulumi engine receives it: type token, logical name,
parent, provider, explicit dependencies, resource options and its inputs under the engine's
(camelCase) names. Inputs that only exist once another resource does are expressions over that
resource (`Ref`, `Apply`, `Secret`, ...). Two engines read the same graph:
`components/materialize.py` turns it into Pulumi resources, `modelplane/engine/direct.py` resolves it
the way a preview under the offline mocks would, without the SDK.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(frozen=True)
class Ref:
    """Output property `path` (engine names, dotted) of the node `node`; `id` is its ID."""

    node: str
    path: str


@dataclass(frozen=True)
class Apply:
    """`fn` over the resolved `args` (an Output's apply: unknown if any argument is)."""

    fn: Callable
    args: tuple


@dataclass(frozen=True)
class Secret:
    """`value`, marked secret."""

    value: Any


@dataclass(frozen=True)
class ConfigSecret:
    """The stack's secret config key `key` (namespace modelplane), optionally after `prefix`."""

    key: str
    prefix: str = ""


@dataclass(frozen=True)
class StackOutput:
    """Output `name` of the StackReference node `node`, item `item` of it (None: all of it)."""

    node: str
    name: str
    item: str | None = None
    required: bool = False


@dataclass
class Node:
    type: str
    name: str
    inputs: dict = field(default_factory=dict)
    parent: str | None = None          # key of the parent node; None: the stack
    provider: str | None = None        # key of an explicit provider node
    depends_on: tuple = ()             # keys of nodes (a component stands for its resources)
    ignore_changes: tuple = ()
    import_id: str = ""
    protect: bool | None = None        # Pulumi refuses to delete it; None: as its parent
    delete_before_replace: bool = False   # a replacement deletes the old one first
    replace_on_changes: tuple = ()     # input paths whose change replaces it instead of updating it
    retain_on_delete: bool = False     # a delete drops it from the state and leaves the object
    custom: bool = True
    remote: bool = False               # a multi-language component (yaml/v2 ConfigFile)
    outputs: dict | None = None        # what a component registers (register_outputs)
    cluster: str = ""                  # the cluster a Kubernetes object belongs to

    key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        # made once: a node's type and name never change, and the graph's passes ask for it often
        # (a field, not a cached_property, whose first read takes a lock on Python 3.11)
        self.key = key_of(self.type, self.name)


def key_of(type_: str, name: str) -> str:
    return f"{type_}::{name}"


STACK_REFERENCE = "pulumi:pulumi:StackReference"


class Graph:
    """Nodes in registration order; a node's parent, provider and dependencies come before it."""

    def __init__(self):
        self.nodes: dict[str, Node] = {}
        self.outputs: dict = {}          # the stack's outputs (expressions allowed)

    def add(self, node: Node) -> str:
        key = node.key
        if key in self.nodes:
            raise ValueError(f"two resources named {node.name!r} of type {node.type}")
        self.nodes[key] = node
        return key

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self):
        return iter(self.nodes.values())
