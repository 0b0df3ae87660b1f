"""In what order one replica's role objects are applied: `dependsOn` (start-up order) plus, when an
InPlace replica changes size, the scale order of its bindings (growing: the roles furthest from
decode first; shrinking: decode first). A scale edge that would contradict `dependsOn` (a cycle)
is left out: start-up order wins. Pure; the component turns edges into Pulumi `depends_on`.

The workloads carry `pulumi.com/waitFor` (names.await_ready), so a role changes only once the
role it waits for is Ready at its new size.
"""
from __future__ import annotations

from ..scheduler.bindings import depths


def _reaches(edges: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo += sorted(edges.get(node, ()))
    return False


def role_edges(roles: list[str], depends_on: dict[str, list[str]], depth: dict[str, int] | None = None,
               grow: bool | None = None) -> dict[str, set[str]]:
    """role -> the roles whose objects it waits for. `depth`: distance from decode per bound role
    (None: no scale change); `grow`: the replica grows (True) or shrinks (False)."""
    edges = {r: {d for d in depends_on.get(r, []) if d in roles} for r in roles}
    if depth is None or grow is None:
        return edges
    placed = [r for r in roles if r in depth]
    for a in sorted(placed):
        for b in sorted(placed):
            first = depth[b] > depth[a] if grow else depth[b] < depth[a]
            if first and not _reaches(edges, b, a):    # a waits for b unless b already waits for a
                edges[a].add(b)
    return edges


def rank(edges: dict[str, set[str]]) -> dict[str, int]:
    """Longest chain of waits behind each role (0: waits for nothing); edges are acyclic."""
    out: dict[str, int] = {}

    def visit(r):
        if r not in out:
            out[r] = 1 + max((visit(d) for d in edges.get(r, ())), default=-1)
        return out[r]

    for r in sorted(edges):
        visit(r)
    return out


def scale_change(spec, placement, before) -> tuple:
    """(depth per role, grows?) when an InPlace replica changes size where it runs; else (None, None)."""
    if not spec.in_place or before is None or before.cluster != placement.cluster:
        return None, None
    now, was = placement.roles["decode"].workers, before.roles["decode"].workers
    if now == was:
        return None, None
    return depths(spec.scaling.binding_map()), now > was


def scale_order(spec, placement, before) -> list[str] | None:
    """The roles of an InPlace replica that changes size, in the order `up` changes them; else None."""
    depth, grow = scale_change(spec, placement, before)
    if depth is None:
        return None
    ranks = rank(role_edges(spec.role_names(), {r.name: r.depends_on for r in spec.roles}, depth, grow))
    return sorted(ranks, key=lambda r: (ranks[r], r))
