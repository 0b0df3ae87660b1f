"""Install the CRDs of tools/e2e/crds.toml into a loopback cluster and wait until each is Established."""
from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

from build import ROOT, module_dir

HERE = Path(__file__).resolve().parent
SOURCES = tomllib.loads((HERE / "crds.toml").read_text())


def documents(name: str) -> list[dict]:
    spec = SOURCES[name]
    if "module" in spec:
        base = module_dir(spec["module"], spec["version"])
        files = [f for pattern in spec["files"] for f in sorted(base.glob(pattern))]
    else:
        files = [ROOT / "schemas" / f for f in spec["schemas"]]
    docs = []
    for f in files:
        text = "\n".join(ln for ln in f.read_text().splitlines() if not ln.lstrip().startswith("{{"))
        docs += [d for d in yaml.safe_load_all(text) if d and d.get("kind") == "CustomResourceDefinition"]
    if not docs:
        raise RuntimeError(f"{name}: no CustomResourceDefinition in {', '.join(map(str, files))}")
    return docs


def install(cluster, names=None) -> dict:
    """Apply every source's CRDs; returns {source: {version, crds, origin}} for the report."""
    out = {}
    for name in names or SOURCES:
        spec = SOURCES[name]
        docs = documents(name)
        for d in docs:
            # The conversion webhooks KServe's CRDs name are not running here: one stored version.
            d["spec"].pop("conversion", None)
        cluster.apply(docs)
        out[name] = {"version": spec["version"], "crds": sorted(d["metadata"]["name"] for d in docs),
                     "origin": f"{spec['module']}@{spec['version']}" if "module" in spec
                     else "schemas/ (" + spec["why"] + ")"}
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    return out
