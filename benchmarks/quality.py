"""Placement quality under scarcity: replicas and GPUs placed by the fast path, by the final plan
(fast path + exact phase at its default budget) and by the exact optimum (same rules, a budget
large enough to prove optimality), with times. Seeded fleets; prints a table, asserts nothing.

    python benchmarks/quality.py            # 60 small fleets + a 50-cluster, 2,000-replica fleet
"""
from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from modelplane.scheduler import Cluster, Demand, Pool, Role, schedule  # noqa: E402

GPU_CLASS = {1: ("l4", "L4"), 4: ("l4x4", "L4"), 8: ("h100", "H100")}


def fleet(seed: int, clusters: tuple[int, int], replicas_per: tuple[int, int], demand_factor: float = 1.6,
          nodes: tuple[int, int] = (1, 8)):
    """Clusters of 1-3 pools (1/4/8 GPUs per node, 1-8 nodes); deployments of 1-5 replicas with
    1-2 workers of 1-2 nodes, a third of them prefill/decode pairs; demand ~1.6x capacity."""
    rng = random.Random(seed)
    out = []
    for c in range(rng.randint(*clusters)):
        pools = []
        for k in range(rng.randint(1, 3)):
            g = rng.choice((1, 4, 8))
            pools.append(Pool(f"p{k}", GPU_CLASS[g][0], g, rng.randint(*nodes), {"gpu": {"count": g}},
                              rng.choice(("tcp", "roce"))))
        out.append(Cluster(f"c{c:02d}", tuple(pools)))
    capacity = sum(p.max_nodes for c in out for p in c.pools)
    demands, nodes, j = [], 0, 0
    while nodes < capacity * demand_factor:
        gpn = rng.choice((1, 4, 8))
        workers, npw = rng.randint(1, 2), rng.randint(1, 2)
        roles = [Role("decode", "", workers, npw, gpn)]
        if rng.random() < 1 / 3:
            roles.append(Role("prefill", "", rng.randint(1, 2), 1, gpn))
        n = rng.randint(*replicas_per)
        demands.append(Demand(f"ns/d{j:03d}", n, tuple(roles), priority=rng.choice((0, 1, 1, 2))))
        nodes += n * sum(r.nodes for r in roles)
        j += 1
    return demands, out


def measure(demands, clusters, mode, budget=None):
    t = time.perf_counter()
    plan = schedule(demands, clusters, exact=mode, budget=budget)
    dt = time.perf_counter() - t
    gpus = sum(rp.nodes * rp.gpus_per_node for p in plan.placements for rp in p.roles.values())
    return len(plan.placements), gpus, dt, plan


def run(label, cases, optimum_budget):
    rows = [[0, 0, 0.0] for _ in range(3)]
    worst, unproven = 1.0, 0
    for demands, clusters in cases:
        got = [measure(demands, clusters, "off"), measure(demands, clusters, "auto"),
               measure(demands, clusters, "always", optimum_budget)]
        for row, (n, g, dt, _) in zip(rows, got):
            row[0] += n
            row[1] += g
            row[2] += dt
        if got[2][0]:
            worst = min(worst, got[1][0] / got[2][0])
        unproven += got[2][3].phase != "exact"
    (fr, fg, ft), (pr, pg, pt), (orr, og, ot) = rows
    print(f"| {label} | {fr} / {fg} ({fr / orr:.1%}, {fg / og:.1%}) | {pr} / {pg} ({pr / orr:.1%}, {pg / og:.1%}) "
          f"| {orr} / {og} | {ft:.2f} s | {pt:.2f} s | {ot:.2f} s | {worst:.1%} |")


def main():
    print("| fleets | fast path: replicas / GPUs (of optimum) | final plan | optimum | fast time | final time "
          "| optimum time | worst fleet (final / optimum replicas) |")
    print("|---|---|---|---|---|---|---|---|")
    small = [fleet(seed, (2, 6), (1, 5)) for seed in range(60)]
    run("60 small (2-6 clusters)", small, 60.0)
    large = fleet(1001, (50, 50), (20, 60), nodes=(10, 56))
    demands, clusters = large
    print(f"<!-- large fleet: {len(clusters)} clusters, {sum(d.replicas for d in demands)} replicas wanted -->")
    run("50 clusters, ~2,000 replicas", [large], 30.0)
    # unchanged inputs give byte-identical plans
    a, b = measure(*small[0], "auto")[3], measure(*small[0], "auto")[3]
    assert [p.to_json() for p in a.placements] == [p.to_json() for p in b.placements]


if __name__ == "__main__":
    main()
