"""End-to-end `modelplane plan` on seeded fleets, against the Pulumi SDK's own floor.

Per size, in a fresh process each (so peak memory is that size's own):
- plan: what `modelplane plan STACK --json` does — load + program under mocks, policy gate,
  the JSON document — split into its phases, plus `--out` on top;
- floor: a bare Pulumi program that registers the same resources (type, name, parent, inputs)
  under the same mocks and monitor, measured in the same run.

    python benchmarks/plan.py                 # 5x50, 20x500, 100x2000
    python benchmarks/plan.py 20x500          # one size
    python benchmarks/plan.py --profile 20x500
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

SIZES = ((5, 50), (20, 500), (100, 2000))


def _floor(records, references) -> float:
    """Register `records` again from a bare program under the same mocks; seconds."""
    import asyncio

    import pulumi

    from modelplane import offline

    asyncio.set_event_loop(asyncio.new_event_loop())
    mocks = offline._Mocks(references)
    monitor = offline._Monitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="modelplane", stack="floor", preview=True, monitor=monitor)

    def program():
        made = {}
        for r in records:
            parent = made.get(r.parent)
            opts = pulumi.ResourceOptions(parent=parent)
            if not r.custom:
                res = pulumi.ComponentResource(r.type, r.name, None, opts)
                res.register_outputs(r.outputs)
            elif r.type.startswith("pulumi:providers:"):
                res = pulumi.ProviderResource(r.type.rsplit(":", 1)[-1], r.name, r.inputs, opts)
            else:
                res = pulumi.CustomResource(r.type, r.name, r.inputs, opts)
            made[r.urn] = res

    start = time.perf_counter()
    pulumi.runtime.test(program)()
    elapsed = time.perf_counter() - start
    assert len(monitor.records) == len(records), (len(monitor.records), len(records))
    return elapsed


def measure(clusters: int, replicas: int, profile: bool = False) -> dict:
    """One size in this process: phases of `plan --json`, `--out`, and the floor."""
    import stackgen

    from modelplane import offline, report
    from modelplane.policy import Analyzer, default_config, direct, evaluate, read_config, resources_of

    work = Path(tempfile.mkdtemp(prefix="mp-bench-"))
    path = stackgen.write(work / f"Pulumi.fleet{clusters}x{replicas}.yaml", clusters, replicas)
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    t0 = time.perf_counter()
    with Analyzer(stack="bench") as gate:      # as `modelplane plan`: the pack starts with the program
        run = offline.run(path.stem.split(".", 1)[1], path)
        t1 = time.perf_counter()
        config = read_config(default_config(run.result.spec.production))
        violations = evaluate(run, config, gate)
        t2 = time.perf_counter()
    # The same verdicts in-process (issue 30), timed on their own.
    d0 = time.perf_counter()
    assert direct.evaluate(resources_of(run), config) == violations
    gate_direct = time.perf_counter() - d0
    text = report.to_json(report.document(run, violations))
    t3 = time.perf_counter()
    if prof:
        prof.disable()
        prof.dump_stats(str(work / "plan.prof"))
    n_out = report.write_out(run, work / "out")
    t4 = time.perf_counter()
    references = {run.stack: {"placements": []}}
    floor = _floor(run.records, references)
    unplaced = len(run.result.plan.unplaced)
    return {"clusters": clusters, "replicas": replicas, "placed": len(run.result.plan.placements),
            "unplaced": unplaced, "resources": len(run.records), "violations": len(violations),
            "program": t1 - t0, "gate": t2 - t1, "gateDirect": gate_direct, "json": t3 - t2, "plan": t3 - t0,
            "out": t4 - t3,
            "outFiles": n_out, "floor": floor, "jsonBytes": len(text),
            "peakMiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "profile": str(work / "plan.prof") if prof else None}


def _row(m: dict) -> str:
    per = 1000 * m["plan"] / m["resources"]
    return (f"{m['clusters']:>4} x {m['replicas']:<5} {m['resources']:>6} {m['plan']:8.2f} {m['program']:8.2f} "
            f"{m['gate']:7.2f} {m['gateDirect']:7.2f} {m['json']:6.2f} {m['out']:6.2f} {m['floor']:7.2f} "
            f"{m['plan'] / m['floor']:6.2f}x "
            f"{per:7.2f} {m['peakMiB']:7.0f}")


def main(argv: list[str]) -> None:
    profile = "--profile" in argv
    picked = [a for a in argv if "x" in a and not a.startswith("-")]
    sizes = [tuple(int(v) for v in a.split("x")) for a in picked] or SIZES
    if argv[:1] == ["--one"]:
        print(json.dumps(measure(*sizes[0], profile=profile)))
        return
    print("size (clusters x replicas), resources, seconds: plan = program + gate + json; out = --out on top; "
          "floor = bare Pulumi program, same resources and mocks; direct = the gate's verdicts in-process, not in plan")
    print(f"{'size':<12} {'res':>6} {'plan':>8} {'program':>8} {'gate':>7} {'direct':>7} {'json':>6} {'out':>6} "
          f"{'floor':>7} {'/floor':>7} {'ms/res':>7} {'peakMiB':>7}")
    for c, r in sizes:
        args = [sys.executable, __file__, "--one", f"{c}x{r}"] + (["--profile"] if profile else [])
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{c}x{r}: failed\n{done.stderr[-3000:]}")
            continue
        m = json.loads(done.stdout.strip().splitlines()[-1])
        print(_row(m) + (f"  unplaced {m['unplaced']}" if m["unplaced"] else ""), flush=True)
        if m["profile"]:
            print(f"  profile: {m['profile']} (python -m pstats)")


if __name__ == "__main__":
    main(sys.argv[1:])
