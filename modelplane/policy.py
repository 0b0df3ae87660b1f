"""Plan-level policy checks run by `modelplane plan` (the CrossGuard pack in policies/ reuses them)."""
from __future__ import annotations


def placement_complete(desired: dict[str, int], placed: dict[str, int], production: bool) -> list[dict]:
    """Every deployment fully placed: advisory by default, mandatory in production stacks."""
    level = "mandatory" if production else "advisory"
    return [{"policy": "placement-complete", "level": level,
             "message": f"{key}: {placed.get(key, 0)}/{want} replicas placed", "resource": key}
            for key, want in sorted(desired.items()) if placed.get(key, 0) < want]


def evaluate(run) -> list[dict]:
    plan = run.result.plan
    placed = {key: plan.placed(key) for key in plan.desired}
    return placement_complete(plan.desired, placed, run.result.spec.production)
