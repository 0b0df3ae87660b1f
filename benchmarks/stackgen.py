"""Seeded fleet stacks for benchmarks and large-stack tests: existing clusters (no cloud resources,
so the plan measures modelplane itself) with L4, H100 and H200 pools, several namespaces, and a
mix of unified, disaggregated and multi-node deployments, plus one service per namespace."""
from __future__ import annotations

import random
from pathlib import Path

import yaml

SECRET = {"secure": "v1:ZmFrZS1ub25jZQ==:b2ZmbGluZS1leGFtcGxlLW9ubHk="}
NAMESPACES = ("chat", "search", "agents", "batch")
REGIONS = {"gcp": ("us-central1", "us-east4", "europe-west4"), "aws": ("us-east-1", "us-west-2", "eu-west-1")}
MODELS = {   # (uri, kind) — sizes come from catalog/models.yaml
    "unified-small": "hf://Qwen/Qwen3-8B",
    "unified-large": "hf://meta-llama/Llama-3.3-70B-Instruct",
    "disaggregated": "hf://meta-llama/Llama-3.3-70B-Instruct",
    "multi-node": "hf://deepseek-ai/DeepSeek-R1",
}


def _cluster(i: int, rng: random.Random, nodes: dict) -> dict:
    cloud = "gcp" if i % 2 == 0 else "aws"
    region = REGIONS[cloud][i // 2 % 3]
    return {
        "name": f"c{i:03d}",
        "labels": {"modelplane.ai/tier": "production", "modelplane.ai/cloud": cloud},
        "existing": {"kubeconfigSecret": "fleetKubeconfig", "cloud": cloud, "region": region, "version": "1.34"},
        "nodePools": [
            {"name": "l4", "class": "l4-1x", "minNodes": 0, "maxNodes": nodes["l4"] + rng.randint(0, 2)},
            {"name": "h100", "class": "h100-8x", "minNodes": 0, "maxNodes": nodes["h100"] + rng.randint(0, 2)},
            {"name": "h200", "class": "h200-8x", "minNodes": 0, "maxNodes": nodes["h200"] + rng.randint(0, 2)},
        ],
        "queues": [{"namespace": ns} for ns in NAMESPACES],
        "tls": {"hostnames": ["*.fleet.example.com"], "issuerRef": {"name": "fleet-dns01"}},
    }


def _deployment(j: int, kind: str, replicas: int) -> dict:
    ns = NAMESPACES[j % len(NAMESPACES)]
    d = {"name": f"{kind}-{j:03d}", "namespace": ns, "replicas": replicas,
         "model": {"uri": MODELS[kind], "tokenSecret": "hfToken"}}
    if kind == "unified-small":
        d |= {"nodeSelector": {"cel": 'gpu.product == "L4"'}, "workers": {"topology": {"tensor": 1}}}
    elif kind == "unified-large":
        d |= {"nodeSelector": {"cel": 'gpu.memoryGiB >= 80 && gpu.product == "H100"'},
              "workers": {"topology": {"tensor": 8}}}
    elif kind == "disaggregated":
        d |= {"nodeSelector": {"cel": 'gpu.product == "H100"'}, "workers": {"topology": {"tensor": 4}},
              "prefill": {"nodeSelector": {"cel": 'gpu.product == "H100"'},
                          "workers": {"count": 2, "topology": {"tensor": 2}}}}
    else:   # two nodes per worker (data-parallel ranks), KServe's data-parallel worker preset
        d |= {"nodeSelector": {"cel": 'gpu.product == "H200"'},
              "workers": {"topology": {"tensor": 8, "data": 2, "dataLocal": 1}}}
    return d


def stack(clusters: int, replicas: int, seed: int = 7) -> dict:
    """A stack document: `clusters` existing clusters, `replicas` replicas in ~50-replica deployments,
    about a third of them disaggregated; the pools hold everything with some headroom."""
    rng = random.Random(seed)
    kinds = ("unified-small", "disaggregated", "unified-large", "multi-node", "disaggregated", "unified-small")
    deployments, left, j = [], replicas, 0
    while left > 0:
        n = min(left, 50)
        deployments.append(_deployment(j, kinds[j % len(kinds)], n))
        left, j = left - n, j + 1
    # Nodes per replica: unified 1 (L4 or H100), disaggregated 3 H100 (decode + two prefill
    # workers), multi-node 2 H200; pools hold every replica with ~30% headroom.
    need = {"l4": 0, "h100": 0, "h200": 0}
    for d in deployments:
        kind = d["name"].rsplit("-", 1)[0]
        pool, per = {"unified-small": ("l4", 1), "unified-large": ("h100", 1), "disaggregated": ("h100", 3),
                     "multi-node": ("h200", 2)}[kind]
        need[pool] += per * d["replicas"]
    nodes = {pool: max(2, int(n * 1.3 / clusters) + 1) for pool, n in need.items()}
    services = []
    for ns in NAMESPACES:
        mine = [d["name"] for d in deployments if d["namespace"] == ns]
        if mine:
            services.append({"name": f"{ns}-api", "namespace": ns, "hostname": f"{ns}.fleet.example.com",
                             "endpoints": [{"deployment": n, "weight": 10 + 5 * k} for k, n in enumerate(mine[:3])]})
    return {"config": {
        "modelplane:fleetKubeconfig": SECRET,
        "modelplane:hfToken": SECRET,
        "modelplane:clusters": [_cluster(i, rng, nodes) for i in range(clusters)],
        "modelplane:deployments": deployments,
        "modelplane:services": services,
    }}


def write(path: Path, clusters: int, replicas: int, seed: int = 7) -> Path:
    path.write_text(yaml.safe_dump(stack(clusters, replicas, seed), sort_keys=False))
    return path
