"""What the end-to-end tests drive: a user's project folder, the real engine, the loopback clusters.

- `Workspace`: a project folder outside the checkout (Pulumi.yaml, stacks/), a file:// backend and
  a passphrase, PATH and PULUMI_HOME holding the engine and the Kubernetes provider built by
  tools/e2e/build.py, and each stack's kubeconfig secrets set with `pulumi config set --secret`.
- `Workspace.operate`: preview/up/destroy through modelplane's own driver (the Automation API),
  recording the engine's events in order (resource pre/outcome events with op and URN).
- `Sampler`: serving replicas per deployment, read from the API servers while a change runs.
- `stand_in_plugins`: the plugins a stack with DNS records needs that the built engine lacks.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import build

ROOT = build.ROOT
ENGINE_BINARIES = ("pulumi", "pulumi-resource-kubernetes")


@dataclass
class Event:
    seq: int
    t: float
    phase: str         # pre | done | failed
    op: str            # create | update | replace | create-replacement | delete-replaced | delete | same ...
    urn: str
    type: str
    diffs: tuple[str, ...] = ()     # the property paths the engine found changed (pre events)

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]


@dataclass
class Outcome:
    operation: str
    ok: bool
    summary: dict
    events: list[Event] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0


def engine_env(home: Path) -> dict:
    """PATH with the built engine and provider first, PULUMI_HOME of the tests' own."""
    bins = []
    for exe in ENGINE_BINARIES:
        p = build.binary(exe)
        if p is None:
            raise RuntimeError(f"{exe} is not built (python tools/e2e/build.py)")
        bins.append(str(p.parent))
    return {"PATH": os.pathsep.join([*dict.fromkeys(bins), os.environ.get("PATH", "")]),
            "PULUMI_HOME": str(home), "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": "true"}


def stand_in_plugins(folder: Path, aws_log: Path, path: str) -> dict:
    """Environment for stacks with DNS records: `path` (a PATH) after the two plugins the built
    engine lacks, and where the AWS stand-in logs its calls.
    - `pulumi-resource-pulumi-python`, Pulumi's Python dynamic provider host (the DNS drain,
      render/drain.py): a Pulumi install ships it beside the CLI as a script running `python -u
      -m pulumi.dynamic` (pulumi/pulumi@v3.259.0 sdk/python/dist/pulumi-resource-pulumi-python
      L33, L49); here the same module with this Python, which has modelplane installed.
    - `pulumi-resource-aws`: tools/e2e/standin_aws.py (no pulumi-aws build, no AWS account)."""
    import sys

    bin_dir = folder / "plugins"
    bin_dir.mkdir(parents=True, exist_ok=True)
    scripts = {"pulumi-resource-pulumi-python": f'exec "{sys.executable}" -u -m pulumi.dynamic "$@"\n',
               "pulumi-resource-aws": f'exec "{sys.executable}" -u "{Path(__file__).parent / "standin_aws.py"}" "$@"\n'}
    for name, body in scripts.items():
        script = bin_dir / name
        script.write_text("#!/bin/sh\n" + body)
        script.chmod(0o755)
    return {"PATH": os.pathsep.join([str(bin_dir), path]),
            "MODELPLANE_E2E_AWS_LOG": str(aws_log)}


class Workspace:
    def __init__(self, folder: Path, passphrase: str = "modelplane-e2e"):
        self.root = folder
        self.state = folder / ".pulumi-state"
        self.state.mkdir(parents=True, exist_ok=True)
        (folder / "stacks").mkdir(exist_ok=True)
        shutil.copy(ROOT / "Pulumi.yaml", folder / "Pulumi.yaml")
        self.env = engine_env(folder / ".pulumi-home") | {
            "PULUMI_CONFIG_PASSPHRASE": passphrase, "PULUMI_BACKEND_URL": f"file://{self.state}"}

    def __enter__(self):
        self._saved = {k: os.environ.get(k) for k in self.env}
        self._cwd = os.getcwd()
        os.environ.update(self.env)
        os.chdir(self.root)
        return self

    def __exit__(self, *exc):
        os.chdir(self._cwd)
        for k, v in self._saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def write_stack(self, stack: str, text: str) -> Path:
        path = self.root / "stacks" / f"Pulumi.{stack}.yaml"
        path.write_text(text)
        return path

    def set_secrets(self, stack: str, secrets: dict[str, str]) -> None:
        """`pulumi config set --secret` for each key, encrypted with this workspace's passphrase."""
        from pulumi import automation as auto

        from modelplane.automation import driver
        st = driver.select_stack(stack)
        st.set_all_config({k: auto.ConfigValue(v, secret=True) for k, v in secrets.items()})

    def operate(self, operation: str, stack: str) -> Outcome:
        from modelplane.automation import driver

        events: list[Event] = []
        start = time.monotonic()
        lines: list[str] = []

        def on_event(ev):
            for phase, attr in (("pre", "resource_pre_event"), ("done", "res_outputs_event"),
                                ("failed", "res_op_failed_event")):
                e = getattr(ev, attr, None)
                if e is not None and getattr(e, "metadata", None) is not None:
                    m = e.metadata
                    events.append(Event(len(events), round(time.monotonic() - start, 3), phase, str(m.op.value
                                        if hasattr(m.op, "value") else m.op), m.urn, m.type,
                                        tuple(getattr(m, "diffs", None) or ())))

        try:
            summary = driver.operate(operation, stack, on_output=lines.append, on_event=on_event)
            return Outcome(operation, True, summary, events, seconds=round(time.monotonic() - start, 1))
        except driver.DriverError as exc:
            tail = "\n".join(lines[-40:])
            return Outcome(operation, False, {}, events, f"{exc}\n{tail}", round(time.monotonic() - start, 1))

    def modelplane(self, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
        """The `modelplane` command a user runs, in this project folder."""
        exe = shutil.which("modelplane") or str(Path(os.sys.executable).parent / "modelplane")
        return subprocess.run([exe, *args], cwd=self.root, env=os.environ | self.env, capture_output=True,
                              text=True, timeout=timeout)


def workload_of(pod: dict) -> tuple[str, str]:
    """(workload, generation group) of one pod. One replica is one workload: a Deployment (its pods'
    ReplicaSets differ between generations; the old and the surged `-b` replica differ in the
    Deployment) or a LeaderWorkerSet group (leader and workers, owned by different StatefulSets)."""
    lb = pod["metadata"].get("labels", {})
    if "leaderworkerset.sigs.k8s.io/name" in lb:
        lws = lb["leaderworkerset.sigs.k8s.io/name"]
        return lws, f"{lb.get('leaderworkerset.sigs.k8s.io/group-index')}/{lb.get('leaderworkerset.sigs.k8s.io/template-revision-hash')}"
    owner = (pod["metadata"].get("ownerReferences") or [{}])[0]
    name = owner.get("name", "")
    return (name.rsplit("-", 1)[0] if owner.get("kind") == "ReplicaSet" else name), name


class Sampler:
    """Every `interval` seconds: per cluster and deployment, how many replicas serve (all pods of the
    replica's workloads Running and Ready; endpoint pickers carry no replica label), until stopped. Kept as (t, {cluster/ns/dep: n})."""

    def __init__(self, clusters: dict, namespaces: list[str], interval: float = 0.5):
        self.clusters, self.namespaces, self.interval = clusters, namespaces, interval
        self.samples: list[tuple[float, dict]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self):
        while not self._stop.is_set():
            self.samples.append((round(time.monotonic() - self._t0, 2), self.read()))
            self._stop.wait(self.interval)

    def read(self) -> dict:
        out: dict[str, int] = {}
        for name, c in self.clusters.items():
            for ns in self.namespaces:
                try:
                    pods = c.get("pods", "-n", ns, "-l", "modelplane.ai/deployment,modelplane.ai/replica")["items"]
                except (RuntimeError, json.JSONDecodeError):
                    continue
                replicas: dict[tuple, dict[str, list[bool]]] = {}
                for p in pods:
                    lb = p["metadata"].get("labels", {})
                    wl, group = workload_of(p)
                    key = (lb.get("modelplane.ai/deployment"), lb.get("modelplane.ai/replica"), wl)
                    ready = p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp") and any(
                        c_["type"] == "Ready" and c_["status"] == "True" for c_ in p["status"].get("conditions", []))
                    replicas.setdefault(key, {}).setdefault(group, []).append(ready)
                for (dep, _, _), groups in replicas.items():
                    k = f"{name}/{ns}/{dep}"
                    # A replica serves while one generation of its pods is whole: during a rolling
                    # update the old ReplicaSet's pod serves until the new one is Ready.
                    out[k] = out.get(k, 0) + (1 if any(g and all(g) for g in groups.values()) else 0)
        return out

    def minimum_by_deployment(self) -> dict[str, int]:
        """The fewest serving replicas each namespace/deployment had over all clusters at any sample."""
        totals = []
        for _, s in self.samples:
            t: dict[str, int] = {}
            for k, n in s.items():
                dep = k.split("/", 1)[1]
                t[dep] = t.get(dep, 0) + n
            totals.append(t)
        keys = {k for t in totals for k in t}
        return {k: min(t.get(k, 0) for t in totals) for k in sorted(keys)}
