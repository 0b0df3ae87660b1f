"""Start-up cost of the plan path, each figure from fresh interpreters (issue #30: the dev stack's
plan in <= 1.5 s wall, imports included).

- import: `import modelplane.X` alone, per top-level module (what a command pays before it runs);
- pure plan: what `modelplane plan STACK --json` does without Pulumi — imports, load + check the
  stack file, schedule, render every placed replica — as phases, and the whole process's wall time
  (clusters a stack reads from infra stacks, `modelplane:fleet`, are not planned here).

Prints figures (best and median of --runs fresh processes), asserts nothing.

    python benchmarks/startup.py               # dev, 5 runs each
    python benchmarks/startup.py --runs 9 prod
    python benchmarks/startup.py --importtime modelplane.cli   # the slowest imports under it
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODULES = ("modelplane", "modelplane.api", "modelplane.scheduler", "modelplane.render", "modelplane.engine.fleet",
           "modelplane.analysis.services", "modelplane.policy.registry", "modelplane.policy.resource",
           "modelplane.policy.routing", "modelplane.policy.serving", "modelplane.policy.stack", "modelplane.output.report",
           "modelplane.output.trace", "modelplane.analysis.changes", "modelplane.analysis.cost", "modelplane.output.tables", "modelplane.cli")

IMPORT = """
import time
t = time.perf_counter()
import {module}
print(time.perf_counter() - t)
"""

# The pure plan path: no Pulumi, no policy pack; what the program does between reading the stack
# file and registering resources.
PHASES = """
import json, sys, time
t0 = time.perf_counter()
from modelplane.api.loader import check_stack
from modelplane.engine.fleet import cluster_from_inventory, demand_from, inventory_of
from modelplane.render import render_replica
from modelplane.scheduler import schedule
from modelplane.analysis.services import plan_routes, served_names
t1 = time.perf_counter()
path, catalog, spec = check_stack({stack!r})
t2 = time.perf_counter()
inventories = {{c.name: inventory_of(c, catalog) for c in sorted(spec.clusters, key=lambda c: c.name)}}
plan = schedule([demand_from(d, catalog) for d in spec.deployments],
                [cluster_from_inventory(inv) for inv in inventories.values()], [],
                exact="always" if spec.repack else "auto")
t3 = time.perf_counter()
plan_routes(spec, plan.placements, inventories)
names = served_names(spec)
by_key = {{d.key: d for d in spec.deployments}}
objects = 0
for p in plan.placements:
    md = by_key[p.deployment]
    objects += len(render_replica(md, p, inventories[p.cluster], catalog.weights_gib(md), names[p.deployment]))
t4 = time.perf_counter()
heavy = sorted(m for m in ("celpy", "lark", "jsonschema", "detect_secrets", "requests", "ortools", "jinja2", "rich",
                           "click", "pulumi", "grpc") if m in sys.modules)
print(json.dumps({{"imports": t1 - t0, "load+check": t2 - t1, "schedule": t3 - t2, "render": t4 - t3,
                  "objects": objects, "heavy": heavy}}))
"""


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _python(code: str, *flags: str, cache: str | None = None) -> tuple[str, str, float]:
    """(stdout, stderr, wall seconds) of a fresh interpreter running `code` from the repository root;
    `cache`: its XDG_CACHE_HOME (default: the user's, where the CEL parser and secret patterns are kept)."""
    env = _env() if cache is None else {**_env(), "XDG_CACHE_HOME": cache}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *flags, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"failed:\n{code}\n{done.stderr}")
    return done.stdout, done.stderr, wall


def _fig(values: list[float]) -> str:
    return f"{min(values) * 1000:7.0f} ms  (median {statistics.median(values) * 1000:5.0f})"


def imports(runs: int) -> None:
    print(f"import, fresh interpreter each (best of {runs}):")
    for module in MODULES:
        times = [float(_python(IMPORT.format(module=module))[0]) for _ in range(runs)]
        print(f"  {module:30} {_fig(times)}")


def phases(stack: str, runs: int) -> None:
    print(f"\npure plan of stack {stack!r} (no Pulumi, no policy pack; best of {runs}):")
    docs, walls = [], []
    for _ in range(runs):
        out, _err, wall = _python(PHASES.format(stack=stack))
        docs.append(json.loads(out))
        walls.append(wall)
    for phase in ("imports", "load+check", "schedule", "render"):
        print(f"  {phase:30} {_fig([d[phase] for d in docs])}")
    print(f"  {'whole process (wall)':30} {_fig(walls)}")
    print(f"  {docs[0]['objects']} objects rendered; heavy modules loaded: {', '.join(docs[0]['heavy']) or 'none'}")
    with tempfile.TemporaryDirectory() as empty:
        cold = json.loads(_python(PHASES.format(stack=stack), cache=empty)[0])
        _, _, cold_wall = _python(PHASES.format(stack=stack), cache=tempfile.mkdtemp(dir=empty))
    print(f"  with an empty cache (the first run builds the CEL parser and the secret patterns): "
          f"load+check {cold['load+check'] * 1000:.0f} ms, whole process {cold_wall * 1000:.0f} ms")
    _, _, bare = _python("pass")
    print(f"  (a bare interpreter starts in {bare * 1000:.0f} ms)")


def importtime(module: str, top: int = 25) -> None:
    """The imports under `module` that cost most themselves (python -X importtime)."""
    _, err, _ = _python(f"import {module}", "-X", "importtime")
    rows = []
    for line in err.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            own, total, name = line[len("import time:"):].split("|")
            rows.append((int(own), int(total), name.rstrip()))
    print(f"{module}: {max(r[1] for r in rows) / 1000:.0f} ms in all; the {top} costliest by own time:")
    for own, total, name in sorted(rows, reverse=True)[:top]:
        print(f"  {own / 1000:7.1f} ms own  {total / 1000:7.1f} ms with children  {name.strip()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stack", nargs="?", default="dev")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--importtime", metavar="MODULE", help="list the costliest imports under MODULE and stop")
    args = parser.parse_args()
    if args.importtime:
        importtime(args.importtime)
        return
    imports(args.runs)
    phases(args.stack, args.runs)


if __name__ == "__main__":
    main()
