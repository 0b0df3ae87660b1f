"""What a stack policy reads its resources by: their type, or a Kubernetes object's kind.

A stack policy is handed every resource of the stack. Most rules read a few types of them (the
ModelDeployment components, the Queues), and there are 26,000 resources at 100 x 2,000, so a
scan per rule costs more than the rule. The direct gate hands each rule a `Resources` list, whose
resources by type and kind are indexed once per view and shared by every rule's copy. Under the
pack (pulumi-policy's analyzer) a rule gets a plain list, and the same helpers scan it: same
resources, same order.
"""
from __future__ import annotations

KUBERNETES = "kubernetes:"


class Resources(list):
    """A stack policy's resources (its own copy, as the pack hands each rule one), with an index
    of them by type and kind built on first use and shared with the other copies of one view.
    Rules read, never change, what they are handed (registry.py), so the index stays true."""

    __slots__ = ("_index",)

    def __init__(self, resources, index: dict):
        super().__init__(resources)
        self._index = index

    def of_type(self, type_: str) -> list:
        types = self._index.get("types")
        if types is None:
            types = self._index["types"] = {}
            for r in self:
                types.setdefault(r.resource_type, []).append(r)
        return types.get(type_) or []

    def of_kind(self, kind: str) -> list:
        kinds = self._index.get("kinds")
        if kinds is None:       # apart from the types: reading a kind through the pack's view costs more
            kinds = self._index["kinds"] = {}
            for r in self:
                if r.resource_type.startswith(KUBERNETES):
                    found = r.props.get("kind")
                    if found.__class__ is str:      # what a rule asks for; any other is never equal to it
                        kinds.setdefault(found, []).append(r)
        return kinds.get(kind) or []


def of_type(resources, type_: str):
    """The resources of one type, in the stack's order."""
    if resources.__class__ is Resources:
        return resources.of_type(type_)
    return [r for r in resources if r.resource_type == type_]


def of_kind(resources, kind: str):
    """The Kubernetes objects of one kind, in the stack's order."""
    if resources.__class__ is Resources:
        return resources.of_kind(kind)
    return [r for r in resources if r.resource_type.startswith(KUBERNETES) and r.props.get("kind") == kind]
