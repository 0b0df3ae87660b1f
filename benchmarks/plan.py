"""End-to-end `modelplane plan` on seeded fleets: both engines beside the Pulumi SDK's own floor.

Per size, each measurement in a fresh process (so peak memory is its own):
- direct: `modelplane plan STACK --json` as the CLI runs it by default — the graph recorded
  without the SDK, the pack's rules in-process, the JSON document — split into its phases;
  `wall` is the whole command (`python -m modelplane plan --config-file F --json`), imports included,
  the median of several runs;
- pulumi: `plan --engine pulumi` — the program under Pulumi's mocks, the pack over the analyzer
  protocol, the JSON document;
- floor: a bare Pulumi program that registers the same resources (type, name, parent, inputs)
  under the same mocks and monitor: what any plan through the SDK pays.
The two engines' documents are compared byte for byte ("agree").

    python benchmarks/plan.py                 # 5x50, 20x500, 100x2000
    python benchmarks/plan.py 20x500          # one size
    python benchmarks/plan.py --runs 9 20x500 # the whole command 9 times (default 5): median and fastest
    python benchmarks/plan.py --profile 20x500   # cProfile of the direct engine's plan
"""
from __future__ import annotations

import compileall
import hashlib
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


def _stack(work: Path, clusters: int, replicas: int) -> Path:
    import stackgen

    return stackgen.write(work / f"Pulumi.fleet{clusters}x{replicas}.yaml", clusters, replicas)


def _peak() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def direct_engine(path: Path, profile: bool = False) -> dict:
    """The default plan path in this process: phases, document digest, peak memory."""
    from modelplane.cli import collector_paused
    from modelplane.engine import direct
    from modelplane.output import report
    from modelplane.policy import default_config, evaluate, read_config

    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    with collector_paused():            # as `modelplane plan` runs
        t0 = time.perf_counter()
        run = direct.run(path.stem.split(".", 1)[1], path)
        t1 = time.perf_counter()
        violations = evaluate(run, read_config(default_config(run.result.spec.production)), engine="direct")
        t2 = time.perf_counter()
        digest = hashlib.sha256()             # the text in pieces, as the CLI writes it to stdout
        report.write_json(report.document(run, violations), lambda piece: digest.update(piece.encode()))
        t3 = time.perf_counter()
    if prof:
        prof.disable()
        prof.dump_stats(str(path.parent / "plan.prof"))
    return {"resources": len(run.records), "unplaced": len(run.result.plan.unplaced), "program": t1 - t0,
            "gate": t2 - t1, "json": t3 - t2, "plan": t3 - t0, "digest": digest.hexdigest(),
            "peakMiB": _peak(), "profile": str(path.parent / "plan.prof") if prof else None}


def pulumi_engine(path: Path) -> dict:
    """`plan --engine pulumi` in this process, then the floor (same records, bare SDK)."""
    from modelplane.engine import offline
    from modelplane.output import report
    from modelplane.policy import Analyzer, default_config, evaluate, read_config

    t0 = time.perf_counter()
    with Analyzer(stack="bench") as gate:      # as `modelplane plan`: the pack starts with the program
        run = offline.run(path.stem.split(".", 1)[1], path)
        t1 = time.perf_counter()
        violations = evaluate(run, read_config(default_config(run.result.spec.production)), gate)
        t2 = time.perf_counter()
    text = report.to_json(report.document(run, violations))
    t3 = time.perf_counter()
    peak = _peak()
    return {"program": t1 - t0, "gate": t2 - t1, "json": t3 - t2, "plan": t3 - t0, "peakMiB": peak,
            "digest": hashlib.sha256(text.encode()).hexdigest(), "floor": _floor(run.records)}


def _floor(records) -> float:
    """Register `records` again from a bare program under the same mocks; seconds."""
    import asyncio

    import pulumi

    from modelplane.engine import offline

    asyncio.set_event_loop(asyncio.new_event_loop())
    mocks = offline._Mocks({})
    monitor = offline._Monitor(mocks)
    offline.settings.ROOT.set(None)
    pulumi.runtime.set_mocks(mocks, project="modelplane", stack="floor", preview=True, monitor=monitor)

    def program():
        made = {}
        for r in records:
            if r.type == "pulumi:pulumi:Stack":
                continue
            opts = pulumi.ResourceOptions(parent=made.get(r.parent))
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
    return time.perf_counter() - start


def walls(path: Path, runs: int) -> dict:
    """`wall` run `runs` times: the median run (by wall seconds), and the fastest wall. One run on a
    shared VM can be a third off either way; the median of several is the figure to quote."""
    done = sorted((wall(path) for _ in range(runs)), key=lambda w: w["wall"])
    return {**done[len(done) // 2], "min": done[0]["wall"], "peakMiB": max(w["peakMiB"] for w in done)}


def wall(path: Path) -> dict:
    """The whole `modelplane plan --config-file F --json` command, imports included: wall seconds,
    CPU seconds (user + system, the gate's forked child included) and the peak of its largest
    process (the command or that child)."""
    import os

    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen([sys.executable, "-m", "modelplane", "plan", path.stem.split(".", 1)[1],
                                 "--config-file", str(path), "--json"], stdout=out, stderr=errors, cwd=HERE.parent)
        _, status, usage = os.wait4(proc.pid, 0)
        took = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):
            errors.seek(0)
            raise SystemExit(f"plan failed: {errors.read().decode()[-2000:]}")
    return {"wall": took, "cpu": usage.ru_utime + usage.ru_stime, "peakMiB": usage.ru_maxrss / 1024}


def _one(kind: str, path: Path, profile: bool) -> dict:
    args = [sys.executable, __file__, f"--{kind}", str(path)] + (["--profile"] if profile else [])
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{kind} {path.name}: failed\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    profile = "--profile" in argv
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 5
    for kind, fn in (("direct", lambda p: direct_engine(p, profile)), ("pulumi", pulumi_engine)):
        if argv[:1] == [f"--{kind}"]:
            print(json.dumps(fn(Path(argv[1]))))
            return
    # The package's bytecode as an install leaves it: with PYTHONDONTWRITEBYTECODE set, a module
    # edited since its .pyc was written is compiled again by every command (0.1-0.25 s here).
    compileall.compile_dir(HERE.parent / "modelplane", quiet=1)
    picked = [a for a in argv if "x" in a and not a.startswith("-") and a[0].isdigit()]
    sizes = [tuple(int(v) for v in a.split("x")) for a in picked] or SIZES
    print("seconds per size (clusters x replicas): direct = `plan --json` (program + gate + json), wall = the "
          f"whole command with imports (the median of {runs}, its CPU, the largest peak of any); pulumi = `plan --engine pulumi --json`; floor = bare Pulumi program, same "
          "resources and mocks")
    print("(direct's phases run one after another in one process; the command runs the gate on the other core "
          "while it writes the document: wall, its CPU and its largest process's peak)")
    print(f"{'size':<12} {'res':>6} | {'direct':>7} {'program':>7} {'gate':>6} {'json':>6} {'MiB':>5} | {'wall':>6} "
          f"{'cpu':>6} {'MiB':>5} | {'pulumi':>7} {'MiB':>5} | {'floor':>7} | {'agree':>5} {'wall/floor':>10}")
    for c, r in sizes:
        path = _stack(Path(tempfile.mkdtemp(prefix="mp-bench-")), c, r)
        d = _one("direct", path, profile)
        w = walls(path, runs)
        p = _one("pulumi", path, False)
        agree = "yes" if d["digest"] == p["digest"] else "NO"
        print(f"{c:>4} x {r:<5} {d['resources']:>6} | {d['plan']:7.2f} {d['program']:7.2f} {d['gate']:6.2f} "
              f"{d['json']:6.2f} {d['peakMiB']:5.0f} | {w['wall']:6.2f} {w['cpu']:6.2f} {w['peakMiB']:5.0f} | "
              f"{p['plan']:7.2f} {p['peakMiB']:5.0f} | {p['floor']:7.2f} | {agree:>5} {w['wall'] / p['floor']:9.2f}x"
              + f"  (fastest wall {w['min']:.2f})" + (f"  unplaced {d['unplaced']}" if d["unplaced"] else ""),
              flush=True)
        if d["profile"]:
            print(f"  profile: {d['profile']} (python -m pstats)")


if __name__ == "__main__":
    main(sys.argv[1:])
