"""What a validation rule returns, and the small helpers every rule module shares.

Its own module so the rule modules (`rules`, `parallelism`, `scaling_rules`, `collisions`) import
it and never one another in a circle.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    rule: str
    path: tuple
    message: str
    fix: str


def duplicates(names) -> list[tuple[int, str]]:
    seen, out = set(), []
    for i, name in enumerate(names):
        if name in seen:
            out.append((i, name))
        seen.add(name)
    return out


def dependency_cycle(edges: dict[str, list[str]]) -> list[str] | None:
    """One cycle in a dependency graph (as a path), or None; deterministic."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, [])):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt in edges and not state.get(nxt):
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if not state.get(node):
            found = visit(node)
            if found:
                return found
    return None
