"""Tiny constructors for scheduler tests."""
from modelplane.scheduler import Cluster, Demand, Pool, Role

PROM = "http://prometheus.monitoring:9090"   # KEDA triggers name the user's Prometheus


def caps(product="H200", mem=141, count=8, fabric="roce", features=("fp8",)):
    return {"gpu": {"vendor": "nvidia", "product": product, "architecture": "Hopper", "memoryGiB": mem,
                    "count": count, "features": list(features)},
            "interconnect": {"type": "nvswitch"}, "network": {"fabric": fabric, "bandwidthGbps": 400}}


def pool(name="h200", gpus=8, max_nodes=4, cls=None, fabric="roce", capacity="on-demand", paid_nodes=0, labels=None,
         **kw):
    c = caps(count=gpus, fabric=fabric, **kw)
    return Pool(name, cls or f"class-{name}", gpus, max_nodes, c, fabric, capacity=capacity, paid_nodes=paid_nodes,
                labels=labels or {})


def cluster(name, *pools, labels=None, queues=None):
    return Cluster(name, tuple(pools or (pool(),)), labels or {}, queues)


def role(name="decode", tensor=8, pipeline=1, count=1, cel=""):
    return Role(name, cel, count, pipeline, tensor)


def demand(key="ml/kimi", replicas=1, roles=None, labels=None, queue=None):
    return Demand(key, replicas, tuple(roles or (role(),)), labels or {}, queue)


def pack(items: list[int], per_node: int, nodes: int) -> bool:
    """Whether workers taking these GPUs of one node each fit `nodes` nodes of `per_node` GPUs:
    largest first, first fit, the way KAI's bin-packing places them."""
    room = [per_node] * nodes
    for size in sorted(items, reverse=True):
        at = next((i for i, r in enumerate(room) if r >= size), None)
        if at is None:
            return False
        room[at] -= size
    return True


def packs(plan, demands, clusters) -> bool:
    """Whether every pool holds what the plan puts on it, node by node: a multi-node worker's
    slices take whole nodes, a smaller worker its slot of a node shared with others."""
    from modelplane.scheduler.model import gpu_slot

    pools = {(c.name, q.name): q for c in clusters for q in c.pools}
    by_key = {d.key: d for d in demands}
    items = {key: [] for key in pools}
    for p in plan.placements:
        d = by_key[p.deployment]
        for r in d.roles:
            key = (p.cluster, p.roles[r.name].pool)
            size = pools[key].gpus_per_node if r.nodes_per_worker > 1 else gpu_slot(r.gpus_per_node, pools[key].gpus_per_node)
            items[key] += [size] * p.roles[r.name].nodes
    return all(pack(items[k], pools[k].gpus_per_node, pools[k].max_nodes) for k in items)


def objects(run, kind):
    """An offline run's resources of one Kubernetes kind, by object name."""
    return {r.name.rsplit("/", 1)[-1]: r for r in run.records if r.type.endswith(f":{kind}")}


def stack_policy_args(run) -> list:
    """Each resource of an offline run as the pack hands it to a stack policy (resource_type, props,
    urn), props deep-copied so a test can tamper with them."""
    import copy
    from types import SimpleNamespace

    from modelplane.policy import resources_of

    return [SimpleNamespace(resource_type=r.type, props=copy.deepcopy(r.props), urn=r.urn) for r in resources_of(run)]


def source_copy(dest):
    """What building modelplane reads (pyproject, setup.py, the package and its data), copied to
    `dest`, so a build or an editable install writes its build/ and egg-info there, not here."""
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "modelplane", "catalog", "policies",
                 "schemas"):
        if (root / name).is_dir():
            shutil.copytree(root / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "_data"))
        else:
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy(root / name, dest / name)
    return dest


# One plan per (engine, stack file) per test worker: the example stacks and the bad-config corpus are
# planned by many modules (engines, gate, policy_direct, policy_corpus, the conftest fixtures), and a
# plan is a pure function of its file. Read-only: copy before editing. An input error is remembered
# and raised again, so a test sees what planning the file would do.
_RUNS: dict = {}


def planned(stack: str, path=None, engine: str = "pulumi"):
    """offline.run (engine "pulumi") or direct.run (engine "direct") of a stack, computed once."""
    import gc

    from modelplane.errors import InputError

    key = (engine, stack, str(path) if path else None)
    if key not in _RUNS:
        if engine == "direct":
            from modelplane.engine import direct as run_engine
        else:
            from modelplane.engine import offline as run_engine
        try:
            _RUNS[key] = run_engine.run(stack, path)
        except InputError as exc:
            _RUNS[key] = exc
        # Kept plans are millions of live objects: out of the collector's reach, so every later full
        # collection (a plan allocates enough to trigger many) does not walk them again.
        gc.collect()
        gc.freeze()
    if isinstance(_RUNS[key], InputError):
        raise _RUNS[key]
    return _RUNS[key]


def cli(*args, env=None):
    """`modelplane ARGS` run in this process from the repository root, as a CompletedProcess
    (returncode, stdout, stderr): the same command without a fresh interpreter's second of imports.
    A test that needs its own process (a hash seed, a bare PATH, what gets imported) spawns one."""
    import os
    import subprocess
    from pathlib import Path

    from click.testing import CliRunner

    from modelplane.cli import main

    here = os.getcwd()
    os.chdir(Path(__file__).resolve().parents[1])
    try:
        result = CliRunner().invoke(main, [str(a) for a in args], env=env)
    finally:
        os.chdir(here)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception        # a traceback the command would have printed: fail the test with it
    return subprocess.CompletedProcess(["modelplane", *args], result.exit_code, result.stdout, result.stderr)
