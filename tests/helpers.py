"""Tiny constructors for scheduler tests."""
from modelplane.scheduler import Cluster, Demand, Pool, Role

PROM = "http://prometheus.monitoring:9090"   # KEDA triggers name the user's Prometheus


def caps(product="H200", mem=141, count=8, fabric="roce", features=("fp8",)):
    return {"gpu": {"vendor": "nvidia", "product": product, "architecture": "Hopper", "memoryGiB": mem,
                    "count": count, "features": list(features)},
            "interconnect": {"type": "nvswitch"}, "network": {"fabric": fabric, "bandwidthGbps": 400}}


def pool(name="h200", gpus=8, max_nodes=4, cls=None, fabric="roce", **kw):
    c = caps(count=gpus, fabric=fabric, **kw)
    return Pool(name, cls or f"class-{name}", gpus, max_nodes, c, fabric)


def cluster(name, *pools, labels=None, queues=None):
    return Cluster(name, tuple(pools or (pool(),)), labels or {}, queues)


def role(name="decode", tensor=8, pipeline=1, count=1, cel=""):
    return Role(name, cel, count, pipeline, tensor)


def demand(key="ml/kimi", replicas=1, roles=None, labels=None, queue=None):
    return Demand(key, replicas, tuple(roles or (role(),)), labels or {}, queue)


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
