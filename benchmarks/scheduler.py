"""Scheduler benchmark: seeded fleets and deployments; prints wall time, replicas/s and peak memory."""
from __future__ import annotations

import random
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from modelplane.scheduler import Cluster, Demand, Pool, Role, schedule  # noqa: E402

GPUS = {"l4": (1, "tcp"), "l40s": (4, "efa"), "h100": (8, "gpudirect-tcpx"), "h200": (8, "roce")}


def fleet(rng, clusters, pools):
    out = []
    for c in range(clusters):
        ps = []
        for p in range(pools):
            kind = rng.choice(sorted(GPUS))
            gpus, fabric = GPUS[kind]
            caps = {"gpu": {"product": kind, "memoryGiB": 80, "count": gpus}, "network": {"fabric": fabric}}
            ps.append(Pool(f"p{p}-{kind}", f"class-{kind}", gpus, rng.randint(20, 200), caps, fabric))
        out.append(Cluster(f"c{c:04d}", tuple(ps), {"tier": rng.choice(["prod", "dev"])}, None))
    return out


def demands(rng, replicas, disaggregated, per_deployment=20):
    out, left, i = [], replicas, 0
    while left > 0:
        n = min(per_deployment, left)
        roles = [Role("decode", "", rng.randint(1, 2), 1, rng.choice([1, 4, 8]))]
        if disaggregated:
            roles.append(Role("prefill", "", rng.randint(1, 3), 1, rng.choice([1, 4])))
        out.append(Demand(f"ns/d{i:05d}", n, tuple(roles), {}, None))
        left, i = left - n, i + 1
    return out


CASES = [("10 clusters x 4 pools x 10 replicas", 10, 4, 10, False),
         ("100 x 8 x 400", 100, 8, 400, False),
         ("50 x 8 x 50 disaggregated", 50, 8, 50, True),
         ("125 x 8 (1,000 pools) x 10,000 replicas", 125, 8, 10_000, False),
         ("125 x 8 (1,000 pools) x 2,000 disaggregated", 125, 8, 2_000, True)]

if __name__ == "__main__":
    for label, c, p, r, disagg in CASES:
        rng = random.Random(7)
        f, d = fleet(rng, c, p), demands(rng, r, disagg)
        t0 = time.perf_counter()
        plan = schedule(d, f)
        dt = time.perf_counter() - t0
        tracemalloc.start()          # a second, traced run for peak memory (tracing slows it down)
        schedule(d, f)
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        print(f"{label:<42} {dt * 1000:8.1f} ms  {r / dt:10.0f} replicas/s  peak {peak:6.1f} MiB  "
              f"placed {len(plan.placements)}/{r}")
