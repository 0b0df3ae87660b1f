"""Run NVIDIA AIConfigurator (the optional extra `modelplane[sizing]`, aiconfigurator 0.12.0) for
one model on one GPU system, in a child process (aic.py), and keep what it estimated.

The child runs under the plan's own Python unless MODELPLANE_SIZING_PYTHON names another one
(a virtualenv that holds the extra when it cannot share the plan's), so a user never needs the
extra's heavy dependencies (pandas, pyarrow, scipy, matplotlib) in the environment that plans.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).with_name("aic.py")
PIN = "aiconfigurator==0.12.0"
INSTALL = "pip install 'modelplane[sizing]'"
TIMEOUT_S = 1800


class EstimatorError(Exception):
    """The estimator is missing or refused the model, system or version."""


def python() -> str:
    return os.environ.get("MODELPLANE_SIZING_PYTHON") or sys.executable


def missing() -> str | None:
    """Why the estimator cannot run here, or None when it can."""
    exe = python()
    if exe == sys.executable:
        found = importlib.util.find_spec("aiconfigurator") is not None
    else:
        try:
            found = subprocess.run([exe, "-c", "import aiconfigurator"], capture_output=True, timeout=120).returncode == 0
        except (OSError, subprocess.SubprocessError):
            found = False
    if found:
        return None
    where = "MODELPLANE_SIZING_PYTHON" if exe != sys.executable else "this Python"
    return f"the estimator ({PIN}) is not installed for {where} ({exe}); install it with {INSTALL}"


def estimator_model(uri: str) -> str:
    """AIConfigurator's name of a model: the Hugging Face id of an hf:// URI."""
    return uri.split("://", 1)[1] if uri.startswith("hf://") else uri


def estimate(model: str, system: str, isl: int, osl: int, backend: str = "vllm", version: str | None = None) -> dict:
    """aic.py's JSON for one (model, system, workload); EstimatorError if it cannot run or refuses."""
    reason = missing()
    if reason:
        raise EstimatorError(reason)
    cmd = [python(), str(WORKER), "--model", model, "--system", system, "--backend", backend,
           "--isl", str(isl), "--osl", str(osl), *(["--version", version] if version else [])]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        raise EstimatorError(f"AIConfigurator ran longer than {TIMEOUT_S} s for {model} on {system}") from None
    try:
        doc = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}
    except json.JSONDecodeError:
        doc = {}
    if done.returncode != 0 or "error" in doc or not doc:
        detail = doc.get("error") or (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise EstimatorError(f"AIConfigurator could not estimate {model} on {system}: {detail}")
    if not doc.get("shapes"):
        raise EstimatorError(f"AIConfigurator found no configuration of {model} that runs on {system} "
                             f"(up to {doc.get('maxGpusPerReplica')} GPUs per replica): {'; '.join(doc.get('errors', []))}")
    return doc
