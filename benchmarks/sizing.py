"""What sizing from an SLO adds to `modelplane plan` (issue #37: at most 0.3 s for 10 sized
deployments over 6 classes, with profiles present).

A fleet of 6 GKE/EKS clusters, one pool of each of 6 classes that name an estimator system
(A3 High, A3 Mega, p5: H100; A3 Ultra, p5en: H200; A4: B200), contracted rates, and 10 deployments
of Qwen3-32B: once sized (slo + traffic, the shipped profile), once hand-sized with the shape the
sized plan chose (replicas, workers, prefill). Both are planned in this process with the direct
engine (graph, pack, JSON document), best of N runs after a warm-up; the difference is what
sizing costs: reading the profile, the candidates, the choice and the exact phase when it runs.

    python benchmarks/sizing.py [--runs 5]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]
os.environ.setdefault("MODELPLANE_ESTIMATE", "never")

import yaml  # noqa: E402

CLASSES = [("gke", "gke-h100-8x-a3high"), ("gke", "gke-h100-8x-a3mega"), ("eks", "eks-h100-8x-p5"),
           ("gke", "gke-h200-8x-a3ultra"), ("eks", "eks-h200-8x-p5en"), ("gke", "gke-b200-8x-a4")]
RATES = [60.0, 70.0, 98.0, 80.0, 85.0, 110.0]


def fleet(deployments: list[dict], nodes: int = 8) -> dict:
    clusters = []
    for i, ((cloud, cls), rate) in enumerate(zip(CLASSES, RATES)):
        region = "us-central1" if cloud == "gke" else "us-east-1"
        c = {"name": f"c{i}", "labels": {"modelplane.ai/cloud": cloud}, "queues": [{"namespace": "chat"}],
             "nodePools": [{"name": "gpu", "class": cls, "minNodes": 0, "maxNodes": nodes,
                            "capacity": {"type": "reservation", "reservation": f"r{i}", "hourly": rate}}]}
        if cloud == "gke":
            c["gke"] = {"project": "bench", "region": region, "version": "1.34"}
            c["nodePools"][0]["zones"] = [f"{region}-a"]
        else:
            c["eks"] = {"region": region, "version": "1.34", "subnetIds": ["subnet-0a11c0ffee0000001", "subnet-0b22c0ffee0000002"]}
            c["nodePools"][0]["capacity"]["reservation"] = f"cr-0123456789abcdef{i}"
            c["dra"] = False        # scale from zero with the device plugin
        clusters.append(c)
    return {"config": {"gcp:project": "bench", "modelplane:clusters": clusters, "modelplane:deployments": deployments}}


def sized(n: int) -> list[dict]:
    return [{"name": f"qwen-{j}", "namespace": "chat", "model": {"uri": "hf://Qwen/Qwen3-32B"},
             "slo": {"ttftMs": 1000 + 100 * (j % 3), "itlMs": 20 + 5 * (j % 4)},
             "traffic": {"requestsPerSecond": 4 + j, "inputTokens": 4000, "outputTokens": 500}} for j in range(n)]


PRODUCT = {"gke-h100-8x-a3high": "H100", "gke-h100-8x-a3mega": "H100", "eks-h100-8x-p5": "H100",
           "gke-h200-8x-a3ultra": "H200", "eks-h200-8x-p5en": "H200", "gke-b200-8x-a4": "B200"}


def by_hand(doc: dict) -> list[dict]:
    """The same deployments with the shape the sized plan chose written out, on the same GPU."""
    out = []
    for row in doc["sizing"]:
        c = row["choice"]
        ns, name = row["deployment"].split("/")
        t = c["topology"]
        d = {"name": name, "namespace": ns, "model": {"uri": "hf://Qwen/Qwen3-32B"}, "replicas": c["replicas"],
             "nodeSelector": {"cel": f'gpu.product == "{PRODUCT[c["class"]]}"'},
             "workers": {"count": c["workers"], "topology": {"tensor": t["tensor"], "pipeline": t["pipeline"],
                                                             "data": t["data"], "dataLocal": t["dataLocal"]}}}
        if "prefill" in c:
            p = c["prefill"]["topology"]
            d["prefill"] = {"nodeSelector": d["nodeSelector"], "workers": {"count": c["prefill"]["workers"], "topology": {
                "tensor": p["tensor"], "pipeline": p["pipeline"], "data": p["data"], "dataLocal": p["dataLocal"]}}}
        out.append(d)
    return out


def plan_once(path: Path) -> tuple[float, dict]:
    from modelplane.engine import direct
    from modelplane.output import report
    from modelplane.policy import default_config, evaluate, read_config

    t0 = time.perf_counter()
    run = direct.run("bench", path)
    violations = evaluate(run, read_config(default_config(run.result.spec.production)), engine="direct")
    doc = json.loads(report.to_json(report.document(run, violations)))
    return time.perf_counter() - t0, doc


def best(path: Path, runs: int) -> tuple[float, dict]:
    plan_once(path)                                   # warm-up: imports, CEL cache
    times, doc = [], None
    for _ in range(runs):
        t, doc = plan_once(path)
        times.append(t)
    return min(times), doc


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--deployments", type=int, default=10)
    args = ap.parse_args(argv)
    for nodes in (8, 3):         # room for every first choice; scarce (the exact phase chooses)
        with tempfile.TemporaryDirectory() as tmp:
            a = Path(tmp) / "Pulumi.sized.yaml"
            a.write_text(yaml.safe_dump(fleet(sized(args.deployments), nodes), sort_keys=False))
            t_sized, doc = best(a, args.runs)
            b = Path(tmp) / "Pulumi.hand.yaml"
            b.write_text(yaml.safe_dump(fleet(by_hand(doc), nodes), sort_keys=False))
            t_hand, hand = best(b, args.runs)
        classes = sorted({r["choice"]["class"] for r in doc["sizing"] if r["choice"]})
        print(f"{args.deployments} sized deployments over {len(CLASSES)} classes of {nodes} nodes each, "
              f"{len(doc['sizing'][0]['alternatives'])} candidates each; chosen: {', '.join(classes)}; "
              f"fill: {doc['fill']['phase']}")
        print(f"  sized plan:      {t_sized:.3f} s  ({len(doc['placements'])} replicas placed, "
              f"{len(doc['unplaced'])} unplaced, ${doc['cost']['stack']['hourly']['max']:,.0f}/h)")
        print(f"  same, by hand:   {t_hand:.3f} s  ({len(hand['placements'])} replicas placed, "
              f"${hand['cost']['stack']['hourly']['max']:,.0f}/h)")
        print(f"  sizing adds:     {t_sized - t_hand:+.3f} s (best of {args.runs})")


if __name__ == "__main__":
    main()
