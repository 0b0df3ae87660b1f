"""The estimator's side of `modelplane size`: NVIDIA AIConfigurator's sweeps for one model on
one GPU system, as JSON on stdout. It runs in its own process (estimator.py starts it), so the
extra's imports, logging and memory never reach the plan, and it may run under another Python
(MODELPLANE_SIZING_PYTHON) when the extra cannot share the plan's environment.

What it asks AIConfigurator (aiconfigurator 0.12.0, `aiconfigurator.cli.main.build_default_tasks`
and `Task.run`, the calls behind `aiconfigurator cli default`):
- aggregated: one sweep over every parallel configuration (tp, pp, dp, MoE tp/ep) and batch
  size, with no latency bound, so every (TTFT, TPOT, requests/s) point it computes is kept;
- disaggregated: one sweep per TTFT target in TTFT_GRID_MS (the prefill side is chosen against
  the TTFT target, so one sweep sees only the prefill shapes that meet it), each giving AIC's
  best prefill/decode worker splits and decode batch sizes.
The GPU budget per replica starts at two nodes of the system and doubles (as AIC's `recommend`
escalates) until an aggregated configuration fits the model, up to MAX_GPUS.

Only facts AIConfigurator computed are printed; nothing is modelled here.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import warnings

TTFT_GRID_MS = (200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000)
UNBOUNDED_MS = 1e7        # a latency bound no configuration reaches: keep every point
MAX_GPUS = 64


def _quiet() -> None:
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)


def libyaml_safe_load(stream):
    """`yaml.safe_load` through libyaml's loader: the same data (every YAML file aiconfigurator
    0.12.0 ships parses identically either way) at a fraction of the pure-Python loader's CPU;
    PyYAML's own loader where it was built without libyaml."""
    import yaml

    return yaml.load(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _libyaml() -> None:
    """AIConfigurator re-reads its systems' YAML for every sweep it builds (aiconfigurator_core
    0.12.0 sdk/perf_database.py L485 `get_supported_databases`, L612 `_load_collection_meta_yaml`:
    some 5,000 `yaml.safe_load` calls for one model on one system, about a quarter of the
    estimate's CPU). This process runs only AIConfigurator, so its `safe_load` may be libyaml's."""
    import yaml

    yaml.safe_load = libyaml_safe_load


def _num(value) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _parallel(row, prefix: str = "") -> dict:
    def get(name):
        return int(row[f"{prefix}{name}"])
    return {"tp": get("tp"), "pp": get("pp"), "dp": get("dp"), "moeTp": get("moe_tp"), "moeEp": get("moe_ep")}


def _points(df, key_fn) -> dict:
    out: dict = {}
    for _, row in df.iterrows():
        ttft, tpot, rate = _num(row["ttft"]), _num(row["tpot"]), _num(row["seq/s"])
        if ttft is None or tpot is None or not rate:
            continue
        key, shape = key_fn(row)
        entry = out.setdefault(key, {**shape, "points": []})
        entry["points"].append([round(ttft, 3), round(tpot, 3), round(rate, 4)])
    return out


def _agg_shape(row):
    p = _parallel(row)
    return json.dumps(["agg", p], sort_keys=True), {"mode": "aggregated", "gpus": int(row["num_total_gpus"]),
                                                    "decode": {**p, "workers": 1}}


def _disagg_shape(row):
    p, d = _parallel(row, "(p)"), _parallel(row, "(d)")
    pw, dw = int(row["(p)workers"]), int(row["(d)workers"])
    shape = {"mode": "disaggregated", "gpus": int(row["num_total_gpus"]),
             "prefill": {**p, "workers": pw}, "decode": {**d, "workers": dw}}
    return json.dumps(["disagg", p, pw, d, dw], sort_keys=True), shape


def estimate(model: str, system: str, backend: str, version: str | None, isl: int, osl: int) -> dict:
    _quiet()
    _libyaml()
    import aiconfigurator
    from aiconfigurator.cli.main import build_default_tasks
    from aiconfigurator.sdk.perf_database import load_system_spec

    per_node = int(load_system_spec(system)["node"]["num_gpus_per_node"])
    common = dict(model_path=model, system=system, backend=backend, backend_version=version, isl=isl, osl=osl)
    budget, agg, used_version, errors = 2 * per_node, None, version, []
    while budget <= MAX_GPUS:
        tasks = build_default_tasks(total_gpus=budget, ttft=UNBOUNDED_MS, tpot=UNBOUNDED_MS, serving_mode="agg", **common)
        task = tasks["agg"]
        used_version = task.backend_version
        try:
            agg = task.run()
        except Exception as exc:      # AIC raises its own errors for "does not fit": try a larger budget
            errors.append(f"aggregated at {budget} GPUs: {exc}")
            agg = None
        if agg is not None and len(agg):
            break
        budget *= 2
    shapes = _points(agg, _agg_shape) if agg is not None and len(agg) else {}
    for target in TTFT_GRID_MS:
        tasks = build_default_tasks(total_gpus=min(budget, MAX_GPUS), ttft=target, tpot=UNBOUNDED_MS,
                                    serving_mode="disagg", **common)
        try:
            df = tasks["disagg"].run()
        except Exception as exc:
            errors.append(f"disaggregated at TTFT {target} ms: {exc}")
            continue
        for key, entry in _points(df, _disagg_shape).items():
            shapes.setdefault(key, {**entry, "points": []})["points"] += entry["points"]
    return {"estimator": {"name": "aiconfigurator", "version": aiconfigurator.__version__},
            "system": system, "backend": backend, "databaseVersion": used_version, "gpusPerNode": per_node,
            "maxGpusPerReplica": min(budget, MAX_GPUS), "inputTokens": isl, "outputTokens": osl,
            "estimatorModel": model, "shapes": list(shapes.values()), "errors": errors}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="AIConfigurator's model path (a Hugging Face id)")
    parser.add_argument("--system", required=True)
    parser.add_argument("--backend", default="vllm")
    parser.add_argument("--version", default=None)
    parser.add_argument("--isl", type=int, required=True)
    parser.add_argument("--osl", type=int, required=True)
    args = parser.parse_args(argv)
    try:
        doc = estimate(args.model, args.system, args.backend, args.version, args.isl, args.osl)
    except ImportError as exc:
        print(json.dumps({"error": f"aiconfigurator is not installed: {exc}"}))
        return 3
    except Exception as exc:          # the estimator's own refusal (unknown model, system, version)
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        return 2
    json.dump(doc, sys.stdout, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
