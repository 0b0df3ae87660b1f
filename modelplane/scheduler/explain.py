"""The Filter/Score table of one deployment: every cluster x pool x GPU role and its verdict."""
from __future__ import annotations

from .model import need


def explain_rows(result, key: str) -> list[tuple[str, ...]]:
    from ..engine.fleet import demand_from

    md = next(d for d in result.spec.deployments if d.key == key)
    demand = demand_from(md)
    plan = result.plan
    rejected = {}
    cluster_level = {}
    for r in plan.rejections.get(key, []):
        if r.pool is None:
            cluster_level.setdefault(r.cluster, []).append(r)
        else:
            rejected[(r.cluster, r.pool, r.role)] = r
    used: dict[tuple[str, str, str], list[int]] = {}
    for p in plan.placements:
        if p.deployment == key:
            for role, rp in p.roles.items():
                used.setdefault((p.cluster, rp.pool, role), []).append(p.replica)
    rows = []
    for name, inv in sorted(result.inventories.items()):
        if not any(c == name for c, _ in plan.free):
            rows.append((name, "-", "-", "excluded", "what-if", "planned as if this cluster were lost"))
            continue
        for r in cluster_level.get(name, []):
            rows.append((name, "-", "-", "rejected", r.reason, r.detail))
        if any(r.reason in ("clusterSelector", "queue") for r in cluster_level.get(name, [])):
            continue
        for pool in inv["pools"]:
            for role in demand.roles:
                hit = rejected.get((name, pool["name"], role.name))
                if hit:
                    rows.append((name, pool["name"], role.name, "rejected", hit.reason, hit.detail))
                    continue
                free = plan.free.get((name, pool["name"]))
                replicas = used.get((name, pool["name"], role.name))
                verdict = f"bound {replicas}" if replicas else "eligible"
                per_node = int(pool["gpusPerNode"])
                takes = need(role.nodes, role.gpus_per_node, role.nodes_per_worker, per_node)
                shared = "" if role.nodes_per_worker > 1 or takes == role.nodes * per_node else \
                    f", sharing nodes ({takes} GPUs taken)"
                detail = (f"needs {role.nodes} node(s) x {role.gpus_per_node} GPUs{shared}; {_whole(free)}/"
                          f"{_whole(pool['maxNodes']) * per_node} GPUs free after plan")
                rows.append((name, pool["name"], role.name, verdict, "-", detail))
    for m in plan.moves:
        if m.deployment == key:
            rows.append((m.cluster, "-", "-", f"moved #{m.replica}", "retain", m.why))
    return rows


def _whole(n):
    """Node counts arrive as floats through stack references (JSON numbers); print them whole."""
    return int(n) if isinstance(n, float) and n.is_integer() else n
